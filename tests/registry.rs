//! The call registry against real witnesses: three `litewitness` servers (Go module
//! `filippo.io/torchwood`, keys in `ssh-agent`) started on loopback by the test and stopped by
//! it, and the `jouleclaw registry` commands run for real.
//!
//! These tests need `litewitness`, `witnessctl`, `ssh-agent`, `ssh-add` and `ssh-keygen`; they
//! are ignored by a plain `cargo test` (counted as ignored, never as passed) and run by
//! `.ci/suites/25-registry.sh`, which installs the witnesses from the Go module proxy. Each
//! witness request is bounded (5 s, 3 attempts); the whole test stops within about a minute.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{NatsServer, TempDir, assert_contains, code, jouleclaw, root, text};
use jouleclaw_testkit::witness::Witness;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const ORIGIN: &str = "registry.example/steward";
const TRACE: &str = "conformance/traces/duplex-demo.jsonl";

fn sealed_run(tmp: &TempDir, key: &Path, name: &str, stream_id: &str, trace: &Path) -> PathBuf {
    let out = tmp.path(name);
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--seal-every",
        &"5",
        &"--key",
        &key,
        &"--stream-id",
        &stream_id,
        &"--out",
        &out,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    out
}

/// `registry init REG --origin ORIGIN --key KEY`, which must succeed; the steward's verifier
/// key it prints last.
fn registry_init(reg: &Path, origin: &str, key: &Path) -> String {
    let o = jouleclaw(&[
        &"registry",
        &"init",
        &reg,
        &"--origin",
        &origin,
        &"--key",
        &key,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned()
}

/// `registry add REG RUN --key KEY --policy POLICY`.
fn registry_add(reg: &Path, run: &Path, key: &Path, policy: &Path) -> Output {
    jouleclaw(&[
        &"registry",
        &"add",
        &reg,
        &run,
        &"--key",
        &key,
        &"--policy",
        &policy,
    ])
}

/// `registry witness REG --key KEY --policy POLICY`.
fn registry_witness(reg: &Path, key: &Path, policy: &Path) -> Output {
    jouleclaw(&[
        &"registry",
        &"witness",
        &reg,
        &"--key",
        &key,
        &"--policy",
        &policy,
    ])
}

/// `registry verify RUN --policy POLICY`.
fn registry_verify(run: &Path, policy: &Path) -> Output {
    jouleclaw(&[&"registry", &"verify", &run, &"--policy", &policy])
}

/// `registry audit REG --policy POLICY`.
fn registry_audit(reg: &Path, policy: &Path) -> Output {
    jouleclaw(&[&"registry", &"audit", &reg, &"--policy", &policy])
}

#[test]
#[ignore = "needs litewitness, witnessctl and ssh-agent: run by .ci/suites/25-registry.sh"]
fn three_real_witnesses_cosign_calls_and_catch_forks_and_reminted_calls() {
    let s = Setup::new("witnessed");
    assert!(
        s.steward_vkey.starts_with("registry.example/steward+"),
        "{}",
        s.steward_vkey
    );
    let policy = s.policy("policy", 2);
    let all_three = s.policy("policy-3", 3);
    let Setup {
        tmp,
        key,
        public,
        reg,
        mut witnesses,
        ..
    } = s;
    let trace = root(TRACE);

    // 1. A sealed call, registered and cosigned by all three; its proof verifies offline.
    let run1 = sealed_run(&tmp, &key, "run1", "call-1", &trace);
    let o = registry_add(&reg, &run1, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "witnessed: 3 of 3 witnesses cosigned (quorum 2)");
    let o = registry_verify(&run1, &all_three);
    assert_eq!(code(&o), 0, "{}", text(&o));
    for w in &witnesses {
        assert_contains(&o, &format!("cosigned by {}", w.name));
    }
    // The same check through `receipts verify DIR --witness-policy`.
    let o = jouleclaw(&[
        &"receipts",
        &"verify",
        &"--pub",
        &public,
        &"--witness-policy",
        &all_three,
        &run1,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "witnessed");
    // A proof whose checkpoint root is altered is refused.
    let proof_path = run1.join("registry.tlog-proof");
    let good = std::fs::read_to_string(&proof_path).unwrap();
    let root_line = good
        .split("\n\n")
        .nth(1)
        .unwrap()
        .lines()
        .nth(2)
        .unwrap()
        .to_owned();
    let mut flipped = root_line.clone().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    std::fs::write(
        &proof_path,
        good.replace(&root_line, std::str::from_utf8(&flipped).unwrap()),
    )
    .unwrap();
    let o = registry_verify(&run1, &policy);
    assert_eq!(code(&o), 1, "{}", text(&o));
    std::fs::write(&proof_path, &good).unwrap();

    // 2. One witness down: the quorum of two still holds; a policy of three is not met.
    witnesses[2].stop();
    let run2 = sealed_run(&tmp, &key, "run2", "call-2", &trace);
    let o = registry_add(&reg, &run2, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "after 3 attempts");
    let o = registry_verify(&run2, &all_three);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "quorum_not_met");
    // Back up: `registry witness` brings it from size 1 to 2 (it answers 409 with its size and
    // gets a consistency proof from there), `registry prove` refreshes the run's proof.
    witnesses[2].serve();
    let o = registry_witness(&reg, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "witnessed: 3 of 3");
    let o = jouleclaw(&[&"registry", &"prove", &reg, &run2]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = registry_verify(&run2, &all_three);
    assert_eq!(code(&o), 0, "{}", text(&o));

    // 3. A fork: the steward keeps a copy of the registry and appends another call 3 to each.
    let fork = tmp.path("reg-fork");
    copy_dir(&reg, &fork);
    let run3 = sealed_run(&tmp, &key, "run3", "call-3", &trace);
    let o = registry_add(&reg, &run3, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let short = tmp.path("short.jsonl");
    let lines: Vec<&str> = std::fs::read_to_string(&trace)
        .unwrap()
        .leak()
        .lines()
        .collect();
    std::fs::write(&short, lines[..lines.len() - 4].join("\n") + "\n").unwrap();
    let run3b = sealed_run(&tmp, &key, "run3b", "call-3", &short);
    let o = registry_add(&fork, &run3b, &key, &policy);
    assert_eq!(
        code(&o),
        1,
        "the witnesses refuse the second checkpoint of size 3: {}",
        text(&o)
    );
    assert_eq!(text(&o).matches("refused (409)").count(), 3, "{}", text(&o));
    // An auditor holding either checkpoint detects the fork.
    let o = jouleclaw(&[
        &"registry",
        &"audit",
        &fork,
        &"--policy",
        &policy,
        &"--seen",
        &reg.join("checkpoint.note"),
    ]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "fork");
    let o = jouleclaw(&[
        &"registry",
        &"audit",
        &reg,
        &"--policy",
        &policy,
        &"--seen",
        &fork.join("checkpoint.note"),
    ]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "fork");
    let o = registry_audit(&reg, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));

    // 4. A re-minted call: call-1 sealed again without its last windows and registered again.
    let remint = sealed_run(&tmp, &key, "run1-again", "call-1", &short);
    let o = registry_add(&reg, &remint, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "was registered before");
    let o = registry_audit(&reg, &policy);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "stream call-1 is registered");
    assert_contains(&o, "registered 2 times (leaves [0, 3])");
    // Each run still proves its own seal, and no run proves the other's.
    let o = registry_verify(&remint, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    std::fs::copy(
        remint.join("registry.tlog-proof"),
        run1.join("registry.tlog-proof"),
    )
    .unwrap();
    let o = registry_verify(&run1, &policy);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "another final seal");

    // 5. A checkpoint lost after the witnesses cosigned it (a registration stopped before it
    // replaced checkpoint.note): the leaf is in no checkpoint the registry holds, and the audit
    // says so; `registry witness` signs the leaves' checkpoint again, each witness (which holds
    // it) answers 409 with its size, is asked again from there and cosigns it.
    let older = std::fs::read(reg.join("checkpoint.note")).unwrap();
    let run5 = sealed_run(&tmp, &key, "run5", "call-5", &trace);
    let o = registry_add(&reg, &run5, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    std::fs::write(reg.join("checkpoint.note"), &older).unwrap();
    let o = registry_audit(&reg, &policy);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(
        &o,
        "1 leaves after the checkpoint's size 4 are in no checkpoint",
    );
    let o = registry_witness(&reg, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "witnessed: 3 of 3");
    let o = registry_audit(&reg, &policy);
    assert!(!text(&o).contains("in no checkpoint"), "{}", text(&o));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != ".lock" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A steward key, a registry for it and three real witnesses that trust it.
struct Setup {
    tmp: TempDir,
    key: PathBuf,
    public: PathBuf,
    reg: PathBuf,
    steward_vkey: String,
    witnesses: Vec<Witness>,
}

impl Setup {
    fn new(tag: &str) -> Self {
        let tmp = TempDir::new(tag);
        let key = tmp.path("steward.key");
        let public = tmp.path("steward.pub");
        let o = jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &public]);
        assert_eq!(code(&o), 0, "{}", text(&o));
        let reg = tmp.path("reg");
        let steward_vkey = registry_init(&reg, ORIGIN, &key);
        let witnesses = (0..3)
            .map(|i| Witness::start(&tmp.0, i, ORIGIN, &steward_vkey))
            .collect();
        Self {
            tmp,
            key,
            public,
            reg,
            steward_vkey,
            witnesses,
        }
    }

    fn policy(&self, name: &str, quorum: usize) -> PathBuf {
        let mut p = format!("log {}\n", self.steward_vkey);
        for w in &self.witnesses {
            p.push_str(&w.policy_line());
        }
        p.push_str(&format!("quorum {quorum}\n"));
        let path = self.tmp.path(name);
        std::fs::write(&path, p).unwrap();
        path
    }

    /// `run --seal-every 5 --key K --stream-id ID --out calls/ID`, registered in `reg` under
    /// `policy` when given.
    fn run(&self, stream_id: &str, registry: Option<(&Path, &Path)>) -> (PathBuf, Output) {
        let out = self.tmp.path("calls").join(stream_id);
        let trace = root(TRACE);
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"run",
            &trace,
            &"--quiet",
            &"--seal-every",
            &"5",
            &"--key",
            &self.key,
            &"--stream-id",
            &stream_id,
            &"--out",
            &out,
        ];
        if let Some((reg, policy)) = &registry {
            args.extend([
                &"--registry" as &dyn AsRef<std::ffi::OsStr>,
                reg,
                &"--registry-policy",
                policy,
            ]);
        }
        let o = jouleclaw(&args);
        (out, o)
    }

    /// `live --streams 2 --seconds 2 --prefix call --key K --sink SINK [--registry REG
    /// --registry-policy POLICY] EXTRA...`: calls `call-0` and `call-1`, each registered when a
    /// policy is given.
    fn live(
        &self,
        policy: Option<&Path>,
        sink: &str,
        extra: &[&dyn AsRef<std::ffi::OsStr>],
    ) -> Output {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"live",
            &"--streams",
            &"2",
            &"--seconds",
            &"2",
            &"--prefix",
            &"call",
            &"--key",
            &self.key,
            &"--sink",
            &sink,
        ];
        if let Some(policy) = &policy {
            args.extend([
                &"--registry" as &dyn AsRef<std::ffi::OsStr>,
                &self.reg,
                &"--registry-policy",
                policy,
            ]);
        }
        args.extend_from_slice(extra);
        jouleclaw(&args)
    }

    fn audit(&self, policy: Option<&Path>) -> Output {
        let calls = self.tmp.path("calls");
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"audit", &"--pub", &self.public, &"--dir", &calls];
        if let Some(p) = &policy {
            args.extend([&"--witness-policy" as &dyn AsRef<std::ffi::OsStr>, p]);
        }
        jouleclaw(&args)
    }
}

