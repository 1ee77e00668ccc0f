//! The per-window driver.

use core::fmt;
use std::sync::Arc;

use jouleclaw_jcr1::cose::{self, SignedReceipt, Signer};
use jouleclaw_jcr1::{EnergySource, Estimator, StreamWindowReceipt};
use jouleclaw_seal::{SealBatch, SealedDocuments};
use jouleclaw_stream::{
    ChannelDirection, LedgerPolicy, StreamSpec, Tick, WindowConservationFinding,
};
use jouleclaw_stream_oracle::{
    AlwaysPassStream, BargeInDetector, CompositeStreamOracle, PerTickAdapter, StreamOracle,
    TextWellFormedOracle, WindowVerdict,
};

use crate::error::{PipelineError, Result};
use crate::judge::{Judge, JudgedWindow};
use crate::notary::Notary;
use crate::stage::{Stage, StageFailure};

/// How a closed window's `closed_at` second is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosedAt {
    /// Every window closes at this Unix second.
    Fixed(i64),
    /// A window closes at `epoch_unix` plus its end in stream time, in whole seconds rounded
    /// down: `epoch_unix + end_ns / 10^9`. Deterministic for a recorded trace; with the epoch
    /// at the stream's real start it is the second the window really closed.
    StreamTime {
        /// The Unix second at which stream time `ts_ns = 0` lies.
        epoch_unix: i64,
    },
}

impl ClosedAt {
    /// The `closed_at` Unix second of a window whose span ends at `end_ns` (saturating).
    pub fn unix_for(&self, end_ns: u64) -> i64 {
        match *self {
            Self::Fixed(s) => s,
            Self::StreamTime { epoch_unix } => {
                // u64::MAX / 10^9 fits in i64.
                let secs = i64::try_from(end_ns / 1_000_000_000).unwrap_or(i64::MAX);
                epoch_unix.saturating_add(secs)
            }
        }
    }
}

/// Which windows get a COSE_Sign1 of their own under [`SigningPolicy::Checkpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSignatures {
    /// Every window, as under [`SigningPolicy::EveryWindow`] (the checkpoints come on top).
    All,
    /// Windows whose verdict is not `pass`: a yield or a failure can be shown on its own.
    NonPass,
    /// None: every window is covered by its checkpoint's one signature and its inclusion
    /// receipt.
    None,
}

/// How a stream's receipts are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningPolicy {
    /// One COSE_Sign1 per window; no Merkle log (the default).
    EveryWindow,
    /// Every window's receipt is appended to the stream's RFC 9162 Merkle log
    /// (`spec/STREAM-SEAL.md`); every `every_windows` windows a `stream-seal/1` checkpoint is
    /// signed, whose one signature serves the inclusion receipt of each window since the
    /// previous checkpoint; [`Pipeline::finish`] signs the final checkpoint.
    Checkpoint {
        /// Windows (receipts) per checkpoint, at least 1.
        every_windows: u64,
        /// Which windows are also signed on their own.
        window_signatures: WindowSignatures,
        /// The most receipts the stream's log holds (32 bytes of leaf hash and 8 of window id
        /// each); a window past it fails to close (`seal_log_full`).
        max_windows: u64,
    },
}

impl SigningPolicy {
    /// [`SigningPolicy::Checkpoint`] every `every_windows` windows, with no per-window
    /// signature and a log of at most [`jouleclaw_seal::DEFAULT_MAX_LEAVES`] receipts.
    pub fn checkpoint_every(every_windows: u64) -> Self {
        Self::Checkpoint {
            every_windows,
            window_signatures: WindowSignatures::None,
            max_windows: jouleclaw_seal::DEFAULT_MAX_LEAVES,
        }
    }
}

/// Who mints and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineConfig {
    /// The receipts' `steward` (non-empty).
    pub steward: String,
    /// The receipts' `stream_id` (non-empty).
    pub stream_id: String,
    /// How `closed_at` is chosen.
    pub closed_at: ClosedAt,
    /// The rolling ledger's policy.
    pub policy: LedgerPolicy,
    /// How receipts are signed.
    pub signing: SigningPolicy,
}

