//! `jouleclaw audit --jobs N`: the stream folders are audited by N worker threads, and what is
//! printed for each stream, the totals and the exit code do not depend on N; the closing
//! `audited` line reports receipts, streams, wall and CPU time and the throughput. The
//! JetStream case needs nats-server and is `#[ignore]`d (run with `--ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{NatsServer, TempDir, code, drop_receipt_line, jouleclaw, text};
use std::path::{Path, PathBuf};
use std::process::Output;

const TRACE: &str = "conformance/traces/duplex-demo.jsonl";

/// A steward key, and `calls` sealed runs of the demo trace in `parent/call-<i>`.
fn calls(t: &TempDir, calls: usize) -> (PathBuf, PathBuf) {
    let (key, public) = (t.path("k.key"), t.path("k.pub"));
    let o = jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &public]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let parent = t.path("calls");
    for i in 0..calls {
        let id = format!("call-{i}");
        let o = jouleclaw(&[
            &"run",
            &TRACE,
            &"--key",
            &key,
            &"--stream-id",
            &id,
            &"--seal-every",
            &"5",
            &"--out",
            &parent.join(&id),
            &"--quiet",
        ]);
        assert_eq!(code(&o), 0, "{}", text(&o));
    }
    (public, parent)
}

fn audit(public: &Path, parent: &Path, jobs: &str) -> Output {
    jouleclaw(&[
        &"audit", &"--pub", &public, &"--dir", &parent, &"--jobs", &jobs,
    ])
}

