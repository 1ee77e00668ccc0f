//! The rolling byte-conservation ledger.
//!
//! Outbound content should be accounted for by what came in (the user's audio and text) and by
//! the substrate the cascade draws on (retrieved or tool context). The ledger keeps per-window
//! inbound, outbound and substrate byte totals over a ring of the last `N` windows and judges
//! every tick as it arrives:
//!
//! * `budget = (rolling_inbound + rolling_substrate) * allowance_permille / 1000 + slack_bytes`
//! * `Hallucination { unaccounted: rolling_outbound - budget }` when rolling outbound exceeds
//!   the budget;
//! * `BargeInIgnored` when a payload tick on an outbound channel arrives later than
//!   [`BARGE_IN_DEADLINE_MS`] after a barge-in that outbound has not acknowledged by a `Start`
//!   marker on an outbound channel. It is judged on the tick, never deferred to window close.
//!
//! Work per tick is O(1); rolling to a new window is O(min(gap, N)); nothing allocates after
//! [`RollingConservationLedger::new`].

use crate::error::{Result, StreamError};
use crate::spec::{BARGE_IN_DEADLINE_MS, ChannelDirection, NS_PER_MS};
use crate::tick::{Tick, TickKind, TickMarker};

/// Ledger policy.
///
/// Defaults: `window_count` 5 (one second of 200 ms windows: long enough that a TTS burst
/// answering a question asked two windows earlier is still backed by it, short enough that a
/// minute of silence cannot bank budget for a monologue); `allowance_permille` 1000 (outbound may
/// match inbound + substrate byte for byte: 12 kHz TTS audio is 0.75x 16 kHz mic audio, so a
/// cascade that speaks while listening stays well inside); `slack_bytes` 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerPolicy {
    /// Windows in the rolling buffer, `1..=4096`.
    pub window_count: u32,
    /// Outbound allowance per 1000 bytes of inbound + substrate, `0..=1_000_000`.
    pub allowance_permille: u32,
    /// Outbound bytes allowed on top of the proportional budget.
    pub slack_bytes: u64,
}

impl Default for LedgerPolicy {
    fn default() -> Self {
        Self {
            window_count: 5,
            allowance_permille: 1000,
            slack_bytes: 0,
        }
    }
}

impl LedgerPolicy {
    /// Largest accepted `window_count`.
    pub const MAX_WINDOW_COUNT: u32 = 4096;
    /// Largest accepted `allowance_permille` (1000x).
    pub const MAX_ALLOWANCE_PERMILLE: u32 = 1_000_000;

    /// Checks the ranges documented on the fields.
    pub fn validate(&self) -> Result<()> {
        if self.window_count == 0 || self.window_count > Self::MAX_WINDOW_COUNT {
            return Err(StreamError::InvalidPolicy {
                field: "window_count",
            });
        }
        if self.allowance_permille > Self::MAX_ALLOWANCE_PERMILLE {
            return Err(StreamError::InvalidPolicy {
                field: "allowance_permille",
            });
        }
        Ok(())
    }

    /// The outbound budget for the given rolling inbound + substrate bytes.
    pub fn budget(&self, backing: u128) -> u128 {
        backing * u128::from(self.allowance_permille) / 1000 + u128::from(self.slack_bytes)
    }
}

/// What the ledger concludes about a tick, or (as a summary) about a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowConservationFinding {
    /// Rolling outbound is within budget and no barge-in deadline has passed.
    Conforming,
    /// Rolling outbound exceeds the rolling budget by `unaccounted` bytes (saturated at
    /// `u64::MAX`).
    Hallucination {
        /// Outbound bytes nothing accounts for.
        unaccounted: u64,
    },
    /// Outbound kept flowing past the barge-in deadline.
    BargeInIgnored {
        /// When the barge-in arrived.
        barge_in_ts_ns: u64,
        /// When the late outbound tick arrived.
        outbound_ts_ns: u64,
    },
}

