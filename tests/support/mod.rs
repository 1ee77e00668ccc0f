//! What the `jouleclaw` command's integration tests share: temporary folders, the binary and
//! its output, a free loopback port, and one JetStream `nats-server` on loopback. A test file
//! takes it with `mod support;`; each uses a part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

#[path = "../../crates/jouleclaw-live/tests/common/nats_server.rs"]
mod nats_server;
#[allow(unused_imports)] // the test files that start no server
pub use nats_server::{NatsServer, free_port, nats_server};

/// A folder under the system's temporary folder, named by the test file's tag, the process and
/// a counter (tests of one binary run in parallel), removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty folder `jouleclaw-<tag>-<pid>-<n>`.
    pub fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "jouleclaw-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// A path inside the folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `bytes` to a new file inside the folder and returns its path.
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A path of the repository.
pub fn root(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs the `jouleclaw` binary this test build made, from the repository's root.
pub fn jouleclaw(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jouleclaw"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap()
}

/// Standard output then standard error, as text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The exit code (-1 when a signal ended the process).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}
