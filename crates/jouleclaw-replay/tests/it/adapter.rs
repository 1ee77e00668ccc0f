#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The adapter seam: fixture 31 documents the staged-path defect class; an injector that has
//! the defect, run through the seam, is reported as violating it, and a compliant one is not.

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_replay::*;
use jouleclaw_stream::{ChannelDirection, StreamSpec, StreamWindow, Tick, TickKind, duplex};
use jouleclaw_stream_oracle::{StreamOracle, WindowContext, WindowVerdict};
use jouleclaw_testkit::{or_not_run, repo};

fn fixture(text: &str) -> Fixture {
    parse_fixtures(text.as_bytes()).unwrap().remove(0)
}

/// The first fixture of the repository's `conformance/replay/<name>` (`None` in a crate built
/// alone).
fn shared(name: &str) -> Option<Fixture> {
    Some(fixture(&repo::file(&format!("conformance/replay/{name}"))?))
}

fn fixture_31() -> Option<Fixture> {
    shared("31_staged_streaming_no_partial_writes.jsonl")
}

fn fixture_01() -> Option<Fixture> {
    shared("01_single_hold_burst.jsonl")
}

/// The defect: a streaming injector that types each partial as it arrives (extending what it
/// typed, deleting its own retracted characters) and types the rest of the final, ignoring
/// staged mode; a stage commit finds the text already typed.
#[derive(Default)]
struct StreamingPartialInjector {
    typed: String,
}

impl StreamingPartialInjector {
    fn converge(&mut self, text: &str) -> Vec<AdapterWrite> {
        let common: usize = self
            .typed
            .chars()
            .zip(text.chars())
            .take_while(|(a, b)| a == b)
            .count();
        let mut out = Vec::new();
        let retract = self.typed.chars().count() - common;
        if retract > 0 {
            out.push(AdapterWrite {
                op: WriteOp::Delete {
                    chars: retract as u64,
                },
                text: String::new(),
            });
        }
        let rest: String = text.chars().skip(common).collect();
        if !rest.is_empty() {
            out.push(AdapterWrite {
                op: WriteOp::Insert,
                text: rest,
            });
        }
        self.typed = text.to_owned();
        out
    }
}

impl Adapter for StreamingPartialInjector {
    fn on_event(&mut self, mode: Mode, event: &Event) -> Vec<AdapterWrite> {
        match &event.kind {
            EventKind::HoldStart { .. } => {
                self.typed.clear();
                Vec::new()
            }
            EventKind::Hypothesis { text, .. } if mode.streaming => self.converge(text),
            EventKind::FinalDecode { text, .. } => self.converge(text),
            _ => Vec::new(),
        }
    }
}

/// What the policy asks for: ordinary mode types the final once; staged mode keeps finals for
/// review and types them at the explicit commit.
#[derive(Default)]
struct CompliantInjector {
    buffered: Vec<String>,
}

impl Adapter for CompliantInjector {
    fn on_event(&mut self, mode: Mode, event: &Event) -> Vec<AdapterWrite> {
        let insert = |text: String| AdapterWrite {
            op: WriteOp::Insert,
            text,
        };
        match &event.kind {
            EventKind::FinalDecode { text, .. } if mode.staged => {
                self.buffered.push(text.clone());
                Vec::new()
            }
            EventKind::FinalDecode { text, .. } => vec![insert(text.clone())],
            EventKind::StageCommit => self.buffered.drain(..).map(insert).collect(),
            _ => Vec::new(),
        }
    }
}

#[test]
fn fixture_31_is_a_defect_class_the_oracle_itself_meets() {
    let r = replay_fixture(&or_not_run!(fixture_31()));
    assert!(r.known_defect.is_some());
    assert!(r.expectations_hold(), "{:?}", r.mismatches);
    assert!(
        !r.passed(),
        "a known_defect fixture never counts as passing"
    );
}

#[test]
fn an_injector_that_types_streaming_partials_in_staged_mode_violates_fixture_31() {
    let r = run_adapter(
        &or_not_run!(fixture_31()),
        &mut StreamingPartialInjector::default(),
    );
    assert!(r.violates_fixture());
    assert_eq!(r.target_writes, ["juliet", " kilo", " lima"]);
    // Three partials typed before release, none through the explicit commit.
    assert_eq!(r.safety.staged_leaks, 3);
    assert_eq!(r.safety.pre_release_writes, 3);
    assert_eq!(r.safety.forbidden_writes, 3);
    assert_eq!(r.safety.forbidden_deletions, 0);
    assert_eq!(r.mismatches.len(), 2, "{:?}", r.mismatches);
    assert!(r.mismatches[0].starts_with("target_writes:"));
    assert!(r.mismatches[1].starts_with("no_pre_release_writes:"));
}

#[test]
fn a_compliant_injector_meets_fixture_31_and_fixture_01() {
    for fx in [or_not_run!(fixture_31()), or_not_run!(fixture_01())] {
        let r = run_adapter(&fx, &mut CompliantInjector::default());
        assert!(
            !r.violates_fixture(),
            "{}: {:?} {:?}",
            fx.id,
            r.mismatches,
            r.safety
        );
        assert_eq!(r.target_writes, fx.expect.target_writes);
    }
}

#[test]
fn the_streaming_injector_also_breaks_ordinary_mode_and_its_retractions_are_its_own() {
    // 38: partials retract words; the injector deletes only what it typed itself.
    let fx = or_not_run!(shared("38_preview_churn.jsonl"));
    let r = run_adapter(&fx, &mut StreamingPartialInjector::default());
    assert!(r.violates_fixture());
    assert_eq!(r.safety.forbidden_deletions, 0);
    // "victor whiskey", " xray", delete 12 ("whiskey xray"), "yankee xray", delete 4, "zulu".
    assert_eq!(
        r.target_writes,
        ["victor whiskey", " xray", "yankee xray", "zulu"]
    );
    assert_eq!(r.safety.pre_release_writes, 3);
    assert_eq!(r.safety.staged_leaks, 0);
}

#[test]
fn the_stream_oracle_fails_the_defective_injector_on_fixture_31() {
    let fx = or_not_run!(fixture_31());
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut w = StreamWindow::open(spec, 0).unwrap();
    w.push(Tick::new(
        0,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![0u8; 640]),
        0,
    ))
    .unwrap();
    let mut injector = StreamingPartialInjector::default();
    let mut ts = 1;
    for e in &fx.events {
        w.push(Tick::marker(0, duplex::CONTROL, encode_event(e), ts))
            .unwrap();
        ts += 1;
        for write in injector.on_event(fx.mode, e) {
            w.push(Tick::marker(
                0,
                duplex::CONTROL,
                encode_observed_write(e.t_ms, &write.text),
                ts,
            ))
            .unwrap();
            ts += 1;
        }
    }
    let mut o = CommitSafetyOracle::new(fx.mode);
    let first_fail = w
        .ticks()
        .iter()
        .find_map(|t| o.on_tick(t, ChannelDirection::Inbound));
    match first_fail {
        Some(WindowVerdict::Fail { .. }) => {}
        other => panic!("expected an early Fail, got {other:?}"),
    }
    let mut fresh = CommitSafetyOracle::new(fx.mode);
    let v = fresh.judge(&w, &WindowContext::default());
    assert!(matches!(v, WindowVerdict::Fail { .. }), "{v:?}");
}
