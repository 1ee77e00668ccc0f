//! What the jouleclaw crates' tests share, so that no test includes a file from another
//! crate's folder:
//!
//! - [`TempDir`], a self-removing temporary folder;
//! - [`check_generated`], a generated vector file checked against what its generator builds;
//! - [`line_count`], the lines of a text file;
//! - [`run`], [`text`], [`assert_contains`] and [`code`]: a command line binary run to
//!   completion, its output as text (and a check of a part of it) and its exit code;
//! - [`nats`]: one JetStream `nats-server` on loopback;
//! - [`witness`]: one `litewitness` with its own `ssh-agent`, database and key;
//! - [`repo`]: the repository's shared files (`conformance/`, `examples/golden/`,
//!   `fuzz/corpus/`), found at run time above the test's crate, and a test that returns when
//!   the crate is built alone (a test of this crate fails when any crate's `.rs` file
//!   includes, with `include_str!`, `include_bytes!` or `include!`, a path outside its folder);
//! - [`corpus`]: the committed fuzz seed corpora (`fuzz/corpus/<target>/`) and their replay;
//! - `receipts` (feature `receipts`): the seed stream-window/1 receipt, signed and unsigned,
//!   and a strict decoder fed chunk by chunk;
//! - [`fuzz`]: the properties the fuzz targets check, behind one feature per target, shared by
//!   the targets and by the crates' corpus replay tests (`fuzz_corpus.rs`).
//!
//! A fixture that cannot do its work (a folder that cannot be made, a server that does not
//! start) panics with the reason: in a test that is the failure to report.
#![forbid(unsafe_code)]
#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a fixture that cannot start fails the test that uses it"
)]

pub mod corpus;
pub mod fuzz;
#[cfg(test)]
mod include_check;
pub mod nats;
#[cfg(feature = "receipts")]
pub mod receipts;
pub mod repo;
pub mod witness;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// A folder under the system's temporary folder, named by a tag, the process and a counter
/// (the tests of one binary run in parallel), removed with its contents when dropped.
#[derive(Debug)]
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
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        Self(dir)
    }

    /// The folder itself.
    pub fn dir(&self) -> &Path {
        &self.0
    }

    /// A path inside the folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `bytes` to a file inside the folder and returns its path.
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", p.display()));
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Rewrites the generated file `path` with `bytes` as one step: written beside it under a
/// name of this process, then renamed over it, so that another test of the same binary reading
/// the file meanwhile sees the old bytes or the new, never a half-written file.
#[track_caller]
pub fn write_generated(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) {
    let path = path.as_ref();
    let mut staged = path.as_os_str().to_owned();
    staged.push(format!(".regen-{}", std::process::id()));
    let staged = PathBuf::from(staged);
    std::fs::write(&staged, bytes)
        .and_then(|()| std::fs::rename(&staged, path))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Writes `built` to `path` when `JOULECLAW_REGEN_VECTORS` is set, then asserts that the
/// file holds exactly `built` (a generated vector or schema file that is not stale); `regen`
/// tells how to rewrite it.
#[track_caller]
pub fn check_generated(path: impl AsRef<Path>, built: &str, regen: &str) {
    let path = path.as_ref();
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        write_generated(path, built);
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(on_disk == built, "{} is stale; {regen}", path.display());
}

/// Runs `bin` with `args` from the folder `cwd` to completion and returns what it did.
/// (A test of a package's binary passes `env!("CARGO_BIN_EXE_<name>")`.)
pub fn run(bin: impl AsRef<OsStr>, cwd: impl AsRef<Path>, args: &[&dyn AsRef<OsStr>]) -> Output {
    let bin = bin.as_ref();
    Command::new(bin)
        .current_dir(cwd)
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", Path::new(bin).display()))
}

/// Standard output then standard error, as text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts that standard output then standard error of `o` contain `needle`, and shows both
/// when they do not.
#[track_caller]
pub fn assert_contains(o: &Output, needle: &str) {
    let out = text(o);
    assert!(out.contains(needle), "{needle:?} is not in:\n{out}");
}

/// The number of lines of the text file at `path` (records of a JSON Lines file).
pub fn line_count(path: impl AsRef<Path>) -> usize {
    let path = path.as_ref();
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .count()
}

/// The exit code (-1 when a signal ended the process).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// A loopback port nothing listens on at the time of the call, below the kernel's ephemeral
/// port range (`/proc/sys/net/ipv4/ip_local_port_range`): the local port of every outgoing
/// connection on the machine comes from that range, so a port taken from it can be taken again
/// by a connection before a server binds it, or between a server's stop and its restart on the
/// same port (a fresh JetStream cluster with one node missing never elects its meta leader).
/// Each call in a process tries the next port of a sequence that starts at a place drawn from
/// the process id and the time, so parallel test processes rarely try the same ports.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    const LOW: u32 = 10_000;
    let top = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .filter(|&low| low > LOW + 1_000)
        .unwrap_or(32_768);
    let span = top - LOW;
    if NEXT.load(Ordering::Relaxed) == u32::MAX {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let start = (std::process::id().wrapping_mul(7_919) ^ nanos) % span;
        let _ = NEXT.compare_exchange(u32::MAX, start, Ordering::Relaxed, Ordering::Relaxed);
    }
    for _ in 0..span {
        let k = NEXT.fetch_add(1, Ordering::Relaxed) % span;
        let port = u16::try_from(LOW + k).expect("below the ephemeral range, so below 65536");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below the ephemeral range")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_free_and_below_the_ephemeral_range() {
        let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(32_768);
        let ports: Vec<u16> = (0..20).map(|_| free_port()).collect();
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for p in ports {
            assert!((10_000..low).contains(&p), "{p} is not below {low}");
            std::net::TcpListener::bind(("127.0.0.1", p)).expect("the port is free");
        }
    }

    #[test]
    fn a_temp_dir_is_made_empty_and_removed_when_dropped() {
        let t = TempDir::new("testkit");
        let other = TempDir::new("testkit");
        assert_ne!(t.dir(), other.dir());
        let p = t.write("a", b"x");
        assert_eq!(std::fs::read(&p).ok(), Some(b"x".to_vec()));
        let dir = t.dir().to_path_buf();
        drop(t);
        assert!(!dir.exists());
        assert!(other.dir().is_dir());
    }

    #[test]
    fn run_gives_the_output_and_the_exit_code() {
        let t = TempDir::new("testkit");
        let o = run("sh", t.dir(), &[&"-c", &"pwd; echo err >&2; exit 3"]);
        assert_eq!(code(&o), 3);
        let out = text(&o);
        assert!(out.ends_with("err\n"), "{out}");
        assert!(out.contains("jouleclaw-testkit-"), "{out}");
        assert_contains(&o, "err\n");
        let missing = std::panic::catch_unwind(|| assert_contains(&o, "absent"));
        assert!(missing.is_err());
    }
}