#[test]
#[ignore = "needs litewitness, witnessctl and ssh-agent: run by .ci/suites/25-registry.sh"]
fn a_sealed_run_registers_its_call_and_audit_requires_it_witnessed() {
    let mut s = Setup::new("run");
    let policy = s.policy("policy", 2);
    let all_three = s.policy("policy-3", 3);

    // 1. The run registers its own call: all three witnesses cosign, its proof verifies.
    let (call_a, o) = s.run("call-a", Some((&s.reg, &policy)));
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "registered stream call-a as leaf 0 of 1");
    assert_contains(&o, "witnessed: 3 of 3 witnesses cosigned (quorum 2)");
    let o = registry_verify(&call_a, &all_three);
    assert_eq!(code(&o), 0, "{}", text(&o));

    // 2. audit --dir --witness-policy accepts the witnessed call ...
    let o = s.audit(Some(&all_three));
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "1 streams: 1 complete");
    // ... and refuses a sealed call that is not registered (without the policy it passes).
    let (call_b, o) = s.run("call-b", None);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = s.audit(None);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = s.audit(Some(&policy));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "INCOMPLETE  call-b");
    assert_contains(&o, "not_witnessed");
    assert_contains(&o, "the call is not registered");
    std::fs::remove_dir_all(&call_b).unwrap();
    // A tampered registry checkpoint in the proof (one byte of its root) is refused by audit
    // and by receipts verify, the same check.
    let proof_path = call_a.join("registry.tlog-proof");
    let good = std::fs::read_to_string(&proof_path).unwrap();
    let root_line = good
        .split("\n\n")
        .nth(1)
        .unwrap()
        .lines()
        .nth(2)
        .unwrap()
        .to_owned();
    let mut flipped = root_line.clone().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    std::fs::write(
        &proof_path,
        good.replace(&root_line, std::str::from_utf8(&flipped).unwrap()),
    )
    .unwrap();
    let o = s.audit(Some(&policy));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "not_witnessed");
    let o = jouleclaw(&[
        &"receipts",
        &"verify",
        &"--pub",
        &s.public,
        &"--witness-policy",
        &policy,
        &call_a,
    ]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    std::fs::write(&proof_path, &good).unwrap();
    let o = s.audit(Some(&policy));
    assert_eq!(code(&o), 0, "{}", text(&o));
    // The cluster holds no registry proofs: audit --nats with a policy needs the folder of
    // them, a usage error before any connection (see audit_nats_requires_each_stored_call_witnessed).
    let o = jouleclaw(&[
        &"audit",
        &"--pub",
        &s.public,
        &"--nats",
        &"nats://127.0.0.1:1",
        &"--witness-policy",
        &policy,
    ]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "needs --registry-proofs");

    // 3. One witness down: the quorum of two holds, the run exits 0.
    s.witnesses[2].stop();
    let (call_c, o) = s.run("call-c", Some((&s.reg, &policy)));
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "witnessed: 2 of 3 witnesses cosigned (quorum 2)");
    assert_contains(&o, "after 3 attempts");
    // Two down, below the quorum: the run directory is written and verifies, the leaf and the
    // proof are kept, and the run says so with its code and exits 1.
    s.witnesses[1].stop();
    let (call_d, o) = s.run("call-d", Some((&s.reg, &policy)));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(
        &o,
        "is written and its receipts verify, but the call's registration failed: not_witnessed: quorum_not_met",
    );
    assert_eq!(
        text(&o).matches("after 3 attempts").count(),
        2,
        "{}",
        text(&o)
    );
    assert!(call_d.join("summary.json").is_file());
    assert!(call_d.join("registry.tlog-proof").is_file());
    let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &s.public, &call_d]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = registry_verify(&call_d, &policy);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let o = s.audit(Some(&policy));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "INCOMPLETE  call-d");
    assert_contains(&o, "3 streams: 2 complete, 1 incomplete");
    // Both back: `registry witness` brings them up, `registry prove` refreshes the proofs.
    s.witnesses[1].serve();
    s.witnesses[2].serve();
    let o = registry_witness(&s.reg, &s.key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // call-c's proof is of a checkpoint two witnesses cosigned: a policy of three refuses it
    // until its proof is refreshed too.
    let o = jouleclaw(&[&"registry", &"prove", &s.reg, &call_d]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = s.audit(Some(&all_three));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "INCOMPLETE  call-c");
    let o = jouleclaw(&[&"registry", &"prove", &s.reg, &call_c]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = s.audit(Some(&all_three));
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = registry_audit(&s.reg, &all_three);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "3 calls");

    // 4. The run's leaves are the ones `registry add` makes of the same run directories.
    let reg2 = s.tmp.path("reg2");
    registry_init(&reg2, "registry.example/second", &s.key);
    for run in [&call_a, &call_c, &call_d] {
        let copy = s.tmp.path("copy");
        let _ = std::fs::remove_dir_all(&copy);
        copy_dir(run, &copy);
        let o = jouleclaw(&[&"registry", &"add", &reg2, &copy, &"--key", &s.key]);
        assert_eq!(code(&o), 0, "{}", text(&o));
    }
    assert_eq!(
        std::fs::read(s.reg.join("leaves.jsonl")).unwrap(),
        std::fs::read(reg2.join("leaves.jsonl")).unwrap()
    );
}

