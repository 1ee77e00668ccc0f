//! `jouleclaw live` end to end through the command: every stream folder of the file sink holds
//! its signed `stop-latency.cbor` and passes `receipts verify DIR` (the document altered, taken
//! from another call or removed is refused; removed is the folder as `live` wrote it before it
//! measured stop latency: four files, and a barge-in in the receipts); and `--registry DIR`
//! registers each call whose final seal is signed with the leaf `jouleclaw registry add` makes
//! of it, its arguments checked before anything runs; failed streams are counted and listed
//! once each. The JetStream registration and `journal replay --abandon` need nats-server and
//! are `#[ignore]`d (run by `.ci/suites/14-live-cluster.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{NatsServer, TempDir, assert_contains, jouleclaw, text};
use std::path::{Path, PathBuf};
use std::process::Output;

/// `jouleclaw live --streams N --seconds S --prefix call ARGS...`.
fn live(streams: u32, seconds: u32, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let (n, s) = (streams.to_string(), seconds.to_string());
    let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"live",
        &"--streams",
        &n,
        &"--seconds",
        &s,
        &"--prefix",
        &"call",
    ];
    all.extend_from_slice(args);
    jouleclaw(&all)
}

fn verify(public: &Path, dir: &Path) -> Output {
    jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &dir])
}

/// `receipts verify` of `dir` refuses it (exit 1) and names `why`.
fn refused_naming(public: &Path, dir: &Path, why: &str) {
    let o = verify(public, dir);
    assert_eq!(o.status.code(), Some(1), "{why}: {}", text(&o));
    assert!(text(&o).contains(why), "{why}: {}", text(&o));
}

