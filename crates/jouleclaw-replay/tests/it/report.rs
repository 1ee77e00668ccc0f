#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The reproducible report: provenance passed in by the caller, the rule set version, the
//! per-file and corpus digests.

use jouleclaw_replay::*;
use jouleclaw_testkit::{or_not_run, repo};

/// The repository's first replay fixture (`None` in a crate built alone).
fn one() -> Option<String> {
    repo::file("conformance/replay/01_single_hold_burst.jsonl")
}

#[test]
fn the_json_report_carries_the_callers_provenance_and_the_rule_set_version() {
    let report = replay_corpus(&[("x.jsonl".into(), b"x".to_vec())]);
    let p = Provenance::from_build("0.1.0", "0123456789abcdef0123456789abcdef01234567\n");
    let json = report.to_json_with(&p);
    assert_eq!(json["schema"], "jouleclaw-replay-report/2");
    assert_eq!(json["schema"], REPORT_SCHEMA);
    let prov = &json["provenance"];
    assert_eq!(prov["jouleclaw_version"], "0.1.0");
    assert_eq!(
        prov["git_revision"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(prov["rule_set_version"], "commit-replay-rules/2");
    assert_eq!(prov["rule_set_version"], RULE_SET_VERSION);
    assert_eq!(prov["replay_crate_version"], env!("CARGO_PKG_VERSION"));
    // sha256("x"), then sha256 of that digest's hex and a newline (`sha256sum` by hand).
    assert_eq!(
        json["files"][0]["sha256"],
        "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    );
    assert_eq!(
        prov["corpus_sha256"],
        "aea98a4a24b8264f01ff4c8ac98b57f06cee5a43f3fec57118be52838bc379aa"
    );
    let rendered: serde_json::Value = serde_json::from_str(&report.render_json_with(&p)).unwrap();
    assert_eq!(rendered, json);
}

#[test]
fn unknown_provenance_is_null_never_invented() {
    let one = or_not_run!(one());
    let report = replay_corpus(&[("one.jsonl".into(), one.clone().into())]);
    for json in [
        report.to_json(),
        report.to_json_with(&Provenance::from_build("", "  ")),
    ] {
        assert!(json["provenance"]["jouleclaw_version"].is_null());
        assert!(json["provenance"]["git_revision"].is_null());
        assert_eq!(json["provenance"]["rule_set_version"], RULE_SET_VERSION);
    }
    let p = Provenance::from_build("0.1.0", "");
    assert_eq!(p.jouleclaw_version.as_deref(), Some("0.1.0"));
    assert_eq!(p.git_revision, None);
}

#[test]
fn the_corpus_digest_names_the_bytes_in_order_not_the_names() {
    let one = or_not_run!(one());
    let a = replay_corpus(&[
        ("a.jsonl".into(), one.clone().into()),
        ("b.jsonl".into(), b"x".to_vec()),
    ]);
    let renamed = replay_corpus(&[
        ("other/a.jsonl".into(), one.clone().into()),
        ("c.jsonl".into(), b"x".to_vec()),
    ]);
    let swapped = replay_corpus(&[
        ("b.jsonl".into(), b"x".to_vec()),
        ("a.jsonl".into(), one.clone().into()),
    ]);
    let edited = replay_corpus(&[
        ("a.jsonl".into(), one.replace("alpha", "alphA").into()),
        ("b.jsonl".into(), b"x".to_vec()),
    ]);
    assert_eq!(a.corpus_sha256(), renamed.corpus_sha256());
    assert_ne!(a.corpus_sha256(), swapped.corpus_sha256());
    assert_ne!(a.corpus_sha256(), edited.corpus_sha256());
    assert!(a.render_text().contains(&format!(
        "rule_set_version {RULE_SET_VERSION} corpus_sha256 "
    )));
}

#[test]
fn two_runs_of_one_corpus_give_byte_identical_reports() {
    let one = or_not_run!(one());
    let files = vec![("one.jsonl".to_owned(), one.as_bytes().to_vec())];
    let p = Provenance::from_build("0.1.0", "abc");
    assert_eq!(
        replay_corpus(&files).render_json_with(&p),
        replay_corpus(&files).render_json_with(&p)
    );
}
