//! The per-window driver.

use core::fmt;
use std::sync::Arc;

use jouleclaw_jcr1::cose::{self, SignedReceipt, Signer};
use jouleclaw_jcr1::{
    EnergySource, Estimator, Jcr1Error, NoClock, ReceiptMinter, StreamWindowReceipt, UtcSecond,
};
use jouleclaw_stream::{
    ChannelDirection, LedgerPolicy, RollingConservationLedger, StreamSpec, StreamWindow, Tick,
    ValidatedSpec, WindowConservationFinding,
};
use jouleclaw_stream_oracle::{
    AlwaysPassStream, BargeInDetector, CompositeStreamOracle, PerTickAdapter, StageEvent,
    StageOutcome, StreamOracle, TextWellFormedOracle, WindowContext, WindowVerdict,
};

use jouleclaw_seal::{SealBatch, StreamSealer};

use crate::error::{PipelineError, Result};
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

/// What [`Pipeline::push`] reports about one accepted tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickOutcome {
    /// The previous window, closed because this tick belongs to a later one.
    pub closed: Option<ClosedWindow>,
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

/// The largest window id any receipt can carry: `2^53 - 1` (16 digits in the receipt `id`).
const MAX_WINDOW_ID: u64 = (1 << 53) - 1;

/// Refuses, when the pipeline is built, a steward or stream id that some later receipt could not
/// encode (a string over the receipt limits once the receipt `id` has grown to a 16-digit window
/// id): such a run would otherwise fail late, at the window whose id gains the digit.
fn probe_names(config: &PipelineConfig) -> Result<()> {
    let probe = StreamWindowReceipt {
        closed_at: UtcSecond::from_unix(0).ok_or(Jcr1Error::Unencodable {
            field: "closed_at",
            reason: "clock outside years 0000-9999",
        })?,
        steward: config.steward.clone(),
        stream_id: config.stream_id.clone(),
        window_id: MAX_WINDOW_ID,
        window_hash: blake3::Hash::from_bytes([0; 32]),
        tick_count: 0,
        inbound_bytes: 0,
        outbound_bytes: 0,
        joules_uj: 0,
        energy_provenance: jouleclaw_jcr1::EnergyProvenance::Estimator,
        verdict: WindowVerdict::pass_by("probe"),
        conservation: WindowConservationFinding::Conforming,
    };
    probe.encode()?;
    Ok(())
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

struct OpenWindow {
    window: StreamWindow,
    early: Vec<EarlyVerdict>,
}

/// Drives ticks through window, ledger, stages, oracle, minter and signer; see the crate docs.
pub struct Pipeline<E: EnergySource = Estimator> {
    spec: ValidatedSpec,
    config: PipelineConfig,
    ledger: RollingConservationLedger,
    oracle: CompositeStreamOracle,
    stages: Vec<Box<dyn Stage + Send>>,
    minter: ReceiptMinter<NoClock, E>,
    signer: Box<dyn Signer + Send>,
    sealer: Option<StreamSealer>,
    finished: bool,
    open: Option<OpenWindow>,
    /// The newest window id seen (open, or closed when `open` is `None`).
    newest: Option<u64>,
    poisoned: bool,
}

impl<E: EnergySource> fmt::Debug for Pipeline<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("config", &self.config)
            .field("oracle", &self.oracle)
            .field(
                "stages",
                &self.stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("open_window", &self.open_window_id())
            .field("poisoned", &self.poisoned)
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
        // Validated once; every window opens against the checked spec and its channel table.
        let spec = ValidatedSpec::new(spec)?;
        let ledger = RollingConservationLedger::new(config.policy)?;
        let minter = ReceiptMinter::for_stream_time(&config.steward, &config.stream_id, energy)?;
        probe_names(&config)?;
        let sealer = match config.signing {
            SigningPolicy::EveryWindow => None,
            SigningPolicy::Checkpoint {
                every_windows,
                max_windows,
                ..
            } => {
                if every_windows == 0 || max_windows == 0 {
                    return Err(PipelineError::BadSigningPolicy);
                }
                Some(StreamSealer::new(
                    &config.stream_id,
                    &config.steward,
                    max_windows,
                ))
            }
        };
        Ok(Self {
            spec,
            config,
            ledger,
            oracle,
            stages: Vec::new(),
            minter,
            signer,
            sealer,
            finished: false,
            open: None,
            newest: None,
            poisoned: false,
        })
    }

    /// The same pipeline with `stage` run on every accepted tick, after the stages already
    /// added ([`Stage`] has the driver order).
    pub fn with_stage(mut self, stage: Box<dyn Stage + Send>) -> Self {
        self.stages.push(stage);
        self
    }

    /// The stream spec.
    pub fn spec(&self) -> &Arc<StreamSpec> {
        self.spec.spec()
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
        self.open.as_ref().map(|o| o.window.window_id())
    }

    /// Takes one tick. A tick of the open window joins it; a tick of a later window first
    /// closes the open one ([`TickOutcome::closed`]) and opens its own; a tick of an earlier
    /// window is refused ([`PipelineError::WindowRegressed`]). A tick the window refuses
    /// changes nothing. Stages then see the accepted tick, and the ticks they produce join the
    /// stream right after it ([`Stage`]).
    pub fn push(&mut self, tick: Tick) -> Result<TickOutcome> {
        self.usable()?;
        let id = tick.window_id;
        if let Some(current) = self.newest {
            // A window id below the newest, or the newest once it has closed, is in the past.
            if id < current || (id == current && self.open.is_none()) {
                return Err(PipelineError::WindowRegressed { current, got: id });
            }
        }
        let mut closed = None;
        let open_matches = self
            .open
            .as_ref()
            .is_some_and(|o| o.window.window_id() == id);
        let direction = if !open_matches {
            // Validate the tick in its new window before anything closes, so that a refused
            // tick changes nothing.
            let mut window = StreamWindow::open_validated(&self.spec, id)?;
            let direction = window.push(tick)?.direction;
            if let Some(old) = self.open.take() {
                closed = Some(self.close(old)?);
            }
            self.open = Some(OpenWindow {
                window,
                early: Vec::new(),
            });
            self.newest = Some(id);
            direction
        } else {
            match self.open.as_mut() {
                Some(open) => open.window.push(tick)?.direction,
                // safe: `open_matches` holds only for an open window.
                None => return Err(PipelineError::Poisoned),
            }
        };
        let (ts_ns, finding, early, stages) = match self.after_push(direction) {
            Ok(r) => r,
            Err(e) => {
                // The window holds the tick but the ledger, a stage's tick or the oracles do
                // not: unusable from here.
                self.poisoned = true;
                return Err(e);
            }
        };
        Ok(TickOutcome {
            closed,
            window_id: id,
            ts_ns,
            direction,
            finding,
            early,
            stages,
        })
    }

    /// Everything after the window took the tick: ledger, stages, oracles, produced ticks.
    #[allow(clippy::type_complexity)]
    fn after_push(
        &mut self,
        direction: ChannelDirection,
    ) -> Result<(
        u64,
        WindowConservationFinding,
        Option<WindowVerdict>,
        Vec<StageReport>,
    )> {
        let Some(open) = self.open.as_mut() else {
            // safe: the caller opened or matched a window.
            return Err(PipelineError::Poisoned);
        };
        let Some(stored) = open.window.ticks().last() else {
            // safe: the tick was just pushed.
            return Err(PipelineError::Poisoned);
        };
        let finding = self.ledger.observe(stored, direction)?;
        let mut reports = Vec::new();
        let mut produced: Vec<(usize, Tick)> = Vec::new();
        for (i, stage) in self.stages.iter_mut().enumerate() {
            let mut out = Vec::new();
            let result = stage.on_tick(stored, &mut out);
            let outcome = match &result {
                Ok(()) => StageOutcome::Produced(out.len()),
                Err(f) => StageOutcome::Failed {
                    code: f.code,
                    message: &f.message,
                },
            };
            self.oracle.on_stage_event(&StageEvent {
                stage: stage.name(),
                tick: stored,
                outcome,
            });
            reports.push(StageReport {
                stage: stage.name().to_owned(),
                result: result.map(|()| Vec::new()),
            });
            produced.extend(out.into_iter().map(|t| (i, t)));
        }
        let ts_ns = stored.ts_ns;
        let early = self.oracle.on_tick(stored, direction);
        if let Some(verdict) = &early {
            open.early.push(EarlyVerdict {
                ts_ns,
                channel_id: stored.channel_id,
                verdict: verdict.clone(),
            });
        }
        for (i, tick) in produced {
            let pushed =
                open.window
                    .push(tick)
                    .map_err(|error| PipelineError::StageTickRefused {
                        stage: self.stages[i].name().to_owned(),
                        error,
                    })?;
            let (tick, direction) = (pushed.tick, pushed.direction);
            let finding = self.ledger.observe(tick, direction)?;
            let early = self.oracle.on_tick(tick, direction);
            if let Some(verdict) = &early {
                open.early.push(EarlyVerdict {
                    ts_ns: tick.ts_ns,
                    channel_id: tick.channel_id,
                    verdict: verdict.clone(),
                });
            }
            if let Some(Ok(list)) = reports.get_mut(i).map(|r| r.result.as_mut()) {
                list.push(ProducedTick {
                    tick: tick.clone(),
                    finding,
                    early,
                });
            }
        }
        Ok((ts_ns, finding, early, reports))
    }

    fn usable(&self) -> Result<()> {
        if self.poisoned {
            Err(PipelineError::Poisoned)
        } else if self.finished {
            Err(PipelineError::Finished)
        } else {
            Ok(())
        }
    }

    /// Closes the open window, if there is one. The stream goes on: a later tick opens a later
    /// window. At the end of a stream call [`Pipeline::finish`] instead, which also signs the
    /// final checkpoint.
    pub fn close_window(&mut self) -> Result<Option<ClosedWindow>> {
        self.usable()?;
        match self.open.take() {
            Some(open) => self.close(open).map(Some),
            None => Ok(None),
        }
    }

    /// Ends the stream: closes the open window, if any, and under
    /// [`SigningPolicy::Checkpoint`] signs the final checkpoint (`final: true`) over every
    /// receipt of the stream, with the inclusion receipts of the windows since the previous
    /// checkpoint. A stream without a single receipt has nothing to seal (`seal` is `None`).
    /// Afterwards every call returns [`PipelineError::Finished`].
    pub fn finish(&mut self) -> Result<Finished> {
        self.usable()?;
        // The oracles learn the stream has ended before the last window is judged.
        self.oracle.on_stream_end();
        let last = self.close_window()?;
        let seal = match self.sealer.as_mut() {
            Some(sealer) if sealer.size() > 0 => {
                match sealer.checkpoint(self.signer.as_ref(), true) {
                    Ok(batch) => Some(batch),
                    Err(e) => {
                        self.poisoned = true;
                        return Err(e.into());
                    }
                }
            }
            _ => None,
        };
        self.finished = true;
        Ok(Finished { last, seal })
    }

    fn close(&mut self, open: OpenWindow) -> Result<ClosedWindow> {
        let result = self.try_close(open);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn try_close(&mut self, open: OpenWindow) -> Result<ClosedWindow> {
        let OpenWindow { window, early } = open;
        let conservation = self.ledger.window_summary();
        let verdict = self
            .oracle
            .judge(&window, &WindowContext::new(conservation));
        let closed_at = UtcSecond::from_unix(self.config.closed_at.unix_for(window.end_ns()))
            .ok_or(Jcr1Error::Unencodable {
                field: "closed_at",
                reason: "clock outside years 0000-9999",
            })?;
        let minted = self
            .minter
            .mint_at(closed_at, &window, &verdict, conservation)?;
        let sign_window = match self.config.signing {
            SigningPolicy::EveryWindow => true,
            SigningPolicy::Checkpoint {
                window_signatures, ..
            } => match window_signatures {
                WindowSignatures::All => true,
                WindowSignatures::NonPass => !verdict.is_pass(),
                WindowSignatures::None => false,
            },
        };
        let signed = if sign_window {
            Some(cose::sign_payload(
                self.signer.as_ref(),
                &minted.receipt,
                minted.bytes.clone(),
            )?)
        } else {
            None
        };
        let (leaf_index, seal) = match (self.sealer.as_mut(), self.config.signing) {
            (Some(sealer), SigningPolicy::Checkpoint { every_windows, .. }) => {
                let leaf = sealer.append(
                    minted.receipt.window_id,
                    minted.content_hash.as_bytes(),
                    closed_at,
                )?;
                let seal = if sealer.pending() >= every_windows {
                    Some(sealer.checkpoint(self.signer.as_ref(), false)?)
                } else {
                    None
                };
                (Some(leaf), seal)
            }
            _ => (None, None),
        };
        Ok(ClosedWindow {
            receipt: minted.receipt,
            content_hash: minted.content_hash,
            canonical: minted.bytes,
            signed,
            leaf_index,
            seal,
            substrate_bytes: window.substrate_bytes(),
            signals: self.oracle.last_signals().to_vec(),
            early,
        })
    }
}
