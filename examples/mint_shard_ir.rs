//! Instruction counts of a live stream's work per window on its two shards, independent of
//! machine load:
//!
//! ```sh
//! cargo build --release --example mint_shard_ir
//! valgrind --tool=callgrind --toggle-collect='mint_shard_ir::measured' \
//!     target/release/examples/mint_shard_ir MODE
//! ```
//!
//! Each mode runs the `e2e` bench's fixture window (22 ticks: ten 640 B mic frames, ten 480 B
//! TTS frames, one ASR and one LLM text tick) for 200 windows after 25 of warm-up, with a
//! checkpoint every 25 windows as `jouleclaw live` signs them; divide the collected
//! instructions by 200.
//!
//! - `mint-two-pipelines`: what the mint shard did while each stream ran two pipelines: every
//!   tick pushed again into a second pipeline (window, ledger, oracles), the window closed there
//!   (judge, mint, BLAKE3 window hash, Ed25519 signature), then appended to a `StreamSealer`
//!   driven beside it, a checkpoint signed every 25 windows, and the receipt's bytes copied
//!   for the sink;
//! - `verdict-two-pipelines`: what the verdict shard did then: the same pushes into a pipeline
//!   whose signer returns zeros, and its window closes (judge, mint, window hash, COSE
//!   envelope) whose output was dropped;
//! - `mint-notary`: what the mint shard did while it minted inclusion receipts, one message
//!   per window: the `Notary` notarizes the `JudgedWindow` (mint, window hash, Ed25519
//!   signature, Merkle append, a checkpoint every 25 windows with its windows' inclusion
//!   receipts) and the receipt's bytes move into the sink's item; the windows are judged
//!   beforehand, outside the collected function;
//! - `mint-notary-no-inclusion`: `mint-notary` as the live runtime runs it since its sinks
//!   store no inclusion receipts (`Notary::without_inclusion_receipts`): the checkpoint every 25
//!   windows is signed, and none of its windows' inclusion receipts is built;
//! - `verdict-judge`: what the verdict shard does now: the `Judge` alone (window, ledger,
//!   oracles, judgement at close), each judged window handed on (kept, as a send would);
//! - `pipeline-push`: the tick push path of the `Pipeline` (`e2e` fixture, one signature per
//!   window): the 21 pushes of each window that do not close one; the first tick of each window,
//!   which closes the previous one, is pushed outside the collected function.

#![allow(clippy::expect_used, clippy::large_enum_variant)]

mod common;

use std::hint::black_box;
use std::sync::Arc;

use common::ticks;
use jouleclaw_stack::jcr1::Estimator;
use jouleclaw_stack::jcr1::cose::{PublicKey, Signer, SoftwareSigner};
use jouleclaw_stack::pipeline::{
    ClosedWindow, Judge, JudgedWindow, Notary, Pipeline, PipelineConfig, SigningPolicy,
    WindowSignatures, duplex_voice_oracle,
};
use jouleclaw_stack::seal::StreamSealer;
use jouleclaw_stack::stream::{StreamSpec, Tick};

const WARM: u64 = 25;
const WINDOWS: u64 = 200;
const CHECKPOINT_EVERY: u64 = 25;
const STEWARD: &str = "did:keri:EJ9testStewardAID000000000000000";
const STREAM: &str = "stream-bench";
const USAGE: &str = "usage: mint_shard_ir mint-two-pipelines|verdict-two-pipelines|mint-notary|mint-notary-no-inclusion|verdict-judge|pipeline-push";

/// The zero signer the verdict shard's pipeline used.
struct ZeroSigner(PublicKey);

impl Signer for ZeroSigner {
    fn verifying_key(&self) -> PublicKey {
        self.0
    }
    fn sign(&self, _tbs: &[u8]) -> jouleclaw_stack::jcr1::Result<[u8; 64]> {
        Ok([0; 64])
    }
}

fn pipeline(signer: Box<dyn Signer + Send>) -> Result<Pipeline, Box<dyn std::error::Error>> {
    Ok(Pipeline::new(
        Arc::new(StreamSpec::duplex_voice_default()),
        PipelineConfig::new(STEWARD, STREAM),
        duplex_voice_oracle(),
        Estimator::default(),
        signer,
    )?)
}

/// The receipt bytes the sink gets: (window id, COSE_Sign1, canonical payload).
type Item = (u64, Vec<u8>, Vec<u8>);

/// The old mint shard: a second pipeline and a sealer beside it.
struct TwoPipelines {
    pipeline: Pipeline,
    sealer: StreamSealer,
    signer: SoftwareSigner,
    pending: Vec<Item>,
}

