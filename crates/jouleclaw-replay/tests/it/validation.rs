#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Every validation error names the line and the field; the accepted neighbour parses.

use jouleclaw_replay::*;

const GOOD: &str = r#"{"id":"a","description":"d","mode":{"activation":"hold","staged":false,"streaming":true},"events":[{"t_ms":0,"kind":"hold_start"},{"t_ms":5,"kind":"hold_release"},{"t_ms":9,"kind":"final_decode","text":"x"}],"expect":{"target_writes":[],"staged_chunks":[],"finalizations":1,"no_pre_release_writes":true,"no_forbidden_deletions":true}}"#;

/// The good record on line 2 (after a blank line), with `from` replaced by `to`.
fn err(from: &str, to: &str) -> ReplayError {
    assert!(GOOD.contains(from), "{from}");
    let text = format!("\n{}\n", GOOD.replacen(from, to, 1));
    parse_fixtures(text.as_bytes()).unwrap_err()
}

fn check(e: &ReplayError, code: &str, field: &str) {
    assert_eq!(e.code(), code, "{e}");
    assert_eq!(e.line(), Some(2), "{e}");
    assert_eq!(e.field(), Some(field), "{e}");
    assert!(e.to_string().contains("line 2"), "{e}");
    assert!(e.to_string().contains(field), "{e}");
}

#[test]
fn the_good_record_parses() {
    let fx = parse_fixtures(format!("\n{GOOD}\n").as_bytes()).unwrap();
    assert_eq!(fx.len(), 1);
    assert_eq!(fx[0].line, 2);
    assert_eq!(fx[0].events.len(), 3);
}

