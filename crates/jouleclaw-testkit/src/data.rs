//! Files one crate's tests share with another crate's, embedded here so that no test includes
//! a file from another crate's folder.

/// The structured crate's tool-call schema (`crates/jouleclaw-structured/schemas/`), which the
/// pipeline's tests compile beside the tool-call trace.
pub const TOOL_CALL_SCHEMA: &str =
    include_str!("../../jouleclaw-structured/schemas/tool-call.schema.json");

#[cfg(test)]
mod tests {
    #[test]
    fn the_tool_call_schema_is_a_json_schema_object() {
        let s = super::TOOL_CALL_SCHEMA.trim_start();
        assert!(s.starts_with('{') && s.contains("\"properties\""), "{s}");
    }
}
