//! Reference [`StreamOracle`] backends.

use jouleclaw_stream::{
    ChannelDirection, StreamWindow, Tick, TickKind, TickMarker, WindowConservationFinding,
};

use crate::oracle::Oracle;
use crate::stream::{StreamOracle, WindowContext};
use crate::verdict::{Verdict, WindowVerdict};

/// Passes every window; raises nothing early. Deterministic, for tests and as the seed's
/// reference backend. Name: `"always-pass-stream"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlwaysPassStream;

impl AlwaysPassStream {
    /// The oracle's name.
    pub const NAME: &'static str = "always-pass-stream";
}

impl StreamOracle for AlwaysPassStream {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn judge(&mut self, _window: &StreamWindow, _ctx: &WindowContext) -> WindowVerdict {
        WindowVerdict::pass_by(Self::NAME)
    }
}

/// Yields on barge-in. Name: `"barge-in-detector"`.
///
/// * [`StreamOracle::on_tick`]: a `BargeIn` marker tick raises `Yield { seen_at }` with the
///   tick's `window_id`, on that tick; every other tick raises nothing.
/// * [`StreamOracle::judge`]: `Yield { seen_at: window_id }` when the window holds a `BargeIn`
///   marker ([`StreamWindow::has_barge_in`]), otherwise `Pass`.
///
/// A `BargeIn` marker counts on a channel of any direction. Stateless.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BargeInDetector;

impl BargeInDetector {
    /// The oracle's name.
    pub const NAME: &'static str = "barge-in-detector";
}

impl StreamOracle for BargeInDetector {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn on_tick(&mut self, tick: &Tick, _direction: ChannelDirection) -> Option<WindowVerdict> {
        tick.is_barge_in().then_some(WindowVerdict::Yield {
            seen_at: tick.window_id,
        })
    }

    fn judge(&mut self, window: &StreamWindow, _ctx: &WindowContext) -> WindowVerdict {
        if window.has_barge_in() {
            WindowVerdict::Yield {
                seen_at: window.window_id(),
            }
        } else {
            WindowVerdict::pass_by(Self::NAME)
        }
    }
}

/// Fails a window whose conservation finding ([`WindowContext::finding`]) is not
/// `Conforming`. Name: `"conservation-ledger"`.
///
/// This lets the ledger's `Hallucination` and `BargeInIgnored` findings take part in the
/// verdict; a stack that reports them only in the receipt's `conservation` field leaves this
/// backend out. Stateless.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConservationGate;

impl ConservationGate {
    /// The oracle's name.
    pub const NAME: &'static str = "conservation-ledger";
}

impl StreamOracle for ConservationGate {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn judge(&mut self, _window: &StreamWindow, ctx: &WindowContext) -> WindowVerdict {
        match ctx.finding {
            WindowConservationFinding::Conforming => WindowVerdict::pass_by(Self::NAME),
            WindowConservationFinding::Hallucination { unaccounted } => WindowVerdict::fail(
                Self::NAME,
                format!("hallucination: {unaccounted} outbound bytes unaccounted for"),
            ),
            WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns,
                outbound_ts_ns,
            } => WindowVerdict::fail(
                Self::NAME,
                format!(
                    "barge-in at ts_ns {barge_in_ts_ns} ignored: outbound at ts_ns {outbound_ts_ns}"
                ),
            ),
        }
    }
}

/// Returns a fixed verdict for every window and, optionally, a fixed early verdict for every
/// tick. Deterministic, for tests and for composing scripted scenarios; it counts its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedStreamOracle {
    name: String,
    verdict: WindowVerdict,
    tick_verdict: Option<WindowVerdict>,
    judged: u64,
    ticks_seen: u64,
}

impl FixedStreamOracle {
    /// An oracle named `name` that judges every window `verdict` and raises nothing early.
    pub fn new(name: impl Into<String>, verdict: WindowVerdict) -> Self {
        Self {
            name: name.into(),
            verdict,
            tick_verdict: None,
            judged: 0,
            ticks_seen: 0,
        }
    }

    /// Also raises `verdict` early on every tick.
    pub fn with_tick_verdict(mut self, verdict: WindowVerdict) -> Self {
        self.tick_verdict = Some(verdict);
        self
    }

    /// How many windows it has judged (saturating).
    pub fn judged(&self) -> u64 {
        self.judged
    }

