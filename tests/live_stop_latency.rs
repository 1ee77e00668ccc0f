//! `jouleclaw live` into a file folder: every stream folder holds its signed
//! `stop-latency.cbor` beside its receipts and passes `receipts verify DIR`; the document
//! altered, taken from another call or removed is refused. (Removed is the folder as `live`
//! wrote it before it measured stop latency: four files, and a barge-in in the receipts.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "jouleclaw-live-stop-latency-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn jouleclaw(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jouleclaw"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap()
}

fn verify(public: &Path, dir: &Path) -> Output {
    jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &dir])
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn live_file_sink_stream_folders_pass_receipts_verify_with_their_stop_latency() {
    let t = TempDir::new("file");
    let out = t.0.join("live");
    // Four calls of 3 s (15 windows): each barges in at window 5; calls 1 and 3 keep talking.
    let o = jouleclaw(&[
        &"live",
        &"--streams",
        &"4",
        &"--seconds",
        &"3",
        &"--ignore-every",
        &"2",
        &"--prefix",
        &"call",
        &"--sink",
        &format!("file:{}", out.display()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let public = out.join("signer.pub");
    let mut with_barge_in = Vec::new();
    for i in 0..4 {
        let dir = out.join(format!("call-{i}"));
        assert!(dir.join("stop-latency.cbor").is_file(), "call-{i}");
        let o = verify(&public, &dir);
        let stdout = text(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "call-{i}: {stdout}{}",
            text(&o.stderr)
        );
        assert!(
            stdout.contains("stop-latency.cbor: verified and bound to the receipts"),
            "call-{i}: {stdout}"
        );
        if stdout.contains("stop latency over 1 barge-ins") {
            with_barge_in.push(dir);
        }
    }
    // Real time: a barge-in refused as late on a loaded machine leaves its call without one;
    // the calls that took theirs are the ones the refusals below are about.
    assert!(!with_barge_in.is_empty(), "no call recorded its barge-in");
    let o = jouleclaw(&[&"audit", &"--pub", &public, &"--dir", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));

    let dir = &with_barge_in[0];
    let doc = dir.join("stop-latency.cbor");
    let good = std::fs::read(&doc).unwrap();
    // One byte of the signed payload changed.
    let mut altered = good.clone();
    let i = altered.len() - 80;
    altered[i] ^= 1;
    std::fs::write(&doc, &altered).unwrap();
    let o = verify(&public, dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("stop-latency.cbor"),
        "{}",
        text(&o.stderr)
    );
    // Another call's document.
    let other = out.join(if dir.ends_with("call-0") {
        "call-1"
    } else {
        "call-0"
    });
    std::fs::copy(other.join("stop-latency.cbor"), &doc).unwrap();
    let o = verify(&public, dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("stream_mismatch"),
        "{}",
        text(&o.stderr)
    );
    // Removed: the receipts record a barge-in.
    std::fs::remove_file(&doc).unwrap();
    let o = verify(&public, dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("stop_latency_missing"),
        "{}",
        text(&o.stderr)
    );
    // Put back as written: accepted again.
    std::fs::write(&doc, &good).unwrap();
    assert_eq!(verify(&public, dir).status.code(), Some(0));
}