impl TwoPipelines {
    fn on_closed(&mut self, closed: Option<ClosedWindow>) {
        let Some(c) = closed else { return };
        let ok = self
            .sealer
            .append(
                c.receipt.window_id,
                c.content_hash.as_bytes(),
                c.receipt.closed_at,
            )
            .is_ok();
        assert!(ok, "append");
        self.pending.push((
            c.receipt.window_id,
            c.cose_sign1().map(<[u8]>::to_vec).unwrap_or_default(),
            c.canonical_bytes().to_vec(),
        ));
        if self.sealer.pending() >= CHECKPOINT_EVERY {
            black_box(self.sealer.checkpoint(&self.signer, false).ok());
            black_box(core::mem::take(&mut self.pending));
        }
    }
}

/// The mint shard now: one notary per stream.
struct OneNotary {
    notary: Notary,
    signer: SoftwareSigner,
    judged: std::vec::IntoIter<JudgedWindow>,
    pending: Vec<Item>,
}

impl OneNotary {
    fn on_window(&mut self) {
        let Some(judged) = self.judged.next() else {
            return;
        };
        let c = self
            .notary
            .notarize(judged, &self.signer)
            .expect("notarize");
        let cose = c.signed.map(|s| s.cose_sign1).unwrap_or_default();
        self.pending.push((c.receipt.window_id, cose, c.canonical));
        if let Some(seal) = c.seal {
            black_box((seal, core::mem::take(&mut self.pending)));
        }
    }
}

enum Mode {
    MintTwoPipelines(TwoPipelines),
    VerdictTwoPipelines(Pipeline),
    MintNotary(OneNotary),
    VerdictJudge(Judge, Vec<JudgedWindow>),
    PipelinePush(Pipeline),
}

/// The collected function: one window's work.
#[inline(never)]
fn measured(mode: &mut Mode, ws: &[Tick]) {
    run_window(mode, ws);
}

fn run_window(mode: &mut Mode, ws: &[Tick]) {
    match mode {
        Mode::MintTwoPipelines(m) => {
            for t in ws {
                let closed = m.pipeline.push(t.clone()).ok().and_then(|o| o.closed);
                m.on_closed(closed);
            }
        }
        Mode::VerdictTwoPipelines(p) => {
            for t in ws {
                black_box(p.push(t.clone()).ok());
            }
        }
        Mode::MintNotary(m) => m.on_window(),
        Mode::VerdictJudge(j, out) => {
            for t in ws {
                let judged = j.push(t.clone()).ok().and_then(|o| o.closed);
                out.extend(judged);
            }
        }
        Mode::PipelinePush(p) => {
            for t in ws {
                black_box(p.push(t.clone()).ok());
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let signer = SoftwareSigner::rfc8032_test_key();
    let mut mode = match arg.as_str() {
        "mint-two-pipelines" => Mode::MintTwoPipelines(TwoPipelines {
            pipeline: pipeline(Box::new(SoftwareSigner::rfc8032_test_key()))?,
            sealer: StreamSealer::new(STREAM, STEWARD, 1 << 20),
            signer,
            pending: Vec::new(),
        }),
        "verdict-two-pipelines" => {
            Mode::VerdictTwoPipelines(pipeline(Box::new(ZeroSigner(signer.verifying_key())))?)
        }
        "mint-notary" | "mint-notary-no-inclusion" => {
            let mut judge = Judge::new(
                Arc::new(StreamSpec::duplex_voice_default()),
                Default::default(),
                duplex_voice_oracle(),
            )?;
            let mut judged = Vec::new();
            for w in 0..WARM + WINDOWS + 1 {
                for t in ticks(w) {
                    judged.extend(judge.push(t)?.closed);
                }
            }
            let config =
                PipelineConfig::new(STEWARD, STREAM).with_signing(SigningPolicy::Checkpoint {
                    every_windows: CHECKPOINT_EVERY,
                    window_signatures: WindowSignatures::All,
                    max_windows: 1 << 20,
                });
            let notary = Notary::new(&config, Estimator::default())?;
            let notary = if arg == "mint-notary" {
                notary
            } else {
                notary.without_inclusion_receipts()
            };
            Mode::MintNotary(OneNotary {
                notary,
                signer,
                judged: judged.into_iter(),
                pending: Vec::new(),
            })
        }
        "verdict-judge" => Mode::VerdictJudge(
            Judge::new(
                Arc::new(StreamSpec::duplex_voice_default()),
                Default::default(),
                duplex_voice_oracle(),
            )?,
            Vec::new(),
        ),
        "pipeline-push" => Mode::PipelinePush(pipeline(Box::new(signer))?),
        _ => return Err(USAGE.into()),
    };
    // Window w's close happens at the first tick of window w + 1, as in the live runtime; the
    // measured range closes windows WARM - 1 .. WARM + WINDOWS - 1.
    for w in 0..WARM {
        run_window(&mut mode, &ticks(w));
    }
    for w in WARM..WARM + WINDOWS {
        let ws = ticks(w);
        match &mut mode {
            Mode::PipelinePush(p) => {
                p.push(ws[0].clone())?;
                measured(&mut mode, &ws[1..]);
            }
            _ => measured(&mut mode, &ws),
        }
    }
    Ok(())
}
