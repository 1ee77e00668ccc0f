//! A Rust user registers a sealed call with the library alone (no `jouleclaw` command): a
//! registry directory made by [`Registry::create`], a sealed run directory (its `seals.cbor`
//! written from `jouleclaw_seal::StreamSealer` checkpoints), [`Appender::register_run`], and
//! the call's proof checked with [`verify_run`].
//!
//! Without the `witness-http` feature the registration is not witnessed; with it
//! (`cargo test -p jouleclaw-registry --features witness-http`) a witness stand-in on loopback
//! (an in-process HTTP responder that answers `add-checkpoint` with a cosignature/v1 line made
//! by [`cosignature_line`]: it checks no consistency proof and keeps no state, unlike a real
//! witness; the real one, litewitness, is run by the workspace's tests/registry.rs) cosigns the
//! checkpoint and the proof verifies under a quorum-1 policy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer as _, SoftwareSigner};
use jouleclaw_registry::*;
use jouleclaw_seal::StreamSealer;
use jouleclaw_store::layout::SEALS_CBOR;

const ORIGIN: &str = "registry.example/steward";

fn steward() -> SoftwareSigner {
    SoftwareSigner::from_seed(&[7; 32])
}

/// An empty registry at `root/reg`.
fn registry(root: &Path, signer: &SoftwareSigner) -> PathBuf {
    let dir = root.join("reg");
    let key = NoteKey::new(ORIGIN, ALG_ED25519, signer.verifying_key().as_bytes()).unwrap();
    Registry::create(&dir, &key, &[]).unwrap();
    dir
}

/// A sealed run directory `root/name` of three windows: an intermediate and a final seal
/// checkpoint (or only the intermediate one when `ended` is false) in `seals.cbor`.
fn sealed_run(
    root: &Path,
    name: &str,
    stream_id: &str,
    signer: &SoftwareSigner,
    ended: bool,
) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).unwrap();
    let at = UtcSecond::parse("2026-06-05T00:00:00Z").unwrap();
    let mut sealer = StreamSealer::new(stream_id, "did:example:steward", 1 << 10);
    let mut seals = Vec::new();
    for w in 1..=3u64 {
        sealer
            .append(w, blake3::hash(&w.to_be_bytes()).as_bytes(), at)
            .unwrap();
        if w == 2 {
            seals.extend(
                sealer
                    .checkpoint(signer, false)
                    .unwrap()
                    .checkpoint
                    .cose_sign1,
            );
        }
    }
    if ended {
        seals.extend(
            sealer
                .checkpoint(signer, true)
                .unwrap()
                .checkpoint
                .cose_sign1,
        );
    }
    write_file(&dir.join(SEALS_CBOR), &seals, &[]).unwrap();
    dir
}