#[test]
fn missing_mandatory_fields_are_named() {
    for (from, to, field) in [
        (r#""id":"a","#, "", "id"),
        (r#""description":"d","#, "", "description"),
        (r#","staged":false"#, "", "mode.staged"),
        (r#"{"t_ms":5,"#, "{", "events[1].t_ms"),
        (r#","text":"x""#, "", "events[2].text"),
        (r#""finalizations":1,"#, "", "expect.finalizations"),
    ] {
        check(&err(from, to), "missing_field", field);
    }
    let no_expect = GOOD.split(r#","expect""#).next().unwrap().to_owned() + "}";
    let e = parse_fixtures(no_expect.as_bytes()).unwrap_err();
    assert_eq!((e.code(), e.field()), ("missing_field", Some("expect")));
}

#[test]
fn non_monotonic_time_is_named() {
    let e = err(r#"{"t_ms":9,"#, r#"{"t_ms":4,"#);
    check(&e, "non_monotonic_t_ms", "events[2].t_ms");
    // Neighbour: equal times are sorted by array order and accepted.
    let ok = GOOD.replacen(r#"{"t_ms":9,"#, r#"{"t_ms":5,"#, 1);
    assert!(parse_fixtures(ok.as_bytes()).is_ok());
}

#[test]
fn unknown_kinds_categories_activations_and_fields_are_named() {
    check(
        &err(r#""kind":"hold_release""#, r#""kind":"hold_relase""#),
        "unknown_event_kind",
        "events[1].kind",
    );
    let e = err(
        r#""kind":"hold_release""#,
        r#""kind":"failure","category":"timeout""#,
    );
    check(&e, "unknown_failure_category", "events[1].category");
    let ok = GOOD.replacen(
        r#""kind":"hold_release""#,
        r#""kind":"failure","category":"target_lost""#,
        1,
    );
    assert!(parse_fixtures(ok.as_bytes()).is_ok());
    check(
        &err(r#""hold","#, r#""toggle","#),
        "unknown_activation",
        "mode.activation",
    );
    check(
        &err(r#""kind":"hold_start""#, r#""kind":"hold_start","mic":"x""#),
        "unknown_field",
        "events[0].mic",
    );
    check(
        &err(r#""id":"a","#, r#""id":"a","extra":1,"#),
        "unknown_field",
        "extra",
    );
    // Neighbour: hold_start's optional synthetic audio descriptors are accepted.
    let ok = GOOD.replacen(
        r#""kind":"hold_start""#,
        r#""kind":"hold_start","duration_ms":700,"energy_band":"low""#,
        1,
    );
    assert!(parse_fixtures(ok.as_bytes()).is_ok());
}

#[test]
fn wrong_types_are_named() {
    for (from, to, field) in [
        (r#""id":"a""#, r#""id":7"#, "id"),
        (r#""staged":false"#, r#""staged":"no""#, "mode.staged"),
        (r#"{"t_ms":5,"#, r#"{"t_ms":"5","#, "events[1].t_ms"),
        (r#"{"t_ms":5,"#, r#"{"t_ms":-5,"#, "events[1].t_ms"),
        (r#"{"t_ms":5,"#, r#"{"t_ms":5.5,"#, "events[1].t_ms"),
        (
            r#"{"t_ms":5,"#,
            r#"{"t_ms":9007199254740992,"#,
            "events[1].t_ms",
        ),
        (r#""text":"x""#, r#""text":["x"]"#, "events[2].text"),
        (
            r#""target_writes":[]"#,
            r#""target_writes":[1]"#,
            "expect.target_writes[0]",
        ),
        (
            r#""finalizations":1"#,
            r#""finalizations":true"#,
            "expect.finalizations",
        ),
        (r#""events":["#, r#""events":[7,"#, "events[0]"),
        (
            r#""mode":{"activation":"hold","staged":false,"streaming":true}"#,
            r#""mode":[]"#,
            "mode",
        ),
    ] {
        check(&err(from, to), "wrong_type", field);
    }
}

#[test]
fn file_level_refusals() {
    let e = parse_fixtures(b"\n  \n").unwrap_err();
    assert_eq!(e.code(), "no_records");
    let e = parse_fixtures(b"\n{not json").unwrap_err();
    assert_eq!((e.code(), e.line()), ("invalid_json", Some(2)));
    let e = parse_fixtures(b"\n\n\xff").unwrap_err();
    assert_eq!((e.code(), e.line()), ("invalid_utf8", Some(3)));
    let two = format!("{GOOD}\n{GOOD}\n");
    let e = parse_fixtures(two.as_bytes()).unwrap_err();
    assert_eq!(
        (e.code(), e.line(), e.field()),
        ("duplicate_fixture_id", Some(2), Some("id"))
    );
    let two = format!(
        "{GOOD}\n{}\n",
        GOOD.replacen(r#""id":"a""#, r#""id":"b""#, 1)
    );
    assert_eq!(parse_fixtures(two.as_bytes()).unwrap().len(), 2);
}

#[test]
fn an_invalid_file_is_reported_and_fails_the_corpus() {
    // GOOD has no target, so its final is withheld: no writes, as it expects.
    let good = ("good.jsonl".to_owned(), GOOD.as_bytes().to_vec());
    assert!(replay_corpus(std::slice::from_ref(&good)).all_expectations_hold());
    let wrong = GOOD.replacen(r#""target_writes":[]"#, r#""target_writes":["x"]"#, 1);
    let wrong = ("wrong.jsonl".to_owned(), wrong.into_bytes());
    let report = replay_corpus(std::slice::from_ref(&wrong));
    assert!(!report.all_expectations_hold());
    assert_eq!(report.totals.failed, 1);
    let bad = ("bad.jsonl".to_owned(), b"{}".to_vec());
    let report = replay_corpus(&[good, bad]);
    assert!(!report.all_expectations_hold());
    assert_eq!(report.totals.invalid_files, 1);
    assert!(report.render_text().contains("INVALID [missing_field]"));
    assert_eq!(
        report.to_json()["files"][1]["error"]["code"],
        "missing_field"
    );
    // An empty corpus checks nothing and does not pass.
    assert!(!replay_corpus(&[]).all_expectations_hold());
}

#[test]
fn file_sha256_is_of_the_bytes() {
    let report = replay_corpus(&[("e.jsonl".to_owned(), b"abc".to_vec())]);
    assert_eq!(
        report.files[0].sha256,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn regression_duplicate_keys_are_refused_with_their_path() {
    // serde_json keeps the last of two equal keys; a fixture could hide a weakened
    // expectation behind a repeated key.
    check(
        &err(
            r#""target_writes":[]"#,
            r#""target_writes":["x"],"target_writes":[]"#,
        ),
        "duplicate_field",
        "expect.target_writes",
    );
    check(
        &err(
            r#""kind":"hold_release""#,
            r#""kind":"hold_release","kind":"hold_start""#,
        ),
        "duplicate_field",
        "events[1].kind",
    );
    // Keys are compared after unescaping.
    check(
        &err(r#""id":"a","#, r#""id":"a","\u0069d":"b","#),
        "duplicate_field",
        "id",
    );
    // Neighbour: equal keys in different objects, and a key's text inside a string value.
    let ok = GOOD.replacen(r#""text":"x""#, r#""text":"\"t_ms\":1,\"t_ms\":2""#, 1);
    assert!(parse_fixtures(ok.as_bytes()).is_ok());
}

#[test]
fn hostile_fixture_files_are_refused_without_panicking() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_obj = format!("{}1{}", r#"{"a":"#.repeat(50_000), "}".repeat(50_000));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "no_records"),
        (b"\r\n\t \n".to_vec(), "no_records"),
        (deep.into_bytes(), "invalid_json"),
        (deep_obj.into_bytes(), "invalid_json"),
        (
            GOOD.replacen(r#""t_ms":5"#, r#""t_ms":1e400"#, 1)
                .into_bytes(),
            "invalid_json",
        ),
        (
            GOOD.replacen(r#""t_ms":5"#, &format!(r#""t_ms":{}"#, "9".repeat(40)), 1)
                .into_bytes(),
            "wrong_type",
        ),
        (
            GOOD.replacen(r#""t_ms":5"#, &format!(r#""t_ms":{}"#, "9".repeat(400)), 1)
                .into_bytes(),
            "invalid_json",
        ),
        (
            GOOD.replacen(r#""finalizations":1"#, r#""finalizations":1.0"#, 1)
                .into_bytes(),
            "wrong_type",
        ),
        (format!("\u{feff}{GOOD}").into_bytes(), "invalid_json"),
        (b"\x00".to_vec(), "invalid_json"),
        ([GOOD.as_bytes(), b"\n\xc3"].concat(), "invalid_utf8"),
        (b"null".to_vec(), "wrong_type"),
        (b"\"x\"".to_vec(), "wrong_type"),
    ];
    for (bytes, code) in cases {
        let e = parse_fixtures(&bytes).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        // The corpus report carries the refusal instead of failing.
        let report = replay_corpus(&[("h.jsonl".to_owned(), bytes)]);
        assert!(!report.all_expectations_hold());
        assert!(report.render_text().contains(code));
        assert!(!report.render_json().is_empty());
    }
}
