//! Properties of the tick trace parser (spec/TICK-TRACE.md), checked by the fuzz target
//! `parse_trace_line` and by `crates/jouleclaw-pipeline/tests/pipeline/fuzz_corpus.rs`.
//!
//! For any bytes: parsing never panics; an accepted line's tick is written back by
//! `write_trace_line` to a line that parses to the same tick (the canonical form is a fixed
//! point), and pushing it into a fresh pipeline either succeeds or is refused with a stable code,
//! never a panic.

/// The properties above, for one fuzz input; panics on a violation.
pub fn check_parse_trace_line(data: &[u8]) {
    use std::sync::Arc;
    let spec = Arc::new(jouleclaw_stream::StreamSpec::duplex_voice_default());
    let Ok(Some(tick)) = jouleclaw_pipeline::trace::parse_trace_line(data, &spec) else {
        return;
    };
    let mut line = String::new();
    jouleclaw_pipeline::trace::write_trace_line(&tick, &spec, &mut line);
    let again = jouleclaw_pipeline::trace::parse_trace_line(line.as_bytes(), &spec);
    assert_eq!(again, Ok(Some(tick.clone())), "{line}");
    let mut again_line = String::new();
    jouleclaw_pipeline::trace::write_trace_line(&tick, &spec, &mut again_line);
    assert_eq!(line, again_line);
    if let Ok(mut p) = jouleclaw_pipeline::demo::pipeline() {
        match p.push(tick) {
            Ok(_) => {
                let _ = p.close_window();
            }
            Err(e) => assert!(!e.code().is_empty()),
        }
    }
}
