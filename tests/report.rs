//! `jouleclaw report`, run for real (`CARGO_BIN_EXE_jouleclaw`) on the output of `jouleclaw run`:
//! the demo trace's facts in the page, escaping of hostile ids, every receipt's own status,
//! disagreeing files, the output rules (create new, rename, never onto an input or through a
//! symlink), exit codes and the aggregation above 1,000 receipts (spec/REPORT.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{TempDir, code, jouleclaw};

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
    let lines = std::fs::read_to_string(d.join("receipts.jsonl")).unwrap();
    let kept: String = lines
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 4)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("receipts.jsonl"), kept).unwrap();
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