/// A stand-in witness (it says so: it is not a witness, it cannot cosign): a loopback listener
/// that holds each request it gets until both stand-ins hold one or 4 s passed (under the
/// client's 5 s per request), then answers 403, which is final, and records how many requests
/// were held at once and how many leaves the registry's file held when the request came.
/// Submitted one after another, they never overlap; submitted at once, they do.
struct HoldingStandIn {
    url: String,
    /// The lines of the registry's `leaves.jsonl` when the request arrived.
    thread: std::thread::JoinHandle<usize>,
}

type Held = std::sync::Arc<(std::sync::Mutex<(usize, usize)>, std::sync::Condvar)>;

impl HoldingStandIn {
    fn start(held: &Held, leaves: &Path) -> Self {
        let leaves = leaves.to_owned();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = held.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut stream = loop {
                match listener.accept() {
                    Ok((s, _)) => break s,
                    Err(_) if start.elapsed() < Duration::from_secs(60) => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("no request within 60 s: {e}"),
                }
            };
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            read_request(&mut stream);
            let leaves_then = jouleclaw_testkit::line_count(&leaves);
            let (lock, cvar) = &*held;
            let mut g = lock.lock().unwrap();
            g.0 += 1;
            g.1 = g.1.max(g.0);
            cvar.notify_all();
            let (mut g, _) = cvar
                .wait_timeout_while(g, Duration::from_secs(4), |g| g.1 < 2)
                .unwrap();
            g.1 = g.1.max(g.0);
            drop(g);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            lock.lock().unwrap().0 -= 1;
            leaves_then
        });
        Self { url, thread }
    }
}