#[test]
fn a_sealed_run_is_registered_without_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    let run = sealed_run(tmp.path(), "run", "call-1", &signer, true);

    let mut appender = Appender::open(&reg, steward(), None, None).unwrap();
    let first = appender.register_run(&run).unwrap();
    assert_eq!((first.index, first.size), (0, 1));
    assert_eq!(first.stream_id, "call-1");
    assert!(first.earlier.is_empty());
    assert_eq!(first.quorum, None);
    assert!(first.witnesses.is_empty());
    first.witnessed().unwrap();
    // The proof is written beside the run, and it is the registration's.
    assert_eq!(std::fs::read(run.join(PROOF_FILE)).unwrap(), first.proof);
    let proof = CallProof::parse(&first.proof).unwrap();
    assert_eq!(
        proof.seal_cose,
        final_seal_of(&run, &signer.verifying_key()).unwrap()
    );
    // One canonical leaf line on disk, a checkpoint of size 1 signed by the steward.
    let leaves = std::fs::read(reg.join(LEAVES_FILE)).unwrap();
    assert_eq!(leaves.iter().filter(|&&b| b == b'\n').count(), 1);
    let note = std::fs::read(reg.join(CHECKPOINT_FILE)).unwrap();
    let stewards_key =
        NoteKey::new(ORIGIN, ALG_ED25519, signer.verifying_key().as_bytes()).unwrap();
    assert_eq!(
        verify_checkpoint_note(&note, &stewards_key, &[])
            .unwrap()
            .body
            .size,
        1
    );

    // The lock is held while the appender lives: a second writer is refused.
    let busy = Appender::open(&reg, steward(), None, None).unwrap_err();
    assert_eq!(busy.code(), "registry_unusable");
    assert!(!busy.is_refusal());
    assert!(
        busy.to_string()
            .contains("another jouleclaw is writing this registry"),
        "{busy}"
    );

    // A second registration of the same call is a second leaf, and says so.
    let again = appender.register_run(&run).unwrap();
    assert_eq!(
        (again.index, again.size, again.earlier.clone()),
        (1, 2, vec![0])
    );
    drop(appender);

    // Read back unlocked: the leaves rebuild the log, and the proof of the run is the latest
    // checkpoint's (the second leaf's index is found first only if it is the one held).
    let opened = Registry::open(&reg).unwrap();
    assert_eq!(opened.log().size(), 2);
    let (from_disk, size) = opened.proof_of_run(&run).unwrap().unwrap();
    assert_eq!(size, 2);
    assert_eq!(
        from_disk.checkpoint,
        std::fs::read(reg.join(CHECKPOINT_FILE)).unwrap()
    );
}

#[test]
fn a_call_that_has_not_ended_is_refused_and_nothing_is_appended() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    let open = sealed_run(tmp.path(), "open", "call-2", &signer, false);
    let mut appender = Appender::open(&reg, steward(), None, None).unwrap();
    let e = appender.register_run(&open).unwrap_err();
    assert_eq!(e.code(), "registration_refused");
    assert!(e.is_refusal());
    assert!(e.to_string().contains("is not final"), "{e}");
    // A directory without seals.cbor is unreadable, not refused.
    let e = appender.register_run(tmp.path()).unwrap_err();
    assert_eq!((e.code(), e.is_refusal()), ("run_unreadable", false));
    assert_eq!(std::fs::read(reg.join(LEAVES_FILE)).unwrap(), b"");
    assert!(!open.join(PROOF_FILE).exists());
    assert!(!reg.join(CHECKPOINT_FILE).exists());
    // The accepted neighbour: the same call ended registers.
    let ended = sealed_run(tmp.path(), "ended", "call-2", &signer, true);
    assert_eq!(appender.register_run(&ended).unwrap().index, 0);
}

#[test]
fn another_stewards_key_and_a_planted_link_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    let other = SoftwareSigner::from_seed(&[8; 32]);
    let e = Appender::open(&reg, other, None, None).unwrap_err();
    assert_eq!(e.code(), "registry_unusable");
    assert!(e.to_string().contains("signed by another key"), "{e}");
    // leaves.jsonl replaced by a symbolic link: refused unread, never followed.
    let elsewhere = tmp.path().join("elsewhere.jsonl");
    std::fs::write(&elsewhere, b"").unwrap();
    std::fs::remove_file(reg.join(LEAVES_FILE)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, reg.join(LEAVES_FILE)).unwrap();
    let e = Registry::open(&reg).unwrap_err();
    assert_eq!(e.code(), "file_refused");
    assert!(
        e.to_string().contains("not a regular file; refused unread"),
        "{e}"
    );
}

/// A witness's signer and cosignature/v1 key, and the quorum-1 policy of the steward with that
/// witness at `url` (none: a witness without a submission URL).
fn one_witness_policy(url: Option<&str>) -> (SoftwareSigner, NoteKey, WitnessPolicy) {
    let witness = SoftwareSigner::from_seed(&[9; 32]);
    let wkey = NoteKey::new(
        "witness.example/w1",
        ALG_COSIGNATURE_V1,
        witness.verifying_key().as_bytes(),
    )
    .unwrap();
    let skey = NoteKey::new(ORIGIN, ALG_ED25519, steward().verifying_key().as_bytes()).unwrap();
    let text = format!(
        "log {}\nwitness {} {}\nquorum 1\n",
        skey.vkey(),
        wkey.vkey(),
        url.unwrap_or_default()
    );
    (witness, wkey, WitnessPolicy::parse(&text).unwrap())
}

