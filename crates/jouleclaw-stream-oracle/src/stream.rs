//! The per-window [`StreamOracle`] surface.

use jouleclaw_stream::{ChannelDirection, StreamWindow, Tick, WindowConservationFinding};

use crate::verdict::WindowVerdict;

/// What a driver knows about a window besides its ticks.
///
/// Built with [`WindowContext::new`] (or `Default`); new fields will come with defaults, so
/// construct it through the constructor rather than a struct literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WindowContext {
    /// The rolling conservation ledger's summary of the window
    /// ([`jouleclaw_stream::RollingConservationLedger::window_summary`]).
    pub finding: WindowConservationFinding,
}

impl WindowContext {
    /// A context carrying the ledger's window summary.
    pub fn new(finding: WindowConservationFinding) -> Self {
        Self { finding }
    }
}

impl Default for WindowContext {
    /// A context whose finding is `Conforming`.
    fn default() -> Self {
        Self::new(WindowConservationFinding::Conforming)
    }
}

/// What a pipeline stage reported for one accepted tick.
///
/// A stage is code a driver runs beside the oracles on every accepted tick, which may produce
/// ticks of its own (a turn stage turns mic audio into an ASR text tick by asking a
/// transcriber). Stages may do I/O; oracles may not, so the driver hands each stage's result to
/// the oracles as data ([`StreamOracle::on_stage_event`]) before it calls
/// [`StreamOracle::on_tick`] for that tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageEvent<'a> {
    /// The stage's stable name (such as `"turn"`).
    pub stage: &'a str,
    /// The tick the stage was fed.
    pub tick: &'a Tick,
    /// What the stage made of it.
    pub outcome: StageOutcome<'a>,
}

/// What a stage made of one tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageOutcome<'a> {
    /// The stage took the tick and produced this many ticks (often 0).
    Produced(usize),
    /// The stage failed on the tick, with a stable code and a message. The tick itself stays in
    /// its window: a stage failure is a finding about the stream, not a refusal of the tick.
    Failed {
        /// The stage's stable code (such as `"transcriber_unreachable"`).
        code: &'a str,
        /// A readable message.
        message: &'a str,
    },
}

/// A gate over a stream, consulted on every tick and once per window.
///
/// # Driver contract
///
/// 1. For every tick a [`StreamWindow`] accepts, in push order, the driver calls
///    [`StreamOracle::on_tick`] with the tick and its channel's direction
///    ([`jouleclaw_stream::Pushed`]). A `Some` verdict is *early*: the driver acts on it on that
///    tick (a `Yield` means: stop emitting outbound now; the barge-in deadline is
///    [`jouleclaw_stream::BARGE_IN_DEADLINE_MS`], shorter than a default window).
/// 2. When the window closes, the driver calls [`StreamOracle::judge`] once, with windows in
///    ascending id order. Its verdict is the window's verdict.
///
/// # Implementation contract
///
/// * Pure: no clocks, sleeps, I/O, threads or randomness. State across windows is allowed (a
///   `NeedMore` defers commitment to a later window).
/// * [`StreamOracle::judge`] must not depend on [`StreamOracle::on_tick`] having been called:
///   it sees the whole window. An early verdict raised for a tick of a window is a preview of
///   that window's verdict: `judge` returns a verdict of at least the same rank.
/// * [`StreamOracle::name`] is stable: it appears in wire forms and signed receipts.
/// * A `Pass` names the oracles that vouched for the window in its `chain`; a single oracle
///   returns `[name]`.
pub trait StreamOracle {
    /// A stable name, such as `"always-pass-stream"`.
    fn name(&self) -> &str;

    /// Looks at one accepted tick as it arrives; `Some` raises a verdict early. The default
    /// raises nothing.
    fn on_tick(&mut self, tick: &Tick, direction: ChannelDirection) -> Option<WindowVerdict> {
        let _ = (tick, direction);
        None
    }

    /// Learns what a pipeline stage made of an accepted tick ([`StageEvent`]); called before
    /// [`StreamOracle::on_tick`] for that tick. The default ignores it.
    fn on_stage_event(&mut self, event: &StageEvent<'_>) {
        let _ = event;
    }

    /// Learns that the stream has ended: the next [`StreamOracle::judge`] is the last, for the
    /// window still open (if any). An oracle that holds work open across windows (a turn in
    /// progress) settles it there instead of deferring with `NeedMore`. The default ignores it.
    fn on_stream_end(&mut self) {}

    /// Judges a closed window.
    fn judge(&mut self, window: &StreamWindow, ctx: &WindowContext) -> WindowVerdict;
}

/// Implements [`StreamOracle`] for a pointer type by forwarding every method to the oracle it
/// points to.
macro_rules! forward_stream_oracle {
    ($($pointer:ty),+) => {$(
        impl<T: StreamOracle + ?Sized> StreamOracle for $pointer {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn on_tick(&mut self, tick: &Tick, direction: ChannelDirection) -> Option<WindowVerdict> {
                (**self).on_tick(tick, direction)
            }
            fn on_stage_event(&mut self, event: &StageEvent<'_>) {
                (**self).on_stage_event(event)
            }
            fn on_stream_end(&mut self) {
                (**self).on_stream_end()
            }
            fn judge(&mut self, window: &StreamWindow, ctx: &WindowContext) -> WindowVerdict {
                (**self).judge(window, ctx)
            }
        }
    )+};
}

forward_stream_oracle!(Box<T>, &mut T);
