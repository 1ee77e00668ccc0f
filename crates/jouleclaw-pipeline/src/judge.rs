//! The [`Judge`]: the first half of a [`crate::Pipeline`], everything up to the window boundary.

use core::fmt;
use std::sync::Arc;

use jouleclaw_stream::{
    ChannelDirection, LedgerPolicy, RollingConservationLedger, StreamSpec, StreamWindow, Tick,
    ValidatedSpec, WindowConservationFinding,
};
use jouleclaw_stream_oracle::{
    CompositeStreamOracle, StageEvent, StageOutcome, StreamOracle, WindowContext, WindowVerdict,
};

use crate::driver::{EarlyVerdict, ProducedTick, StageReport, TickOutcome};
use crate::error::{PipelineError, Result};
use crate::stage::Stage;

/// What [`Judge::push`] reports about one accepted tick: a [`TickOutcome`] whose closed window
/// is judged but not yet minted.
pub type JudgedTick = TickOutcome<JudgedWindow>;

/// A window the [`Judge`] closed: its ticks, the oracle's verdict, the ledger's window summary
/// and what led to them. Everything a [`crate::Notary`] needs to mint, sign and seal its
/// receipt, and nothing it would have to judge again.
///
/// Only a [`Judge`] makes one, so a verdict always belongs to the ticks it was reached on. It
/// owns the window's ticks (payloads are reference-counted [`bytes::Bytes`], not copied), and
/// it is `Send`: a runtime hands it from the thread that judges to the thread that signs.
#[derive(Debug, Clone)]
pub struct JudgedWindow {
    window: StreamWindow,
    verdict: WindowVerdict,
    conservation: WindowConservationFinding,
    signals: Vec<(String, WindowVerdict)>,
    early: Vec<EarlyVerdict>,
}

impl JudgedWindow {
    /// The closed window and its ticks.
    pub fn window(&self) -> &StreamWindow {
        &self.window
    }

    /// The window's id.
    pub fn window_id(&self) -> u64 {
        self.window.window_id()
    }

    /// The composite oracle's judgement (Fail > Yield > NeedMore > Pass).
    pub fn verdict(&self) -> &WindowVerdict {
        &self.verdict
    }

    /// The rolling ledger's summary of the window (the receipt's `conservation`).
    pub fn conservation(&self) -> WindowConservationFinding {
        self.conservation
    }

    /// Every backend's verdict for the window, `(name, verdict)` in backend order, losing
    /// signals included.
    pub fn signals(&self) -> &[(String, WindowVerdict)] {
        &self.signals
    }

    /// The early verdicts raised on the window's ticks, in tick order.
    pub fn early(&self) -> &[EarlyVerdict] {
        &self.early
    }

    /// Takes the window apart for the [`crate::Notary`].
    pub(crate) fn into_parts(self) -> JudgedParts {
        JudgedParts {
            window: self.window,
            verdict: self.verdict,
            conservation: self.conservation,
            signals: self.signals,
            early: self.early,
        }
    }
}

/// A [`JudgedWindow`]'s fields, moved out.
pub(crate) struct JudgedParts {
    pub(crate) window: StreamWindow,
    pub(crate) verdict: WindowVerdict,
    pub(crate) conservation: WindowConservationFinding,
    pub(crate) signals: Vec<(String, WindowVerdict)>,
    pub(crate) early: Vec<EarlyVerdict>,
}

struct OpenWindow {
    window: StreamWindow,
    early: Vec<EarlyVerdict>,
}

/// What the ledger, the stages and the oracles made of one accepted tick.
struct Observed {
    ts_ns: u64,
    finding: WindowConservationFinding,
    early: Option<WindowVerdict>,
    stages: Vec<StageReport>,
}

