//! The pipeline crate's integration tests, one binary: the driver, its two halves, signing
//! policies, the stage seam and the trace formats. (The fuzz corpus replay is
//! `tests/fuzz_corpus.rs`, where the fuzz targets name it.)

mod driver;
mod halves;
mod sealing;
mod stage;
mod trace;
