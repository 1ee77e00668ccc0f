//! The meter: per-frame speech activity from the accepted ticks, and at the end of the stream
//! every interaction event, by the rules of `spec/INTERACTION-METRICS-V1.md` section 2.

use jouleclaw_stream::interaction::{
    BACKCHANNEL, NON_DIRECTED, USER_SPEECH, VOCAL_TIC, interaction_name,
};
use jouleclaw_stream::{BARGE_IN_DEADLINE_MS, ChannelDirection, NS_PER_MS, Tick, TickKind};

use crate::error::{InteractionError, Result};

/// The substrate's barge-in deadline in nanoseconds (150 ms): the second yield rate's bound.
pub const DEADLINE_NS: u64 = BARGE_IN_DEADLINE_MS * NS_PER_MS;

/// The most frames one stream's meter holds: 2^20 (58 hours of 200 ms frames; 9 bytes each,
/// 9 MiB at most). A tick of a later frame is refused ([`InteractionError::TooManyFrames`]).
pub const MAX_FRAMES: u64 = 1 << 20;

/// The most events one stream (and one `interaction-metrics/1` document) holds: 65,536.
pub const MAX_EVENTS: usize = 65_536;

/// The longest detection window, and the longest frame: 60 s.
pub const MAX_WINDOW_NS: u64 = 60_000_000_000;

/// The detection windows (τ-voice's `InteractionMetricsConfig`), in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InteractionConfig {
    /// The frame (τ-voice's tick): 200 ms.
    pub tick_ns: u64,
    /// Time for the agent to yield after a real interruption: 2 s.
    pub no_yield_window_ns: u64,
    /// Yielding within this window after a backchannel is an error: 1 s.
    pub backchannel_yield_window_ns: u64,
    /// Yielding within this window after a vocal tic is an error: 1 s.
    pub vocal_tic_yield_window_ns: u64,
    /// Yielding within this window after non-directed speech is an error: 1 s.
    pub non_directed_yield_window_ns: u64,
    /// Responding within this window to a vocal tic in silence is an error: 2 s.
    pub vocal_tic_response_window_ns: u64,
    /// Responding within this window to non-directed speech in silence is an error: 2 s.
    pub non_directed_response_window_ns: u64,
}

impl Default for InteractionConfig {
    fn default() -> Self {
        Self {
            tick_ns: 200_000_000,
            no_yield_window_ns: 2_000_000_000,
            backchannel_yield_window_ns: 1_000_000_000,
            vocal_tic_yield_window_ns: 1_000_000_000,
            non_directed_yield_window_ns: 1_000_000_000,
            vocal_tic_response_window_ns: 2_000_000_000,
            non_directed_response_window_ns: 2_000_000_000,
        }
    }
}

impl InteractionConfig {
    /// The values with their wire names, in canonical key order.
    pub fn fields(&self) -> [(&'static str, u64); 7] {
        [
            (
                "backchannel_yield_window_ns",
                self.backchannel_yield_window_ns,
            ),
            ("no_yield_window_ns", self.no_yield_window_ns),
            (
                "non_directed_response_window_ns",
                self.non_directed_response_window_ns,
            ),
            (
                "non_directed_yield_window_ns",
                self.non_directed_yield_window_ns,
            ),
            ("tick_ns", self.tick_ns),
            (
                "vocal_tic_response_window_ns",
                self.vocal_tic_response_window_ns,
            ),
            ("vocal_tic_yield_window_ns", self.vocal_tic_yield_window_ns),
        ]
    }

    /// Refuses a zero frame and any value over [`MAX_WINDOW_NS`] (`bad_config`).
    pub fn validate(&self) -> Result<()> {
        if self.tick_ns == 0 {
            return Err(InteractionError::BadConfig {
                reason: "tick_ns is 0".to_owned(),
            });
        }
        for (name, v) in self.fields() {
            if v > MAX_WINDOW_NS {
                return Err(InteractionError::BadConfig {
                    reason: format!("{name} {v} is over {MAX_WINDOW_NS}"),
                });
            }
        }
        Ok(())
    }

    /// A window in whole frames (`window_ns / tick_ns`, rounded down).
    fn ticks(&self, window_ns: u64) -> u64 {
        window_ns / self.tick_ns
    }
}

/// What an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// The agent started speaking after the user's turn, before the user spoke again.
    Response,
    /// The user spoke again before the agent responded.
    NoResponse,
    /// The agent stopped within the no-yield window after a real interruption.
    Yield,
    /// The agent kept talking through the no-yield window.
    NoYield,
    /// The agent talked through a backchannel.
    BackchannelCorrect,
    /// The agent stopped within the backchannel window.
    BackchannelError,
    /// The agent ignored a vocal tic.
    VocalTicCorrect,
    /// The agent stopped for, or responded to, a vocal tic.
    VocalTicError,
    /// The agent ignored speech not directed at it.
    NonDirectedCorrect,
    /// The agent stopped for, or responded to, speech not directed at it.
    NonDirectedError,
    /// The agent started speaking while the user was speaking.
    AgentInterruptsUser,
}

