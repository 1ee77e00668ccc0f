//! What the `jouleclaw` command's integration tests share: temporary folders, the binary and
//! its output, a free loopback port, and one JetStream `nats-server` on loopback (all from
//! `jouleclaw-testkit`). A test file takes it with `mod support;`; each uses a part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Output;

#[allow(unused_imports)] // each test file uses a part
pub use jouleclaw_testkit::nats::{NatsServer, nats_server};
#[allow(unused_imports)] // each test file uses a part
pub use jouleclaw_testkit::{TempDir, code, free_port, text};

/// A path of the repository.
pub fn root(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs the `jouleclaw` binary this test build made, from the repository's root.
pub fn jouleclaw(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    jouleclaw_testkit::run(
        env!("CARGO_BIN_EXE_jouleclaw"),
        env!("CARGO_MANIFEST_DIR"),
        args,
    )
}