/// The first half of a [`crate::Pipeline`]: the open window, the rolling ledger, the composite
/// oracle and the stages. Ticks in; early verdicts per tick and a [`JudgedWindow`] per closed
/// window out. It never mints, hashes a window or signs: that is the [`crate::Notary`]'s work,
/// which can run elsewhere (another thread, later).
///
/// The driver order per tick and the window rules are the pipeline's (crate docs): a tick of a
/// later window closes the open one ([`TickOutcome::closed`]), a tick of an earlier window, or
/// of a window already closed, is refused ([`PipelineError::WindowRegressed`]), a refused tick
/// changes nothing. A stage tick its window refuses leaves the judge unusable
/// ([`PipelineError::Poisoned`] from then on). Pure: no clocks, I/O, threads or randomness;
/// `Send`.
///
/// ```
/// use std::sync::Arc;
/// use jouleclaw_pipeline::{Judge, duplex_voice_oracle};
/// use jouleclaw_stream::{LedgerPolicy, StreamSpec, Tick, TickMarker, duplex};
/// use jouleclaw_stream_oracle::WindowVerdict;
///
/// let spec = Arc::new(StreamSpec::duplex_voice_default());
/// let mut judge = Judge::new(spec, LedgerPolicy::default(), duplex_voice_oracle())?;
/// let barge_in = Tick::marker(0, duplex::CONTROL, TickMarker::BargeIn, 40_000_000);
/// assert_eq!(judge.push(barge_in)?.early, Some(WindowVerdict::Yield { seen_at: 0 }));
/// let judged = judge.close_window()?.expect("window 0 was open");
/// assert_eq!(judged.verdict(), &WindowVerdict::Yield { seen_at: 0 });
/// # Ok::<(), jouleclaw_pipeline::PipelineError>(())
/// ```
pub struct Judge {
    spec: ValidatedSpec,
    ledger: RollingConservationLedger,
    oracle: CompositeStreamOracle,
    stages: Vec<Box<dyn Stage + Send>>,
    open: Option<OpenWindow>,
    /// The newest window id seen (open, or closed when `open` is `None`).
    newest: Option<u64>,
    poisoned: bool,
    finished: bool,
}