#[test]
fn witnesses_are_submitted_to_at_once_after_the_leaf_is_on_disk() {
    use jouleclaw_stack::jcr1::cose::Signer as _;
    let tmp = TempDir::new("concurrent");
    let key = tmp.path("steward.key");
    let o = jouleclaw(&[&"keygen", &"--out", &key]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let reg = tmp.path("reg");
    let steward_vkey = registry_init(&reg, ORIGIN, &key);
    let held: Held = Default::default();
    let leaves = reg.join("leaves.jsonl");
    let stand_ins = [
        HoldingStandIn::start(&held, &leaves),
        HoldingStandIn::start(&held, &leaves),
    ];
    let mut policy = format!("log {steward_vkey}\n");
    for (i, s) in stand_ins.iter().enumerate() {
        let public = jouleclaw_stack::jcr1::cose::SoftwareSigner::from_seed(&[i as u8 + 1; 32])
            .verifying_key();
        let name = format!("witness.example/s{i}");
        let vkey = jouleclaw_stack::registry::NoteKey::new(
            &name,
            jouleclaw_stack::registry::ALG_COSIGNATURE_V1,
            public.as_bytes(),
        )
        .unwrap()
        .vkey();
        policy.push_str(&format!("witness {vkey} {}\n", s.url));
    }
    policy.push_str("quorum 2\n");
    let policy_path = tmp.path("policy");
    std::fs::write(&policy_path, policy).unwrap();
    let trace = root(TRACE);
    let out = tmp.path("run");
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--quiet",
        &"--seal-every",
        &"5",
        &"--key",
        &key,
        &"--stream-id",
        &"call-1",
        &"--out",
        &out,
        &"--registry",
        &reg,
        &"--registry-policy",
        &policy_path,
    ]);
    // Neither stand-in cosigns: the call is registered but not witnessed.
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "not_witnessed");
    assert_eq!(
        text(&o)
            .matches("the witness does not trust the steward's key (HTTP 403)")
            .count(),
        2,
        "{}",
        text(&o)
    );
    for s in stand_ins {
        assert_eq!(
            s.thread.join().unwrap(),
            1,
            "the call's leaf is on disk before a witness sees the checkpoint covering it"
        );
    }
    assert_eq!(
        held.0.lock().unwrap().1,
        2,
        "both witnesses held a request at the same time"
    );
}

/// Reads one HTTP request whole (headers and a Content-Length body), so that closing the
/// connection after the answer does not reset it.
fn read_request(stream: &mut std::net::TcpStream) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = std::io::Read::read(stream, &mut buf).unwrap();
        if n == 0 {
            return;
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if got.len() >= end + 4 + length {
                return;
            }
        }
    }
}