#[test]
fn a_run_without_a_proof_is_not_registered_for_a_verifier() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let run = sealed_run(tmp.path(), "run", "call-3", &signer, true);
    let (_, _, policy) = one_witness_policy(None);
    let e = verify_run(&run, &policy).unwrap_err();
    assert_eq!(e.code(), "refused");
    assert!(e.to_string().contains("the call is not registered"), "{e}");
}

/// A witness stand-in on loopback: answers each `add-checkpoint` with a cosignature/v1 line
/// over the note it was sent, for `requests` requests, then ends.
#[cfg(feature = "witness-http")]
fn stand_in_witness(
    listener: std::net::TcpListener,
    signer: SoftwareSigner,
    key: NoteKey,
    requests: usize,
) -> std::thread::JoinHandle<usize> {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    std::thread::spawn(move || {
        let mut answered = 0;
        for _ in 0..requests {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let at = body.windows(2).position(|w| w == b"\n\n").unwrap();
            let note = &body[at + 2..];
            let line = cosignature_line(note, &key, &signer, 1_780_000_000).unwrap();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                line.len()
            )
            .unwrap();
            stream.write_all(&line).unwrap();
            answered += 1;
        }
        answered
    })
}

#[cfg(feature = "witness-http")]
#[test]
fn a_registration_cosigned_by_a_quorum_verifies_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    let run = sealed_run(tmp.path(), "run", "call-4", &signer, true);
    // The stand-in listens before the policy names its address.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (witness, wkey, policy) = one_witness_policy(Some(&url));
    let server = stand_in_witness(listener, witness, wkey, 1);

    let mut appender = Appender::open(&reg, steward(), None, Some(policy.clone())).unwrap();
    let r = appender.register_run(&run).unwrap();
    assert_eq!(server.join().unwrap(), 1);
    assert_eq!(r.witnesses, vec!["witness.example/w1: cosigned".to_owned()]);
    assert_eq!(r.quorum.as_ref().map(|q| q.cosigned.clone()), Some(Ok(1)));
    r.witnessed().unwrap();
    let verified = verify_run(&run, &policy).unwrap();
    assert_eq!((verified.index, verified.checkpoint.body.size), (0, 1));
    assert_eq!(verified.witnessed_by(), Some(1_780_000_000));
}

#[cfg(not(feature = "witness-http"))]
#[test]
fn without_the_http_feature_a_witness_is_not_asked_and_the_call_is_not_witnessed() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    let run = sealed_run(tmp.path(), "run", "call-5", &signer, true);
    let (_, _, policy) = one_witness_policy(Some("http://127.0.0.1:9"));
    let mut appender = Appender::open(&reg, steward(), None, Some(policy)).unwrap();
    let r = appender.register_run(&run).unwrap();
    assert!(
        r.witnesses[0].contains("built without its `witness-http` feature"),
        "{:?}",
        r.witnesses
    );
    let e = r.witnessed().unwrap_err();
    assert_eq!((e.code(), e.is_refusal()), ("not_witnessed", true));
    // Everything is written all the same.
    assert!(run.join(PROOF_FILE).is_file());
}

