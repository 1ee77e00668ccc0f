//! The per-window pipeline: ticks in, signed `stream-window/1` receipts out.
//!
//! [`Pipeline`] drives one stream through the whole chain of the substrate, in the order the
//! driver contract of `spec/STREAM-ORACLE.md` fixes:
//!
//! 1. every tick is validated by its [`StreamWindow`] ([`StreamWindow::push`]);
//! 2. the [`RollingConservationLedger`] judges it on the spot
//!    ([`TickOutcome::finding`]: a `BargeInIgnored` is flagged on the late outbound tick);
//! 3. the [`CompositeStreamOracle`] sees it ([`StreamOracle::on_tick`]); an early verdict (the
//!    `Yield` of a barge-in) is reported at that tick with its `ts_ns` ([`TickOutcome::early`]);
//! 4. when a tick of a later window arrives, or on [`Pipeline::close_window`], the open window
//!    closes: the oracle judges it with the ledger's window summary, a receipt is minted
//!    ([`ReceiptMinter`]) and signed as a tagged COSE_Sign1 ([`cose::sign_payload`]), and the
//!    result comes back as a [`ClosedWindow`].
//!
//! Everything here is pure: no clocks, I/O, threads or randomness. Time enters as each tick's
//! `ts_ns` and as [`ClosedAt`], which turns a window's end into its `closed_at` second; the
//! signer is whatever [`Signer`] the caller hands in. File handling belongs to the caller (the
//! `jouleclaw` command reads traces and writes receipts).
//!
//! A tick the window refuses changes nothing. A failure while a window closes (an unencodable
//! receipt, a failing energy source or signer) leaves the pipeline unusable: every later call
//! returns [`PipelineError::Poisoned`], because the oracle and the ledger have already moved on.
//!
//! The module also holds the pieces the `jouleclaw run` command and the wave-47 demo share: the
//! tick trace format of `spec/TICK-TRACE.md` ([`parse_trace_line`], [`write_trace_line`],
//! [`spec_from_json`], [`spec_to_json`]), the per-window table ([`table_header`],
//! [`ClosedWindow::table_row`]), run totals ([`RunTotals`]) and the scripted demo story
//! ([`demo`]).
//!
//! The public interface is:
//! - [`Pipeline`], [`PipelineConfig`], [`ClosedAt`]: the driver;
//! - [`TickOutcome`], [`EarlyVerdict`], [`ClosedWindow`], [`RunTotals`]: what it reports;
//! - [`duplex_voice_oracle`]: the default composite oracle;
//! - [`parse_trace_line`], [`write_trace_line`], [`max_trace_line_len`], [`spec_from_json`],
//!   [`spec_to_json`]: the tick trace format;
//! - [`table_header`], [`format_ts`]: the per-window table;
//! - [`demo`]: the scripted duplex-voice story;
//! - [`PipelineError`], [`Result`]: every failure, with a stable code.
//!
//! ```
//! use std::sync::Arc;
//! use jouleclaw_stack::jcr1::Estimator;
//! use jouleclaw_stack::jcr1::cose::{self, SingleKey, Signer, SoftwareSigner};
//! use jouleclaw_stack::oracle::WindowVerdict;
//! use jouleclaw_stack::pipeline::*;
//! use jouleclaw_stack::stream::{StreamSpec, Tick, TickMarker, duplex};
//!
//! let spec = Arc::new(StreamSpec::duplex_voice_default());
//! let signer = SoftwareSigner::rfc8032_test_key();
//! let key = signer.verifying_key();
//! let mut pipeline = Pipeline::new(
//!     spec.clone(),
//!     PipelineConfig::new("did:example:steward", "call-1"),
//!     duplex_voice_oracle(),
//!     Estimator::default(),
//!     Box::new(signer),
//! )?;
//!
//! // The barge-in yields on its own tick, long before the window closes.
//! let tick = parse_trace_line(br#"{"ts_ns":40000000,"channel_id":0,"kind":"marker","marker":"barge_in"}"#, &spec)?
//!     .expect("not a blank line");
//! let outcome = pipeline.push(tick)?;
//! assert_eq!(outcome.early, Some(WindowVerdict::Yield { seen_at: 0 }));
//! assert_eq!(outcome.ts_ns, 40_000_000);
//!
//! // A tick of window 1 closes window 0: judged, minted, signed.
//! let outcome = pipeline.push(Tick::marker(1, duplex::CONTROL, TickMarker::Silence, 200_000_000))?;
//! let closed = outcome.closed.expect("window 0 closed");
//! assert_eq!(closed.receipt.verdict, WindowVerdict::Yield { seen_at: 0 });
//! let verified = cose::verify(closed.cose_sign1(), &SingleKey::new(key)).expect("verifies");
//! assert_eq!(verified.content_hash, closed.content_hash);
//!
//! let last = pipeline.close_window()?.expect("window 1 was open");
//! assert_eq!(last.receipt.window_id, 1);
//! # Ok::<(), PipelineError>(())
//! ```

use core::fmt;
use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_jcr1::cose::{self, SignedReceipt, Signer};
use jouleclaw_jcr1::{
    EnergyReading, EnergySource, Estimator, FixedClock, Jcr1Error, ReceiptMinter,
    StreamWindowReceipt,
};
use jouleclaw_stream::{
    ChannelDirection, ChannelSpec, LedgerPolicy, RollingConservationLedger, StreamError,
    StreamSpec, StreamWindow, Tick, TickKind, TickKindTag, TickMarker, WindowConservationFinding,
};
use jouleclaw_stream_oracle::{
    AlwaysPassStream, BargeInDetector, CompositeStreamOracle, PerTickAdapter, StreamOracle,
    TextWellFormedOracle, WindowContext, WindowVerdict,
};