impl fmt::Debug for Judge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Judge")
            .field("oracle", &self.oracle)
            .field("stages", &self.stage_names())
            .field("open_window", &self.open_window_id())
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl Judge {
    /// A judge for a stream with `spec`, its ledger under `policy`. Refuses an invalid spec or
    /// ledger policy.
    pub fn new(
        spec: Arc<StreamSpec>,
        policy: LedgerPolicy,
        oracle: CompositeStreamOracle,
    ) -> Result<Self> {
        // Validated once; every window opens against the checked spec and its channel table.
        let spec = ValidatedSpec::new(spec)?;
        let ledger = RollingConservationLedger::new(policy)?;
        Ok(Self {
            spec,
            ledger,
            oracle,
            stages: Vec::new(),
            open: None,
            newest: None,
            poisoned: false,
            finished: false,
        })
    }

    /// The same judge with `stage` run on every accepted tick, after the stages already added
    /// ([`Stage`] has the driver order).
    pub fn with_stage(mut self, stage: Box<dyn Stage + Send>) -> Self {
        self.stages.push(stage);
        self
    }

    /// The stream spec.
    pub fn spec(&self) -> &Arc<StreamSpec> {
        self.spec.spec()
    }

    /// The composite oracle.
    pub fn oracle(&self) -> &CompositeStreamOracle {
        &self.oracle
    }

    /// The stages' names, in order.
    pub fn stage_names(&self) -> Vec<&str> {
        self.stages.iter().map(|s| s.name()).collect()
    }

    /// The window being filled, if any.
    pub fn open_window_id(&self) -> Option<u64> {
        self.open.as_ref().map(|o| o.window.window_id())
    }

    /// Whether an earlier failure left the judge unusable.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Leaves the judge unusable: the pipeline's notary failed on a window it closed.
    pub(crate) fn poison(&mut self) {
        self.poisoned = true;
    }

    /// Takes one tick (the pipeline's rules, [`crate::Pipeline::push`]); a window it closes
    /// comes back judged in [`TickOutcome::closed`].
    pub fn push(&mut self, tick: Tick) -> Result<JudgedTick> {
        self.push_then(tick, Ok)
    }

    /// [`Judge::push`], handing a window the tick closes to `on_close` before the tick joins
    /// its own window: the pipeline notarizes there, so that a failing close leaves the new
    /// tick unseen by ledger, stages and oracles. A failing `on_close` poisons the judge.
    pub(crate) fn push_then<C>(
        &mut self,
        tick: Tick,
        on_close: impl FnOnce(JudgedWindow) -> Result<C>,
    ) -> Result<TickOutcome<C>> {
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
                let judged = self.judge(old);
                match on_close(judged) {
                    Ok(c) => closed = Some(c),
                    Err(e) => {
                        self.poisoned = true;
                        return Err(e);
                    }
                }
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
                None => {
                    return Err(PipelineError::Internal {
                        invariant: "a matching window is open",
                    });
                }
            }
        };
        let observed = match self.observe(direction) {
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
            ts_ns: observed.ts_ns,
            direction,
            finding: observed.finding,
            early: observed.early,
            stages: observed.stages,
        })
    }

    /// Closes the open window, if there is one, and returns it judged. The stream goes on: a
    /// later tick opens a later window.
    pub fn close_window(&mut self) -> Result<Option<JudgedWindow>> {
        self.usable()?;
        Ok(self.open.take().map(|open| self.judge(open)))
    }

    /// Ends the stream: the oracles learn that it ended
    /// ([`StreamOracle::on_stream_end`]), then the open window, if any, closes and comes back
    /// judged. Afterwards every call returns [`PipelineError::Finished`].
    pub fn finish(&mut self) -> Result<Option<JudgedWindow>> {
        self.usable()?;
        // The oracles learn the stream has ended before the last window is judged.
        self.oracle.on_stream_end();
        let last = self.close_window()?;
        self.finished = true;
        Ok(last)
    }

    /// Whether [`Judge::finish`] ended the stream.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn usable(&self) -> Result<()> {
        crate::error::usable(self.poisoned, self.finished)
    }

    /// The oracle's judgement of a closed window, with the ledger's summary of it.
    fn judge(&mut self, open: OpenWindow) -> JudgedWindow {
        let OpenWindow { window, early } = open;
        let conservation = self.ledger.window_summary();
        let verdict = self
            .oracle
            .judge(&window, &WindowContext::new(conservation));
        JudgedWindow {
            window,
            verdict,
            conservation,
            signals: self.oracle.last_signals().to_vec(),
            early,
        }
    }

    /// Everything after the window took the tick: ledger, stages, oracles, produced ticks.
    /// Inlined into the push path, so that its result is written in place, not copied.
    #[inline(always)]
    fn observe(&mut self, direction: ChannelDirection) -> Result<Observed> {
        let Some(open) = self.open.as_mut() else {
            return Err(PipelineError::Internal {
                invariant: "the pushed tick's window is open",
            });
        };
        let Some(stored) = open.window.ticks().last() else {
            return Err(PipelineError::Internal {
                invariant: "the pushed tick is in its window",
            });
        };
        let finding = self.ledger.observe(stored, direction)?;
        let (mut reports, produced) = if self.stages.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            run_stages(&mut self.stages, &mut self.oracle, stored)
        };
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
            let joined = self.join_produced(i, tick)?;
            if let Some(Ok(list)) = reports.get_mut(i).map(|r| r.result.as_mut()) {
                list.push(joined);
            }
        }
        Ok(Observed {
            ts_ns,
            finding,
            early,
            stages: reports,
        })
    }

    /// A tick stage `i` produced joins the open window, through ledger and oracles but no stage.
    fn join_produced(&mut self, i: usize, tick: Tick) -> Result<ProducedTick> {
        let Some(open) = self.open.as_mut() else {
            return Err(PipelineError::Internal {
                invariant: "the producing tick's window is open",
            });
        };
        let pushed = open
            .window
            .push(tick)
            .map_err(|error| PipelineError::StageTickRefused {
                stage: self
                    .stages
                    .get(i)
                    .map_or_else(String::new, |s| s.name().to_owned()),
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
        Ok(ProducedTick {
            tick: tick.clone(),
            finding,
            early,
        })
    }
}

/// Each stage sees the stored tick, in order; the oracles learn each result. Returns the
/// reports (produced lists still empty) and the produced ticks with their stage's index.
fn run_stages(
    stages: &mut [Box<dyn Stage + Send>],
    oracle: &mut CompositeStreamOracle,
    stored: &Tick,
) -> (Vec<StageReport>, Vec<(usize, Tick)>) {
    let mut reports = Vec::new();
    let mut produced = Vec::new();
    for (i, stage) in stages.iter_mut().enumerate() {
        let mut out = Vec::new();
        let result = stage.on_tick(stored, &mut out);
        let outcome = match &result {
            Ok(()) => StageOutcome::Produced(out.len()),
            Err(f) => StageOutcome::Failed {
                code: f.code,
                message: &f.message,
            },
        };
        oracle.on_stage_event(&StageEvent {
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
    (reports, produced)
}
