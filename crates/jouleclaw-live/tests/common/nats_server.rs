//! Which `nats-server` the tests start: one definition for the live crate's tests and the
//! `jouleclaw` command's (`tests/support`).

use std::path::{Path, PathBuf};

/// `JOULECLAW_NATS_SERVER` when set (suite 41 points it at a newer server), else Debian's.
pub fn nats_server() -> PathBuf {
    if let Some(p) = std::env::var_os("JOULECLAW_NATS_SERVER") {
        return PathBuf::from(p);
    }
    for p in ["/usr/sbin/nats-server", "/usr/bin/nats-server"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("nats-server")
}
