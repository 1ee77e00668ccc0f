//! `jouleclaw report`, run for real (`CARGO_BIN_EXE_jouleclaw`) on the output of `jouleclaw run`:
//! the demo trace's facts in the page, escaping of hostile ids, every receipt's own status,
//! disagreeing files, the output rules (create new, rename, never onto an input or through a
//! symlink), exit codes and the aggregation above 1,000 receipts (spec/REPORT.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{TempDir, code, drop_receipt_line, jouleclaw};
use std::path::{Path, PathBuf};
use std::process::Output;

const TRACE: &str = "conformance/traces/duplex-demo.jsonl";

fn expect(o: &Output, want: i32) {
    assert_eq!(
        code(o),
        want,
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `jouleclaw run TRACE --out DIR` with extra flags; returns DIR.
fn run_into(t: &TempDir, trace: &Path, extra: &[&str]) -> PathBuf {
    let out = t.path("d");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &trace, &"--out", &out];
    args.push(&"--quiet");
    for e in extra {
        args.push(e);
    }
    expect(&jouleclaw(&args), 0);
    out
}

fn demo(t: &TempDir) -> PathBuf {
    run_into(t, Path::new(TRACE), &[])
}

/// `jouleclaw report DIR --allow-unsealed` (most runs here are not sealed; the tests about
/// sealing call [`report_strict`]).
fn report(dir: &Path, extra: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"report", &dir, &"--allow-unsealed"];
    args.extend_from_slice(extra);
    jouleclaw(&args)
}

/// `jouleclaw report DIR` without `--allow-unsealed`.
fn report_strict(dir: &Path, extra: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"report", &dir];
    args.extend_from_slice(extra);
    jouleclaw(&args)
}

fn page(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("report.html")).unwrap()
}