    /// How many ticks it has seen (saturating).
    pub fn ticks_seen(&self) -> u64 {
        self.ticks_seen
    }
}

impl StreamOracle for FixedStreamOracle {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_tick(&mut self, _tick: &Tick, _direction: ChannelDirection) -> Option<WindowVerdict> {
        self.ticks_seen = self.ticks_seen.saturating_add(1);
        self.tick_verdict.clone()
    }

    fn judge(&mut self, _window: &StreamWindow, _ctx: &WindowContext) -> WindowVerdict {
        self.judged = self.judged.saturating_add(1);
        self.verdict.clone()
    }
}

/// Which ticks of a stream form one exchange for a [`PerTickAdapter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExchangeScope {
    /// Every outbound text tick of a window is one exchange: its payload is the output, and the
    /// concatenated payloads of the window's inbound text ticks (in push order) are the input.
    /// Stateless; raises `Pass` or `Fail` only.
    Tick,
    /// A turn is one exchange, possibly spanning windows. The output is the concatenated
    /// outbound text from the first outbound text tick until an `End` or `EndOfTurn` marker on
    /// an outbound channel closes the turn; the input is the inbound text received since the
    /// previous turn closed (or since the adapter started). A window that ends with a turn
    /// open is `NeedMore`. Input plus output of one exchange may hold at most
    /// `max_exchange_bytes`; an exchange that grows past it is failed and discarded through
    /// its closing marker.
    Turn {
        /// The largest exchange (input + output bytes) the adapter buffers.
        max_exchange_bytes: usize,
    },
}

/// Lifts a per-request [`Oracle`] onto the streaming surface.
///
/// Text ticks only: audio, video and substrate channels are not part of an exchange. Directions
/// come from the window's spec. See [`ExchangeScope`] for which ticks form an exchange.
///
/// Name: `"per-tick:<oracle name>"` for [`ExchangeScope::Tick`] and
/// `"per-turn:<oracle name>"` for [`ExchangeScope::Turn`]; a `Fail` or `NeedMore` names the
/// adapter, and the reason quotes the per-request oracle's reason.
///
/// It raises nothing early: an exchange is judged when the window closes.
///
/// With [`ExchangeScope::Turn`] it keeps state across windows, so windows must be judged once
/// each, in ascending id order; a window judged out of order is failed and leaves the state
/// unchanged.
#[derive(Debug, Clone)]
pub struct PerTickAdapter<O: Oracle> {
    oracle: O,
    name: String,
    scope: ExchangeScope,
    inbound: Vec<u8>,
    outbound: Vec<u8>,
    turn_open: bool,
    discarding: bool,
    last_window: Option<u64>,
}

impl<O: Oracle> PerTickAdapter<O> {
    /// An adapter judging every outbound text tick ([`ExchangeScope::Tick`]).
    pub fn new(oracle: O) -> Self {
        Self::with_scope(oracle, ExchangeScope::Tick)
    }

    /// An adapter judging whole turns ([`ExchangeScope::Turn`]).
    pub fn per_turn(oracle: O, max_exchange_bytes: usize) -> Self {
        Self::with_scope(oracle, ExchangeScope::Turn { max_exchange_bytes })
    }

    /// An adapter with `scope`.
    pub fn with_scope(oracle: O, scope: ExchangeScope) -> Self {
        let prefix = match scope {
            ExchangeScope::Tick => "per-tick:",
            ExchangeScope::Turn { .. } => "per-turn:",
        };
        let name = format!("{prefix}{}", oracle.name());
        Self {
            oracle,
            name,
            scope,
            inbound: Vec::new(),
            outbound: Vec::new(),
            turn_open: false,
            discarding: false,
            last_window: None,
        }
    }

    /// The per-request oracle.
    pub fn oracle(&self) -> &O {
        &self.oracle
    }

    /// The exchange scope.
    pub fn scope(&self) -> ExchangeScope {
        self.scope
    }

    /// `true` while a turn is open ([`ExchangeScope::Turn`]).
    pub fn turn_open(&self) -> bool {
        self.turn_open
    }

    /// Bytes buffered for the pending exchange: (input, output).
    pub fn pending_bytes(&self) -> (usize, usize) {
        (self.inbound.len(), self.outbound.len())
    }