/// Standard output without the `audited` line (its times and job count differ run to run).
fn verdicts(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("audited "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The `audited` line: receipts and streams counted, wall and CPU seconds, both rates.
fn audited_line(o: &Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("audited "))
        .collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    lines[0].to_owned()
}

#[test]
fn one_job_and_several_give_the_same_verdicts_totals_and_exit() {
    let t = TempDir::new("audit-jobs");
    let (public, parent) = calls(&t, 5);
    // Accepted neighbour: every folder complete, exit 0 with 1 and with 4 jobs.
    let one = audit(&public, &parent, "1");
    let four = audit(&public, &parent, "4");
    assert_eq!(code(&one), 0, "{}", text(&one));
    assert_eq!(code(&four), 0, "{}", text(&four));
    assert_eq!(verdicts(&one), verdicts(&four));
    assert!(
        verdicts(&one).ends_with("5 streams: 5 complete, 0 incomplete\n"),
        "{}",
        text(&one)
    );
    // The folders are printed in name order whatever the jobs.
    let order: Vec<String> = verdicts(&four)
        .lines()
        .filter_map(|l| l.strip_prefix("complete    "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(order, ["call-0", "call-1", "call-2", "call-3", "call-4"]);

    // One receipt line removed from call-1 and call-3: both incomplete, exit 1, the same
    // problems named in the same order with 1, 2 and 5 jobs.
    for id in ["call-1", "call-3"] {
        drop_receipt_line(&parent.join(id), 3);
    }
    let one = audit(&public, &parent, "1");
    assert_eq!(code(&one), 1, "{}", text(&one));
    assert!(
        verdicts(&one).ends_with("5 streams: 3 complete, 2 incomplete\n"),
        "{}",
        text(&one)
    );
    assert!(
        verdicts(&one).contains("INCOMPLETE  call-1"),
        "{}",
        text(&one)
    );
    for jobs in ["2", "5"] {
        let many = audit(&public, &parent, jobs);
        assert_eq!(code(&many), 1, "--jobs {jobs}: {}", text(&many));
        assert_eq!(verdicts(&one), verdicts(&many), "--jobs {jobs}");
    }
}

#[test]
fn the_audit_prints_its_receipts_streams_wall_and_cpu_time_and_rates() {
    let t = TempDir::new("audit-rate");
    let (public, parent) = calls(&t, 2);
    let o = audit(&public, &parent, "2");
    assert_eq!(code(&o), 0, "{}", text(&o));
    let line = audited_line(&o);
    // The demo trace makes 13 receipts a run.
    assert!(
        line.starts_with("audited     26 receipts in 2 streams with 2 jobs: "),
        "{line}"
    );
    assert!(line.contains(" s wall, CPU "), "{line}");
    assert!(line.contains(" receipts/s, "), "{line}");
    assert!(line.ends_with(" receipts per CPU-second"), "{line}");
    // Without --jobs: the cores available, at least one.
    let o = jouleclaw(&[&"audit", &"--pub", &public, &"--dir", &parent]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let line = audited_line(&o);
    let jobs: usize = line
        .split(" with ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(jobs >= 1, "{line}");
}

#[test]
fn zero_jobs_is_a_usage_error() {
    let t = TempDir::new("audit-zero");
    let (public, parent) = calls(&t, 1);
    let o = audit(&public, &parent, "0");
    assert_eq!(code(&o), 2, "{}", text(&o));
    // Its neighbour: one job runs.
    let o = audit(&public, &parent, "1");
    assert_eq!(code(&o), 0, "{}", text(&o));
}

/// The lines of `o`'s standard output that name a stream, sorted (`--nats` prints streams as
/// they finish), and its summary line.
fn nats_verdicts(o: &Output) -> (Vec<String>, String) {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let mut streams: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("complete ") || l.starts_with("INCOMPLETE "))
        .map(str::to_owned)
        .collect();
    streams.sort();
    let summary = stdout
        .lines()
        .find(|l| l.contains(" streams: "))
        .unwrap_or_default()
        .to_owned();
    (streams, summary)
}

#[test]
#[ignore = "needs nats-server: run with --ignored"]
fn jetstream_streams_audited_by_one_job_and_several_give_the_same_verdicts() {
    let t = TempDir::new("audit-jobs-nats");
    let (key, public) = (t.path("k.key"), t.path("k.pub"));
    let o = jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &public]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let server = NatsServer::start(&t.path("js"));
    let url = server.url.clone();
    let o = jouleclaw(&[
        &"live",
        &"--streams",
        &"4",
        &"--seconds",
        &"2",
        &"--prefix",
        &"call",
        &"--key",
        &key,
        &"--sink",
        &url,
        &"--journal",
        &t.path("live.journal"),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let audit = |jobs: &str| {
        jouleclaw(&[
            &"audit", &"--pub", &public, &"--nats", &url, &"--all", &"--jobs", &jobs,
        ])
    };
    let one = audit("1");
    assert_eq!(code(&one), 0, "{}", text(&one));
    let (streams, summary) = nats_verdicts(&one);
    assert_eq!(streams.len(), 4, "{}", text(&one));
    assert!(
        summary.starts_with("4 streams: 4 complete, 0 incomplete; "),
        "{}",
        text(&one)
    );
    assert!(
        audited_line(&one).contains(" receipts in 4 streams with 1 jobs: "),
        "{}",
        text(&one)
    );
    for jobs in ["2", "3"] {
        let many = audit(jobs);
        assert_eq!(code(&many), 0, "--jobs {jobs}: {}", text(&many));
        assert_eq!(nats_verdicts(&many), (streams.clone(), summary.clone()));
    }
    // A key the streams were not signed with: every stream incomplete, exit 1, whatever the
    // jobs.
    let other = t.path("other.pub");
    let o = jouleclaw(&[
        &"keygen",
        &"--out",
        &t.path("other.key"),
        &"--pub-out",
        &other,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let wrong = |jobs: &str| {
        jouleclaw(&[
            &"audit", &"--pub", &other, &"--nats", &url, &"--all", &"--jobs", &jobs,
        ])
    };
    let (w1, w3) = (wrong("1"), wrong("3"));
    assert_eq!(code(&w1), 1, "{}", text(&w1));
    assert_eq!(code(&w3), 1, "{}", text(&w3));
    assert_eq!(nats_verdicts(&w1), nats_verdicts(&w3));
    assert!(
        nats_verdicts(&w1)
            .1
            .starts_with("4 streams: 0 complete, 4 incomplete; "),
        "{}",
        text(&w1)
    );
}