/// The `<g class="window" ...>` opening tags of the timeline, in order.
fn columns(html: &str) -> Vec<&str> {
    html.split("<g class=\"window\" ")
        .skip(1)
        .map(|s| &s[..s.find('>').unwrap()])
        .collect()
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

#[test]
fn the_demo_report_shows_the_demo_trace_facts() {
    let t = TempDir::new("demo");
    let d = demo(&t);
    let o = report(&d, &[]);
    expect(&o, 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("13 of 13 receipts verified"));
    let html = page(&d);

    // 13 windows, one timeline column each, in order.
    let cols = columns(&html);
    assert_eq!(cols.len(), 13);
    let ids: Vec<&str> = cols
        .iter()
        .map(|c| attr(c, "data-window").unwrap())
        .collect();
    let want: Vec<String> = (0..13).map(|i| i.to_string()).collect();
    assert_eq!(ids, want);
    // The two yields, the hallucination and the ignored barge-in, where the trace has them.
    let verdicts: Vec<&str> = cols
        .iter()
        .map(|c| attr(c, "data-verdict").unwrap())
        .collect();
    let findings: Vec<&str> = cols
        .iter()
        .map(|c| attr(c, "data-finding").unwrap())
        .collect();
    for (w, v) in verdicts.iter().enumerate() {
        assert_eq!(*v == "yield", w == 6 || w == 10, "window {w}: {v}");
    }
    for (w, f) in findings.iter().enumerate() {
        let want = match w {
            9 => "hallucination",
            10 => "barge_in_ignored",
            _ => "conforming",
        };
        assert_eq!(*f, want, "window {w}");
    }
    assert!(html.contains("yield (barge-in seen in window 6)"));
    assert!(html.contains("yield (barge-in seen in window 10)"));
    assert!(html.contains("HALLUCINATION: 2048 B over budget"));
    assert!(html.contains(">+2048 B</text>"));
    assert!(html.contains("IGNORED: barge-in 2.02s → outbound 2.19s = 170 ms (&gt; 150 ms)"));
    // 13/13 verified, in the badge and in every row.
    // Not sealed: the badge says the signatures verified and, as loudly, that completeness is
    // unknown; never the green badge.
    assert!(html.contains(
        "<p id=\"verification\" class=\"badge unknown\" data-verified=\"13\" data-total=\"13\" data-outcome=\"unsealed\">"
    ));
    assert!(html.contains("SIGNATURES VERIFIED: 13/13 receipts · ⚠ COMPLETENESS UNKNOWN"));
    assert!(!html.contains("class=\"badge ok\""));
    assert_eq!(
        html.matches("<td class=\"status\">verified</td>").count(),
        13
    );
    // Content hashes: the BLAKE3 of each receipts.jsonl line.
    let jsonl = std::fs::read_to_string(d.join("receipts.jsonl")).unwrap();
    for line in jsonl.lines() {
        let hash = blake3::hash(line.as_bytes()).to_hex().to_string();
        assert!(html.contains(&format!("<td class=\"hash\">{hash}</td>")));
    }
    // The test key is named; the stream is not sealed.
    assert!(html.contains("id=\"test-key\""));
    assert!(html.contains("COMPLETENESS UNKNOWN: not sealed (no seals.cbor"));
    // Self-contained: no script, nothing from elsewhere.
    for banned in ["<script", "src=", "href=", "@import", "url(http", "//fonts"] {
        assert!(!html.contains(banned), "{banned}");
    }
}

#[test]
fn the_rolling_lines_are_the_ledgers_own_sums() {
    let t = TempDir::new("rolling");
    let d = demo(&t);
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    let cols = columns(&html);
    let rolling = |w: usize, k: &str| -> u64 { attr(cols[w], k).unwrap().parse().unwrap() };
    // Windows 5..=9: 6400+6400+6421+6400+6400 in, 4800+6000+0+4840+18470 out.
    assert_eq!(rolling(9, "data-rolling-in"), 32_021);
    assert_eq!(rolling(9, "data-rolling-out"), 34_110);
    // The ledger's own figure: rolling out - unaccounted = the budget = rolling in + the 41
    // substrate bytes of window 7, which receipts do not carry (hence "lower bound").
    assert_eq!(34_110 - 2_048, 32_021 + 41);
    assert!(html.contains("a lower bound"));
    // Window 0 holds only itself; window 4 all five of 0..=4.
    assert_eq!(rolling(0, "data-rolling-in"), 6_400);
    assert_eq!(
        rolling(4, "data-rolling-in"),
        6400 + 6428 + 6400 + 6400 + 6400
    );
    assert_eq!(rolling(4, "data-rolling-out"), 4846 + 4800);
}

#[test]
fn hostile_steward_and_stream_id_show_as_text() {
    let t = TempDir::new("hostile");
    let stream = "<script>alert('s')</script>";
    let steward = "\"><img src=x onerror=alert(1)>&amp;";
    let d = run_into(
        &t,
        Path::new(TRACE),
        &["--stream-id", stream, "--steward", steward],
    );
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    assert!(!html.contains(stream));
    assert!(!html.contains("<img"));
    assert!(!html.contains("<script"));
    assert!(html.contains("&lt;script&gt;alert(&#39;s&#39;)&lt;/script&gt;"));
    assert!(html.contains(
        "<dd class=\"mono\" id=\"steward\">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&amp;amp;</dd>"
    ));
    assert!(html.contains("<title>jouleclaw report: &lt;script&gt;"));
}

#[test]
fn a_tampered_signature_fails_its_own_receipt_and_exits_1() {
    let t = TempDir::new("tamper");
    let d = demo(&t);
    let cbor = d.join("receipts.cbor");
    let mut bytes = std::fs::read(&cbor).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1; // the last receipt's signature
    std::fs::write(&cbor, bytes).unwrap();
    let o = report(&d, &[]);
    expect(&o, 1);
    let html = page(&d);
    assert!(html.contains("class=\"badge bad\" data-verified=\"12\" data-total=\"13\""));
    assert!(html.contains("refused_signature: cose_bad_signature"));
    assert!(html.contains("NOT VERIFIED: nothing signed covers it"));
    assert_eq!(
        html.matches("<td class=\"status\">verified</td>").count(),
        12
    );
    // summary.json's hash of receipts.cbor no longer matches either.
    assert!(html.contains("outputs.receipts.cbor"));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("receipts.cbor item 12: refused_signature: cose_bad_signature")
    );
}

#[test]
fn a_jsonl_line_that_is_not_its_signed_copy_is_a_disagreement() {
    let t = TempDir::new("jsonl");
    let d = demo(&t);
    let path = d.join("receipts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("\"joules_uj\":180", "\"joules_uj\":181", 1);
    assert_ne!(edited, text);
    std::fs::write(&path, edited).unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    // Line 1 is covered by no signature, and item 0 signs no line.
    assert!(html.contains("receipts.jsonl line 1 (window 0): unproven_receipt"));
    assert!(html.contains("receipts.cbor item 0 (window 0): unmatched_signature"));
    assert!(html.contains("data-verified=\"12\" data-total=\"13\""));
}

