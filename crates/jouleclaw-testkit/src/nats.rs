//! Starting `nats-server` in tests, for the live crate's tests and the `jouleclaw` command's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub use crate::free_port;

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

/// One `nats-server -js` on a free loopback port, its store in a given folder; killed when
/// dropped.
#[derive(Debug)]
pub struct NatsServer {
    child: Child,
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
}

impl NatsServer {
    /// Starts the server (clients retry their first connection until it listens).
    pub fn start(store: &Path) -> Self {
        let port = free_port();
        let child = Command::new(nats_server())
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server");
        Self {
            child,
            url: format!("nats://127.0.0.1:{port}"),
        }
    }

    /// The server's process id (to freeze it with `kill -STOP`: it then holds its connections
    /// and answers nothing).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