impl PipelineConfig {
    /// A configuration with `closed_at` in stream time from the Unix epoch
    /// (`ClosedAt::StreamTime { epoch_unix: 0 }`), the default ledger policy and one signature
    /// per window ([`SigningPolicy::EveryWindow`]).
    pub fn new(steward: &str, stream_id: &str) -> Self {
        Self {
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
            closed_at: ClosedAt::StreamTime { epoch_unix: 0 },
            policy: LedgerPolicy::default(),
            signing: SigningPolicy::EveryWindow,
        }
    }

    /// The same configuration with the signing policy.
    pub fn with_signing(mut self, signing: SigningPolicy) -> Self {
        self.signing = signing;
        self
    }

    /// The same configuration with `closed_at`.
    pub fn with_closed_at(mut self, closed_at: ClosedAt) -> Self {
        self.closed_at = closed_at;
        self
    }

    /// The same configuration with the ledger `policy`.
    pub fn with_policy(mut self, policy: LedgerPolicy) -> Self {
        self.policy = policy;
        self
    }
}

/// The default composite of the demo and of `jouleclaw run`, named `"duplex-voice"`, over
/// [`duplex_voice_backends`]. A clean window passes with the chain
/// `["always-pass-stream","barge-in-detector","per-tick:utf8-text"]`.
pub fn duplex_voice_oracle() -> CompositeStreamOracle {
    CompositeStreamOracle::new("duplex-voice", duplex_voice_backends())
}

/// The backends of [`duplex_voice_oracle`], in order, for a caller that adds its own:
/// [`AlwaysPassStream`], [`BargeInDetector`] and a [`PerTickAdapter`] over
/// [`TextWellFormedOracle::utf8`] (outbound text must be UTF-8).
pub fn duplex_voice_backends() -> Vec<Box<dyn StreamOracle + Send>> {
    vec![
        Box::new(AlwaysPassStream),
        Box::new(BargeInDetector),
        Box::new(PerTickAdapter::new(TextWellFormedOracle::utf8())),
    ]
}

/// An early verdict the oracle raised on a tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyVerdict {
    /// The tick's timestamp.
    pub ts_ns: u64,
    /// The tick's channel.
    pub channel_id: u32,
    /// The verdict.
    pub verdict: WindowVerdict,
}

/// What [`Pipeline::push`] reports about one accepted tick; with `W` =
/// [`crate::JudgedWindow`] what [`crate::Judge::push`] reports ([`crate::JudgedTick`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickOutcome<W = ClosedWindow> {
    /// The previous window, closed because this tick belongs to a later one.
    pub closed: Option<W>,
    /// The tick's window.
    pub window_id: u64,
    /// The tick's timestamp.
    pub ts_ns: u64,
    /// The tick's channel direction.
    pub direction: ChannelDirection,
    /// The ledger's finding on this tick.
    pub finding: WindowConservationFinding,
    /// The oracle's early verdict on this tick, if it raised one.
    pub early: Option<WindowVerdict>,
    /// What each stage made of the tick, in stage order (empty without stages).
    pub stages: Vec<StageReport>,
}

/// What one stage made of one tick ([`TickOutcome::stages`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageReport {
    /// The stage's name.
    pub stage: String,
    /// The ticks it produced, each with what the ledger and the oracles made of it, or its
    /// failure.
    pub result: core::result::Result<Vec<ProducedTick>, StageFailure>,
}

/// A tick a stage produced, after it joined the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducedTick {
    /// The tick as its window holds it.
    pub tick: Tick,
    /// The ledger's finding on it.
    pub finding: WindowConservationFinding,
    /// The oracle's early verdict on it, if it raised one.
    pub early: Option<WindowVerdict>,
}

/// A closed window: its receipt, its signature or the checkpoint it joined, and what led to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedWindow {
    /// The minted receipt (its `verdict` is the oracle's judgement, its `conservation` the
    /// ledger's window summary).
    pub receipt: StreamWindowReceipt,
    /// BLAKE3 of the receipt's canonical bytes.
    pub content_hash: blake3::Hash,
    /// The receipt's canonical bytes.
    pub canonical: Vec<u8>,
    /// The window's own COSE_Sign1 and its intermediates, when the [`SigningPolicy`] signs this
    /// window (always under [`SigningPolicy::EveryWindow`]).
    pub signed: Option<SignedReceipt>,
    /// Its leaf index in the stream's Merkle log, under [`SigningPolicy::Checkpoint`].
    pub leaf_index: Option<u64>,
    /// The checkpoint this window's close completed (every `every_windows` windows under
    /// [`SigningPolicy::Checkpoint`]): the signed seal and the inclusion receipts of every
    /// window since the previous checkpoint, this one included.
    pub seal: Option<SealBatch>,
    /// Substrate payload bytes of the window (not on the receipt).
    pub substrate_bytes: u64,
    /// Every backend's verdict for the window, `(name, verdict)` in backend order, losing
    /// signals included.
    pub signals: Vec<(String, WindowVerdict)>,
    /// The early verdicts raised on the window's ticks, in tick order.
    pub early: Vec<EarlyVerdict>,
}