#[test]
fn a_summary_that_disagrees_with_the_receipts_exits_1() {
    let t = TempDir::new("summary");
    let d = demo(&t);
    let path = d.join("summary.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"receipts\": 13", "\"receipts\": 14")).unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    assert!(html.contains("summary.json: summary_mismatch: receipts is 14, the receipts give 13"));
    // Every receipt still verified on its own.
    assert!(html.contains("data-verified=\"13\" data-total=\"13\""));
    assert!(html.contains("NOT VERIFIED"));
}

#[test]
fn another_public_key_refuses_every_receipt_and_names_the_difference() {
    let t = TempDir::new("pub");
    let d = demo(&t);
    let key = t.path("k");
    let public = t.path("k.pub");
    expect(
        &jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &public]),
        0,
    );
    expect(&report(&d, &[&"--pub", &public]), 1);
    let html = page(&d);
    assert!(html.contains("data-verified=\"0\" data-total=\"13\""));
    assert_eq!(
        html.matches("refused_signature: cose_unknown_kid").count(),
        13
    );
    assert!(html.contains("signer.pub: signer_mismatch: signer.pub is not the verifying key"));
    assert!(!html.contains("id=\"test-key\""));
    // The directory's own key given as --pub verifies.
    expect(&report(&d, &[&"--pub", &d.join("signer.pub")]), 0);
}

#[test]
fn a_run_signed_with_its_own_key_has_no_test_key_warning() {
    let t = TempDir::new("ownkey");
    let key = t.path("k");
    expect(&jouleclaw(&[&"keygen", &"--out", &key]), 0);
    let d = run_into(
        &t,
        Path::new(TRACE),
        &["--key", key.to_str().unwrap(), "--stream-id", "call-ownkey"],
    );
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    assert!(!html.contains("TEST KEY"));
    assert!(html.contains("integrity only"));
}

#[test]
fn the_output_never_replaces_an_input_nor_follows_a_symlink() {
    let t = TempDir::new("out");
    let d = demo(&t);
    let jsonl = d.join("receipts.jsonl");
    let before = std::fs::read(&jsonl).unwrap();
    // Onto an input, directly or through a link.
    expect(&report(&d, &[&"-o", &jsonl]), 2);
    let link = t.path("link.html");
    std::os::unix::fs::symlink(&jsonl, &link).unwrap();
    expect(&report(&d, &[&"-o", &link]), 2);
    assert_eq!(std::fs::read(&jsonl).unwrap(), before);
    // The signed documents are inputs too: never written over, directly or through a link.
    for doc in ["stop-latency.cbor", "interaction-metrics.cbor"] {
        let path = d.join(doc);
        let kept = std::fs::read(&path).unwrap();
        expect(&report(&d, &[&"-o", &path]), 2);
        let link = t.path(&format!("{doc}.html"));
        std::os::unix::fs::symlink(&path, &link).unwrap();
        expect(&report(&d, &[&"-o", &link]), 2);
        assert_eq!(std::fs::read(&path).unwrap(), kept, "{doc}");
    }
    // A planted symlink to elsewhere is never followed: the rename replaces the link itself.
    let victim = t.path("victim");
    std::fs::write(&victim, b"keep").unwrap();
    std::os::unix::fs::symlink(&victim, d.join("report.html")).unwrap();
    expect(&report(&d, &[]), 0);
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    assert!(
        std::fs::symlink_metadata(d.join("report.html"))
            .unwrap()
            .file_type()
            .is_file()
    );
    // A directory is refused; no temporary file is left behind.
    expect(&report(&d, &[&"-o", &d]), 2);
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    // Its neighbour: a plain existing report is replaced.
    let out = t.path("r.html");
    std::fs::write(&out, b"old").unwrap();
    expect(&report(&d, &[&"-o", &out]), 0);
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
}

#[test]
fn missing_inputs_and_bad_flags_exit_2() {
    let t = TempDir::new("usage");
    expect(&report(&t.path("nope"), &[]), 2);
    let d = demo(&t);
    // Without signer.pub and without --pub there is no key to verify with.
    std::fs::rename(d.join("signer.pub"), t.path("kept.pub")).unwrap();
    expect(&report(&d, &[]), 2);
    assert!(!d.join("report.html").exists());
    std::fs::rename(t.path("kept.pub"), d.join("signer.pub")).unwrap();
    expect(&jouleclaw(&[&"report"]), 2);
    expect(&report(&d, &[&"--pub", &t.path("missing.pub")]), 2);
}

