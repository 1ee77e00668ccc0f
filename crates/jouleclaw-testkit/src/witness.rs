//! A real witness for the call registry's tests: one `litewitness` (Go module
//! `filippo.io/torchwood`) on loopback with its own `ssh-agent`, database and key, set up with
//! `witnessctl` to witness one log origin under one steward key.
//!
//! It needs `litewitness`, `witnessctl`, `ssh-agent`, `ssh-add` and `ssh-keygen` on `PATH` or
//! in the Go bin folder; `.ci/suites/25-registry.sh` installs them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, text};

/// A tool from `PATH`, or from the Go bin folder (`$GOBIN`, `$HOME/go/bin`); panics with
/// `NOT RUN: ...` when it is not installed.
pub fn tool(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(d) = std::env::var_os("GOBIN") {
        dirs.push(d.into());
    }
    if let Some(h) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(h).join("go/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!("NOT RUN: {name} is not installed (run .ci/suites/25-registry.sh, which installs it)")
    })
}

/// One litewitness with its own ssh-agent, database and key; the server and the agent are
/// stopped when dropped.
#[derive(Debug)]
pub struct Witness {
    /// The witness's name, `witness.example/w<i>`.
    pub name: String,
    /// The loopback port it listens on (the same across restarts).
    pub port: u16,
    dir: PathBuf,
    fingerprint: String,
    agent: Child,
    server: Option<Child>,
    /// Its verifier key as litewitness logs it (a note verifier key line).
    pub vkey: String,
}

/// Runs a set-up command to success.
fn succeed(cmd: &mut Command, what: &str) -> std::process::Output {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(o.status.success(), "{what}: {}", text(&o));
    o
}

fn utf8(p: &Path) -> &str {
    p.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", p.display()))
}

impl Witness {
    /// Makes witness `i` in `dir/w<i>`, witnessing the log `origin` under the steward key
    /// `steward_vkey`, and starts it.
    pub fn start(dir: &Path, i: usize, origin: &str, steward_vkey: &str) -> Self {
        let dir = dir.join(format!("w{i}"));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let key = dir.join("id");
        succeed(
            Command::new(tool("ssh-keygen"))
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "witness", "-f"])
                .arg(&key),
            "ssh-keygen",
        );
        let sock = dir.join("agent.sock");
        let agent = Command::new(tool("ssh-agent"))
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdout(Stdio::null())
            .spawn()
            .expect("ssh-agent starts");
        wait_for(|| sock.exists(), "ssh-agent socket");
        succeed(
            Command::new(tool("ssh-add"))
                .arg("-q")
                .arg(&key)
                .env("SSH_AUTH_SOCK", &sock),
            "ssh-add",
        );
        let fp = succeed(
            Command::new(tool("ssh-keygen"))
                .args(["-E", "sha256", "-lf"])
                .arg(key.with_extension("pub")),
            "ssh-keygen -lf",
        );
        let fingerprint = String::from_utf8_lossy(&fp.stdout)
            .split_whitespace()
            .nth(1)
            .expect("ssh-keygen prints the key's fingerprint")
            .to_owned();
        let db = dir.join("witness.db");
        let db = utf8(&db);
        for args in [
            vec!["add-log", "-db", db, "-origin", origin],
            vec![
                "add-key",
                "-db",
                db,
                "-origin",
                origin,
                "-key",
                steward_vkey,
            ],
        ] {
            succeed(
                Command::new(tool("witnessctl")).args(&args),
                &format!("witnessctl {args:?}"),
            );
        }
        let mut w = Self {
            name: format!("witness.example/w{i}"),
            port: free_port(),
            dir,
            fingerprint,
            agent,
            server: None,
            vkey: String::new(),
        };
        w.serve();
        w
    }

    /// Starts (or restarts) the server on the same database, port and key.
    pub fn serve(&mut self) {
        let log_path = self.dir.join("server.log");
        let _ = std::fs::remove_file(&log_path);
        let log = std::fs::File::create(&log_path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", log_path.display()));
        let child = Command::new(tool("litewitness"))
            .arg("-db")
            .arg(self.dir.join("witness.db"))
            .arg("-name")
            .arg(&self.name)
            .arg("-key")
            .arg(&self.fingerprint)
            .arg("-ssh-agent")
            .arg(self.dir.join("agent.sock"))
            .arg("-listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("litewitness starts");
        self.server = Some(child);
        let port = self.port;
        wait_for(
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "litewitness listening",
        );
        let logged = std::fs::read_to_string(&log_path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", log_path.display()));
        self.vkey = logged
            .split_whitespace()
            .find_map(|w| w.strip_prefix("vkey="))
            .expect("litewitness logs its verifier key")
            .to_owned();
    }

    /// Stops the server (its database, port and key stay for [`Witness::serve`]).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its line of a witness policy: `witness <vkey> http://127.0.0.1:<port>`.
    pub fn policy_line(&self) -> String {
        format!("witness {} http://127.0.0.1:{}\n", self.vkey, self.port)
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        self.stop();
        let _ = self.agent.kill();
        let _ = self.agent.wait();
    }
}

/// Waits until `ready` holds, polling every 20 ms; panics after 15 s.
pub fn wait_for(mut ready: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "{what} not ready within 15 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