impl ClosedWindow {
    /// The receipt's canonical bytes (one line of `receipts.jsonl`, without the newline).
    pub fn canonical_bytes(&self) -> &[u8] {
        &self.canonical
    }

    /// The window's own tagged COSE_Sign1 bytes (one item of `receipts.cbor`), when the
    /// signing policy signed this window.
    pub fn cose_sign1(&self) -> Option<&[u8]> {
        self.signed.as_ref().map(|s| s.cose_sign1.as_slice())
    }
}

/// Stream time in seconds with trailing zeros trimmed: `1240000000` -> `"1.24s"`, `0` ->
/// `"0s"`, `1` -> `"0.000000001s"`.
pub fn format_ts(ts_ns: u64) -> String {
    let secs = ts_ns / 1_000_000_000;
    let frac = ts_ns % 1_000_000_000;
    if frac == 0 {
        return format!("{secs}s");
    }
    let digits = format!("{frac:09}");
    format!("{secs}.{}s", digits.trim_end_matches('0'))
}

/// What [`Pipeline::finish`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The last window, if one was open.
    pub last: Option<ClosedWindow>,
    /// The final checkpoint under [`SigningPolicy::Checkpoint`] (with the inclusion receipts of
    /// the windows since the previous checkpoint).
    pub seal: Option<SealBatch>,
}

/// Drives ticks through window, ledger, stages, oracle, minter and signer; see the crate docs.
///
/// A pipeline is a [`Judge`] (window, ledger, oracles, stages) and a [`Notary`] (mint, hash,
/// sign, seal) driven together on one thread, with the stream's signer: every window the judge
/// closes is notarized at once. A runtime that judges and signs in different places drives the
/// two halves itself; the receipts are the same bytes.
pub struct Pipeline<E: EnergySource = Estimator> {
    config: PipelineConfig,
    judge: Judge,
    notary: Notary<E>,
    signer: Box<dyn Signer + Send>,
}

impl<E: EnergySource> fmt::Debug for Pipeline<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("config", &self.config)
            .field("oracle", self.judge.oracle())
            .field("stages", &self.judge.stage_names())
            .field("open_window", &self.open_window_id())
            .field("poisoned", &self.is_poisoned())
            .finish_non_exhaustive()
    }
}

impl<E: EnergySource> Pipeline<E> {
    /// A pipeline for a stream with `spec`. Refuses an invalid spec or ledger policy, and a
    /// steward or stream id that is empty or too long for a receipt of any window (each must
    /// fit the receipt's 4,096-byte string limit, the stream id with room for `:` and a
    /// 16-digit window id in the receipt `id`), so that no run fails late on a name.
    pub fn new(
        spec: Arc<StreamSpec>,
        config: PipelineConfig,
        oracle: CompositeStreamOracle,
        energy: E,
        signer: Box<dyn Signer + Send>,
    ) -> Result<Self> {
        let judge = Judge::new(spec, config.policy, oracle)?;
        let notary = Notary::new(&config, energy)?;
        Ok(Self {
            config,
            judge,
            notary,
            signer,
        })
    }

    /// The same pipeline with `stage` run on every accepted tick, after the stages already
    /// added ([`Stage`] has the driver order).
    pub fn with_stage(mut self, stage: Box<dyn Stage + Send>) -> Self {
        self.judge = self.judge.with_stage(stage);
        self
    }

    /// The stream spec.
    pub fn spec(&self) -> &Arc<StreamSpec> {
        self.judge.spec()
    }

    /// The configuration.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// The signer's public key.
    pub fn verifying_key(&self) -> cose::PublicKey {
        self.signer.verifying_key()
    }