impl EventKind {
    /// Every kind, in wire-name order of the panel.
    pub const ALL: [EventKind; 11] = [
        Self::Response,
        Self::NoResponse,
        Self::Yield,
        Self::NoYield,
        Self::BackchannelCorrect,
        Self::BackchannelError,
        Self::VocalTicCorrect,
        Self::VocalTicError,
        Self::NonDirectedCorrect,
        Self::NonDirectedError,
        Self::AgentInterruptsUser,
    ];

    /// The wire name (τ-voice's event type).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Response => "response",
            Self::NoResponse => "no_response",
            Self::Yield => "yield",
            Self::NoYield => "no_yield",
            Self::BackchannelCorrect => "backchannel_correct",
            Self::BackchannelError => "backchannel_error",
            Self::VocalTicCorrect => "vocal_tic_correct",
            Self::VocalTicError => "vocal_tic_error",
            Self::NonDirectedCorrect => "non_directed_correct",
            Self::NonDirectedError => "non_directed_error",
            Self::AgentInterruptsUser => "agent_interrupts_user",
        }
    }

    /// The kind of a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// `true` for the kinds that carry a latency (`response`, `yield`).
    pub fn has_latency(self) -> bool {
        matches!(self, Self::Response | Self::Yield)
    }
}

/// One event, in frames of [`InteractionConfig::tick_ns`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The frame the event is dated at (τ-voice's `event_tick`): the end of the user's turn
    /// for `response`/`no_response`, the agent's start for an error in silence and for
    /// `agent_interrupts_user`, else the start of the user speech or effect.
    pub tick: u64,
    /// The first frame of what the event is about: the user's segment, the effect, or the
    /// agent's segment.
    pub segment_tick: u64,
    /// `response`: frames from the end of the user's turn to the agent's start; `yield`:
    /// frames from the interruption's start to the first frame without agent speech.
    pub latency_ticks: Option<u64>,
    /// The window of the first tick observed in frame `tick`, if a tick came in it.
    pub window_id: Option<u64>,
}

const USER: u8 = 1;
const AGENT: u8 = 2;
const BC: u8 = 4;
const VT: u8 = 8;
const ND: u8 = 16;
const SEEN: u8 = 32;

/// Measures one stream's interaction events. Pure: time is each tick's `ts_ns`.
///
/// Feed it the ticks the pipeline accepted, in push order, with their channel's direction. A
/// frame is `[k * tick_ns, (k + 1) * tick_ns)`; it holds user speech when a
/// `{"custom":"user_speech"}` marker on an inbound channel lies in it, agent speech when a
/// non-empty `Audio` tick on an outbound channel does; `backchannel`, `vocal_tic` and
/// `non_directed` markers on an inbound channel flag it likewise. Work per tick is O(1)
/// (amortised over the frames it skips); memory 9 bytes per frame, at most [`MAX_FRAMES`].
/// [`InteractionMeter::finish`] derives the events in O(frames x window frames).
#[derive(Debug, Clone)]
pub struct InteractionMeter {
    config: InteractionConfig,
    flags: Vec<u8>,
    windows: Vec<u64>,
    events: Option<Vec<Event>>,
}