#[test]
fn live_file_sink_stream_folders_pass_receipts_verify_with_their_stop_latency() {
    let t = TempDir::new("stop-latency");
    let out = t.path("live");
    // Four calls of 3 s (15 windows): each barges in at window 5; calls 1 and 3 keep talking.
    let sink = format!("file:{}", out.display());
    let o = live(4, 3, &[&"--ignore-every", &"2", &"--sink", &sink]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Its last line says whether it kept up with its schedule (4 calls x 15 windows).
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("verdict     kept up: ")
            || last.starts_with("verdict     fell behind by "),
        "{stdout}"
    );
    assert!(stdout.contains("schedule    60 windows and "), "{stdout}");
    let public = out.join("signer.pub");
    let mut with_barge_in = Vec::new();
    for i in 0..4 {
        let dir = out.join(format!("call-{i}"));
        assert!(dir.join("stop-latency.cbor").is_file(), "call-{i}");
        let o = verify(&public, &dir);
        assert_eq!(o.status.code(), Some(0), "call-{i}: {}", text(&o));
        for document in ["stop-latency.cbor", "interaction-metrics.cbor"] {
            assert!(
                text(&o).contains(&format!("{document}: verified and bound to the receipts")),
                "call-{i}: {}",
                text(&o)
            );
        }
        if text(&o).contains("stop latency over 1 barge-ins") {
            with_barge_in.push(dir);
        }
    }
    // Real time: a barge-in refused as late on a loaded machine leaves its call without one;
    // the calls that took theirs are the ones the refusals below are about.
    assert!(!with_barge_in.is_empty(), "no call recorded its barge-in");
    let o = jouleclaw(&[&"audit", &"--pub", &public, &"--dir", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let dir = &with_barge_in[0];
    let doc = dir.join("stop-latency.cbor");
    let good = std::fs::read(&doc).unwrap();
    // One byte of the signed payload changed.
    let mut altered = good.clone();
    let i = altered.len() - 80;
    altered[i] ^= 1;
    std::fs::write(&doc, &altered).unwrap();
    refused_naming(&public, dir, "stop-latency.cbor: cose_bad_signature");
    // Another call's document.
    let other = if dir.ends_with("call-0") {
        "call-1"
    } else {
        "call-0"
    };
    std::fs::copy(out.join(other).join("stop-latency.cbor"), &doc).unwrap();
    refused_naming(&public, dir, "stream_mismatch");
    // Removed: the receipts record a barge-in.
    std::fs::remove_file(&doc).unwrap();
    refused_naming(&public, dir, "stop_latency_missing");
    // Put back as written: accepted again.
    std::fs::write(&doc, &good).unwrap();
    assert_eq!(verify(&public, dir).status.code(), Some(0));
}

/// A steward key and two empty registries signed by it.
fn setup(t: &TempDir) -> (PathBuf, PathBuf, PathBuf) {
    let key = t.path("steward.key");
    let o = jouleclaw(&[
        &"keygen",
        &"--out",
        &key,
        &"--pub-out",
        &t.path("steward.pub"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (reg, reg2) = (t.path("reg"), t.path("reg2"));
    for r in [&reg, &reg2] {
        let o = jouleclaw(&[
            &"registry",
            &"init",
            r,
            &"--origin",
            &"example.com/live",
            &"--key",
            &key,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    (key, reg, reg2)
}

fn leaves(reg: &Path) -> Vec<String> {
    std::fs::read_to_string(reg.join("leaves.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Each folder registered again by `registry add` into `reg2`: the same leaves, in order.
fn assert_same_leaves_as_registry_add(key: &Path, reg: &Path, reg2: &Path, folders: &[PathBuf]) {
    for f in folders {
        // A copy without the proof `live` wrote (`registry add` writes its own).
        let copy = reg2.with_extension(f.file_name().unwrap().to_str().unwrap());
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(f.join("seals.cbor"), copy.join("seals.cbor")).unwrap();
        let o = jouleclaw(&[&"registry", &"add", &reg2, &copy, &"--key", &key]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let got = leaves(reg);
    assert_eq!(got.len(), folders.len());
    assert_eq!(got, leaves(reg2));
}

#[test]
fn live_registers_each_sealed_file_sink_call_with_the_leaf_registry_add_makes() {
    let t = TempDir::new("file");
    let (key, reg, reg2) = setup(&t);
    let out = t.path("out");
    let sink = format!("file:{}", out.display());
    let o = live(
        3,
        2,
        &[&"--key", &key, &"--sink", &sink, &"--registry", &reg],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_contains(&o, "registry    3 calls registered");
    let folders: Vec<PathBuf> = (0..3).map(|i| out.join(format!("call-{i}"))).collect();
    for f in &folders {
        assert!(f.join("registry.tlog-proof").is_file(), "{}", f.display());
        // The folder still verifies as a stream directory.
        let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &t.path("steward.pub"), f]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    assert!(leaves(&reg)[1].contains("\"stream_id\":\"call-1\""));
    assert_same_leaves_as_registry_add(&key, &reg, &reg2, &folders);
}

#[test]
fn live_registry_arguments_are_checked_before_anything_runs() {
    let t = TempDir::new("args");
    let (key, reg, _) = setup(&t);
    let out = t.path("out");
    let sink = format!("file:{}", out.display());
    let refused = |args: &[&dyn AsRef<std::ffi::OsStr>], why: &str| {
        let o = live(1, 1, args);
        assert_eq!(o.status.code(), Some(2), "{why}: {}", text(&o));
        assert!(text(&o).contains(why), "{why}: {}", text(&o));
        assert!(!out.exists(), "{why}: the sink folder was made");
    };
    refused(&[&"--sink", &sink, &"--registry", &reg], "needs --key");
    refused(
        &[
            &"--sink",
            &sink,
            &"--key",
            &key,
            &"--registry",
            &t.path("none"),
        ],
        "registry_unusable",
    );
    // Another steward's registry: refused before the calls, nothing run, nothing appended.
    let other = t.path("other.key");
    assert_eq!(
        jouleclaw(&[&"keygen", &"--out", &other]).status.code(),
        Some(0)
    );
    refused(
        &[&"--sink", &sink, &"--key", &other, &"--registry", &reg],
        "signed by another key",
    );
    refused(
        &[
            &"--sink",
            &sink,
            &"--key",
            &key,
            &"--registry",
            &reg,
            &"--registry-proofs",
            &t.path("p"),
        ],
        "is for a NATS sink",
    );
    refused(
        &[
            &"--sink",
            &"nats://127.0.0.1:1",
            &"--journal",
            &t.path("j"),
            &"--key",
            &key,
            &"--registry",
            &reg,
        ],
        "needs --registry-proofs",
    );
    assert!(leaves(&reg).is_empty());
}

#[test]
#[ignore = "needs nats-server: run by scripts/test-all (.ci/suites/14-live-cluster.sh)"]
fn live_registers_each_jetstream_call_from_its_final_batchs_seal() {
    let t = TempDir::new("nats");
    let (key, reg, reg2) = setup(&t);
    let server = NatsServer::start(&t.path("js"));
    let url = server.url.clone();
    let proofs = t.path("proofs");
    let public = t.path("steward.pub");
    let journal = t.path("live.journal");
    let o = live(
        3,
        2,
        &[
            &"--key",
            &key,
            &"--sink",
            &url,
            &"--journal",
            &journal,
            &"--registry",
            &reg,
            &"--registry-proofs",
            &proofs,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_contains(&o, "registry    3 calls registered");
    // What the cluster holds is what was registered: the audit finds the three calls
    // complete, and each stored final seal is the one registered.
    let o = jouleclaw(&[&"audit", &"--pub", &public, &"--nats", &url, &"--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let folders: Vec<PathBuf> = (0..3).map(|i| proofs.join(format!("call-{i}"))).collect();
    for f in &folders {
        assert!(f.join("registry.tlog-proof").is_file(), "{}", f.display());
    }
    assert_same_leaves_as_registry_add(&key, &reg, &reg2, &folders);
}

#[test]
fn live_counts_and_lists_each_failed_stream_once() {
    let t = TempDir::new("failed-streams");
    let out = t.path("live");
    // Two of three calls find their folder taken (left by another run): each fails
    // `stream_exists` at its first checkpoint, then its later pushes and its close are refused
    // `stream_failed`: one failed stream, not three failures.
    std::fs::create_dir_all(out.join("call-0.partial")).unwrap();
    std::fs::create_dir_all(out.join("call-2")).unwrap();
    let sink = format!("file:{}", out.display());
    let o = live(3, 2, &[&"--checkpoint-every", &"2", &"--sink", &sink]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.contains(", 2 failed"), "{all}");
    assert!(all.contains("2 streams failed"), "{all}");
    for id in ["call-0", "call-2"] {
        assert_eq!(
            all.matches(&format!("failed stream {id}:")).count(),
            1,
            "{id}: {all}"
        );
    }
    // The neighbour: the stream whose folder was free is sealed and not listed.
    assert!(!all.contains("failed stream call-1"), "{all}");
    assert!(out.join("call-1").join("seals.cbor").is_file());
}

#[test]
#[ignore = "needs nats-server: run by scripts/test-all (.ci/suites/14-live-cluster.sh)"]
fn journal_replay_names_an_undeliverable_record_and_abandons_it_only_when_asked() {
    use jouleclaw_live::journal::{Journal, MAGIC};
    let t = TempDir::new("abandon");
    let server = NatsServer::start(&t.path("js"));
    let journal = t.path("live.journal");
    // A record whose checksum holds but which is no batch: before, every replay exited 2
    // without naming it, and the journal could never be cleared.
    let mut j = Journal::create(&journal, 1 << 20).unwrap();
    j.append(&[("jouleclaw.s.x", b"no batch at all", 1)])
        .pop()
        .unwrap()
        .unwrap();
    drop(j);
    let offset = MAGIC.len().to_string();
    let replay = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"journal", &"replay", &journal, &"--sink", &server.url];
        args.extend_from_slice(extra);
        jouleclaw(&args)
    };
    let o = replay(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "undeliverable the record at offset {offset}: not a batch"
        )),
        "{}",
        text(&o)
    );
    assert_contains(&o, &format!("--abandon {offset}"));
    // An offset that is no undelivered record: refused (exit 2), nothing written.
    let before = std::fs::read(&journal).unwrap();
    let o = replay(&[&"--abandon", &"21"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(std::fs::read(&journal).unwrap(), before);
    // Asked to, it is abandoned: exit 0, and a new run may start on the journal.
    let o = replay(&[&"--abandon", &offset]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_contains(&o, "abandoned   the record at offset");
    assert_eq!(
        Journal::create(&journal, 1 << 20)
            .unwrap()
            .undelivered_count(),
        0
    );
}