#[test]
fn seals_are_reported_absent_or_checked_for_completeness() {
    let t = TempDir::new("seals");
    let d = demo(&t);
    expect(&report(&d, &[]), 0);
    assert!(page(&d).contains("COMPLETENESS UNKNOWN: not sealed (no seals.cbor"));
    // Without --allow-unsealed an unsealed stream is not accepted, and the page says so.
    expect(&report_strict(&d, &[]), 1);
    assert!(page(&d).contains("NOT ACCEPTED without --allow-unsealed"));
    // An empty seals.cbor beside an unsealed run: sealed by nothing, so not complete.
    std::fs::write(d.join("seals.cbor"), b"").unwrap();
    std::fs::write(d.join("inclusion.cbor"), b"").unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    assert!(html.contains("NOT COMPLETE"));
    assert!(html.contains("no_seals"));
    assert!(!html.contains("not sealed (no seals.cbor"));
}

#[test]
fn a_sealed_run_without_window_signatures_is_verified_through_its_checkpoints() {
    let t = TempDir::new("sealed");
    let d = run_into(
        &t,
        Path::new(TRACE),
        &["--seal-every", "5", "--window-signatures", "none"],
    );
    expect(&report_strict(&d, &[]), 0);
    let html = page(&d);
    assert!(html.contains("COMPLETE: the receipts are the whole sealed stream (3 checkpoints"));
    assert!(html.contains(
        "class=\"badge ok\" data-verified=\"13\" data-total=\"13\" data-outcome=\"complete\""
    ));
    assert!(html.contains("verified (inclusion receipt under its checkpoint)"));
    // One receipt line dropped: the page names the missing window and the run exits 1.
    drop_receipt_line(&d, 4);
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    assert!(html.contains("NOT COMPLETE"));
    assert!(html.contains("missing_window: window 4"));
}

#[test]
fn empty_windows_are_drawn_as_gaps() {
    let t = TempDir::new("gaps");
    let trace = t.path("gaps.jsonl");
    std::fs::write(
        &trace,
        "{\"ts_ns\":0,\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":640}\n\
         {\"ts_ns\":600000000,\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":640}\n",
    )
    .unwrap();
    let d = run_into(&t, &trace, &[]);
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    let cols = columns(&html);
    assert_eq!(cols.len(), 2);
    assert_eq!(attr(cols[1], "data-window"), Some("3"));
    assert!(html.contains(">+2 empty</text>"));
    assert_eq!(html.matches("class=\"gap\"").count(), 1);
    assert!(html.contains("<th>empty windows (no receipt)</th><td class=\"n\">2</td>"));
}

#[test]
fn more_than_1000_receipts_aggregate_into_at_most_1000_columns() {
    let t = TempDir::new("big");
    let trace = t.path("big.jsonl");
    let mut text = String::new();
    for w in 0..1500u64 {
        text.push_str(&format!(
            "{{\"ts_ns\":{},\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":100}}\n",
            w * 200_000_000
        ));
        if w == 11 {
            // A barge-in in the second receipt of column 5 (windows 10 and 11).
            text.push_str(&format!(
                "{{\"ts_ns\":{},\"channel_id\":0,\"kind\":\"marker\",\"marker\":\"barge_in\"}}\n",
                w * 200_000_000 + 1_000
            ));
        }
    }
    std::fs::write(&trace, text).unwrap();
    let d = run_into(&t, &trace, &[]);
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    let cols = columns(&html);
    // The column shows its highest-ranked verdict, not its first receipt's.
    assert_eq!(attr(cols[5], "data-window"), Some("10"));
    assert_eq!(attr(cols[5], "data-verdict"), Some("yield"));
    assert_eq!(
        cols.iter()
            .filter(|c| attr(c, "data-verdict") == Some("yield"))
            .count(),
        1
    );
    // 1,500 receipts, two per column.
    assert_eq!(cols.len(), 750);
    assert_eq!(attr(cols[0], "data-window"), Some("0"));
    assert_eq!(attr(cols[0], "data-last"), Some("1"));
    assert_eq!(attr(cols[749], "data-last"), Some("1499"));
    assert!(html.contains("2 consecutive receipts"));
    // Strips of 100 columns; the table lists the first 1,000 receipts and counts the rest.
    assert_eq!(html.matches("<svg class=\"strip\"").count(), 8);
    assert_eq!(
        html.matches("<td class=\"status\">verified</td>").count(),
        1000
    );
    assert!(html.contains("500 more receipts are not listed"));
    assert!(html.contains("SIGNATURES VERIFIED: 1500/1500 receipts"));
}

