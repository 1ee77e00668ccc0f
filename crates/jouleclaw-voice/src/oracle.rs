//! The oracle adapter: a failed transcription becomes a `Fail` verdict for its window.

use jouleclaw_stream::{ChannelDirection, StreamWindow, Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::{
    StageEvent, StageOutcome, StreamOracle, WindowContext, WindowVerdict,
};

use crate::error::{Result, VoiceError};
use crate::stage::TurnOutcome;

/// The adapter's stable name, as it appears in verdicts and receipts.
pub const TRANSCRIPTION_ORACLE_NAME: &str = "transcription";

/// A turn that failed, waiting to be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FailedTurn {
    window_id: u64,
    ts_ns: u64,
    reason: String,
}

/// A [`StreamOracle`] that fails the window in which a turn failed to transcribe.
///
/// Stream oracles are pure, so this one does not call a transcriber: the driver runs the
/// [`crate::TurnStage`] and hands each result to [`TranscriptionOracle::observe`], which keeps
/// the failures as data. Driver order for every accepted tick: push it into the window, feed it to
/// the stage, `observe` the stage's result, then call `on_tick`.
///
/// - `on_tick` on the `EndOfTurn` marker of a failed turn raises `Fail` early.
/// - `judge` fails a window when a failed turn was observed for it or for an earlier window not
///   yet judged (a late observation is reported, never dropped), and consumes those failures;
///   otherwise it passes with `[name]`. It does not depend on `on_tick` having been called.
#[derive(Debug, Clone, Default)]
pub struct TranscriptionOracle {
    pending: Vec<FailedTurn>,
}

impl TranscriptionOracle {
    /// An adapter with nothing observed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Observes the stage's result for `tick`. Records a failed turn when `tick` is an
    /// `EndOfTurn` marker on the mic channel and `result` is an error other than
    /// [`VoiceError::NoOpenTurn`] (that marker closed a turn, and the turn failed). Returns
    /// whether a failure was recorded; successes and refusals of input are not failed turns.
    pub fn observe(&mut self, tick: &Tick, result: &Result<Option<TurnOutcome>>) -> bool {
        match result {
            Err(e) => self.record(tick, e.code(), &e.to_string()),
            Ok(_) => false,
        }
    }

    /// Records a failed turn when `tick` is an `EndOfTurn` marker on the mic channel and `code`
    /// is not `turn_not_open`.
    fn record(&mut self, tick: &Tick, code: &str, message: &str) -> bool {
        let closes_turn = tick.channel_id == duplex::MIC
            && matches!(tick.kind, TickKind::Marker(TickMarker::EndOfTurn));
        if !closes_turn || code == VoiceError::NoOpenTurn.code() {
            return false;
        }
        self.pending.push(FailedTurn {
            window_id: tick.window_id,
            ts_ns: tick.ts_ns,
            reason: format!(
                "turn ending in window {} at ts_ns {} failed: {code}: {message}",
                tick.window_id, tick.ts_ns
            ),
        });
        true
    }

    /// Failed turns observed and not yet judged.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn fail(reasons: Vec<String>) -> WindowVerdict {
        WindowVerdict::fail(TRANSCRIPTION_ORACLE_NAME, reasons.join("; "))
    }
}

impl StreamOracle for TranscriptionOracle {
    fn name(&self) -> &str {
        TRANSCRIPTION_ORACLE_NAME
    }

    /// The pipeline's way in: a failure of the [`crate::TURN_STAGE_NAME`] stage is observed as
    /// [`TranscriptionOracle::observe`] would observe it; other stages' events are ignored.
    fn on_stage_event(&mut self, event: &StageEvent<'_>) {
        if event.stage != crate::stage::TURN_STAGE_NAME {
            return;
        }
        if let StageOutcome::Failed { code, message } = event.outcome {
            self.record(event.tick, code, message);
        }
    }

    fn on_tick(&mut self, tick: &Tick, direction: ChannelDirection) -> Option<WindowVerdict> {
        let _ = direction;
        let reasons: Vec<String> = self
            .pending
            .iter()
            .filter(|f| f.window_id == tick.window_id && f.ts_ns == tick.ts_ns)
            .map(|f| f.reason.clone())
            .collect();
        (!reasons.is_empty()).then(|| Self::fail(reasons))
    }