/// A steward key file and an empty registry for it.
fn steward_and_registry(tmp: &TempDir, key_name: &str, reg_name: &str) -> (PathBuf, PathBuf) {
    let key = tmp.path(key_name);
    let o = jouleclaw(&[&"keygen", &"--out", &key]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let reg = tmp.path(reg_name);
    registry_init(&reg, ORIGIN, &key);
    (key, reg)
}

#[test]
fn run_registry_refuses_a_registry_it_cannot_use_before_writing_anything() {
    let tmp = TempDir::new("unusable");
    let (key, reg) = steward_and_registry(&tmp, "steward.key", "reg");
    let (_, other_reg) = steward_and_registry(&tmp, "other.key", "reg-other");
    let trace = root(TRACE);
    let run = |out: &Path, reg: &Path| {
        jouleclaw(&[
            &"run",
            &trace,
            &"--quiet",
            &"--seal-every",
            &"5",
            &"--key",
            &key,
            &"--stream-id",
            &"call-1",
            &"--out",
            &out,
            &"--registry",
            &reg,
        ])
    };
    // A registry of another steward key: refused before anything is run, nothing written.
    let out = tmp.path("run-other");
    let o = run(&out, &other_reg);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "registry_unusable");
    assert!(
        !out.exists(),
        "nothing is written when the registry cannot take the call"
    );
    assert_eq!(std::fs::read(other_reg.join("leaves.jsonl")).unwrap(), b"");
    // A FIFO or a symbolic link planted at the registry's lock: refused, never blocked on or
    // followed, nothing written.
    let lock = reg.join(".lock");
    let _ = std::fs::remove_file(&lock);
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&lock)
            .status()
            .unwrap()
            .success()
    );
    let out = tmp.path("run-fifo");
    let o = run(&out, &reg);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "not a regular file");
    assert!(!out.exists());
    std::fs::remove_file(&lock).unwrap();
    let victim = tmp.path("victim");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let o = run(&out, &reg);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(!victim.exists(), "the link was not followed");
    std::fs::remove_file(&lock).unwrap();
    // Its own registry, no witness policy: registered, not witnessed, exit 0.
    let out = tmp.path("run");
    let o = run(&out, &reg);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "registered stream call-1 as leaf 0 of 1");
    assert_contains(&o, "not witnessed (no policy)");
    assert!(out.join("registry.tlog-proof").is_file());
    assert_eq!(jouleclaw_testkit::line_count(reg.join("leaves.jsonl")), 1);
    // The same directory run again without --registry: the earlier call's proof goes.
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--quiet",
        &"--seal-every",
        &"5",
        &"--key",
        &key,
        &"--stream-id",
        &"call-1",
        &"--out",
        &out,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(!out.join("registry.tlog-proof").exists());
    // --registry without --key (the published test key) is a usage error.
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--seal-every",
        &"5",
        &"--out",
        &tmp.path("nokey"),
        &"--registry",
        &reg,
    ]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(!tmp.path("nokey").exists());
    // A directory planted where the proof goes: `run --registry` refuses before writing
    // anything, `registry add` before appending anything (`registry_write_failed`).
    std::fs::create_dir(out.join("registry.tlog-proof")).unwrap();
    let inode = |name: &str| {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(out.join(name)).unwrap().ino()
    };
    let before = [inode("summary.json"), inode("receipts.cbor")];
    let o = run(&out, &reg);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "is a directory");
    assert_eq!(
        [inode("summary.json"), inode("receipts.cbor")],
        before,
        "no output was replaced"
    );
    let o = jouleclaw(&[&"registry", &"add", &reg, &out, &"--key", &key]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "registry_write_failed");
    assert_eq!(jouleclaw_testkit::line_count(reg.join("leaves.jsonl")), 1);
    // `registry add` of a directory that is not a sealed run: `run_unreadable`, nothing appended.
    let empty = tmp.path("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = jouleclaw(&[&"registry", &"add", &reg, &empty, &"--key", &key]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "run_unreadable");
    assert_eq!(jouleclaw_testkit::line_count(reg.join("leaves.jsonl")), 1);
}

