//! The stage seam: code the pipeline runs on every accepted tick, which may produce ticks.

use jouleclaw_stream::Tick;

/// Why a stage failed on a tick: a stable code and a readable message.
///
/// A stage failure is a finding about the stream (a turn that could not be transcribed), not a
/// refusal of the tick: the tick stays in its window, and the oracles learn of the failure
/// through [`jouleclaw_stream_oracle::StreamOracle::on_stage_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageFailure {
    /// The stage's stable code (such as `"transcriber_unreachable"`).
    pub code: &'static str,
    /// A readable message.
    pub message: String,
}

impl StageFailure {
    /// A failure with `code` and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// A stage of the cascade that the [`crate::Pipeline`] runs on every accepted tick, before the
/// oracles see that tick: ticks in, ticks out.
///
/// The pipeline stays pure; a stage is the caller's code and may do I/O (a turn stage asks a
/// transcriber). Driver order for every tick the window accepts:
///
/// 1. the window takes the tick and the ledger judges it;
/// 2. each stage, in the order they were added, sees the tick ([`Stage::on_tick`]) and may
///    append ticks to `out`; its result reaches the oracles as a
///    [`jouleclaw_stream_oracle::StageEvent`];
/// 3. the oracles see the tick (`on_tick`);
/// 4. the produced ticks join the stream right after it, in order, each through the window, the
///    ledger and the oracles like any other tick, but through no stage (a stage never sees its
///    own output, so nothing loops).
///
/// A produced tick must belong to the tick's window and fit it (channel, time, size, count): a
/// produced tick the window refuses poisons the pipeline
/// ([`crate::PipelineError::StageTickRefused`]), because the tick that caused it is already in
/// the record and the record would not be whole without it.
pub trait Stage {
    /// A stable name, such as `"turn"`.
    fn name(&self) -> &str;

    /// Sees one accepted tick; appends any ticks it produces to `out`.
    fn on_tick(&mut self, tick: &Tick, out: &mut Vec<Tick>) -> Result<(), StageFailure>;
}

impl<T: Stage + ?Sized> Stage for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn on_tick(&mut self, tick: &Tick, out: &mut Vec<Tick>) -> Result<(), StageFailure> {
        (**self).on_tick(tick, out)
    }
}

impl<T: Stage + ?Sized> Stage for &mut T {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn on_tick(&mut self, tick: &Tick, out: &mut Vec<Tick>) -> Result<(), StageFailure> {
        (**self).on_tick(tick, out)
    }
}