#[test]
fn up_to_1000_receipts_get_one_column_each() {
    let t = TempDir::new("thousand");
    let trace = t.path("k.jsonl");
    let mut text = String::new();
    for w in 0..1000u64 {
        text.push_str(&format!(
            "{{\"ts_ns\":{},\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":100}}\n",
            w * 200_000_000
        ));
    }
    std::fs::write(&trace, text).unwrap();
    let d = run_into(&t, &trace, &[]);
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    assert_eq!(columns(&html).len(), 1000);
    assert_eq!(html.matches("<svg class=\"strip\"").count(), 10);
}

#[test]
fn lines_are_matched_to_their_signed_copies_by_content_hash() {
    use jouleclaw_stack::jcr1::cose;
    let t = TempDir::new("subset");
    let d = demo(&t);
    let path = d.join("receipts.cbor");
    let bytes = std::fs::read(&path).unwrap();
    let items = cose::split_cbor_sequence(&bytes).unwrap();
    // Only windows 10 and 6, in that order (as a sealed run that signs only some windows, or
    // a shuffled sequence).
    let subset = [items[10], items[6]].concat();
    std::fs::write(&path, subset).unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    assert!(html.contains("data-verified=\"1\" data-total=\"13\""));
    // Item 0 signs line 11; item 1 signs line 7, which is not after line 11: it is matched to
    // no line, since signatures follow the lines' order.
    assert!(html.contains("receipts.cbor item 1 (window 6): unmatched_signature"));
    assert_eq!(
        html.matches("no window signature covers it and the stream is not sealed")
            .count(),
        12
    );
    // With a seals.cbor beside it the unsigned lines say why they are not verified, and the
    // lines no checkpoint seals (none verifies) are named: without inclusion.cbor their
    // inclusion receipts would be derived from the checkpoints.
    std::fs::write(d.join("seals.cbor"), b"").unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    assert_eq!(
        html.matches("neither a window signature nor an inclusion receipt covers it")
            .count(),
        12
    );
    assert!(html.contains("receipt_not_sealed: no verified checkpoint seals leaf 0"));
}

#[test]
fn a_signed_receipt_in_no_line_is_shown_but_not_drawn() {
    let t = TempDir::new("extra");
    let d = demo(&t);
    let path = d.join("receipts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> = text.lines().take(12).collect();
    std::fs::write(&path, format!("{}\n", kept.join("\n"))).unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    assert_eq!(columns(&html).len(), 12);
    assert!(html.contains("data-verified=\"12\" data-total=\"12\""));
    assert!(html.contains("receipts.cbor item 12 (window 12): unmatched_signature"));
}

/// A trace from a trajectory: one token per 200 ms frame (one window each), `u` user speech,
/// `a` agent speech (outbound audio), `b` a backchannel, `v` a vocal tic, `n` speech not
/// directed at the agent (each an interaction marker), `.` neither; inbound audio in every
/// frame, so every frame has a window.
fn trajectory(tokens: &str) -> String {
    let mut text = String::new();
    for (k, t) in tokens.split_whitespace().enumerate() {
        let ts = k as u64 * 200_000_000;
        text.push_str(&format!(
            "{{\"ts_ns\":{ts},\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":640}}\n"
        ));
        for (c, name) in [
            ('u', "user_speech"),
            ('b', "backchannel"),
            ('v', "vocal_tic"),
            ('n', "non_directed"),
        ] {
            if t.contains(c) {
                text.push_str(&format!(
                    "{{\"ts_ns\":{},\"channel_id\":0,\"kind\":\"marker\",\"marker\":{{\"custom\":\"{name}\"}}}}\n",
                    ts + 1_000
                ));
            }
        }
        if t.contains('a') {
            text.push_str(&format!(
                "{{\"ts_ns\":{},\"channel_id\":3,\"kind\":\"audio\",\"bytes_len\":480}}\n",
                ts + 2_000
            ));
        }
    }
    text
}

/// A call with every kind of interaction rule: a turn answered, a backchannel talked through,
/// a vocal tic answered, an interruption yielded to after 3 frames, the agent starting over the
/// user, speech not directed at the agent stopped for.
const CALL: &str = "u u u . . a a a a aub a a a a a a a . . v . . a a a au au a . . . . . . u u . \
                    a a . u au u . . a a an a a a . .";

/// The events of [`CALL`] by τ-voice's rules: (kind, frame, latency in frames).
const CALL_EVENTS: [(&str, u64, Option<u64>); 8] = [
    ("response", 3, Some(2)),
    ("backchannel_correct", 9, None),
    ("vocal_tic_error", 22, None),
    ("yield", 25, Some(3)),
    ("response", 36, Some(1)),
    ("agent_interrupts_user", 41, None),
    ("response", 43, Some(2)),
    ("non_directed_error", 47, None),
];