#[test]
#[ignore = "needs litewitness, witnessctl and ssh-agent: run by .ci/suites/25-registry.sh"]
fn live_registers_its_sealed_calls_witnessed_and_audit_dir_accepts_them() {
    let s = Setup::new("live");
    let policy = s.policy("policy", 2);
    let out = s.tmp.path("live-out");
    let o = s.live(Some(&policy), &format!("file:{}", out.display()), &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(
        text(&o)
            .matches("witnessed: 3 of 3 witnesses cosigned (quorum 2)")
            .count(),
        2,
        "{}",
        text(&o)
    );
    assert_contains(&o, "registry    2 calls registered");
    // Each stream folder's proof verifies offline, and the folder audit with the policy accepts
    // both calls (their stop-latency documents included).
    for i in 0..2 {
        let o = registry_verify(&out.join(format!("call-{i}")), &policy);
        assert_eq!(code(&o), 0, "{}", text(&o));
    }
    let o = jouleclaw(&[
        &"audit",
        &"--pub",
        &s.public,
        &"--dir",
        &out,
        &"--witness-policy",
        &policy,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "2 streams: 2 complete");
}

/// Three witnesses, a quorum-2 policy, a JetStream server, and the proofs' folder and the
/// journal a `live` into it takes.
fn nats_setup(tag: &str) -> (Setup, PathBuf, NatsServer, PathBuf, PathBuf) {
    let s = Setup::new(tag);
    let policy = s.policy("policy", 2);
    let server = NatsServer::start(&s.tmp.path("js"));
    let (proofs, journal) = (s.tmp.path("proofs"), s.tmp.path("live.journal"));
    (s, policy, server, proofs, journal)
}

/// `live` into JetStream registers each call (its proof in `--registry-proofs`), and `audit
/// --nats --witness-policy --registry-proofs` requires every stream the cluster holds to be
/// registered with the final seal the cluster holds, cosigned by the policy's quorum.
#[test]
#[ignore = "needs litewitness, witnessctl, ssh-agent and nats-server: run by .ci/suites/25-registry.sh"]
fn audit_nats_requires_each_stored_call_witnessed() {
    let (s, policy, server, proofs, journal) = nats_setup("nats");
    let url = server.url.clone();
    let o = s.live(
        Some(&policy),
        &url,
        &[&"--journal", &journal, &"--registry-proofs", &proofs],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "registry    2 calls registered");
    let audit = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"audit", &"--pub", &s.public, &"--nats", &url, &"--all"];
        args.extend_from_slice(extra);
        jouleclaw(&args)
    };
    let witnessed = [
        &"--witness-policy" as &dyn AsRef<std::ffi::OsStr>,
        &policy,
        &"--registry-proofs",
        &proofs,
    ];
    let o = audit(&witnessed);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "2 streams: 2 complete");
    // The policy without the proofs' folder is a usage error, and the folder without a policy.
    let o = audit(&[&"--witness-policy", &policy]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "--registry-proofs");
    let o = audit(&[&"--registry-proofs", &proofs]);
    assert_eq!(code(&o), 2, "{}", text(&o));

    // call-1's folder (proof and seal copy) put in call-0's place: that folder is consistent
    // in itself, but it registers another seal than the cluster holds for call-0.
    let (f0, f1) = (proofs.join("call-0"), proofs.join("call-1"));
    let saved = s.tmp.path("call-0.saved");
    std::fs::rename(&f0, &saved).unwrap();
    copy_dir(&f1, &f0);
    let o = registry_verify(&f0, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = audit(&witnessed);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "INCOMPLETE  call-0");
    assert!(
        text(&o).contains("not_witnessed")
            && text(&o).contains("another final seal than the one the cluster holds"),
        "{}",
        text(&o)
    );
    assert_contains(&o, "complete    call-1");
    std::fs::remove_dir_all(&f0).unwrap();
    std::fs::rename(&saved, &f0).unwrap();
    // A call without a proof is not registered; without the policy the cluster alone passes.
    std::fs::remove_file(f1.join("registry.tlog-proof")).unwrap();
    let o = audit(&witnessed);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "INCOMPLETE  call-1");
    assert_contains(&o, "the call is not registered");
    assert_contains(&o, "1 complete, 1 incomplete");
    let o = audit(&[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

/// Calls the cluster holds but no one registered (a `live` run without `--registry`, as after a
/// `journal replay` or a run stopped before it registered) are registered from the cluster by
/// `registry add-stored`, each once: a second run adds nothing, a lost proof is written again
/// from the checkpoint without a second leaf, and a folder holding another seal is refused.
#[test]
#[ignore = "needs litewitness, witnessctl, ssh-agent and nats-server: run by .ci/suites/25-registry.sh"]
fn stored_calls_are_registered_from_the_cluster_once() {
    let (s, policy, server, proofs, journal) = nats_setup("stored");
    let url = server.url.clone();
    let o = s.live(None, &url, &[&"--journal", &journal]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // `registry add-stored`: its exit code and a part of what it prints; the registry holds
    // the two calls' leaves after every run, never a third.
    let added = |want: i32, says: &str| {
        let o = jouleclaw(&[
            &"registry",
            &"add-stored",
            &s.reg,
            &"--nats",
            &url,
            &"--key",
            &s.key,
            &"--policy",
            &policy,
            &"--proofs",
            &proofs,
        ]);
        assert_eq!(code(&o), want, "{}", text(&o));
        assert_contains(&o, says);
        let leaves = std::fs::read_to_string(s.reg.join("leaves.jsonl")).unwrap();
        assert_eq!(leaves.lines().count(), 2, "{}", text(&o));
        text(&o)
    };
    let audit = || {
        jouleclaw(&[
            &"audit",
            &"--pub",
            &s.public,
            &"--nats",
            &url,
            &"--witness-policy",
            &policy,
            &"--registry-proofs",
            &proofs,
        ])
    };
    // Nothing registered yet: the audit with the policy refuses both calls.
    let o = audit();
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "0 complete, 2 incomplete");

    let out = added(0, "registry    2 calls registered, 0 proofs written");
    assert!(
        out.contains("before, 0 had a proof, 0 incomplete, 0 failed"),
        "{out}"
    );
    assert_eq!(
        out.matches("witnessed: 3 of 3 witnesses cosigned (quorum 2)")
            .count(),
        2,
        "{out}"
    );
    let o = audit();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "2 streams: 2 complete");

    // Again: both have their proof, nothing is appended.
    added(
        0,
        "0 calls registered, 0 proofs written for calls registered before, 2 had a proof",
    );

    // A proof lost after its leaf was appended: written from the latest checkpoint, no second
    // leaf, and the audit is complete again.
    std::fs::remove_file(proofs.join("call-0/registry.tlog-proof")).unwrap();
    added(
        0,
        "0 calls registered, 1 proofs written for calls registered before, 1 had a proof",
    );
    let o = audit();
    assert_eq!(code(&o), 0, "{}", text(&o));

    // A folder without a proof that holds another call's seal is refused and left as it is.
    std::fs::remove_file(proofs.join("call-1/registry.tlog-proof")).unwrap();
    let other = std::fs::read(proofs.join("call-0/seals.cbor")).unwrap();
    std::fs::write(proofs.join("call-1/seals.cbor"), &other).unwrap();
    added(
        1,
        "another final seal than the cluster holds; left as it is",
    );
    assert_eq!(
        std::fs::read(proofs.join("call-1/seals.cbor")).unwrap(),
        other
    );
    assert!(!proofs.join("call-1/registry.tlog-proof").exists());
}

/// A stand-in witness (litewitness, the real one, cannot be made to misbehave on purpose): it
/// answers each `add-checkpoint` with 200 and `lines` valid cosignature/v1 lines of its own key
/// over the checkpoint it was sent, at `timestamp`, `timestamp + 1`, ... (one line is what an
/// honest witness sends; a hundred is a flood). It serves at most `max` requests.
struct CosigningStandIn {
    url: String,
    vkey: String,
}

impl CosigningStandIn {
    fn start(i: u8, lines: u64, timestamp: u64, max: usize) -> Self {
        use jouleclaw_stack::registry::{ALG_COSIGNATURE_V1, NoteKey, cosignature_line};
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let signer = jouleclaw_stack::jcr1::cose::SoftwareSigner::from_seed(&[i + 1; 32]);
        let key = NoteKey::new(
            &format!("witness.example/c{i}"),
            ALG_COSIGNATURE_V1,
            jouleclaw_stack::jcr1::cose::Signer::verifying_key(&signer).as_bytes(),
        )
        .unwrap();
        let vkey = key.vkey();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(max) {
                let Ok(mut stream) = stream else { continue };
                let body = read_body(&mut stream);
                // `old N`, the proof lines, an empty line, then the note.
                let start = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
                let mut answer = Vec::new();
                for k in 0..lines {
                    answer.extend(
                        cosignature_line(&body[start..], &key, &signer, timestamp + k).unwrap(),
                    );
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    answer.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&answer);
            }
        });
        Self { url, vkey }
    }

    fn policy_line(&self) -> String {
        format!("witness {} {}\n", self.vkey, self.url)
    }
}