/// Every failure of the pipeline and of the trace and spec formats. [`PipelineError::code`] is
/// stable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineError {
    /// The stream layer refused a tick, a spec or a ledger policy.
    Stream(StreamError),
    /// Minting or signing a receipt failed.
    Receipt(Jcr1Error),
    /// A tick belongs to a window older than the one being filled (or already closed).
    WindowRegressed {
        /// The newest window the pipeline has seen.
        current: u64,
        /// The tick's window.
        got: u64,
    },
    /// An earlier failure while closing a window left the pipeline unusable.
    Poisoned,
    /// A trace line is not valid UTF-8.
    TraceNotUtf8,
    /// A trace line is longer than [`max_trace_line_len`].
    TraceLineTooLong {
        /// The limit, in bytes.
        max: usize,
    },
    /// A trace line is not a JSON object of the trace schema (syntax, a field of the wrong
    /// type, a missing or unknown field).
    TraceJson {
        /// What the JSON reader reported.
        detail: String,
    },
    /// `kind` is not `audio`, `text`, `video` or `marker`.
    TraceKind {
        /// The kind given.
        kind: String,
    },
    /// `marker` is missing on a marker, present on a payload tick, or not a known marker.
    TraceMarker {
        /// What is wrong.
        detail: String,
    },
    /// The payload fields are wrong: both or neither of `bytes_hex` and `bytes_len` on a
    /// payload tick, hex that is not lowercase and even, or a `bytes_len` above the spec's
    /// `max_chunk_bytes`.
    TracePayload {
        /// What is wrong.
        detail: String,
    },
    /// A stream spec file is not a spec of the documented shape.
    SpecJson {
        /// What is wrong.
        detail: String,
    },
}

impl PipelineError {
    /// A stable code naming the rule that refused. Stream and receipt failures keep their
    /// crate's code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Stream(e) => e.code(),
            Self::Receipt(e) => e.code(),
            Self::WindowRegressed { .. } => "trace_window_regressed",
            Self::Poisoned => "pipeline_poisoned",
            Self::TraceNotUtf8 => "trace_not_utf8",
            Self::TraceLineTooLong { .. } => "trace_line_too_long",
            Self::TraceJson { .. } => "trace_bad_json",
            Self::TraceKind { .. } => "trace_unknown_kind",
            Self::TraceMarker { .. } => "trace_bad_marker",
            Self::TracePayload { .. } => "trace_bad_payload",
            Self::SpecJson { .. } => "spec_bad_json",
        }
    }
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stream(e) => write!(f, "{e}"),
            Self::Receipt(e) => write!(f, "{e}"),
            Self::WindowRegressed { current, got } => write!(
                f,
                "tick of window {got} arrived after window {current}; windows only move forward"
            ),
            Self::Poisoned => f.write_str("the pipeline failed earlier and accepts nothing more"),
            Self::TraceNotUtf8 => f.write_str("trace line is not valid UTF-8"),
            Self::TraceLineTooLong { max } => write!(f, "trace line is longer than {max} bytes"),
            Self::TraceJson { detail } => write!(f, "trace line is not a tick: {detail}"),
            Self::TraceKind { kind } => write!(
                f,
                "unknown kind {kind:?} (expected audio, text, video or marker)"
            ),
            Self::TraceMarker { detail } => write!(f, "bad marker: {detail}"),
            Self::TracePayload { detail } => write!(f, "bad payload: {detail}"),
            Self::SpecJson { detail } => write!(f, "bad stream spec: {detail}"),
        }
    }
}

impl std::error::Error for PipelineError {}

impl From<StreamError> for PipelineError {
    fn from(e: StreamError) -> Self {
        Self::Stream(e)
    }
}

impl From<Jcr1Error> for PipelineError {
    fn from(e: Jcr1Error) -> Self {
        Self::Receipt(e)
    }
}

/// `Result` with [`PipelineError`].
pub type Result<T, E = PipelineError> = core::result::Result<T, E>;

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
}

impl PipelineConfig {
    /// A configuration with `closed_at` in stream time from the Unix epoch
    /// (`ClosedAt::StreamTime { epoch_unix: 0 }`) and the default ledger policy.
    pub fn new(steward: &str, stream_id: &str) -> Self {
        Self {
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
            closed_at: ClosedAt::StreamTime { epoch_unix: 0 },
            policy: LedgerPolicy::default(),
        }
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

/// The default composite of the demo and of `jouleclaw run`, named `"duplex-voice"`:
/// [`AlwaysPassStream`], [`BargeInDetector`] and a [`PerTickAdapter`] over
/// [`TextWellFormedOracle::utf8`] (outbound text must be UTF-8). A clean window passes with the
/// chain `["always-pass-stream","barge-in-detector","per-tick:utf8-text"]`.
pub fn duplex_voice_oracle() -> CompositeStreamOracle {
    CompositeStreamOracle::new(
        "duplex-voice",
        vec![
            Box::new(AlwaysPassStream),
            Box::new(BargeInDetector),
            Box::new(PerTickAdapter::new(TextWellFormedOracle::utf8())),
        ],
    )
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
}

/// A closed window: its signed receipt and what led to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedWindow {
    /// The minted receipt (its `verdict` is the oracle's judgement, its `conservation` the
    /// ledger's window summary).
    pub receipt: StreamWindowReceipt,
    /// BLAKE3 of the receipt's canonical bytes.
    pub content_hash: blake3::Hash,
    /// The COSE_Sign1 and its intermediates; `signed.payload` is the canonical bytes.
    pub signed: SignedReceipt,
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
        &self.signed.payload
    }

    /// The tagged COSE_Sign1 bytes (one item of `receipts.cbor`).
    pub fn cose_sign1(&self) -> &[u8] {
        &self.signed.cose_sign1
    }

    /// One row of the per-window table ([`table_header`]): window, ticks, inbound and outbound
    /// bytes, verdict, the first early verdict with its tick time, the conservation finding and
    /// the first 16 hex digits of the content hash.
    pub fn table_row(&self) -> String {
        let r = &self.receipt;
        let verdict = match &r.verdict {
            WindowVerdict::Yield { seen_at } => format!("yield@{seen_at}"),
            v => v.kind_str().to_owned(),
        };
        let early = match self.early.first() {
            Some(e) => format!("{}@{}", e.verdict.kind_str(), format_ts(e.ts_ns)),
            None => "-".to_owned(),
        };
        let finding = match r.conservation {
            WindowConservationFinding::Conforming => "conforming".to_owned(),
            WindowConservationFinding::Hallucination { unaccounted } => {
                format!("hallucination(+{unaccounted}B)")
            }
            WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns,
                outbound_ts_ns,
            } => format!(
                "barge_in_ignored({}->{})",
                format_ts(barge_in_ts_ns),
                format_ts(outbound_ts_ns)
            ),
        };
        format!(
            "{:>6} {:>5} {:>8} {:>8}  {:<10} {:<15} {:<36} {}",
            r.window_id,
            r.tick_count,
            r.inbound_bytes,
            r.outbound_bytes,
            verdict,
            early,
            finding,
            &self.content_hash.to_hex()[..16]
        )
    }
}

