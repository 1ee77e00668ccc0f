//! The pipeline's two halves: the `Judge` and the `Notary` each on their own, and both driven
//! separately (the judge on one thread, the notary on another) against the `Pipeline`, byte for
//! byte, on the demo trace and the tool-call trace, under every signing policy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_jcr1::cose::{PublicKey, Signer, SingleKey, SoftwareSigner};
use jouleclaw_jcr1::{Estimator, Jcr1Error, cose};
use jouleclaw_pipeline::*;
use jouleclaw_stream::{LedgerPolicy, StreamSpec, Tick, TickMarker, duplex};
use jouleclaw_stream_oracle::{CompositeStreamOracle, WindowVerdict};
use jouleclaw_structured::{Grammar, StructuredOutputOracle};

use jouleclaw_testkit::repo;

// The repository's shared files (read through `jouleclaw_testkit::repo`).
const DEMO_TRACE: &str = "conformance/traces/duplex-demo.jsonl";
const TOOL_TRACE: &str = "conformance/traces/tool-call.jsonl";
const TOOL_SCHEMA: &str = "crates/jouleclaw-structured/schemas/tool-call.schema.json";
const DEMO_GOLDEN: &str = "examples/golden/wave47_streaming_pipeline.receipts.jsonl";
const TOOL_GOLDEN: &str = "examples/golden/tool-call.receipts.jsonl";

fn spec() -> Arc<StreamSpec> {
    Arc::new(StreamSpec::duplex_voice_default())
}

fn ticks(trace: &str) -> Vec<Tick> {
    let spec = spec();
    trace
        .lines()
        .filter_map(|l| trace::parse_trace_line(l.as_bytes(), &spec).unwrap())
        .collect()
}

#[derive(Clone, Copy)]
enum Oracle {
    DuplexVoice,
    ToolCall,
}

fn oracle(which: Oracle) -> CompositeStreamOracle {
    match which {
        Oracle::DuplexVoice => duplex_voice_oracle(),
        Oracle::ToolCall => {
            // Only reached once the tool-call trace was found in the repository.
            let schema = repo::file(TOOL_SCHEMA).unwrap();
            let grammar = Arc::new(Grammar::compile(schema.as_bytes()).unwrap());
            let mut backends = duplex_voice_backends();
            backends.push(Box::new(StructuredOutputOracle::new(grammar)));
            CompositeStreamOracle::new("duplex-voice", backends)
        }
    }
}

fn config(signing: SigningPolicy) -> PipelineConfig {
    PipelineConfig::new(demo::STEWARD, demo::STREAM_ID)
        .with_closed_at(ClosedAt::StreamTime {
            epoch_unix: demo::EPOCH_UNIX,
        })
        .with_signing(signing)
}