fn call(t: &TempDir, extra: &[&str]) -> PathBuf {
    let trace = t.write("call.jsonl", trajectory(CALL));
    run_into(t, &trace, extra)
}

/// The text between `<section id="ID"` and its `</section>`.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = start + html[start..].find("</section>").unwrap();
    &html[start..end]
}

/// The opening tags of `<TAG class="CLASS" ...>` elements in `html`.
fn tags<'a>(html: &'a str, open: &str) -> Vec<&'a str> {
    html.split(open)
        .skip(1)
        .map(|s| &s[..s.find('>').unwrap()])
        .collect()
}

#[test]
fn the_interaction_panel_is_drawn_from_the_signed_document() {
    let t = TempDir::new("panel");
    let d = call(&t, &["--seal-every", "5"]);
    expect(&report_strict(&d, &[]), 0);
    let html = page(&d);
    let ix = section(&html, "interaction");
    assert!(ix.contains(
        "interaction-metrics/1 verified and bound to the receipts: 8 events over 53 frames of 0.2 s"
    ));
    // Every field of the panel is the one `metrics interaction` computes from the same
    // document, exactly (Rust's shortest round-trip form of the f64), with its count.
    let o = jouleclaw(&[&"metrics", &"interaction", &"--json", &d]);
    expect(&o, 0);
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = |field: &str| -> &str {
        let at = ix
            .find(&format!("<tr data-metric=\"{field}\">"))
            .unwrap_or_else(|| panic!("no row {field}"));
        &ix[at..at + ix[at..].find("</tr>").unwrap()]
    };
    for (field, value, unit, behind) in [
        (
            "response_latency_mean",
            &p["response_latency_mean"],
            " s",
            "3 responses",
        ),
        (
            "yield_latency_mean",
            &p["yield_latency_mean"],
            " s",
            "1 yields",
        ),
        ("response_rate", &p["response_rate"], "", "3 user turns"),
        ("yield_rate", &p["yield_rate"], "", "1 interruptions"),
        (
            "yield_rate_deadline",
            &p["substrate"]["yield_rate_deadline"],
            "",
            "0 within 150 ms",
        ),
        (
            "agent_interruption_rate",
            &p["agent_interruption_rate"],
            "",
            "1 agent interruptions",
        ),
        (
            "selectivity_backchannel",
            &p["selectivity_backchannel"],
            "",
            "1 backchannels",
        ),
        (
            "selectivity_vocal_tic",
            &p["selectivity_vocal_tic"],
            "",
            "1 vocal tics",
        ),
        (
            "selectivity_non_directed",
            &p["selectivity_non_directed"],
            "",
            "1 non-directed",
        ),
    ] {
        let v = value.as_f64().unwrap_or_else(|| panic!("{field}: {value}"));
        let r = row(field);
        assert!(
            r.contains(&format!("<td class=\"n\">{v}{unit}</td><td>{behind}</td>")),
            "{field}: {r}"
        );
    }
    // The figures themselves, by τ-voice's rules (responses after 2, 1 and 2 frames; one yield
    // after 3 frames, not within 150 ms).
    assert!(row("response_latency_mean").contains(">0.3333333333333332 s<"));
    assert!(row("yield_latency_mean").contains(">0.6000000000000001 s<"));
    assert!(row("yield_rate").contains("R_Y at τ-voice&#39;s 2 s no-yield window"));
    assert!(row("yield_rate_deadline").contains("R_Y at the 150 ms deadline"));
    assert!(row("selectivity_vocal_tic").contains("<td class=\"n\">0</td>"));
    // The detection windows the document records.
    for (name, s, frames) in [
        ("tick_ns", "0.2 s", 1),
        ("no_yield_window_ns", "2 s", 10),
        ("backchannel_yield_window_ns", "1 s", 5),
        ("vocal_tic_yield_window_ns", "1 s", 5),
        ("non_directed_yield_window_ns", "1 s", 5),
        ("vocal_tic_response_window_ns", "2 s", 10),
        ("non_directed_response_window_ns", "2 s", 10),
    ] {
        assert!(
            ix.contains(&format!(
                "<tr data-window-name=\"{name}\"><td><code>{name}</code></td><td class=\"n\">{s}</td>"
            )) && ix.contains(&format!("<td class=\"n\">{frames}</td></tr>")),
            "{name}"
        );
    }
    // Each event in the table and on the timeline, at its frame, in its window's column.
    let rows = tags(ix, "<tr class=\"ev-");
    assert_eq!(rows.len(), CALL_EVENTS.len());
    let marks = tags(section(&html, "timeline"), "<g class=\"event\" ");
    assert_eq!(marks.len(), CALL_EVENTS.len());
    for ((kind, frame, latency), (row, mark)) in CALL_EVENTS.iter().zip(rows.iter().zip(&marks)) {
        for tag in [row, mark] {
            assert_eq!(attr(tag, "data-kind"), Some(*kind), "{tag}");
            assert_eq!(attr(tag, "data-frame"), Some(frame.to_string().as_str()));
            // One window per 200 ms frame here: the window id is the frame.
            assert_eq!(attr(tag, "data-window"), Some(frame.to_string().as_str()));
        }
        if let Some(l) = latency {
            assert!(ix.contains(&format!(
                "data-frame=\"{frame}\" data-window=\"{frame}\"><td class=\"n\">{frame}</td>"
            )));
            let at = html
                .find(&format!(
                    "data-kind=\"{kind}\" data-frame=\"{frame}\" data-window=\"{frame}\"><title>"
                ))
                .unwrap();
            assert!(html[at..].starts_with(&format!(
                "data-kind=\"{kind}\" data-frame=\"{frame}\" data-window=\"{frame}\"><title>{kind}: frame {frame}"
            )));
            assert!(
                html[at..at + 200].contains(&format!("after {l} frames")),
                "{kind} {frame}"
            );
        }
    }
    // The marks sit inside their window's column.
    let timeline = section(&html, "timeline");
    for (kind, frame, _) in CALL_EVENTS {
        let col = timeline
            .find(&format!("<g class=\"window\" data-window=\"{frame}\" "))
            .unwrap();
        let end = col
            + timeline[col..]
                .find("</g><g class=\"window\"")
                .unwrap_or(timeline.len() - col);
        assert!(
            timeline[col..end].contains(&format!("<g class=\"event\" data-kind=\"{kind}\"")),
            "{kind} at {frame}"
        );
    }
    assert!(html.contains("id=\"interaction-legend\""));
    assert!(ix.contains("interaction panel sealed: the final seal (stream-seal/2) commits"));
}