#[test]
fn the_files_refusals_have_their_codes_and_exit_classes() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    // A second locked opening while one is held.
    let held = Registry::open_locked(&reg).unwrap();
    let e = Registry::open_locked(&reg).unwrap_err();
    assert_eq!((e.code(), e.is_refusal()), ("registry_locked", false));
    assert_eq!(
        e.to_string(),
        format!(
            "{}: another jouleclaw is writing this registry",
            reg.display()
        )
    );
    drop(held);
    // The accepted neighbour: released, it opens.
    assert_eq!(Registry::open_locked(&reg).unwrap().log().size(), 0);

    // A proof destination that is a directory: refused before anything is appended.
    let run = sealed_run(tmp.path(), "run", "call-6", &signer, true);
    std::fs::create_dir(run.join(PROOF_FILE)).unwrap();
    let mut appender = Appender::open(&reg, steward(), None, None).unwrap();
    let e = appender.register_run(&run).unwrap_err();
    assert_eq!((e.code(), e.is_refusal()), ("registry_write_failed", false));
    assert!(e.to_string().ends_with("; nothing appended"), "{e}");
    assert_eq!(std::fs::read(reg.join(LEAVES_FILE)).unwrap(), b"");

    // A policy of another steward for a verifier's key; a missing policy file.
    let (_, _, policy) = one_witness_policy(None);
    let path = tmp.path().join("policy");
    std::fs::write(
        &path,
        format!(
            "log {}\nwitness {}\nquorum 1\n",
            policy.log.vkey(),
            policy.witnesses[0].key.vkey()
        ),
    )
    .unwrap();
    assert_eq!(read_policy(&path).unwrap(), policy);
    let other = SoftwareSigner::from_seed(&[8; 32]).verifying_key();
    let e = read_policy_for(&other, &path).unwrap_err();
    assert_eq!((e.code(), e.is_refusal()), ("steward_mismatch", false));
    assert_eq!(
        read_policy_for(&signer.verifying_key(), &path).unwrap(),
        policy
    );
    let e = read_policy(&tmp.path().join("absent")).unwrap_err();
    assert_eq!((e.code(), e.is_refusal()), ("io_failed", false));
}

#[test]
fn audit_names_a_reminted_call_and_leaves_beyond_the_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let signer = steward();
    let reg = registry(tmp.path(), &signer);
    let (_, _, policy) = one_witness_policy(None);
    let run = sealed_run(tmp.path(), "run", "call-7", &signer, true);
    let mut appender = Appender::open(&reg, steward(), None, Some(policy.clone())).unwrap();
    appender.register_run(&run).unwrap();
    drop(appender);
    let once = audit(&Registry::open(&reg).unwrap(), &policy, &[]).unwrap();
    assert_eq!((once.calls, once.checkpoint_size), (1, 1));
    // No witness cosigned: the one problem is the quorum.
    assert_eq!(once.problems.len(), 1, "{:?}", once.problems);
    assert!(matches!(
        once.problems[0],
        AuditProblem::NotWitnessed { .. }
    ));

    // Registered again, and the checkpoint lost after the leaf was appended.
    let mut appender = Appender::open(&reg, steward(), None, Some(policy.clone())).unwrap();
    let first_note = std::fs::read(reg.join(CHECKPOINT_FILE)).unwrap();
    appender.register_run(&run).unwrap();
    drop(appender);
    write_file(&reg.join(CHECKPOINT_FILE), &first_note, &[]).unwrap();
    let twice = audit(&Registry::open(&reg).unwrap(), &policy, &[]).unwrap();
    assert!(twice.problems.contains(&AuditProblem::Reregistered {
        stream_id: "call-7".into(),
        leaves: vec![0, 1],
    }));
    assert!(
        twice
            .problems
            .contains(&AuditProblem::Unwitnessed { count: 1, size: 1 })
    );
    let text = twice.problems[1].describe(|s| format!("<{s}>"));
    assert!(
        text.contains("stream <call-7> is registered 2 times"),
        "{text}"
    );

    // `registry witness` signs a checkpoint over both leaves instead of the older one.
    let mut locked = Registry::open_locked(&reg).unwrap();
    let done = witness_again(&mut locked, &signer, &policy, &tmp.path().join("key")).unwrap();
    assert_eq!(done.resigned, Some(Resign::Older { size: 1, leaves: 2 }));
    assert!(done.quorum.check().is_err());
    drop(locked);
    let after = audit(&Registry::open(&reg).unwrap(), &policy, &[]).unwrap();
    assert_eq!(after.checkpoint_size, 2);
    assert!(
        !after
            .problems
            .iter()
            .any(|p| matches!(p, AuditProblem::Unwitnessed { .. }))
    );
}
