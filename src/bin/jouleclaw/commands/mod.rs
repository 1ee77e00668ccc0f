//! The commands: each file holds a command's arguments and what it does.

pub(crate) mod audit;
pub(crate) mod import;
pub(crate) mod interaction;
pub(crate) mod journal;
pub(crate) mod keygen;
pub(crate) mod live;
pub(crate) mod receipt;
pub(crate) mod receipts;
pub(crate) mod registry;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod stop_latency;
pub(crate) mod stream_dir;
pub(crate) mod tools;
pub(crate) mod transcribe;
pub(crate) mod vectors;