/// Every window the `Pipeline` closes, then `finish`'s seal.
fn through_pipeline(
    ticks: &[Tick],
    which: Oracle,
    signing: SigningPolicy,
) -> (Vec<ClosedWindow>, Option<jouleclaw_seal::SealBatch>) {
    let mut p = Pipeline::new(
        spec(),
        config(signing),
        oracle(which),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut windows = Vec::new();
    for t in ticks {
        windows.extend(p.push(t.clone()).unwrap().closed);
    }
    let finished = p.finish().unwrap();
    windows.extend(finished.last);
    (windows, finished.seal)
}

/// The same, the judge on this thread and the notary on another, joined by a channel of
/// judged windows (`None` ends the stream).
fn through_halves(
    ticks: &[Tick],
    which: Oracle,
    signing: SigningPolicy,
) -> (Vec<ClosedWindow>, Option<jouleclaw_seal::SealBatch>) {
    let (tx, rx) = std::sync::mpsc::channel::<Option<JudgedWindow>>();
    let mut notary = Notary::new(&config(signing), Estimator::default()).unwrap();
    let notary_thread = std::thread::spawn(move || {
        let signer = SoftwareSigner::rfc8032_test_key();
        let mut windows = Vec::new();
        while let Some(judged) = rx.recv().unwrap() {
            windows.push(notary.notarize(judged, &signer).unwrap());
        }
        (windows, notary.finish(&signer).unwrap())
    });
    let mut judge = Judge::new(spec(), LedgerPolicy::default(), oracle(which)).unwrap();
    for t in ticks {
        if let Some(judged) = judge.push(t.clone()).unwrap().closed {
            tx.send(Some(judged)).unwrap();
        }
    }
    if let Some(judged) = judge.finish().unwrap() {
        tx.send(Some(judged)).unwrap();
    }
    tx.send(None).unwrap();
    notary_thread.join().unwrap()
}

fn policies() -> Vec<SigningPolicy> {
    let checkpoint = |window_signatures| SigningPolicy::Checkpoint {
        every_windows: 5,
        window_signatures,
        max_windows: 64,
    };
    vec![
        SigningPolicy::EveryWindow,
        checkpoint(WindowSignatures::All),
        checkpoint(WindowSignatures::NonPass),
        checkpoint(WindowSignatures::None),
    ]
}

fn jsonl(windows: &[ClosedWindow]) -> String {
    windows
        .iter()
        .map(|w| format!("{}\n", String::from_utf8(w.canonical.clone()).unwrap()))
        .collect()
}

/// Checks the trace `trace` against the golden receipts `golden` (files of the repository).
fn assert_same_bytes(trace: &str, which: Oracle, golden: &str) {
    let (Some(trace), Some(golden)) = (repo::file(trace), repo::file(golden)) else {
        return;
    };
    let golden = golden.as_str();
    let ticks = ticks(&trace);
    for signing in policies() {
        let (want, want_seal) = through_pipeline(&ticks, which, signing);
        let (got, got_seal) = through_halves(&ticks, which, signing);
        // ClosedWindow compares receipt, hash, canonical bytes, signature, leaf, checkpoint
        // and inclusion receipts, signals and early verdicts.
        assert_eq!(got, want, "{signing:?}");
        assert_eq!(got_seal, want_seal, "{signing:?}");
        assert_eq!(jsonl(&got), golden, "{signing:?}");
        if matches!(signing, SigningPolicy::Checkpoint { .. }) {
            let seal = got_seal.expect("a final checkpoint");
            assert!(seal.checkpoint.seal.is_final);
            assert_eq!(seal.checkpoint.seal.tree_size, got.len() as u64);
            assert!(got.iter().any(|w| w.seal.is_some()));
        }
    }
}

#[test]
fn judge_and_notary_driven_apart_reproduce_the_pipeline_and_the_golden_demo_receipts() {
    assert_same_bytes(DEMO_TRACE, Oracle::DuplexVoice, DEMO_GOLDEN);
}

#[test]
fn judge_and_notary_driven_apart_reproduce_the_pipeline_and_the_golden_tool_call_receipts() {
    assert_same_bytes(TOOL_TRACE, Oracle::ToolCall, TOOL_GOLDEN);
}

#[test]
fn the_halves_and_their_handover_are_send() {
    fn send<T: Send>() {}
    send::<Judge>();
    send::<Notary>();
    send::<JudgedWindow>();
    send::<JudgedTick>();
    send::<Pipeline>();
}

// The judge alone

#[test]
fn the_judge_alone_reaches_the_pipelines_verdicts_without_a_signer() {
    let Some(trace) = repo::file(DEMO_TRACE) else {
        return;
    };
    let ticks = ticks(&trace);
    let (want, _) = through_pipeline(&ticks, Oracle::DuplexVoice, SigningPolicy::EveryWindow);
    let mut judge = Judge::new(spec(), LedgerPolicy::default(), duplex_voice_oracle()).unwrap();
    let mut judged = Vec::new();
    let mut early = Vec::new();
    for t in &ticks {
        let outcome = judge.push(t.clone()).unwrap();
        judged.extend(outcome.closed);
        early.extend(outcome.early.map(|v| (outcome.ts_ns, v)));
    }
    judged.extend(judge.finish().unwrap());
    assert_eq!(judged.len(), want.len());
    for (j, w) in judged.iter().zip(&want) {
        assert_eq!(j.window_id(), w.receipt.window_id);
        assert_eq!(j.verdict(), &w.receipt.verdict);
        assert_eq!(j.conservation(), w.receipt.conservation);
        assert_eq!(j.signals(), w.signals.as_slice());
        assert_eq!(j.early(), w.early.as_slice());
        assert_eq!(j.window().tick_count() as u64, w.receipt.tick_count);
    }
    // The story's two barge-ins yield on their own ticks.
    assert_eq!(
        early,
        [
            (1_240_000_000, WindowVerdict::Yield { seen_at: 6 }),
            (2_020_000_000, WindowVerdict::Yield { seen_at: 10 }),
        ]
    );
}

#[test]
fn the_judge_refuses_a_closed_window_and_nothing_after_the_end() {
    let mut judge = Judge::new(spec(), LedgerPolicy::default(), duplex_voice_oracle()).unwrap();
    judge
        .push(Tick::marker(0, duplex::CONTROL, TickMarker::Silence, 0))
        .unwrap();
    assert_eq!(judge.close_window().unwrap().unwrap().window_id(), 0);
    // Window 0 closed: a late tick of it is in the past, and nothing is open.
    let late = Tick::marker(0, duplex::CONTROL, TickMarker::Silence, 1);
    assert_eq!(
        judge.push(late).unwrap_err(),
        PipelineError::WindowRegressed { current: 0, got: 0 }
    );
    assert!(judge.close_window().unwrap().is_none());
    // Its neighbour, a tick of a later window, is taken.
    let next = Tick::marker(1, duplex::CONTROL, TickMarker::Silence, 200_000_000);
    assert!(judge.push(next).unwrap().closed.is_none());
    assert_eq!(judge.finish().unwrap().unwrap().window_id(), 1);
    let after = Tick::marker(2, duplex::CONTROL, TickMarker::Silence, 400_000_000);
    assert_eq!(judge.push(after).unwrap_err(), PipelineError::Finished);
    assert_eq!(judge.finish().unwrap_err(), PipelineError::Finished);
}

// The notary alone

/// The demo trace's judged windows (`None` in a crate built alone).
fn judged_demo() -> Option<Vec<JudgedWindow>> {
    let trace = repo::file(DEMO_TRACE)?;
    let mut judge = Judge::new(spec(), LedgerPolicy::default(), duplex_voice_oracle()).unwrap();
    let mut judged = Vec::new();
    for t in ticks(&trace) {
        judged.extend(judge.push(t).unwrap().closed);
    }
    judged.extend(judge.finish().unwrap());
    Some(judged)
}

#[test]
fn the_notary_alone_signs_each_window_under_every_window_and_seals_nothing() {
    let Some(demo) = judged_demo() else {
        return;
    };
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = SingleKey::new(signer.verifying_key());
    let mut notary =
        Notary::new(&config(SigningPolicy::EveryWindow), Estimator::default()).unwrap();
    for judged in demo {
        let closed = notary.notarize(judged, &signer).unwrap();
        let verified = cose::verify(closed.cose_sign1().unwrap(), &key).unwrap();
        assert_eq!(verified.content_hash, closed.content_hash);
        assert_eq!((closed.leaf_index, &closed.seal), (None, &None));
    }
    assert_eq!(notary.windows(), 13);
    assert_eq!(notary.finish(&signer).unwrap(), None);
    assert_eq!(notary.finish(&signer).unwrap_err(), PipelineError::Finished);
}

#[test]
fn the_notary_refuses_a_checkpoint_policy_of_zero_windows() {
    for (every_windows, max_windows) in [(0, 10), (10, 0)] {
        let signing = SigningPolicy::Checkpoint {
            every_windows,
            window_signatures: WindowSignatures::None,
            max_windows,
        };
        assert_eq!(
            Notary::new(&config(signing), Estimator::default()).unwrap_err(),
            PipelineError::BadSigningPolicy
        );
    }
    assert!(
        Notary::new(
            &config(SigningPolicy::checkpoint_every(1)),
            Estimator::default()
        )
        .is_ok()
    );
}

/// Signs with the test key until its budget of signatures runs out, then fails.
struct Budget {
    inner: SoftwareSigner,
    left: std::cell::Cell<u32>,
}

impl Signer for Budget {
    fn verifying_key(&self) -> PublicKey {
        self.inner.verifying_key()
    }
    fn sign(&self, tbs: &[u8]) -> jouleclaw_jcr1::Result<[u8; 64]> {
        match self.left.get() {
            0 => Err(Jcr1Error::Unencodable {
                field: "signature",
                reason: "the signer's budget is spent",
            }),
            n => {
                self.left.set(n - 1);
                self.inner.sign(tbs)
            }
        }
    }
}

#[test]
fn a_failing_signer_poisons_the_notary_and_the_next_window_is_refused() {
    let Some(demo) = judged_demo() else {
        return;
    };
    let signer = Budget {
        inner: SoftwareSigner::rfc8032_test_key(),
        left: std::cell::Cell::new(2),
    };
    let mut notary =
        Notary::new(&config(SigningPolicy::EveryWindow), Estimator::default()).unwrap();
    let mut judged = demo.into_iter();
    notary.notarize(judged.next().unwrap(), &signer).unwrap();
    notary.notarize(judged.next().unwrap(), &signer).unwrap();
    assert!(!notary.is_poisoned());
    assert!(matches!(
        notary.notarize(judged.next().unwrap(), &signer),
        Err(PipelineError::Receipt(Jcr1Error::Unencodable { .. }))
    ));
    assert!(notary.is_poisoned());
    // The signer works again, but the log may hold the failed window: nothing more.
    signer.left.set(10);
    assert_eq!(
        notary
            .notarize(judged.next().unwrap(), &signer)
            .unwrap_err(),
        PipelineError::Poisoned
    );
    assert_eq!(notary.windows(), 2);
}

#[test]
fn a_pipeline_error_keeps_its_typed_cause() {
    use std::error::Error as _;
    let e = PipelineError::Receipt(Jcr1Error::Unencodable {
        field: "closed_at",
        reason: "clock outside years 0000-9999",
    });
    let cause = e.source().expect("a cause");
    assert_eq!(
        cause.downcast_ref::<Jcr1Error>(),
        Some(&Jcr1Error::Unencodable {
            field: "closed_at",
            reason: "clock outside years 0000-9999",
        })
    );
    assert!(PipelineError::Poisoned.source().is_none());
    let internal = PipelineError::Internal {
        invariant: "example",
    };
    assert_eq!(internal.code(), "pipeline_internal");
    assert!(internal.source().is_none());
}
