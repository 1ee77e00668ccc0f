//! `run --llm-tools TOOLS.json`: a whole toolset (an MCP `tools/list` result or an OpenAI
//! `tools` array) compiled into one grammar for the LLM channel's tool calls
//! (spec/STRUCTURED-OUTPUT.md, "Toolsets").

use std::fs::File;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use jouleclaw_stack::structured::{Grammar, MAX_SCHEMA_BYTES, Toolset, ToolsetOptions};

use crate::Failure;
use crate::out::{tell, untrusted};

/// Reads a schema file: at most one byte more than the grammar's schema limit, so that the
/// compiler refuses an over-long one.
pub(crate) fn read_schema_file(path: &Path) -> Result<Vec<u8>, Failure> {
    let max = MAX_SCHEMA_BYTES as u64;
    let file = File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::io(path, e))?;
    Ok(bytes)
}

/// Reads and compiles `--llm-tools` (at most the schema limit is read). A tool whose schema is
/// refused is named on standard error with its code and left out, or, with `strict`
/// (`--strict-tools`), refuses the run.
pub(crate) fn read_toolset(path: &Path, strict: bool) -> Result<Arc<Grammar>, Failure> {
    let bytes = read_schema_file(path)?;
    let options = ToolsetOptions {
        strict,
        ..ToolsetOptions::default()
    };
    let toolset = Toolset::compile(&bytes, &options).map_err(|e| {
        Failure::Usage(format!(
            "{}: {}: {}",
            path.display(),
            e.code(),
            untrusted(&e.to_string())
        ))
    })?;
    for r in toolset.refused() {
        tell!(
            "{}: tool {} left out ({}): {} (--strict-tools refuses the run instead)",
            path.display(),
            untrusted(&r.name),
            r.code,
            untrusted(&r.message)
        );
    }
    tell!(
        "{}: {} tools in one grammar {}",
        path.display(),
        toolset.tools().len(),
        toolset.grammar().digest_prefix()
    );
    Ok(Arc::new(toolset.into_grammar()))
}
