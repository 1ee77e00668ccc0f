//! The pipeline crate's integration tests, one binary: the driver, its two halves, signing
//! policies, the stage seam, the trace formats and the replay of the committed fuzz corpus.

mod driver;
mod fuzz_corpus;
mod halves;
mod sealing;
mod stage;
mod trace;