    fn judge(&mut self, window: &StreamWindow, ctx: &WindowContext) -> WindowVerdict {
        let _ = ctx;
        let id = window.window_id();
        let (due, later): (Vec<FailedTurn>, Vec<FailedTurn>) =
            self.pending.drain(..).partition(|f| f.window_id <= id);
        self.pending = later;
        if due.is_empty() {
            WindowVerdict::pass_by(TRANSCRIPTION_ORACLE_NAME)
        } else {
            Self::fail(due.into_iter().map(|f| f.reason).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use jouleclaw_stream::StreamSpec;
    use jouleclaw_stream_oracle::{AlwaysPassStream, CompositeStreamOracle};

    use super::*;
    use crate::stage::TurnStage;
    use crate::transcript::{TableAnswer, TableTranscriber};

    /// Drives one window of ticks through window, stage and oracle in the documented order;
    /// returns the early verdicts and the window.
    fn drive(
        stage: &mut TurnStage<TableTranscriber>,
        oracle: &mut TranscriptionOracle,
        window_id: u64,
        ticks: Vec<Tick>,
    ) -> (Vec<WindowVerdict>, StreamWindow) {
        let spec = Arc::new(StreamSpec::duplex_voice_default());
        let mut window = StreamWindow::open(spec, window_id).unwrap();
        let mut early = Vec::new();
        for tick in ticks {
            let pushed = window.push(tick).unwrap();
            let result = stage.on_tick(pushed.tick);
            oracle.observe(pushed.tick, &result);
            early.extend(oracle.on_tick(pushed.tick, pushed.direction));
        }
        (early, window)
    }

    fn turn(window_id: u64) -> Vec<Tick> {
        let t0 = window_id * 200_000_000;
        vec![
            Tick::marker(window_id, duplex::MIC, TickMarker::Start, t0),
            Tick::new(
                window_id,
                duplex::MIC,
                TickKind::Audio,
                Bytes::from(vec![0u8; 640]),
                t0 + 1,
            ),
            Tick::marker(window_id, duplex::MIC, TickMarker::EndOfTurn, t0 + 2),
        ]
    }

    #[test]
    fn a_failed_transcription_fails_its_window_early_and_at_judge() {
        let fail = VoiceError::Timeout {
            waited: std::time::Duration::from_secs(30),
        };
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Fail(fail)));
        let mut oracle = TranscriptionOracle::new();
        let (early, window) = drive(&mut stage, &mut oracle, 3, turn(3));
        let reason = "turn ending in window 3 at ts_ns 600000002 failed: engine_timeout: \
                      the transcriber did not answer within 30000 ms";
        let expected = WindowVerdict::fail(TRANSCRIPTION_ORACLE_NAME, reason);
        // Raised early on the EndOfTurn tick only.
        assert_eq!(early, vec![expected.clone()]);
        assert_eq!(oracle.judge(&window, &WindowContext::default()), expected);
        // Judged failures are consumed: the next window passes.
        let (early, next) = drive(&mut stage, &mut oracle, 4, vec![]);
        assert!(early.is_empty());
        assert_eq!(
            oracle.judge(&next, &WindowContext::default()),
            WindowVerdict::pass_by(TRANSCRIPTION_ORACLE_NAME)
        );
    }

    #[test]
    fn a_transcribed_or_unasked_turn_passes() {
        for answer in [TableAnswer::Say("hi".into()), TableAnswer::Unasked] {
            let mut stage = TurnStage::new(TableTranscriber::always(answer));
            let mut oracle = TranscriptionOracle::new();
            let (early, window) = drive(&mut stage, &mut oracle, 0, turn(0));
            assert!(early.is_empty());
            assert_eq!(oracle.pending(), 0);
            assert_eq!(
                oracle.judge(&window, &WindowContext::default()),
                WindowVerdict::pass_by(TRANSCRIPTION_ORACLE_NAME)
            );
        }
    }

    #[test]
    fn judge_sees_failures_without_on_tick_and_reports_late_ones() {
        let mut oracle = TranscriptionOracle::new();
        let end = Tick::marker(2, duplex::MIC, TickMarker::EndOfTurn, 400_000_000);
        assert!(oracle.observe(&end, &Err(VoiceError::EmptyTurn)));
        // Refusals of input are not failed turns.
        assert!(!oracle.observe(&end, &Err(VoiceError::NoOpenTurn)));
        let audio = Tick::new(2, duplex::MIC, TickKind::Audio, Bytes::new(), 400_000_001);
        assert!(!oracle.observe(&audio, &Err(VoiceError::AudioOutsideTurn)));
        let other = Tick::marker(2, duplex::CONTROL, TickMarker::EndOfTurn, 400_000_002);
        assert!(!oracle.observe(&other, &Err(VoiceError::EmptyTurn)));
        assert!(!oracle.observe(&end, &Ok(None)));
        assert_eq!(oracle.pending(), 1);

        let spec = Arc::new(StreamSpec::duplex_voice_default());
        // An earlier window does not see a later window's failure ...
        let w1 = StreamWindow::open(spec.clone(), 1).unwrap();
        assert!(oracle.judge(&w1, &WindowContext::default()).is_pass());
        // ... a later window reports one observed after its own window was judged.
        let w5 = StreamWindow::open(spec, 5).unwrap();
        let v = oracle.judge(&w5, &WindowContext::default());
        assert_eq!(v.kind_str(), "fail");
        assert_eq!(oracle.pending(), 0);
    }

    #[test]
    fn in_a_composite_the_failed_turn_dominates() {
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Fail(
            VoiceError::EngineError {
                message: "no model".into(),
            },
        )));
        let mut tracker = TranscriptionOracle::new();
        let (_, window) = drive(&mut stage, &mut tracker, 0, turn(0));
        let mut composite = CompositeStreamOracle::new(
            "voice",
            vec![Box::new(AlwaysPassStream), Box::new(tracker)],
        );
        let v = composite.judge(&window, &WindowContext::default());
        match v {
            WindowVerdict::Fail { oracle, reason } => {
                assert_eq!(oracle, TRANSCRIPTION_ORACLE_NAME);
                assert!(reason.contains("engine_error"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