#[test]
fn an_interaction_document_that_does_not_verify_is_named_and_not_drawn() {
    let t = TempDir::new("panel-bad");
    let d = call(&t, &[]);
    let doc = d.join("interaction-metrics.cbor");
    let mut bytes = std::fs::read(&doc).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&doc, bytes).unwrap();
    expect(&report(&d, &[]), 1);
    let html = page(&d);
    let ix = section(&html, "interaction");
    assert!(ix.contains("NOT VERIFIED: interaction-metrics.cbor"));
    assert!(ix.contains("cose_bad_signature"));
    assert!(!ix.contains("id=\"interaction-panel\""));
    assert!(!html.contains("<g class=\"event\""));
    assert!(!html.contains("id=\"interaction-legend\""));
}

#[test]
fn a_run_without_an_interaction_document_says_so() {
    let t = TempDir::new("panel-none");
    let d = demo(&t);
    // summary.json lists the document with its BLAKE3, beside the other outputs.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
    let doc = std::fs::read(d.join("interaction-metrics.cbor")).unwrap();
    assert_eq!(
        summary["outputs"]["interaction-metrics.cbor"],
        blake3::hash(&doc).to_hex().as_str()
    );
    expect(&report(&d, &[]), 0);
    let ix = section(&page(&d), "interaction").to_owned();
    assert!(ix.contains("verified and bound to the receipts: 0 events"));
    assert!(ix.contains("id=\"interaction-no-events\""));
    // Deleted from a run whose summary lists it: refused, named.
    std::fs::remove_file(d.join("interaction-metrics.cbor")).unwrap();
    expect(&report(&d, &[]), 1);
    let ix = section(&page(&d), "interaction").to_owned();
    assert!(ix.contains("interaction_metrics_missing"), "{ix}");
    // A run from before interaction-metrics/1: no document, and its summary does not list one.
    let text = std::fs::read_to_string(d.join("summary.json")).unwrap();
    let line = format!(
        "    \"interaction-metrics.cbor\": \"{}\",\n",
        blake3::hash(&doc).to_hex()
    );
    assert!(text.contains(&line));
    std::fs::write(d.join("summary.json"), text.replace(&line, "")).unwrap();
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    let ix = section(&html, "interaction");
    assert!(ix.contains(
        "<p class=\"badge unknown\" id=\"interaction-status\">No interaction panel: this run \
         directory has no interaction-metrics.cbor"
    ));
    assert!(!html.contains("<g class=\"event\""));
}