impl InteractionMeter {
    /// A meter with `config` (refused when [`InteractionConfig::validate`] refuses it).
    pub fn new(config: InteractionConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            flags: Vec::new(),
            windows: Vec::new(),
            events: None,
        })
    }

    /// The detection windows.
    pub fn config(&self) -> &InteractionConfig {
        &self.config
    }

    /// Frames seen so far (up to the last tick's).
    pub fn frame_count(&self) -> u64 {
        self.flags.len() as u64
    }

    /// Observes one accepted tick. Refuses a tick past [`MAX_FRAMES`] and any tick after
    /// [`InteractionMeter::finish`]; a refusal changes nothing. A tick counts in the frame of
    /// its own `ts_ns`, whatever came before it (a stage's tick stamped earlier than the tick
    /// that produced it still lands in its own frame).
    pub fn observe(&mut self, tick: &Tick, direction: ChannelDirection) -> Result<()> {
        if self.events.is_some() {
            return Err(InteractionError::Finished);
        }
        let frame = tick.ts_ns / self.config.tick_ns;
        if frame >= MAX_FRAMES {
            return Err(InteractionError::TooManyFrames { max: MAX_FRAMES });
        }
        let flag = match (&tick.kind, direction) {
            (TickKind::Marker(m), ChannelDirection::Inbound) => match interaction_name(m) {
                Some(USER_SPEECH) => USER,
                Some(BACKCHANNEL) => BC,
                Some(VOCAL_TIC) => VT,
                Some(NON_DIRECTED) => ND,
                _ => 0,
            },
            (TickKind::Audio, ChannelDirection::Outbound) if !tick.bytes.is_empty() => AGENT,
            _ => 0,
        };
        let i = frame as usize;
        if self.flags.len() <= i {
            self.flags.resize(i + 1, 0);
            self.windows.resize(i + 1, 0);
        }
        if let (Some(f), Some(w)) = (self.flags.get_mut(i), self.windows.get_mut(i)) {
            if *f & SEEN == 0 {
                *w = tick.window_id;
            }
            *f |= flag | SEEN;
        }
        Ok(())
    }

    /// Ends the stream and derives every event. Idempotent.
    pub fn finish(&mut self) -> Result<&[Event]> {
        if self.events.is_none() {
            let events = derive(&self.config, &self.flags, &self.windows);
            if events.len() > MAX_EVENTS {
                return Err(InteractionError::TooManyEvents { max: MAX_EVENTS });
            }
            self.events = Some(events);
        }
        Ok(self.events.as_deref().unwrap_or(&[]))
    }

    /// The events, once [`InteractionMeter::finish`] succeeded.
    pub fn events(&self) -> Option<&[Event]> {
        self.events.as_deref()
    }
}

#[derive(Debug, Clone, Copy)]
struct UserSeg {
    start: u64,
    end: u64,
    backchannel: bool,
    agent_at_start: bool,
    agent_at_end: bool,
    vocal_tic: bool,
    non_directed: bool,
}

#[derive(Debug, Clone, Copy)]
struct AgentSeg {
    start: u64,
    end: u64,
    user_at_start: bool,
}

/// Runs of frames holding `bit`, as `(start, end)` with `end` exclusive.
fn runs(flags: &[u8], bit: u8) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, f) in flags.iter().enumerate() {
        match (f & bit != 0, start) {
            (true, None) => start = Some(i as u64),
            (false, Some(s)) => {
                out.push((s, i as u64));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, flags.len() as u64));
    }
    out
}