/// Reads one HTTP request and returns its body (Content-Length).
fn read_body(stream: &mut std::net::TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = std::io::Read::read(stream, &mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if got.len() >= end + 4 + length || n == 0 {
                return got[end + 4..].to_vec();
            }
        }
        if n == 0 {
            return Vec::new();
        }
    }
}

fn steward_vkey_of(reg: &Path) -> String {
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reg.join("registry.json")).unwrap()).unwrap();
    config["log_vkey"].as_str().unwrap().to_owned()
}

fn signature_lines(note_path: &Path) -> usize {
    std::fs::read_to_string(note_path)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('\u{2014}'))
        .count()
}

fn utc(t: i64) -> String {
    jouleclaw_stack::jcr1::UtcSecond::from_unix(t)
        .unwrap()
        .to_string()
}

/// A witness below the quorum floods its answer with a hundred valid lines of its own key, all
/// backdated to 1970, and is listed first. The registry keeps one line per witness (the note
/// stays within its 64 lines), the honest witnesses' lines count, later registrations and
/// `registry witness` work, and the time the call existed by is the quorum's, not the
/// flooder's 1970. A policy whose quorum is not over half its witnesses is refused.
#[test]
fn a_flooding_backdating_witness_neither_breaks_the_registry_nor_sets_the_time() {
    let tmp = TempDir::new("flood");
    let (key, reg) = steward_and_registry(&tmp, "steward.key", "reg");
    let steward_vkey = steward_vkey_of(&reg);
    let stand_ins = [
        CosigningStandIn::start(0, 100, 0, 12),
        CosigningStandIn::start(1, 1, 1_790_000_100, 12),
        CosigningStandIn::start(2, 1, 1_790_000_200, 12),
    ];
    let policy_with = |name: &str, quorum: usize| {
        let mut p = format!("log {steward_vkey}\n");
        for s in &stand_ins {
            p.push_str(&s.policy_line());
        }
        p.push_str(&format!("quorum {quorum}\n"));
        tmp.write(name, p)
    };
    let policy = policy_with("policy", 2);
    let trace = root(TRACE);
    let note = reg.join("checkpoint.note");
    for (i, call) in ["call-1", "call-2"].iter().enumerate() {
        let run = sealed_run(&tmp, &key, &format!("run{i}"), call, &trace);
        let o = registry_add(&reg, &run, &key, &policy);
        assert_eq!(code(&o), 0, "{}", text(&o));
        assert_contains(&o, "witnessed: 3 of 3 witnesses cosigned (quorum 2)");
        assert_eq!(
            signature_lines(&note),
            4,
            "the steward's and one per witness"
        );
        let o = registry_verify(&run, &policy);
        assert_eq!(code(&o), 0, "{}", text(&o));
        assert_contains(&o, &format!("existed by {}", utc(1_790_000_100)));
        assert!(!text(&o).contains("existed by 1970"), "{}", text(&o));
    }
    // Submitting the checkpoint again: every witness answers again; nothing is added.
    let o = registry_witness(&reg, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(signature_lines(&note), 4);
    let o = registry_audit(&reg, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // A note pushed past 64 signature lines (as merging every line of a flood once did; here 61
    // valid lines of a key outside the policy) makes the registry unusable for `registry add`,
    // and `registry witness` repairs it: it signs the leaves' checkpoint again and collects one
    // line per witness.
    let stranger = jouleclaw_stack::jcr1::cose::SoftwareSigner::from_seed(&[99; 32]);
    let stranger_key = jouleclaw_stack::registry::NoteKey::new(
        "stranger.example/x",
        jouleclaw_stack::registry::ALG_COSIGNATURE_V1,
        jouleclaw_stack::jcr1::cose::Signer::verifying_key(&stranger).as_bytes(),
    )
    .unwrap();
    let mut flooded = std::fs::read(&note).unwrap();
    let plain = flooded.clone();
    for k in 0..61 {
        flooded.extend(
            jouleclaw_stack::registry::cosignature_line(&plain, &stranger_key, &stranger, k)
                .unwrap(),
        );
    }
    std::fs::write(&note, &flooded).unwrap();
    let run = sealed_run(&tmp, &key, "run-blocked", "call-9", &trace);
    let add = |run: &Path| registry_add(&reg, run, &key, &policy);
    let o = add(&run);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "registry_unusable");
    assert_contains(&o, "more than 64 signature lines");
    let o = registry_witness(&reg, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "signing the leaves' checkpoint again");
    assert_contains(&o, "witnessed: 3 of 3");
    assert_eq!(signature_lines(&note), 4);
    let o = add(&run);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // The same past 64 KiB (600 lines): read, refused, repaired.
    let mut flooded = std::fs::read(&note).unwrap();
    let plain = flooded.clone();
    for k in 0..600 {
        flooded.extend(
            jouleclaw_stack::registry::cosignature_line(&plain, &stranger_key, &stranger, k)
                .unwrap(),
        );
    }
    assert!(flooded.len() > 64 * 1024);
    std::fs::write(&note, &flooded).unwrap();
    let run = sealed_run(&tmp, &key, "run-blocked-2", "call-10", &trace);
    let o = add(&run);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "the note is above 64 KiB");
    let o = registry_witness(&reg, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(signature_lines(&note), 4);
    let o = add(&run);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // A quorum of one of three (half or fewer: two forks can each reach one) is refused.
    let minority = policy_with("policy-1", 1);
    let run = sealed_run(&tmp, &key, "run-minority", "call-3", &trace);
    let o = registry_add(&reg, &run, &key, &minority);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "the quorum is more than half the witnesses");
}