    /// The window being filled, if any.
    pub fn open_window_id(&self) -> Option<u64> {
        self.judge.open_window_id()
    }

    /// A notary failure also poisons the judge (`notarized`, and `push_then` for a window a
    /// tick closes), so the judge's state is the pipeline's.
    fn is_poisoned(&self) -> bool {
        self.judge.is_poisoned()
    }

    /// Notarizes the window the judge closed, if it closed one (see [`Self::notarized`]).
    fn notarize_closed(&mut self, judged: Option<JudgedWindow>) -> Result<Option<ClosedWindow>> {
        let Some(judged) = judged else {
            return Ok(None);
        };
        let closed = self.notary.notarize(judged, self.signer.as_ref());
        self.notarized(closed).map(Some)
    }

    /// A notary result; a failure leaves the whole pipeline unusable.
    fn notarized<T>(&mut self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.judge.poison();
        }
        result
    }

    /// Takes one tick. A tick of the open window joins it; a tick of a later window first
    /// closes the open one ([`TickOutcome::closed`]) and opens its own; a tick of an earlier
    /// window is refused ([`PipelineError::WindowRegressed`]). A tick the window refuses
    /// changes nothing. Stages then see the accepted tick, and the ticks they produce join the
    /// stream right after it ([`Stage`]).
    pub fn push(&mut self, tick: Tick) -> Result<TickOutcome> {
        let Self {
            judge,
            notary,
            signer,
            ..
        } = self;
        judge.push_then(tick, |judged| notary.notarize(judged, signer.as_ref()))
    }

    /// Closes the open window, if there is one. The stream goes on: a later tick opens a later
    /// window. At the end of a stream call [`Pipeline::finish`] instead, which also signs the
    /// final checkpoint.
    pub fn close_window(&mut self) -> Result<Option<ClosedWindow>> {
        self.usable()?;
        let judged = self.judge.close_window()?;
        self.notarize_closed(judged)
    }

    /// Ends the stream: closes the open window, if any, and under
    /// [`SigningPolicy::Checkpoint`] signs the final checkpoint (`final: true`) over every
    /// receipt of the stream, with the inclusion receipts of the windows since the previous
    /// checkpoint. A stream without a single receipt has nothing to seal (`seal` is `None`).
    /// Afterwards every call returns [`PipelineError::Finished`].
    pub fn finish(&mut self) -> Result<Finished> {
        self.usable()?;
        let judged = self.judge.finish()?;
        let last = self.notarize_closed(judged)?;
        let seal = self.notary.finish(self.signer.as_ref());
        let seal = self.notarized(seal)?;
        Ok(Finished { last, seal })
    }

    /// Ends the stream's windows without sealing it: the oracles learn that the stream ended,
    /// and the open window, if any, closes judged (as in [`Pipeline::finish`]) and is
    /// notarized. No tick is taken afterwards; [`Pipeline::finish_with_documents`] then signs
    /// the final seal. This is the moment to sign the call's documents: every receipt is known.
    pub fn end_windows(&mut self) -> Result<Option<ClosedWindow>> {
        self.usable()?;
        let judged = self.judge.finish()?;
        self.notarize_closed(judged)
    }

    /// [`Pipeline::finish`] whose final checkpoint is a `stream-seal/2` seal that also commits
    /// to `documents`: each signed document of the call by kind, with the SHA-256 of its
    /// COSE_Sign1 bytes (`jouleclaw_seal::document_digest`). Documents bind to the receipts, so
    /// a caller ends the windows first ([`Pipeline::end_windows`]), signs its documents, then
    /// calls this (its `last` is then `None`). Under [`SigningPolicy::EveryWindow`] there is
    /// no seal and `documents` is not used.
    pub fn finish_with_documents(&mut self, documents: SealedDocuments) -> Result<Finished> {
        self.usable()?;
        let last = if self.judge.is_finished() {
            None
        } else {
            self.end_windows()?
        };
        let seal = self
            .notary
            .finish_with_documents(self.signer.as_ref(), documents);
        let seal = self.notarized(seal)?;
        Ok(Finished { last, seal })
    }

    /// Poisoned before finished (each half reports finished itself).
    fn usable(&self) -> Result<()> {
        if self.is_poisoned() {
            Err(PipelineError::Poisoned)
        } else {
            Ok(())
        }
    }
}