impl WindowConservationFinding {
    /// Dominance rank: `BargeInIgnored` (2) > `Hallucination` (1) > `Conforming` (0).
    pub fn rank(&self) -> u8 {
        match self {
            Self::Conforming => 0,
            Self::Hallucination { .. } => 1,
            Self::BargeInIgnored { .. } => 2,
        }
    }

    /// The wire kind: `"conforming"`, `"hallucination"` or `"barge_in_ignored"`.
    pub fn kind_str(&self) -> &'static str {
        match self {
            Self::Conforming => "conforming",
            Self::Hallucination { .. } => "hallucination",
            Self::BargeInIgnored { .. } => "barge_in_ignored",
        }
    }

    /// Folds a tick finding into a window summary: the higher rank wins; between two
    /// hallucinations the larger `unaccounted`; between two ignored barge-ins the earlier one.
    pub fn dominate(self, other: Self) -> Self {
        match (self, other) {
            (Self::Hallucination { unaccounted: a }, Self::Hallucination { unaccounted: b }) => {
                Self::Hallucination {
                    unaccounted: a.max(b),
                }
            }
            (a, b) if b.rank() > a.rank() => b,
            (a, _) => a,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    inbound: u64,
    outbound: u64,
    substrate: u64,
}

/// Rolling per-window byte totals and barge-in state; see the module docs.
#[derive(Debug, Clone)]
pub struct RollingConservationLedger {
    policy: LedgerPolicy,
    ring: Vec<Totals>,
    /// Ring slot of the current window.
    head: usize,
    current_window: Option<u64>,
    rolling_inbound: u128,
    rolling_outbound: u128,
    rolling_substrate: u128,
    pending_barge_in_ns: Option<u64>,
    summary: WindowConservationFinding,
}

impl RollingConservationLedger {
    /// A ledger with `policy`, allocating its ring once.
    pub fn new(policy: LedgerPolicy) -> Result<Self> {
        policy.validate()?;
        Ok(Self {
            policy,
            ring: vec![Totals::default(); policy.window_count as usize],
            head: 0,
            current_window: None,
            rolling_inbound: 0,
            rolling_outbound: 0,
            rolling_substrate: 0,
            pending_barge_in_ns: None,
            summary: WindowConservationFinding::Conforming,
        })
    }

    /// The policy.
    pub fn policy(&self) -> &LedgerPolicy {
        &self.policy
    }

    /// The window the ledger is filling, if it has seen one.
    pub fn current_window(&self) -> Option<u64> {
        self.current_window
    }

    /// Rolling inbound bytes over the ring.
    pub fn rolling_inbound(&self) -> u128 {
        self.rolling_inbound
    }

    /// Rolling outbound bytes over the ring.
    pub fn rolling_outbound(&self) -> u128 {
        self.rolling_outbound
    }

    /// Rolling substrate bytes over the ring.
    pub fn rolling_substrate(&self) -> u128 {
        self.rolling_substrate
    }

    /// The barge-in outbound has not yet acknowledged, if any.
    pub fn pending_barge_in_ns(&self) -> Option<u64> {
        self.pending_barge_in_ns
    }

    /// The current window's summary: the dominant finding over its ticks
    /// ([`WindowConservationFinding::dominate`]); `Conforming` for a window without ticks.
    pub fn window_summary(&self) -> WindowConservationFinding {
        self.summary
    }

    /// Moves the ledger to `window_id`, evicting the windows that fall out of the ring. Windows
    /// skipped over count as empty. Moving to the current window is a no-op; moving backwards is
    /// refused and changes nothing.
    pub fn advance_to(&mut self, window_id: u64) -> Result<()> {
        let Some(current) = self.current_window else {
            self.current_window = Some(window_id);
            return Ok(());
        };
        if window_id < current {
            return Err(StreamError::LedgerWindowRegressed {
                current,
                got: window_id,
            });
        }
        let gap = window_id - current;
        let n = self.ring.len();
        let steps = usize::try_from(gap).map_or(n, |g| g.min(n));
        for _ in 0..steps {
            self.head = (self.head + 1) % n;
            let old = core::mem::take(&mut self.ring[self.head]);
            self.rolling_inbound -= u128::from(old.inbound);
            self.rolling_outbound -= u128::from(old.outbound);
            self.rolling_substrate -= u128::from(old.substrate);
        }
        if gap > 0 {
            self.summary = WindowConservationFinding::Conforming;
        }
        self.current_window = Some(window_id);
        Ok(())
    }

    /// Observes one tick on a channel of `direction` and returns the tick's finding.
    pub fn observe(
        &mut self,
        tick: &Tick,
        direction: ChannelDirection,
    ) -> Result<WindowConservationFinding> {
        let event = match &tick.kind {
            TickKind::Marker(TickMarker::BargeIn) => TickEvent::BargeIn,
            TickKind::Marker(TickMarker::Start) => TickEvent::Start,
            TickKind::Marker(_) => TickEvent::OtherMarker,
            _ => TickEvent::Payload,
        };
        self.observe_raw(
            tick.window_id,
            direction,
            event,
            tick.bytes.len() as u64,
            tick.ts_ns,
        )
    }

    /// [`RollingConservationLedger::observe`] on a tick's parts, for sources that are not
    /// [`Tick`]s (replayed totals, tests at the counter bounds). Per-window totals saturate at
    /// `u64::MAX`; rolling sums are `u128` and exact.
    pub fn observe_raw(
        &mut self,
        window_id: u64,
        direction: ChannelDirection,
        event: TickEvent,
        len: u64,
        ts_ns: u64,
    ) -> Result<WindowConservationFinding> {
        self.advance_to(window_id)?;
        let slot = &mut self.ring[self.head];
        let (value, rolling) = match direction {
            ChannelDirection::Inbound => (&mut slot.inbound, &mut self.rolling_inbound),
            ChannelDirection::Outbound => (&mut slot.outbound, &mut self.rolling_outbound),
            ChannelDirection::Substrate => (&mut slot.substrate, &mut self.rolling_substrate),
        };
        let before = *value;
        *value = before.saturating_add(len);
        // The rolling sum grows by what the slot grew by, so eviction stays exact.
        *rolling += u128::from(*value - before);

        let finding = match (direction, event) {
            (ChannelDirection::Inbound, TickEvent::BargeIn) => {
                self.pending_barge_in_ns.get_or_insert(ts_ns);
                None
            }
            (ChannelDirection::Outbound, TickEvent::Start) => {
                self.pending_barge_in_ns = None;
                None
            }
            (ChannelDirection::Outbound, TickEvent::Payload) => {
                self.pending_barge_in_ns.and_then(|barge_in_ts_ns| {
                    let deadline =
                        u128::from(barge_in_ts_ns) + u128::from(BARGE_IN_DEADLINE_MS * NS_PER_MS);
                    (u128::from(ts_ns) > deadline).then_some(
                        WindowConservationFinding::BargeInIgnored {
                            barge_in_ts_ns,
                            outbound_ts_ns: ts_ns,
                        },
                    )
                })
            }
            _ => None,
        };
        let finding = finding.unwrap_or_else(|| self.balance());
        self.summary = self.summary.dominate(finding);
        Ok(finding)
    }

    /// The conservation balance of the ring as it stands.
    pub fn balance(&self) -> WindowConservationFinding {
        let budget = self
            .policy
            .budget(self.rolling_inbound + self.rolling_substrate);
        if self.rolling_outbound > budget {
            WindowConservationFinding::Hallucination {
                unaccounted: u64::try_from(self.rolling_outbound - budget).unwrap_or(u64::MAX),
            }
        } else {
            WindowConservationFinding::Conforming
        }
    }
}

/// What kind of tick the ledger is observing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickEvent {
    /// Audio, text or video payload.
    Payload,
    /// A `BargeIn` marker.
    BargeIn,
    /// A `Start` marker.
    Start,
    /// Any other marker.
    OtherMarker,
}