/// The events of a finished stream: `spec/INTERACTION-METRICS-V1.md` section 2, τ-voice's
/// `extract_voice_quality_events_from_simulation` over frames.
fn derive(config: &InteractionConfig, all_flags: &[u8], windows: &[u64]) -> Vec<Event> {
    let at = |i: u64| all_flags.get(i as usize).copied().unwrap_or(0);
    // Rule 1: the end-of-conversation filter.
    let mut n = all_flags.len();
    if n >= 2 && at(n as u64 - 1) & USER != 0 && at(n as u64 - 2) & USER == 0 {
        n -= 1;
    }
    let flags = &all_flags[..n];
    let n = n as u64;
    let window_of = |i: u64| {
        (at(i) & SEEN != 0)
            .then(|| windows.get(i as usize).copied())
            .flatten()
    };
    let any = |s: u64, e: u64, bit: u8| (s..e).any(|i| at(i) & bit != 0);
    // Rule 2: segments.
    let users: Vec<UserSeg> = runs(flags, USER)
        .into_iter()
        .map(|(s, e)| UserSeg {
            start: s,
            end: e,
            backchannel: at(s) & BC != 0,
            agent_at_start: at(s) & AGENT != 0,
            agent_at_end: e < n && at(e) & AGENT != 0,
            vocal_tic: any(s, e, VT),
            non_directed: any(s, e, ND),
        })
        .collect();
    let agents: Vec<AgentSeg> = runs(flags, AGENT)
        .into_iter()
        .map(|(s, e)| AgentSeg {
            start: s,
            end: e,
            user_at_start: at(s) & USER != 0,
        })
        .collect();
    let mut events = Vec::new();
    let ev = |kind, tick, segment_tick, latency_ticks| Event {
        kind,
        tick,
        segment_tick,
        latency_ticks,
        window_id: window_of(tick),
    };
    // Rule 3: responses.
    let valid: Vec<&UserSeg> = users
        .iter()
        .filter(|u| !u.backchannel && !u.agent_at_end)
        .collect();
    for (i, u) in valid.iter().enumerate() {
        let next_agent = agents.iter().find(|a| a.start >= u.end).map(|a| a.start);
        let next_user = valid.get(i + 1).map(|v| v.start);
        match (next_agent, next_user) {
            (Some(a), nu) if nu.is_none_or(|nu| a <= nu) => {
                events.push(ev(EventKind::Response, u.end, u.start, Some(a - u.end)));
            }
            (_, Some(_)) => events.push(ev(EventKind::NoResponse, u.end, u.start, None)),
            _ => {}
        }
    }
    // Rule 4: user speech starting during agent speech.
    let mut during = Vec::new();
    for u in users.iter().filter(|u| u.agent_at_start) {
        let (window, yes, no) = if u.backchannel {
            (
                config.backchannel_yield_window_ns,
                EventKind::BackchannelError,
                EventKind::BackchannelCorrect,
            )
        } else if u.vocal_tic {
            (
                config.vocal_tic_yield_window_ns,
                EventKind::VocalTicError,
                EventKind::VocalTicCorrect,
            )
        } else if u.non_directed {
            (
                config.non_directed_yield_window_ns,
                EventKind::NonDirectedError,
                EventKind::NonDirectedCorrect,
            )
        } else {
            (
                config.no_yield_window_ns,
                EventKind::Yield,
                EventKind::NoYield,
            )
        };
        let limit = u.start.saturating_add(config.ticks(window)).min(n);
        let stopped = (u.start..limit).find(|&i| at(i) & AGENT == 0);
        during.push(match stopped {
            Some(y) if yes == EventKind::Yield => {
                ev(EventKind::Yield, u.start, u.start, Some(y - u.start))
            }
            Some(_) => ev(yes, u.start, u.start, None),
            None => ev(no, u.start, u.start, None),
        });
    }
    // Rule 5: the agent starting while the user speaks.
    for a in agents.iter().filter(|a| a.user_at_start) {
        during.push(ev(EventKind::AgentInterruptsUser, a.start, a.start, None));
    }
    // Rule 6: a vocal tic or non-directed speech in user speech that starts in silence.
    for u in users
        .iter()
        .filter(|u| !u.agent_at_start && (u.vocal_tic || u.non_directed))
    {
        let (window, err, ok) = if u.vocal_tic {
            (
                config.vocal_tic_response_window_ns,
                EventKind::VocalTicError,
                EventKind::VocalTicCorrect,
            )
        } else {
            (
                config.non_directed_response_window_ns,
                EventKind::NonDirectedError,
                EventKind::NonDirectedCorrect,
            )
        };
        let last = u.end.saturating_add(config.ticks(window));
        during.push(
            match agents
                .iter()
                .find(|a| a.start >= u.start && a.start <= last)
            {
                Some(a) => ev(err, a.start, u.start, None),
                None => ev(ok, u.start, u.start, None),
            },
        );
    }
    // Rule 7: vocal tics and non-directed speech outside user speech.
    let silent: Vec<u8> = flags
        .iter()
        .map(|f| if f & USER != 0 { 0 } else { *f })
        .collect();
    let mut effects: Vec<(u64, u64, bool)> = runs(&silent, VT)
        .into_iter()
        .map(|(s, e)| (s, e, true))
        .chain(runs(&silent, ND).into_iter().map(|(s, e)| (s, e, false)))
        .collect();
    effects.sort_by_key(|&(s, _, vt)| (s, !vt));
    for (s, e, vt) in effects {
        let (yield_window, response_window, err, ok) = if vt {
            (
                config.vocal_tic_yield_window_ns,
                config.vocal_tic_response_window_ns,
                EventKind::VocalTicError,
                EventKind::VocalTicCorrect,
            )
        } else {
            (
                config.non_directed_yield_window_ns,
                config.non_directed_response_window_ns,
                EventKind::NonDirectedError,
                EventKind::NonDirectedCorrect,
            )
        };
        if let Some(a) = agents.iter().find(|a| a.start <= s && s < a.end) {
            // The agent was speaking: stopping within the yield window is an error; talking
            // on past it is no event.
            if (a.end - s).saturating_mul(config.tick_ns) <= yield_window {
                during.push(ev(err, s, s, None));
            }
        } else {
            let last = e.saturating_add(config.ticks(response_window));
            during.push(
                match agents.iter().find(|a| a.start >= s && a.start <= last) {
                    Some(a) => ev(err, a.start, s, None),
                    None => ev(ok, s, s, None),
                },
            );
        }
    }
    events.extend(during);
    // Rule 8: in frame order (stable: responses first within a frame).
    events.sort_by_key(|e| e.tick);
    events
}