/// The header line of the per-window table ([`ClosedWindow::table_row`]).
pub fn table_header() -> String {
    format!(
        "{:>6} {:>5} {:>8} {:>8}  {:<10} {:<15} {:<36} {}",
        "window", "ticks", "in_B", "out_B", "verdict", "early", "finding", "content_hash"
    )
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

struct OpenWindow {
    window: StreamWindow,
    early: Vec<EarlyVerdict>,
}

/// Lends a pipeline's energy source to a per-window minter.
struct LentEnergy<'a, E>(&'a mut E);

impl<E: EnergySource> EnergySource for LentEnergy<'_, E> {
    fn read(&mut self, window: &StreamWindow) -> jouleclaw_jcr1::Result<EnergyReading> {
        self.0.read(window)
    }
}

/// Drives ticks through window, ledger, oracle, minter and signer; see the module docs.
pub struct Pipeline<E: EnergySource = Estimator> {
    spec: Arc<StreamSpec>,
    config: PipelineConfig,
    ledger: RollingConservationLedger,
    oracle: CompositeStreamOracle,
    energy: E,
    signer: Box<dyn Signer>,
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
            .field("open_window", &self.open_window_id())
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl<E: EnergySource> Pipeline<E> {
    /// A pipeline for a stream with `spec`. Refuses an invalid spec or ledger policy and an
    /// empty steward or stream id.
    pub fn new(
        spec: Arc<StreamSpec>,
        config: PipelineConfig,
        oracle: CompositeStreamOracle,
        energy: E,
        signer: Box<dyn Signer>,
    ) -> Result<Self> {
        spec.validate()?;
        let ledger = RollingConservationLedger::new(config.policy)?;
        // The minter's own checks on steward and stream id, once, up front.
        ReceiptMinter::new(
            &config.steward,
            &config.stream_id,
            FixedClock(0),
            Estimator::default(),
        )?;
        Ok(Self {
            spec,
            config,
            ledger,
            oracle,
            energy,
            signer,
            open: None,
            newest: None,
            poisoned: false,
        })
    }

    /// The stream spec.
    pub fn spec(&self) -> &Arc<StreamSpec> {
        &self.spec
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
    /// changes nothing.
    pub fn push(&mut self, tick: Tick) -> Result<TickOutcome> {
        if self.poisoned {
            return Err(PipelineError::Poisoned);
        }
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
            let mut window = StreamWindow::open(self.spec.clone(), id)?;
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
        let Some(open) = self.open.as_mut() else {
            // safe: a window was opened or matched above.
            return Err(PipelineError::Poisoned);
        };
        let Some(stored) = open.window.ticks().last() else {
            // safe: the tick was just pushed.
            return Err(PipelineError::Poisoned);
        };
        let finding = match self.ledger.observe(stored, direction) {
            Ok(f) => f,
            Err(e) => {
                // The window holds the tick but the ledger does not: unusable from here.
                self.poisoned = true;
                return Err(e.into());
            }
        };
        let early = self.oracle.on_tick(stored, direction);
        if let Some(verdict) = &early {
            open.early.push(EarlyVerdict {
                ts_ns: stored.ts_ns,
                channel_id: stored.channel_id,
                verdict: verdict.clone(),
            });
        }
        Ok(TickOutcome {
            closed,
            window_id: id,
            ts_ns: stored.ts_ns,
            direction,
            finding,
            early,
        })
    }

    /// Closes the open window (at the end of a trace), if there is one.
    pub fn close_window(&mut self) -> Result<Option<ClosedWindow>> {
        if self.poisoned {
            return Err(PipelineError::Poisoned);
        }
        match self.open.take() {
            Some(open) => self.close(open).map(Some),
            None => Ok(None),
        }
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
        let closed_at = self.config.closed_at.unix_for(window.end_ns());
        let minted = ReceiptMinter::new(
            &self.config.steward,
            &self.config.stream_id,
            FixedClock(closed_at),
            LentEnergy(&mut self.energy),
        )?
        .mint(&window, &verdict, conservation)?;
        let signed = cose::sign_payload(self.signer.as_ref(), &minted.receipt, minted.bytes)?;
        Ok(ClosedWindow {
            receipt: minted.receipt,
            content_hash: minted.content_hash,
            signed,
            substrate_bytes: window.substrate_bytes(),
            signals: self.oracle.last_signals().to_vec(),
            early,
        })
    }
}

/// Totals over the windows of a run, for summaries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunTotals {
    /// Closed windows (receipts).
    pub windows: u64,
    /// Ticks in them.
    pub ticks: u64,
    /// Inbound payload bytes.
    pub inbound_bytes: u64,
    /// Outbound payload bytes.
    pub outbound_bytes: u64,
    /// Substrate payload bytes.
    pub substrate_bytes: u64,
    /// The first and last window ids with a receipt.
    pub window_range: Option<(u64, u64)>,
    /// Verdicts by kind: pass, need_more, yield, fail.
    pub verdicts: [u64; 4],
    /// Conservation findings by kind: conforming, hallucination, barge_in_ignored.
    pub conservation: [u64; 3],
    /// Early verdicts raised on ticks.
    pub early_verdicts: u64,
}

impl RunTotals {
    /// Adds one closed window (saturating).
    pub fn add(&mut self, w: &ClosedWindow) {
        let r = &w.receipt;
        self.windows = self.windows.saturating_add(1);
        self.ticks = self.ticks.saturating_add(r.tick_count);
        self.inbound_bytes = self.inbound_bytes.saturating_add(r.inbound_bytes);
        self.outbound_bytes = self.outbound_bytes.saturating_add(r.outbound_bytes);
        self.substrate_bytes = self.substrate_bytes.saturating_add(w.substrate_bytes);
        self.window_range = Some(match self.window_range {
            None => (r.window_id, r.window_id),
            Some((first, _)) => (first, r.window_id),
        });
        let v = usize::from(r.verdict.rank());
        self.verdicts[v] = self.verdicts[v].saturating_add(1);
        let c = usize::from(r.conservation.rank());
        self.conservation[c] = self.conservation[c].saturating_add(1);
        self.early_verdicts = self.early_verdicts.saturating_add(w.early.len() as u64);
    }

    /// Windows between the first and last receipt that held no tick and so have no receipt.
    pub fn empty_windows(&self) -> u64 {
        match self.window_range {
            Some((first, last)) => (last - first)
                .saturating_add(1)
                .saturating_sub(self.windows),
            None => 0,
        }
    }