/// The directory of row `name` of conformance/stream-at-rest-tamper.json (its base's files,
/// then its `write` operations).
fn tamper_row(t: &TempDir, name: &str) -> PathBuf {
    let table: serde_json::Value =
        serde_json::from_slice(&std::fs::read("conformance/stream-at-rest-tamper.json").unwrap())
            .unwrap();
    let row = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap();
    let d = t.path(name);
    std::fs::create_dir_all(&d).unwrap();
    let hex_of = |v: &serde_json::Value| hex::decode(v.as_str().unwrap()).unwrap();
    for (file, h) in table["bases"][row["base"].as_str().unwrap()]
        .as_object()
        .unwrap()
    {
        std::fs::write(d.join(file), hex_of(h)).unwrap();
    }
    for op in row["ops"].as_array().unwrap() {
        assert_eq!(op["op"], "write", "{name}");
        std::fs::write(d.join(op["file"].as_str().unwrap()), hex_of(&op["hex"])).unwrap();
    }
    d
}

#[test]
fn documents_outside_the_final_seal_are_said_not_sealed() {
    let t = TempDir::new("docseal");
    let seal = |html: &str, id: &str| -> String {
        let at = html
            .find(&format!("id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no {id}"));
        html[at..at + html[at..].find("</p>").unwrap()].to_owned()
    };
    // A run sealed before stream-seal/2: complete, and neither document is inside the seal.
    let d = tamper_row(&t, "stream_seal_1_final_intact");
    expect(&report_strict(&d, &[]), 0);
    let html = page(&d);
    assert!(html.contains("data-outcome=\"complete\""));
    let sl = seal(section(&html, "stop-latency"), "stop-latency-seal");
    assert!(
        sl.contains("stop latency not sealed: the final seal is stream-seal/1"),
        "{sl}"
    );
    let ix = seal(section(&html, "interaction"), "interaction-seal");
    assert!(ix.contains("interaction panel not sealed: the final seal is stream-seal/1"));
    // Its neighbour, the same run with its stream-seal/2 final seal: both sealed.
    let d = tamper_row(&t, "sealed_intact");
    expect(&report_strict(&d, &[]), 0);
    let html = page(&d);
    assert!(seal(&html, "stop-latency-seal").contains(
        "stop latency sealed: the final seal (stream-seal/2) commits to this stop-latency/1 document"
    ));
    assert!(seal(&html, "interaction-seal").contains("interaction panel sealed"));
    // Not sealed at all.
    let d = demo(&t);
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    assert!(
        seal(&html, "stop-latency-seal")
            .contains("stop latency not sealed: the stream is not sealed")
    );
    assert!(
        seal(&html, "interaction-seal")
            .contains("interaction panel not sealed: the stream is not sealed")
    );
}

#[test]
fn hostile_ids_in_the_interaction_document_show_as_text() {
    let t = TempDir::new("ix-hostile");
    let stream = "<script>alert('ix')</script>";
    let steward = "\"><img src=x onerror=alert(2)>";
    let trace = t.write("call.jsonl", trajectory(CALL));
    let d = run_into(&t, &trace, &["--stream-id", stream, "--steward", steward]);
    expect(&report(&d, &[]), 0);
    let html = page(&d);
    let ix = section(&html, "interaction");
    assert!(ix.contains(
        "(stream <span class=\"mono\">&lt;script&gt;alert(&#39;ix&#39;)&lt;/script&gt;</span>, \
         steward <span class=\"mono\">&quot;&gt;&lt;img src=x onerror=alert(2)&gt;</span>"
    ));
    // The same document beside another call's receipts: refused, its ids quoted as text.
    let other = t.path("other");
    let o = jouleclaw(&[&"run", &TRACE, &"--out", &other, &"--quiet"]);
    expect(&o, 0);
    std::fs::copy(
        d.join("interaction-metrics.cbor"),
        other.join("interaction-metrics.cbor"),
    )
    .unwrap();
    expect(&report(&other, &[]), 1);
    let html = page(&other);
    let ix = section(&html, "interaction");
    assert!(ix.contains("stream_mismatch"), "{ix}");
    // The document verifies, but it is another call's: none of its events is drawn as this
    // call's.
    assert!(!html.contains("<g class=\"event\""));
    assert!(!ix.contains("id=\"interaction-panel\""));
    for raw in ["<script", "<img"] {
        assert!(!html.contains(raw), "{raw}");
    }
    assert!(
        ix.contains("&lt;script&gt;alert(&#39;ix&#39;)&lt;/script&gt;"),
        "{ix}"
    );
}
