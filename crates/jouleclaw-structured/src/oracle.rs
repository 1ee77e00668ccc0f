//! [`StructuredOutputOracle`]: the streaming validator lifted onto the stream-oracle surface.

use std::sync::Arc;

use jouleclaw_stream::{ChannelDirection, StreamWindow, Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::{StreamOracle, WindowContext, WindowVerdict};

use crate::error::Refusal;
use crate::grammar::Grammar;
use crate::validator::{Status, StructuredValidator};

/// A refusal and the number of the turn it refused.
type TurnRefusal = (u64, Refusal);

/// The turn state the oracle carries across windows.
#[derive(Debug, Clone)]
struct Turns {
    /// The open turn's validator (`None`: no turn open).
    open: Option<StructuredValidator>,
    /// Turns begun so far (the open one included).
    turns: u64,
}

/// What one window did to the turn state.
#[derive(Debug, Default)]
struct WindowOutcome {
    /// The first refusal that happened in the window: (turn number, refusal).
    refused: Option<(u64, Refusal)>,
    /// The window carried a tick of a turn that was refused before it.
    touched_refused: Option<(u64, Refusal)>,
}

/// Judges the text an LLM channel emits, turn by turn, against a [`Grammar`].
///
/// Name: `structured:<first 16 hex digits of the grammar digest>`, so a receipt's verdict
/// names the grammar that judged it.
///
/// # Turns
///
/// Only the watched channel counts (default [`duplex::LLM`], channel 4; any direction).
///
/// * A turn **opens** at the first text tick on the channel while no turn is open. Its payload,
///   and the payload of every following text tick on the channel, is pushed to a fresh
///   [`StructuredValidator`].
/// * A turn **closes** at an `End` or `EndOfTurn` marker on the channel (`finish`: the
///   document is accepted or refused), or at a `Start` marker on the channel while a turn is
///   open (the open turn is finished first: a new turn began). A marker with no turn open
///   does nothing.
/// * Ticks of other channels, audio and video, and other markers are ignored (barge-in is the
///   `BargeInDetector`'s business).
///
/// # Verdicts
///
/// * [`StreamOracle::on_tick`] returns `Fail` on the tick whose bytes (or closing marker)
///   make the turn's document impossible, once per turn; otherwise `None`. The driver can stop
///   the TTS on it.
/// * [`StreamOracle::judge`]: `Fail` if a turn was refused by a tick of this window, or the
///   window carries ticks of a turn refused earlier; else `NeedMore` while a turn is open
///   (valid so far, or refused earlier and waiting for its closing marker); else `Pass`.
///
/// Fail reason: `turn <n>: <code> at byte <offset>, path "<pointer>"`, with
/// `turn <n> was refused earlier: ...` for a window that carries the rest of a refused turn.
///
/// `judge` sees the whole window and does not depend on `on_tick`; `on_tick` works on a preview
/// copy of the state, so a driver that calls both validates each byte twice. After a window is
/// judged the preview restarts from the judged state, unless it already holds ticks of a later
/// window. Windows must be
/// judged once each, in ascending id order; a window judged out of order gets a `Fail` and
/// leaves the state unchanged. Memory is one validator (bounded by the grammar), not the turn's
/// text.
#[derive(Debug, Clone)]
pub struct StructuredOutputOracle {
    grammar: Arc<Grammar>,
    name: String,
    channel: u32,
    committed: Turns,
    last_window: Option<u64>,
    /// The driver said the stream has ended (`on_stream_end`): an open turn is settled at the
    /// next judgement.
    ended: bool,
    /// `on_tick`'s state: the committed state advanced by the ticks `on_tick` saw since, with
    /// the latest window id among them.
    preview: Option<(u64, Turns)>,
}

impl StructuredOutputOracle {
    /// An oracle over [`duplex::LLM`] with `grammar`.
    pub fn new(grammar: Arc<Grammar>) -> Self {
        let name = format!("structured:{}", grammar.digest_prefix());
        Self {
            grammar,
            name,
            channel: duplex::LLM,
            committed: Turns {
                open: None,
                turns: 0,
            },
            last_window: None,
            ended: false,
            preview: None,
        }
    }

    /// Watches channel `channel_id` instead of [`duplex::LLM`].
    pub fn with_channel(mut self, channel_id: u32) -> Self {
        self.channel = channel_id;
        self
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.grammar
    }

    /// The watched channel.
    pub fn channel(&self) -> u32 {
        self.channel
    }

    /// `true` while a turn is open (as of the last judged window).
    pub fn turn_open(&self) -> bool {
        self.committed.open.is_some()
    }

    /// Turns begun so far (as of the last judged window).
    pub fn turns(&self) -> u64 {
        self.committed.turns
    }

    /// Applies one tick to `state`. Returns the refusal the tick caused, if it caused one, and
    /// the earlier refusal of the turn it belongs to, if it carried the rest of a refused turn.
    fn apply(
        grammar: &Arc<Grammar>,
        channel: u32,
        state: &mut Turns,
        tick: &Tick,
    ) -> (Option<TurnRefusal>, Option<TurnRefusal>) {
        if tick.channel_id != channel {
            return (None, None);
        }
        match &tick.kind {
            TickKind::Text => {
                if state.open.is_none() {
                    state.turns = state.turns.saturating_add(1);
                    state.open = Some(StructuredValidator::new(Arc::clone(grammar)));
                }
                let turn = state.turns;
                let Some(v) = state.open.as_mut() else {
                    return (None, None);
                };
                if let Status::Refused(prior) = v.status() {
                    // Already refused: this tick carries the rest of a refused turn.
                    return (None, Some((turn, prior)));
                }
                match v.push(&tick.bytes) {
                    Ok(()) => (None, None),
                    Err(r) => (Some((turn, r)), None),
                }
            }
            TickKind::Marker(TickMarker::End | TickMarker::EndOfTurn | TickMarker::Start) => {
                let turn = state.turns;
                let Some(mut v) = state.open.take() else {
                    return (None, None);
                };
                if let Status::Refused(prior) = v.status() {
                    return (None, Some((turn, prior)));
                }
                match v.finish() {
                    Ok(()) => (None, None),
                    Err(r) => (Some((turn, r)), None),
                }
            }
            _ => (None, None),
        }
    }

    fn reason(turn: u64, r: &Refusal) -> String {
        format!("turn {turn}: {r}")
    }
}

impl StreamOracle for StructuredOutputOracle {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_tick(&mut self, tick: &Tick, _direction: ChannelDirection) -> Option<WindowVerdict> {
        let (seen, state) = self
            .preview
            .get_or_insert_with(|| (tick.window_id, self.committed.clone()));
        *seen = (*seen).max(tick.window_id);
        let (refused, _) = Self::apply(&self.grammar, self.channel, state, tick);
        refused.map(|(turn, r)| WindowVerdict::fail(self.name.as_str(), Self::reason(turn, &r)))
    }

    fn on_stream_end(&mut self) {
        self.ended = true;
    }

    fn judge(&mut self, window: &StreamWindow, _ctx: &WindowContext) -> WindowVerdict {
        let id = window.window_id();
        if let Some(last) = self.last_window
            && id <= last
        {
            return WindowVerdict::fail(
                self.name.as_str(),
                format!(
                    "window {id} judged after window {last}; windows are judged once each, in \
                     ascending order"
                ),
            );
        }
        self.last_window = Some(id);
        // The preview restarts from the committed state unless it already holds ticks of a
        // later window (a driver that reports the next window's first tick before judging).
        if self.preview.as_ref().is_some_and(|(seen, _)| *seen <= id) {
            self.preview = None;
        }
        let mut out = WindowOutcome::default();
        for t in window.ticks() {
            let (refused, touched) =
                Self::apply(&self.grammar, self.channel, &mut self.committed, t);
            if out.refused.is_none() {
                out.refused = refused;
            }
            if out.touched_refused.is_none() {
                out.touched_refused = touched;
            }
        }
        if let Some((turn, r)) = out.refused {
            return WindowVerdict::fail(self.name.as_str(), Self::reason(turn, &r));
        }
        if let Some((turn, r)) = out.touched_refused {
            return WindowVerdict::fail(
                self.name.as_str(),
                format!("turn {turn} was refused earlier: {r}"),
            );
        }
        if self.ended
            && let Some(mut v) = self.committed.open.take()
        {
            // The stream ended inside a turn: the turn ends here, as at an end marker.
            let turn = self.committed.turns;
            return match v.finish() {
                Ok(()) => WindowVerdict::pass_by(self.name.as_str()),
                Err(r) => WindowVerdict::fail(
                    self.name.as_str(),
                    format!("turn {turn}: the stream ended inside it: {r}"),
                ),
            };
        }
        match &self.committed.open {
            Some(v) if matches!(v.status(), Status::Refused(_)) => WindowVerdict::need_more(
                self.name.as_str(),
                format!(
                    "turn {} was refused; awaiting its closing marker",
                    self.committed.turns
                ),
            ),
            Some(v) => WindowVerdict::need_more(
                self.name.as_str(),
                format!(
                    "turn {} open: {} bytes valid so far, awaiting an end or end_of_turn marker",
                    self.committed.turns,
                    v.usage().bytes
                ),
            ),
            None => WindowVerdict::pass_by(self.name.as_str()),
        }
    }
}