    fn judge_ticks(&self, window: &StreamWindow) -> WindowVerdict {
        let spec = window.spec();
        let text_on = |t: &Tick, want: ChannelDirection| {
            t.kind == TickKind::Text
                && spec
                    .channel(t.channel_id)
                    .is_some_and(|c| c.direction == want)
        };
        let mut input = Vec::new();
        for t in window.ticks() {
            if text_on(t, ChannelDirection::Inbound) {
                input.extend_from_slice(&t.bytes);
            }
        }
        for (i, t) in window.ticks().iter().enumerate() {
            if !text_on(t, ChannelDirection::Outbound) {
                continue;
            }
            if let Verdict::Fail { reason } = self.oracle.judge(&input, &t.bytes) {
                return WindowVerdict::fail(
                    self.name.as_str(),
                    format!(
                        "tick {i} (channel {}, ts_ns {}): {reason}",
                        t.channel_id, t.ts_ns
                    ),
                );
            }
        }
        WindowVerdict::pass_by(self.name.as_str())
    }

    fn judge_turns(&mut self, window: &StreamWindow, max: usize) -> WindowVerdict {
        let id = window.window_id();
        if let Some(last) = self.last_window
            && id <= last
        {
            return WindowVerdict::fail(
                self.name.as_str(),
                format!(
                    "window {id} judged after window {last}; windows are judged once each, \
                         in ascending order"
                ),
            );
        }
        self.last_window = Some(id);
        let spec = window.spec();
        let mut first_fail: Option<WindowVerdict> = None;
        for t in window.ticks() {
            let Some(direction) = spec.channel(t.channel_id).map(|c| c.direction) else {
                continue;
            };
            match (&t.kind, direction) {
                (TickKind::Text, ChannelDirection::Inbound | ChannelDirection::Outbound) => {
                    if self.discarding {
                        continue;
                    }
                    let held = self.inbound.len() + self.outbound.len();
                    if t.bytes.len() > max.saturating_sub(held) {
                        self.reset();
                        self.discarding = true;
                        first_fail.get_or_insert_with(|| {
                            WindowVerdict::fail(
                                self.name.as_str(),
                                format!(
                                    "exchange exceeds {max} bytes at ts_ns {}; discarded through \
                                     its closing marker",
                                    t.ts_ns
                                ),
                            )
                        });
                        continue;
                    }
                    if direction == ChannelDirection::Inbound {
                        self.inbound.extend_from_slice(&t.bytes);
                    } else {
                        self.outbound.extend_from_slice(&t.bytes);
                        self.turn_open = true;
                    }
                }
                (
                    TickKind::Marker(TickMarker::End | TickMarker::EndOfTurn),
                    ChannelDirection::Outbound,
                ) => {
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    if !self.turn_open {
                        continue;
                    }
                    let verdict = self.oracle.judge(&self.inbound, &self.outbound);
                    self.reset();
                    if let Verdict::Fail { reason } = verdict {
                        first_fail.get_or_insert_with(|| {
                            WindowVerdict::fail(
                                self.name.as_str(),
                                format!("turn closed at ts_ns {}: {reason}", t.ts_ns),
                            )
                        });
                    }
                }
                _ => {}
            }
        }
        if let Some(fail) = first_fail {
            fail
        } else if self.discarding {
            WindowVerdict::need_more(
                self.name.as_str(),
                "discarding an over-limit exchange until its closing marker",
            )
        } else if self.turn_open {
            WindowVerdict::need_more(
                self.name.as_str(),
                format!(
                    "turn open: {} outbound text bytes await an end or end_of_turn marker",
                    self.outbound.len()
                ),
            )
        } else {
            WindowVerdict::pass_by(self.name.as_str())
        }
    }

    fn reset(&mut self) {
        self.inbound.clear();
        self.outbound.clear();
        self.turn_open = false;
    }
}

impl<O: Oracle> StreamOracle for PerTickAdapter<O> {
    fn name(&self) -> &str {
        &self.name
    }

    fn judge(&mut self, window: &StreamWindow, _ctx: &WindowContext) -> WindowVerdict {
        match self.scope {
            ExchangeScope::Tick => self.judge_ticks(window),
            ExchangeScope::Turn { max_exchange_bytes } => {
                self.judge_turns(window, max_exchange_bytes)
            }
        }
    }
}