/// A call re-minted under another `steward` label with the same key is listed by `registry
/// audit` as registered twice; leaves after the cosigned checkpoint (a registration stopped
/// before its checkpoint was written) make the audit fail until `registry witness` signs and
/// submits a checkpoint that covers them.
#[test]
fn a_relabelled_remint_and_unwitnessed_leaves_fail_the_audit() {
    let tmp = TempDir::new("relabel");
    let (key, reg) = steward_and_registry(&tmp, "steward.key", "reg");
    let steward_vkey = steward_vkey_of(&reg);
    let stand_ins = [
        CosigningStandIn::start(0, 1, 1_790_000_000, 8),
        CosigningStandIn::start(1, 1, 1_790_000_001, 8),
        CosigningStandIn::start(2, 1, 1_790_000_002, 8),
    ];
    let mut p = format!("log {steward_vkey}\n");
    for s in &stand_ins {
        p.push_str(&s.policy_line());
    }
    p.push_str("quorum 2\n");
    let policy = tmp.write("policy", p);
    let trace = root(TRACE);
    let add = |run: &Path| registry_add(&reg, run, &key, &policy);
    let audit = || registry_audit(&reg, &policy);
    let run1 = sealed_run(&tmp, &key, "run1", "call-1", &trace);
    assert_eq!(code(&add(&run1)), 0);
    let o = audit();
    assert_eq!(code(&o), 0, "{}", text(&o));
    // Leaves after the cosigned checkpoint: call-2 registered, then its checkpoint lost.
    let cosigned_at_1 = std::fs::read(reg.join("checkpoint.note")).unwrap();
    let run2 = sealed_run(&tmp, &key, "run2", "call-2", &trace);
    assert_eq!(code(&add(&run2)), 0);
    std::fs::write(reg.join("checkpoint.note"), &cosigned_at_1).unwrap();
    let o = audit();
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(
        &o,
        "1 leaves after the checkpoint's size 1 are in no checkpoint",
    );
    let o = registry_witness(&reg, &key, &policy);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "the checkpoint of size 1 is older than the 2 leaves");
    let o = audit();
    assert_eq!(code(&o), 0, "{}", text(&o));
    // call-1 sealed again under another label by the same key, and registered again.
    let out = tmp.path("run1-relabelled");
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--seal-every",
        &"5",
        &"--key",
        &key,
        &"--steward",
        &"did:example:another-label",
        &"--stream-id",
        &"call-1",
        &"--out",
        &out,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = add(&out);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "was registered before (leaves [0])");
    let o = audit();
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "stream call-1 is registered 2 times (leaves [0, 2])");
}

/// `audit --dir` over a folder whose name is not UTF-8 beside a sealed call: the folder is one
/// INCOMPLETE stream with a malformed name (exit 1), the call beside it is audited complete;
/// one such name used to stop the whole audit with exit 2 and nothing audited.
#[test]
fn audit_dir_reports_a_folder_name_that_is_not_utf8_and_audits_the_rest() {
    use std::os::unix::ffi::OsStrExt as _;
    let tmp = TempDir::new("non-utf8");
    let key = tmp.path("steward.key");
    let public = tmp.path("steward.pub");
    let o = jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &public]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let calls = tmp.path("calls");
    std::fs::create_dir(&calls).unwrap();
    let o = jouleclaw(&[
        &"run",
        &root(TRACE),
        &"--quiet",
        &"--seal-every",
        &"5",
        &"--key",
        &key,
        &"--stream-id",
        &"call-1",
        &"--out",
        &calls.join("call-1"),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let audit = || jouleclaw(&[&"audit", &"--pub", &public, &"--dir", &calls]);
    // Accepted neighbour: the sealed call alone is complete.
    let o = audit();
    assert_eq!(code(&o), 0, "{}", text(&o));
    std::fs::create_dir(calls.join(std::ffi::OsStr::from_bytes(b"call-\xff"))).unwrap();
    let o = audit();
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "malformed_name");
    assert_contains(&o, "2 streams: 1 complete");
}