    /// A few readable lines.
    pub fn render_text(&self) -> String {
        let [pass, need_more, yields, fail] = self.verdicts;
        let [conforming, hallucination, ignored] = self.conservation;
        let range = match self.window_range {
            Some((a, b)) => format!("windows {a}..={b}"),
            None => "no windows".to_owned(),
        };
        format!(
            "{} receipts ({range}, {} empty windows without a receipt), {} ticks, {} B in, {} B out, {} B substrate\n\
             verdicts: {pass} pass, {yields} yield, {need_more} need_more, {fail} fail; {} early verdicts on ticks\n\
             conservation: {conforming} conforming, {hallucination} hallucination, {ignored} barge_in_ignored\n",
            self.windows,
            self.empty_windows(),
            self.ticks,
            self.inbound_bytes,
            self.outbound_bytes,
            self.substrate_bytes,
            self.early_verdicts,
        )
    }

    /// The totals as JSON (the counts of `summary.json`).
    pub fn to_json(&self) -> serde_json::Value {
        let [pass, need_more, yields, fail] = self.verdicts;
        let [conforming, hallucination, ignored] = self.conservation;
        serde_json::json!({
            "receipts": self.windows,
            "first_window": self.window_range.map(|r| r.0),
            "last_window": self.window_range.map(|r| r.1),
            "empty_windows": self.empty_windows(),
            "ticks": self.ticks,
            "inbound_bytes": self.inbound_bytes,
            "outbound_bytes": self.outbound_bytes,
            "substrate_bytes": self.substrate_bytes,
            "early_verdicts": self.early_verdicts,
            "verdicts": {"pass": pass, "need_more": need_more, "yield": yields, "fail": fail},
            "conservation": {
                "conforming": conforming,
                "hallucination": hallucination,
                "barge_in_ignored": ignored,
            },
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The tick trace format (spec/TICK-TRACE.md).

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceRecord {
    ts_ns: u64,
    channel_id: u32,
    kind: String,
    #[serde(default)]
    marker: Option<serde_json::Value>,
    #[serde(default)]
    bytes_hex: Option<String>,
    #[serde(default)]
    bytes_len: Option<u64>,
    #[serde(default)]
    window_id: Option<u64>,
}

/// The longest trace line accepted for `spec`: a payload of `max_chunk_bytes` in hex plus 4,096
/// bytes for the other fields.
pub fn max_trace_line_len(spec: &StreamSpec) -> usize {
    (spec.max_chunk_bytes as usize)
        .saturating_mul(2)
        .saturating_add(4096)
}

fn marker_from_json(v: &serde_json::Value) -> Result<TickMarker> {
    let bad = |detail: String| PipelineError::TraceMarker { detail };
    match v {
        serde_json::Value::String(s) => match s.as_str() {
            "start" => Ok(TickMarker::Start),
            "end" => Ok(TickMarker::End),
            "barge_in" => Ok(TickMarker::BargeIn),
            "silence" => Ok(TickMarker::Silence),
            "end_of_turn" => Ok(TickMarker::EndOfTurn),
            other => Err(bad(format!(
                "unknown marker {other:?} (expected start, end, barge_in, silence, end_of_turn or {{\"custom\":\"...\"}})"
            ))),
        },
        serde_json::Value::Object(m) => match (m.len(), m.get("custom")) {
            (1, Some(serde_json::Value::String(s))) => Ok(TickMarker::Custom(s.clone())),
            _ => Err(bad(
                "an object marker must be exactly {\"custom\":\"<text>\"}".to_owned(),
            )),
        },
        _ => Err(bad(
            "marker must be a name or {\"custom\":\"<text>\"}".to_owned()
        )),
    }
}

fn decode_hex(hex_text: &str) -> Result<Vec<u8>> {
    if !hex_text.len().is_multiple_of(2)
        || !hex_text
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(PipelineError::TracePayload {
            detail: "bytes_hex must be lowercase hex of even length".to_owned(),
        });
    }
    hex::decode(hex_text).map_err(|e| PipelineError::TracePayload {
        detail: format!("bytes_hex: {e}"),
    })
}

/// Parses one trace line (`spec/TICK-TRACE.md`) into a tick of a stream with `spec`; `None` for
/// a line of JSON whitespace only. The line may end in `\n` or `\r\n`.
///
/// The tick's `window_id` is the line's `window_id` if given, else `spec.window_of(ts_ns)`. The
/// line is refused if it is longer than [`max_trace_line_len`], not UTF-8, not exactly a tick
/// object, or if `bytes_len` exceeds `max_chunk_bytes` (checked before anything is allocated).
/// Whether the tick fits its window and channel is for [`StreamWindow::push`] to decide.
pub fn parse_trace_line(line: &[u8], spec: &StreamSpec) -> Result<Option<Tick>> {
    let max = max_trace_line_len(spec);
    if line.len() > max {
        return Err(PipelineError::TraceLineTooLong { max });
    }
    let text = core::str::from_utf8(line).map_err(|_| PipelineError::TraceNotUtf8)?;
    if text.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
        return Ok(None);
    }
    let rec: TraceRecord = serde_json::from_str(text).map_err(|e| PipelineError::TraceJson {
        detail: e.to_string(),
    })?;
    let kind = match rec.kind.as_str() {
        "audio" => TickKind::Audio,
        "text" => TickKind::Text,
        "video" => TickKind::Video,
        "marker" => {
            let m = rec
                .marker
                .as_ref()
                .ok_or_else(|| PipelineError::TraceMarker {
                    detail: "a marker tick needs a marker field".to_owned(),
                })?;
            TickKind::Marker(marker_from_json(m)?)
        }
        other => {
            return Err(PipelineError::TraceKind {
                kind: other.to_owned(),
            });
        }
    };
    if rec.marker.is_some() && !matches!(kind, TickKind::Marker(_)) {
        return Err(PipelineError::TraceMarker {
            detail: format!("a {} tick carries no marker field", rec.kind),
        });
    }
    let bytes = match (rec.bytes_hex, rec.bytes_len) {
        (Some(_), Some(_)) => {
            return Err(PipelineError::TracePayload {
                detail: "give bytes_hex or bytes_len, not both".to_owned(),
            });
        }
        (Some(h), None) => Bytes::from(decode_hex(&h)?),
        (None, Some(n)) => {
            if n > u64::from(spec.max_chunk_bytes) {
                return Err(PipelineError::TracePayload {
                    detail: format!(
                        "bytes_len {n} exceeds max_chunk_bytes {}",
                        spec.max_chunk_bytes
                    ),
                });
            }
            // Bounded by max_chunk_bytes (a u32) just above.
            Bytes::from(vec![0u8; n as usize])
        }
        (None, None) if matches!(kind, TickKind::Marker(_)) => Bytes::new(),
        (None, None) => {
            return Err(PipelineError::TracePayload {
                detail: format!("a {} tick needs bytes_hex or bytes_len", rec.kind),
            });
        }
    };
    let window_id = rec.window_id.unwrap_or_else(|| spec.window_of(rec.ts_ns));
    Ok(Some(Tick::new(
        window_id,
        rec.channel_id,
        kind,
        bytes,
        rec.ts_ns,
    )))
}

/// Appends the trace line of `tick` (without a newline): keys `ts_ns`, `channel_id`, `kind`,
/// `marker` (markers), then `bytes_len` for an all-zero payload (omitted for an empty marker
/// payload) or `bytes_hex` otherwise, then `window_id` only when it differs from
/// `spec.window_of(ts_ns)`. [`parse_trace_line`] reads it back to an equal tick.
pub fn write_trace_line(tick: &Tick, spec: &StreamSpec, out: &mut String) {
    use core::fmt::Write as _;
    let (kind, marker) = match &tick.kind {
        TickKind::Marker(m) => ("marker", Some(m)),
        k => (k.tag().as_str(), None),
    };
    // Writing into a String cannot fail.
    let _ = write!(
        out,
        "{{\"ts_ns\":{},\"channel_id\":{},\"kind\":\"{kind}\"",
        tick.ts_ns, tick.channel_id
    );
    if let Some(m) = marker {
        let value = match m.wire_name() {
            Some(name) => serde_json::Value::String(name.to_owned()),
            None => {
                let text = match m {
                    TickMarker::Custom(t) => t.clone(),
                    _ => String::new(),
                };
                serde_json::json!({ "custom": text })
            }
        };
        let _ = write!(out, ",\"marker\":{value}");
    }
    let is_marker = marker.is_some();
    if tick.bytes.iter().all(|&b| b == 0) {
        if !(is_marker && tick.bytes.is_empty()) {
            let _ = write!(out, ",\"bytes_len\":{}", tick.bytes.len());
        }
    } else {
        let _ = write!(out, ",\"bytes_hex\":\"{}\"", hex::encode(&tick.bytes));
    }
    if tick.window_id != spec.window_of(tick.ts_ns) {
        let _ = write!(out, ",\"window_id\":{}", tick.window_id);
    }
    out.push('}');
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    tick_window_ms: u32,
    max_chunk_bytes: u32,
    max_ticks_per_window: u32,
    channels: Vec<ChannelFile>,
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct ChannelFile {
    id: u32,
    direction: String,
    kind: String,
    mime: String,
}

/// Parses a stream spec file (`spec/TICK-TRACE.md`, "Stream spec files") and validates it.
pub fn spec_from_json(text: &str) -> Result<StreamSpec> {
    let file: SpecFile = serde_json::from_str(text).map_err(|e| PipelineError::SpecJson {
        detail: e.to_string(),
    })?;
    let mut channels = Vec::with_capacity(file.channels.len());
    for c in file.channels {
        let direction = match c.direction.as_str() {
            "inbound" => ChannelDirection::Inbound,
            "outbound" => ChannelDirection::Outbound,
            "substrate" => ChannelDirection::Substrate,
            other => {
                return Err(PipelineError::SpecJson {
                    detail: format!(
                        "channel {}: direction {other:?} is not inbound, outbound or substrate",
                        c.id
                    ),
                });
            }
        };
        let kind = match c.kind.as_str() {
            "audio" => TickKindTag::Audio,
            "text" => TickKindTag::Text,
            "video" => TickKindTag::Video,
            "marker" => TickKindTag::Marker,
            other => {
                return Err(PipelineError::SpecJson {
                    detail: format!(
                        "channel {}: kind {other:?} is not audio, text, video or marker",
                        c.id
                    ),
                });
            }
        };
        channels.push(ChannelSpec::new(c.id, direction, kind, &c.mime));
    }
    let spec = StreamSpec {
        tick_window_ms: file.tick_window_ms,
        max_chunk_bytes: file.max_chunk_bytes,
        max_ticks_per_window: file.max_ticks_per_window,
        channels,
    };
    spec.validate()?;
    Ok(spec)
}

/// The spec file text of `spec` (pretty JSON with a trailing newline); [`spec_from_json`] reads
/// it back to an equal spec.
pub fn spec_to_json(spec: &StreamSpec) -> String {
    let file = SpecFile {
        tick_window_ms: spec.tick_window_ms,
        max_chunk_bytes: spec.max_chunk_bytes,
        max_ticks_per_window: spec.max_ticks_per_window,
        channels: spec
            .channels
            .iter()
            .map(|c| ChannelFile {
                id: c.id,
                direction: c.direction.as_str().to_owned(),
                kind: c.kind_tag.as_str().to_owned(),
                mime: c.mime.clone(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------------------------

pub mod demo {
    //! The scripted duplex-voice story of the wave-47 demo
    //! (`examples/wave47_streaming_pipeline.rs`), shared with the shipped trace
    //! `conformance/traces/duplex-demo.jsonl` and the benches.
    //!
    //! Thirteen 200 ms windows (2.6 s) of a voice agent asked about the weather:
    //!
    //! | window | what happens                                                                 |
    //! |--------|------------------------------------------------------------------------------|
    //! | 0-2    | the user asks; ASR text; a weather tool answers on the substrate channel     |
    //! | 3-5    | the agent answers in LLM text and TTS audio                                  |
    //! | 6      | the user barges in at 1.24 s: `Yield` on that tick; TTS stops within 90 ms   |
    //! | 7-8    | the user asks again; the agent answers                                       |
    //! | 9      | a TTS burst outruns the rolling budget: `Hallucination`                      |
    //! | 10     | a second barge-in at 2.02 s; TTS still flows at 2.19 s: `BargeInIgnored`     |
    //! | 11-12  | the agent stops; the user says thanks; the session ends                      |
    //!
    //! Every audio payload is zero-filled (silence), so the trace can name it by length.

    use super::{
        ClosedAt, ClosedWindow, Estimator, Pipeline, PipelineConfig, Result, TickOutcome,
        duplex_voice_oracle,
    };
    use bytes::Bytes;
    use jouleclaw_jcr1::cose::SoftwareSigner;
    use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex};
    use std::sync::Arc;

    /// The demo's steward (the seed vectors').
    pub const STEWARD: &str = "did:keri:EJ9testStewardAID000000000000000";
    /// The demo's stream id (the seed vectors').
    pub const STREAM_ID: &str = "stream-demo";
    /// Stream time 0 of the demo: 2026-06-05T00:00:00Z, the seed vectors' day, so window 1
    /// closes at `00:00:00`, window 7 at `00:00:01` and window 12 at `00:00:02`, as there.
    pub const EPOCH_UNIX: i64 = 1_780_617_600;
    /// Windows in the story.
    pub const WINDOWS: u64 = 13;
    /// The size of the window-9 TTS burst that outruns the rolling budget.
    pub const BURST_BYTES: usize = 13_670;

    const MS: u64 = 1_000_000;

    fn at(ms: u64) -> u64 {
        ms * MS
    }

    fn payload(window: u64, channel: u32, kind: TickKind, bytes: Bytes, ms: u64) -> Tick {
        Tick::new(window, channel, kind, bytes, at(ms))
    }

    fn mic(w: u64, ms: u64) -> Tick {
        let pcm = Bytes::from(vec![0u8; duplex::MIC_BYTES_PER_WINDOW]);
        payload(w, duplex::MIC, TickKind::Audio, pcm, ms)
    }

    fn tts(w: u64, len: usize, ms: u64) -> Tick {
        payload(
            w,
            duplex::TTS,
            TickKind::Audio,
            Bytes::from(vec![0u8; len]),
            ms,
        )
    }

    fn text(w: u64, channel: u32, s: &'static str, ms: u64) -> Tick {
        payload(
            w,
            channel,
            TickKind::Text,
            Bytes::from_static(s.as_bytes()),
            ms,
        )
    }

    fn marker(w: u64, channel: u32, m: TickMarker, ms: u64) -> Tick {
        Tick::marker(w, channel, m, at(ms))
    }

    /// The story's ticks, in stream order.
    pub fn ticks() -> Vec<Tick> {
        use TickMarker::{BargeIn, End, EndOfTurn, Start};
        use duplex::{ASR, CONTROL, LLM, SUBSTRATE, TTS};
        let tts_frame = duplex::TTS_BYTES_PER_WINDOW;
        vec![
            // 0-2: the user asks.
            marker(0, CONTROL, Start, 0),
            mic(0, 0),
            mic(1, 200),
            text(1, ASR, "what's the weather in lisbon", 350),
            mic(2, 400),
            marker(2, CONTROL, EndOfTurn, 520),
            text(
                2,
                SUBSTRATE,
                r#"{"city":"Lisbon","sky":"clear","temp_c":24,"wind_kmh":11}"#,
                560,
            ),
            // 3-5: the agent answers.
            mic(3, 600),
            marker(3, TTS, Start, 605),
            text(
                3,
                LLM,
                "It's clear and 24 degrees in Lisbon right now.",
                610,
            ),
            tts(3, tts_frame, 630),
            mic(4, 800),
            tts(4, tts_frame, 810),
            mic(5, 1000),
            tts(5, tts_frame, 1010),
            // 6: barge-in; the agent stops within the deadline.
            mic(6, 1200),
            tts(6, tts_frame, 1210),
            marker(6, CONTROL, BargeIn, 1240),
            tts(6, 1200, 1300),
            marker(6, TTS, End, 1330),
            // 7-8: the user asks again; the agent answers.
            mic(7, 1400),
            text(7, ASR, "and tomorrow in porto", 1500),
            marker(7, CONTROL, EndOfTurn, 1580),
            mic(8, 1600),
            text(
                8,
                SUBSTRATE,
                r#"{"city":"Porto","sky":"rain","temp_c":17}"#,
                1620,
            ),
            marker(8, TTS, Start, 1630),
            text(8, LLM, "Tomorrow Porto gets rain and 17 degrees.", 1640),
            tts(8, tts_frame, 1660),
            // 9: a burst of outbound audio nothing accounts for.
            mic(9, 1800),
            tts(9, tts_frame, 1810),
            tts(9, BURST_BYTES, 1850),
            // 10: barge-in ignored: outbound 170 ms later.
            mic(10, 2000),
            marker(10, CONTROL, BargeIn, 2020),
            tts(10, 1200, 2060),
            tts(10, 1200, 2190),
            // 11-12: the agent stops; thanks; the end.
            mic(11, 2200),
            marker(11, TTS, End, 2210),
            text(11, ASR, "ok thanks", 2300),
            marker(11, CONTROL, EndOfTurn, 2380),
            mic(12, 2400),
            marker(12, CONTROL, End, 2590),
        ]
    }

    /// The demo's pipeline: the duplex-voice spec and oracle, `closed_at` in stream time from
    /// [`EPOCH_UNIX`], the default ledger policy and energy [`Estimator`], signed with the RFC
    /// 8032 TEST 1 key (public: for demos and tests only).
    pub fn pipeline() -> Result<Pipeline> {
        Pipeline::new(
            Arc::new(StreamSpec::duplex_voice_default()),
            PipelineConfig::new(STEWARD, STREAM_ID).with_closed_at(ClosedAt::StreamTime {
                epoch_unix: EPOCH_UNIX,
            }),
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )
    }

    /// A run of the story: every tick's outcome (with its closed window moved out) and every
    /// closed window.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct DemoRun {
        /// The ticks, in order.
        pub ticks: Vec<Tick>,
        /// Each tick's outcome; `closed` is always `None` here (see `windows`).
        pub outcomes: Vec<TickOutcome>,
        /// The closed windows, in order.
        pub windows: Vec<ClosedWindow>,
    }

    /// Runs the story through [`pipeline`].
    pub fn run() -> Result<DemoRun> {
        let mut p = pipeline()?;
        let ticks = ticks();
        let mut outcomes = Vec::with_capacity(ticks.len());
        let mut windows = Vec::new();
        for tick in &ticks {
            let mut outcome = p.push(tick.clone())?;
            windows.extend(outcome.closed.take());
            outcomes.push(outcome);
        }
        windows.extend(p.close_window()?);
        Ok(DemoRun {
            ticks,
            outcomes,
            windows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jouleclaw_jcr1::cose::{SingleKey, SoftwareSigner};
    use jouleclaw_stream::duplex;

    fn spec() -> Arc<StreamSpec> {
        Arc::new(StreamSpec::duplex_voice_default())
    }

    fn pipeline() -> Pipeline {
        Pipeline::new(
            spec(),
            PipelineConfig::new("did:example:s", "s1"),
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )
        .unwrap()
    }

    fn mic(w: u64, ts_ns: u64) -> Tick {
        Tick::new(
            w,
            duplex::MIC,
            TickKind::Audio,
            Bytes::from(vec![0u8; 640]),
            ts_ns,
        )
    }

    #[test]
    fn refused_tick_changes_nothing_even_when_it_would_open_a_window() {
        let mut p = pipeline();
        p.push(mic(0, 0)).unwrap();
        // Unknown channel in window 1: refused before window 0 closes.
        let bad = Tick::new(1, 99, TickKind::Audio, Bytes::new(), 200_000_000);
        let e = p.push(bad).unwrap_err();
        assert_eq!(e.code(), "tick_unknown_channel");
        assert_eq!(p.open_window_id(), Some(0));
        // Accepted neighbour: the same tick on a real channel closes window 0.
        let out = p.push(mic(1, 200_000_000)).unwrap();
        assert_eq!(out.closed.unwrap().receipt.window_id, 0);
        assert_eq!(p.open_window_id(), Some(1));
    }

    #[test]
    fn windows_only_move_forward() {
        let mut p = pipeline();
        p.push(mic(2, 400_000_000)).unwrap();
        let e = p.push(mic(1, 200_000_000)).unwrap_err();
        assert_eq!(e, PipelineError::WindowRegressed { current: 2, got: 1 });
        p.close_window().unwrap().unwrap();
        // Still refused after window 2 closed.
        assert_eq!(
            p.push(mic(2, 400_000_001)).unwrap_err().code(),
            "trace_window_regressed"
        );
        assert!(p.push(mic(3, 600_000_000)).unwrap().closed.is_none());
    }

    #[test]
    fn close_window_is_none_without_an_open_window() {
        let mut p = pipeline();
        assert_eq!(p.close_window().unwrap(), None);
        p.push(mic(0, 0)).unwrap();
        assert!(p.close_window().unwrap().is_some());
        assert_eq!(p.close_window().unwrap(), None);
    }

    #[test]
    fn ledger_summary_is_read_before_the_next_window_resets_it() {
        let mut p = pipeline();
        // Outbound with no inbound: hallucination in window 0.
        let tts = Tick::new(
            0,
            duplex::TTS,
            TickKind::Audio,
            Bytes::from(vec![0u8; 100]),
            0,
        );
        assert_eq!(
            p.push(tts).unwrap().finding,
            WindowConservationFinding::Hallucination { unaccounted: 100 }
        );
        let out = p.push(mic(1, 200_000_000)).unwrap();
        let closed = out.closed.unwrap();
        assert_eq!(
            closed.receipt.conservation,
            WindowConservationFinding::Hallucination { unaccounted: 100 }
        );
        // The conservation ledger reports; the verdict still passes.
        assert!(closed.receipt.verdict.is_pass());
    }

    #[test]
    fn closed_at_follows_the_configured_clock() {
        assert_eq!(ClosedAt::Fixed(7).unix_for(9_000_000_000), 7);
        let st = ClosedAt::StreamTime { epoch_unix: 100 };
        assert_eq!(st.unix_for(999_999_999), 100);
        assert_eq!(st.unix_for(1_000_000_000), 101);
        assert_eq!(
            ClosedAt::StreamTime {
                epoch_unix: i64::MAX
            }
            .unix_for(2_000_000_000),
            i64::MAX
        );
    }

    #[test]
    fn a_failed_close_poisons_the_pipeline() {
        // A clock outside years 0000-9999 cannot be minted.
        let mut p = Pipeline::new(
            spec(),
            PipelineConfig::new("s", "x").with_closed_at(ClosedAt::Fixed(i64::MAX)),
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )
        .unwrap();
        p.push(mic(0, 0)).unwrap();
        assert_eq!(p.close_window().unwrap_err().code(), "unencodable");
        assert_eq!(p.push(mic(1, 200_000_000)), Err(PipelineError::Poisoned));
        assert_eq!(p.close_window(), Err(PipelineError::Poisoned));
    }

    #[test]
    fn new_refuses_empty_names_and_bad_policy() {
        let make = |cfg: PipelineConfig| {
            Pipeline::new(
                spec(),
                cfg,
                duplex_voice_oracle(),
                Estimator::default(),
                Box::new(SoftwareSigner::rfc8032_test_key()),
            )
            .map(|_| ())
        };
        assert_eq!(
            make(PipelineConfig::new("", "x")).unwrap_err().code(),
            "unencodable"
        );
        assert_eq!(
            make(PipelineConfig::new("s", "")).unwrap_err().code(),
            "unencodable"
        );
        let policy = LedgerPolicy {
            window_count: 0,
            ..LedgerPolicy::default()
        };
        assert_eq!(
            make(PipelineConfig::new("s", "x").with_policy(policy))
                .unwrap_err()
                .code(),
            "ledger_invalid_policy"
        );
        assert!(make(PipelineConfig::new("s", "x")).is_ok());
    }

    #[test]
    fn demo_story_shows_yield_hallucination_and_barge_in_ignored() {
        let run = demo::run().unwrap();
        assert_eq!(run.windows.len() as u64, demo::WINDOWS);
        let kinds: Vec<(&str, &str)> = run
            .windows
            .iter()
            .map(|w| {
                (
                    w.receipt.verdict.kind_str(),
                    w.receipt.conservation.kind_str(),
                )
            })
            .collect();
        for (i, (v, c)) in kinds.iter().enumerate() {
            let want = match i {
                6 => ("yield", "conforming"),
                9 => ("pass", "hallucination"),
                10 => ("yield", "barge_in_ignored"),
                _ => ("pass", "conforming"),
            };
            assert_eq!((*v, *c), want, "window {i}");
        }
        // The yield is reported early, at the barge-in tick, with its time.
        let early: Vec<&TickOutcome> = run.outcomes.iter().filter(|o| o.early.is_some()).collect();
        assert_eq!(early.len(), 2);
        assert_eq!(early[0].ts_ns, 1_240_000_000);
        assert_eq!(early[0].early, Some(WindowVerdict::Yield { seen_at: 6 }));
        assert_eq!(run.windows[6].early[0].ts_ns, 1_240_000_000);
        // BargeInIgnored is flagged on the late outbound tick itself.
        let flagged = run
            .outcomes
            .iter()
            .find(|o| o.finding.kind_str() == "barge_in_ignored")
            .unwrap();
        assert_eq!(flagged.ts_ns, 2_190_000_000);
        // Every receipt verifies under the test key.
        let key = SingleKey::new(SoftwareSigner::rfc8032_test_key().verifying_key());
        for w in &run.windows {
            let v = cose::verify(w.cose_sign1(), &key).unwrap();
            assert_eq!(v.receipt, w.receipt);
        }
    }

    #[test]
    fn trace_lines_round_trip_the_demo_ticks() {
        let spec = spec();
        for tick in demo::ticks() {
            let mut line = String::new();
            write_trace_line(&tick, &spec, &mut line);
            assert_eq!(
                parse_trace_line(line.as_bytes(), &spec).unwrap(),
                Some(tick)
            );
        }
        // An explicit window id that differs from the derived one is written and read back.
        let odd = Tick::marker(5, 0, TickMarker::Custom("x\"y".into()), 0);
        let mut line = String::new();
        write_trace_line(&odd, &spec, &mut line);
        assert!(line.contains("\"window_id\":5"), "{line}");
        assert_eq!(parse_trace_line(line.as_bytes(), &spec).unwrap(), Some(odd));
    }

    #[test]
    fn trace_line_refusals_and_their_neighbours() {
        let spec = spec();
        let p = |s: &str| parse_trace_line(s.as_bytes(), &spec);
        let code = |s: &str| p(s).unwrap_err().code();
        assert_eq!(p("  \r\n").unwrap(), None);
        let ok = r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4}"#;
        let t = p(ok).unwrap().unwrap();
        assert_eq!((t.window_id, t.bytes.len()), (0, 4));
        assert_eq!(
            p(r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4,"window_id":3}"#)
                .unwrap()
                .unwrap()
                .window_id,
            3
        );
        assert_eq!(code("{"), "trace_bad_json");
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4,"extra":1}"#),
            "trace_bad_json"
        );
        assert_eq!(
            code(r#"{"channel_id":1,"kind":"audio","bytes_len":4}"#),
            "trace_bad_json"
        );
        assert_eq!(
            code(r#"{"ts_ns":-1,"channel_id":1,"kind":"audio","bytes_len":4}"#),
            "trace_bad_json"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":1,"kind":"sound","bytes_len":4}"#),
            "trace_unknown_kind"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":0,"kind":"marker"}"#),
            "trace_bad_marker"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":"boom"}"#),
            "trace_bad_marker"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a","b":1}}"#),
            "trace_bad_marker"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":1,"kind":"audio","marker":"start","bytes_len":1}"#),
            "trace_bad_marker"
        );
        assert!(p(r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a"}}"#).is_ok());
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":1,"kind":"audio"}"#),
            "trace_bad_payload"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":1,"bytes_hex":"00"}"#),
            "trace_bad_payload"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":"ABCD"}"#),
            "trace_bad_payload"
        );
        assert_eq!(
            code(r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":"abc"}"#),
            "trace_bad_payload"
        );
        assert_eq!(
            p(r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":"abcd"}"#)
                .unwrap()
                .unwrap()
                .bytes[..],
            [0xab, 0xcd]
        );
        let max = spec.max_chunk_bytes;
        assert_eq!(
            code(&format!(
                r#"{{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":{}}}"#,
                max + 1
            )),
            "trace_bad_payload"
        );
        assert!(
            p(&format!(
                r#"{{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":{max}}}"#
            ))
            .is_ok()
        );
        assert_eq!(
            parse_trace_line(b"{\"ts_ns\":\xff}", &spec)
                .unwrap_err()
                .code(),
            "trace_not_utf8"
        );
        let long = vec![b' '; max_trace_line_len(&spec) + 1];
        assert_eq!(
            parse_trace_line(&long, &spec).unwrap_err().code(),
            "trace_line_too_long"
        );
        assert_eq!(parse_trace_line(&long[1..], &spec).unwrap(), None);
    }

    #[test]
    fn spec_files_round_trip_and_refuse_bad_fields() {
        let default = StreamSpec::duplex_voice_default();
        assert_eq!(spec_from_json(&spec_to_json(&default)).unwrap(), default);
        let bad_dir = spec_to_json(&default).replacen("\"inbound\"", "\"sideways\"", 1);
        assert_eq!(
            spec_from_json(&bad_dir).unwrap_err().code(),
            "spec_bad_json"
        );
        let bad_kind = spec_to_json(&default).replacen("\"marker\"", "\"smell\"", 1);
        assert_eq!(
            spec_from_json(&bad_kind).unwrap_err().code(),
            "spec_bad_json"
        );
        let zero =
            spec_to_json(&default).replacen("\"tick_window_ms\": 200", "\"tick_window_ms\": 0", 1);
        assert_eq!(
            spec_from_json(&zero).unwrap_err().code(),
            "spec_zero_window"
        );
        assert_eq!(spec_from_json("{}").unwrap_err().code(), "spec_bad_json");
    }

    #[test]
    fn format_ts_trims_trailing_zeros() {
        assert_eq!(format_ts(0), "0s");
        assert_eq!(format_ts(1_240_000_000), "1.24s");
        assert_eq!(format_ts(2_000_000_000), "2s");
        assert_eq!(format_ts(1), "0.000000001s");
    }

    #[test]
    fn run_totals_count_kinds_and_empty_windows() {
        let mut p = pipeline();
        let mut t = RunTotals::default();
        p.push(mic(0, 0)).unwrap();
        let closed = p.push(mic(3, 600_000_000)).unwrap().closed.unwrap();
        t.add(&closed);
        t.add(&p.close_window().unwrap().unwrap());
        assert_eq!(t.windows, 2);
        assert_eq!(t.window_range, Some((0, 3)));
        assert_eq!(t.empty_windows(), 2);
        assert_eq!(t.verdicts, [2, 0, 0, 0]);
        assert_eq!(t.to_json()["empty_windows"], 2);
        assert!(
            t.render_text()
                .starts_with("2 receipts (windows 0..=3, 2 empty")
        );
    }
}
