//! The properties the fuzz targets of `fuzz/` check on every input, one module per target,
//! each behind the feature of its name. A check panics on a violated property (that is what
//! the fuzzer catches); the crates' corpus replay tests (`fuzz_corpus.rs`) run the same checks on every file
//! of the committed corpus through [`crate::corpus::replay_committed_corpus`].

#[cfg(feature = "parse-trace-line")]
mod parse_trace_line;
#[cfg(feature = "structured-validate")]
mod structured_validate;
#[cfg(feature = "verify-sequence")]
mod verify_sequence;

#[cfg(feature = "parse-trace-line")]
pub use parse_trace_line::check_parse_trace_line;
#[cfg(feature = "structured-validate")]
pub use structured_validate::{FUZZ_SCHEMAS, check_structured_validate};
#[cfg(feature = "verify-sequence")]
pub use verify_sequence::check_verify_sequence;
