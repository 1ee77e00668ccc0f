//! The cascade stage: one inbound turn of mic audio in, one ASR text tick out, and the turn's
//! measurement beside it.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use jouleclaw_pipeline::{Stage, StageFailure};
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};

use crate::error::{Result, VoiceError};
use crate::level::{LevelMeter, Measurement};
use crate::transcript::{Transcriber, Transcript};
use crate::voice_turn::{Heard, MAX_TEXT_BYTES, VoiceTurn};
use crate::wav::{PCM_BYTES_PER_SECOND, WavAudio};

/// The bound on one turn: 30 s of 16 kHz 16-bit mono audio, 960,000 bytes. A stuck key is not
/// an open microphone until reboot.
pub const MAX_TURN_BYTES: usize = 30 * PCM_BYTES_PER_SECOND;

/// The turn stage's name as a pipeline [`Stage`] (in stage events and reports).
pub const TURN_STAGE_NAME: &str = "turn";

/// How a turn that ended without failing ended. Both carry the turn's measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The transcriber was asked and answered.
    Said {
        /// One `Text` tick on [`duplex::ASR`] carrying the sentence as UTF-8, in the window and
        /// at the timestamp of the `EndOfTurn` marker that closed the turn. Its channel marks it
        /// as heard ([`crate::Provenance::Voice`]).
        tick: Tick,
        /// The turn's audio, measured as it arrived.
        measurement: Measurement,
    },
    /// No transcriber was asked: this machine has none. No text tick is produced.
    Unasked {
        /// The turn's audio, measured as it arrived.
        measurement: Measurement,
    },
}

impl TurnOutcome {
    /// The turn's measurement.
    pub fn measurement(&self) -> &Measurement {
        match self {
            Self::Said { measurement, .. } | Self::Unasked { measurement } => measurement,
        }
    }

    /// PCM bytes the turn held.
    pub fn audio_bytes(&self) -> u64 {
        self.measurement().audio_bytes()
    }
}

/// One closed turn as the stage recorded it: where it ended and its `voice-turn/1` result
/// (said, unasked or failed, with the measurement in every case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeardTurn {
    /// How many turns the stage closed before this one (0 for the first).
    pub seq: u64,
    /// The window of the `EndOfTurn` marker that closed it.
    pub window_id: u64,
    /// The timestamp of that marker.
    pub ts_ns: u64,
    /// The result.
    pub turn: VoiceTurn,
}

#[derive(Debug, Default)]
struct LogState {
    closed: u64,
    last: Option<HeardTurn>,
}

/// A handle on the last turn a [`TurnStage`] closed, shared with the stage: it stays readable
/// after the stage has been boxed into a `jouleclaw_pipeline::Pipeline`, whose reports carry
/// only produced ticks and failure codes.
///
/// It holds one turn, not a history (bounded memory): one pushed tick closes at most one turn,
/// so a caller that reads after each push sees every turn, and [`HeardTurn::seq`] tells one that
/// did not what it missed.
#[derive(Debug, Clone, Default)]
pub struct TurnLog {
    state: Arc<Mutex<LogState>>,
}

impl TurnLog {
    fn with<R>(&self, f: impl FnOnce(&mut LogState) -> R) -> R {
        // A panic elsewhere while holding the lock leaves a whole value behind: keep reading it.
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    /// The last turn closed, if any.
    pub fn last(&self) -> Option<HeardTurn> {
        self.with(|s| s.last.clone())
    }

    /// How many turns have closed.
    pub fn closed(&self) -> u64 {
        self.with(|s| s.closed)
    }

    fn record(&self, window_id: u64, ts_ns: u64, turn: VoiceTurn) {
        self.with(|s| {
            s.last = Some(HeardTurn {
                seq: s.closed,
                window_id,
                ts_ns,
                turn,
            });
            s.closed += 1;
        });
    }
}

#[derive(Debug, Default)]
struct OpenTurn {
    pcm: Vec<u8>,
    meter: LevelMeter,
}

/// Turns the audio ticks of one inbound turn into one ASR text tick, and measures the turn.
///
/// The stage reads the [`duplex::MIC`] channel only: a `Start` marker opens a turn, `Audio` ticks
/// (16 kHz 16-bit mono little-endian PCM) fill it, an `EndOfTurn` marker closes it. Each accepted
/// chunk is measured as it arrives ([`LevelMeter`]: one pass, never re-reading the buffer). The
/// turn's audio is encoded as WAV and handed to the transcriber. Ticks on other channels and
/// other markers are ignored (`Ok(None)`).
///
/// Refusals that leave the stage unchanged: a second `Start` ([`VoiceError::TurnAlreadyOpen`]),
/// `EndOfTurn` with no open turn ([`VoiceError::NoOpenTurn`]), audio outside a turn
/// ([`VoiceError::AudioOutsideTurn`]), a non-audio payload on the mic
/// ([`VoiceError::NotAudio`]), an odd-length chunk ([`VoiceError::OddPcmLength`]) and a chunk
/// that would take the turn past [`MAX_TURN_BYTES`] ([`VoiceError::TurnTooLong`]; the turn keeps
/// what it had and can still be ended).
///
/// An `EndOfTurn` always closes an open turn. If the turn then fails (no audio, the transcriber
/// fails, or its sentence is over [`MAX_TEXT_BYTES`]), the error is returned and no text tick
/// exists: a failed transcription is never an empty transcript. Every closed turn, failed or
/// not, is recorded with its measurement in the stage's [`TurnLog`].
#[derive(Debug)]
pub struct TurnStage<T> {
    transcriber: T,
    turn: Option<OpenTurn>,
    log: TurnLog,
}

impl<T: Transcriber> TurnStage<T> {
    /// A stage with no open turn.
    pub fn new(transcriber: T) -> Self {
        Self {
            transcriber,
            turn: None,
            log: TurnLog::default(),
        }
    }

    /// `true` while a turn is open.
    pub fn is_open(&self) -> bool {
        self.turn.is_some()
    }

    /// PCM bytes held by the open turn (0 when none is open).
    pub fn buffered_bytes(&self) -> usize {
        self.turn.as_ref().map_or(0, |t| t.pcm.len())
    }

    /// The measurement of the open turn so far (`None` when none is open).
    pub fn measurement_so_far(&self) -> Option<Measurement> {
        self.turn.as_ref().map(|t| t.meter.measurement())
    }

    /// The transcriber.
    pub fn transcriber(&self) -> &T {
        &self.transcriber
    }

    /// A handle on the last closed turn, shared with this stage (keep it before handing the
    /// stage to a pipeline).
    pub fn log(&self) -> TurnLog {
        self.log.clone()
    }

    /// The last closed turn, if any (the same as `self.log().last()`).
    pub fn last_turn(&self) -> Option<HeardTurn> {
        self.log.last()
    }

    /// Feeds one tick. Returns `Ok(Some(outcome))` when the tick closed a turn, `Ok(None)`
    /// otherwise.
    pub fn on_tick(&mut self, tick: &Tick) -> Result<Option<TurnOutcome>> {
        if tick.channel_id != duplex::MIC {
            return Ok(None);
        }
        match &tick.kind {
            TickKind::Marker(TickMarker::Start) => {
                if self.turn.is_some() {
                    return Err(VoiceError::TurnAlreadyOpen);
                }
                self.turn = Some(OpenTurn::default());
                Ok(None)
            }
            TickKind::Marker(TickMarker::EndOfTurn) => {
                let turn = self.turn.take().ok_or(VoiceError::NoOpenTurn)?;
                let measurement = turn.meter.measurement();
                let result = self.finish(&turn.pcm, tick, measurement);
                let heard = match &result {
                    Ok(TurnOutcome::Said { tick, .. }) => {
                        Heard::Said(String::from_utf8_lossy(&tick.bytes).into_owned())
                    }
                    Ok(TurnOutcome::Unasked { .. }) => Heard::Unasked,
                    Err(e) => Heard::failed(e),
                };
                self.log
                    .record(tick.window_id, tick.ts_ns, VoiceTurn { measurement, heard });
                result.map(Some)
            }
            TickKind::Marker(_) => Ok(None),
            TickKind::Audio => {
                let turn = self.turn.as_mut().ok_or(VoiceError::AudioOutsideTurn)?;
                let len = tick.bytes.len();
                if !len.is_multiple_of(2) {
                    return Err(VoiceError::OddPcmLength { len });
                }
                let bytes = turn.pcm.len().saturating_add(len);
                if bytes > MAX_TURN_BYTES {
                    return Err(VoiceError::TurnTooLong {
                        bytes,
                        max: MAX_TURN_BYTES,
                    });
                }
                // Refuses only what was refused above; on refusal nothing changed.
                turn.meter.push_pcm16le(&tick.bytes)?;
                turn.pcm.extend_from_slice(&tick.bytes);
                Ok(None)
            }
            other => Err(VoiceError::NotAudio {
                kind: other.tag().as_str(),
            }),
        }
    }

    fn finish(&self, pcm: &[u8], end: &Tick, measurement: Measurement) -> Result<TurnOutcome> {
        if pcm.is_empty() {
            return Err(VoiceError::EmptyTurn);
        }
        let audio = WavAudio::from_pcm16_mono_16k(pcm)?;
        Ok(match self.transcriber.transcribe(&audio)? {
            Transcript::Said(sentence) if sentence.len() > MAX_TEXT_BYTES => {
                return Err(VoiceError::TranscriptTooLong {
                    bytes: sentence.len(),
                    max: MAX_TEXT_BYTES,
                });
            }
            Transcript::Said(sentence) => TurnOutcome::Said {
                tick: Tick::new(
                    end.window_id,
                    duplex::ASR,
                    TickKind::Text,
                    Bytes::from(sentence),
                    end.ts_ns,
                ),
                measurement,
            },
            Transcript::Unasked => TurnOutcome::Unasked { measurement },
        })
    }
}

/// The turn stage as a pipeline stage: a turn that was `Said` produces its ASR text tick, which
/// joins the stream right after the `EndOfTurn` marker; `Unasked` produces nothing; a refusal or
/// a failed turn is a [`StageFailure`] with the [`VoiceError`] code, which the pipeline hands to
/// the oracles (the [`crate::TranscriptionOracle`] fails the window of a failed turn). The
/// measurement of every closed turn is in the stage's [`TurnLog`] ([`TurnStage::log`]).
impl<T: Transcriber> Stage for TurnStage<T> {
    fn name(&self) -> &str {
        TURN_STAGE_NAME
    }

    fn on_tick(
        &mut self,
        tick: &Tick,
        out: &mut Vec<Tick>,
    ) -> core::result::Result<(), StageFailure> {
        match TurnStage::on_tick(self, tick) {
            Ok(Some(TurnOutcome::Said { tick, .. })) => {
                out.push(tick);
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(StageFailure::new(e.code(), e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{TableAnswer, TableTranscriber};

    fn marker(m: TickMarker, ts: u64) -> Tick {
        Tick::marker(ts / 200_000_000, duplex::MIC, m, ts)
    }

    fn audio(fill: u8, len: usize, ts: u64) -> Tick {
        Tick::new(
            ts / 200_000_000,
            duplex::MIC,
            TickKind::Audio,
            Bytes::from(vec![fill; len]),
            ts,
        )
    }

    fn wav(pcm: &[u8]) -> WavAudio {
        WavAudio::from_pcm16_mono_16k(pcm).unwrap()
    }

    #[test]
    fn a_turn_becomes_one_asr_text_tick() {
        let mut pcm = vec![1u8; 6_400];
        pcm.extend_from_slice(&[2u8; 3_200]);
        let table = TableTranscriber::new()
            .with_row(&wav(&pcm), TableAnswer::Say("turn on the light".into()));
        let mut stage = TurnStage::new(table);
        assert_eq!(stage.on_tick(&marker(TickMarker::Start, 0)).unwrap(), None);
        assert_eq!(stage.on_tick(&audio(1, 6_400, 10)).unwrap(), None);
        // Ticks on other channels and other markers pass by.
        let asr = Tick::new(0, duplex::ASR, TickKind::Text, Bytes::from_static(b"x"), 20);
        assert_eq!(stage.on_tick(&asr).unwrap(), None);
        assert_eq!(
            stage.on_tick(&marker(TickMarker::Silence, 30)).unwrap(),
            None
        );
        assert_eq!(stage.on_tick(&audio(2, 3_200, 250_000_000)).unwrap(), None);
        assert_eq!(stage.buffered_bytes(), 9_600);
        let so_far = stage.measurement_so_far().unwrap();
        let out = stage
            .on_tick(&marker(TickMarker::EndOfTurn, 400_000_000))
            .unwrap()
            .unwrap();
        // 0x0101 and 0x0202 as samples: 3,200 of 257 then 1,600 of 514.
        let mut meter = LevelMeter::new();
        meter.push_pcm16le(&pcm).unwrap();
        let measurement = meter.measurement();
        assert_eq!(measurement.samples(), 4_800);
        assert_eq!(measurement.peak_dbfs_hundredths(), Some(-3609));
        assert_eq!(so_far, measurement);
        assert_eq!(
            out,
            TurnOutcome::Said {
                tick: Tick::new(
                    2,
                    duplex::ASR,
                    TickKind::Text,
                    Bytes::from_static(b"turn on the light"),
                    400_000_000
                ),
                measurement,
            }
        );
        assert_eq!(out.audio_bytes(), 9_600);
        assert!(!stage.is_open());
        assert_eq!(stage.measurement_so_far(), None);
        let last = stage.last_turn().unwrap();
        assert_eq!((last.seq, last.window_id, last.ts_ns), (0, 2, 400_000_000));
        assert_eq!(
            last.turn,
            VoiceTurn {
                measurement,
                heard: Heard::Said("turn on the light".into())
            }
        );
    }

    #[test]
    fn unasked_produces_no_tick_and_silence_an_empty_one() {
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Unasked));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        stage.on_tick(&audio(0, 320, 1)).unwrap();
        let out = stage.on_tick(&marker(TickMarker::EndOfTurn, 2)).unwrap();
        let silent = {
            let mut m = LevelMeter::new();
            m.push_pcm16le(&[0; 320]).unwrap();
            m.measurement()
        };
        assert!(silent.is_silent());
        assert_eq!(
            out,
            Some(TurnOutcome::Unasked {
                measurement: silent
            })
        );
        assert_eq!(stage.last_turn().unwrap().turn.heard, Heard::Unasked);

        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Say(String::new())));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        stage.on_tick(&audio(0, 320, 1)).unwrap();
        match stage.on_tick(&marker(TickMarker::EndOfTurn, 2)).unwrap() {
            Some(TurnOutcome::Said { tick, measurement }) => {
                assert!(tick.bytes.is_empty());
                assert!(measurement.is_silent());
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            stage.last_turn().unwrap().turn.heard,
            Heard::Said(String::new())
        );
    }

    #[test]
    fn a_failed_transcription_fails_the_turn_and_closes_it() {
        let fail = VoiceError::HttpStatus {
            status: 500,
            body: "down".into(),
        };
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Fail(fail.clone())));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        stage.on_tick(&audio(0, 320, 1)).unwrap();
        assert_eq!(
            stage
                .on_tick(&marker(TickMarker::EndOfTurn, 2))
                .unwrap_err(),
            fail
        );
        assert!(!stage.is_open());
        // The failed turn is measured and recorded with its code, never as an empty sentence.
        let last = stage.last_turn().unwrap();
        assert_eq!(last.turn.heard, Heard::Failed("engine_status".into()));
        assert_eq!(last.turn.measurement.samples(), 160);
        // The next turn starts cleanly.
        assert_eq!(stage.on_tick(&marker(TickMarker::Start, 3)).unwrap(), None);
    }

    #[test]
    fn markers_out_of_order_are_refused_without_change() {
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Unasked));
        assert_eq!(
            stage
                .on_tick(&marker(TickMarker::EndOfTurn, 0))
                .unwrap_err(),
            VoiceError::NoOpenTurn
        );
        assert_eq!(
            stage.on_tick(&audio(0, 2, 0)).unwrap_err(),
            VoiceError::AudioOutsideTurn
        );
        assert!(!stage.is_open());
        stage.on_tick(&marker(TickMarker::Start, 1)).unwrap();
        stage.on_tick(&audio(0, 4, 2)).unwrap();
        assert_eq!(
            stage.on_tick(&marker(TickMarker::Start, 3)).unwrap_err(),
            VoiceError::TurnAlreadyOpen
        );
        assert_eq!(
            stage.on_tick(&audio(0, 3, 4)).unwrap_err(),
            VoiceError::OddPcmLength { len: 3 }
        );
        let text = Tick::new(0, duplex::MIC, TickKind::Text, Bytes::from_static(b"hi"), 5);
        assert_eq!(
            stage.on_tick(&text).unwrap_err(),
            VoiceError::NotAudio { kind: "text" }
        );
        assert_eq!(stage.buffered_bytes(), 4);
        let out = stage.on_tick(&marker(TickMarker::EndOfTurn, 6)).unwrap();
        assert_eq!(out.map(|o| o.audio_bytes()), Some(4));
        // Only the accepted chunk was measured: the refused ones changed nothing.
        assert_eq!(stage.last_turn().unwrap().turn.measurement.samples(), 2);
        assert_eq!(stage.log().closed(), 1);
    }

    #[test]
    fn an_empty_turn_fails() {
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Say("x".into())));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        assert_eq!(
            stage
                .on_tick(&marker(TickMarker::EndOfTurn, 1))
                .unwrap_err(),
            VoiceError::EmptyTurn
        );
        assert!(!stage.is_open());
        let last = stage.last_turn().unwrap();
        assert_eq!(last.turn.heard, Heard::Failed("turn_empty".into()));
        assert_eq!(
            last.turn.measurement.to_string(),
            "0 samples (0 ms), no audio"
        );
    }

    #[test]
    fn a_sentence_longer_than_a_text_tick_fails_the_turn() {
        for (len, ok) in [(MAX_TEXT_BYTES, true), (MAX_TEXT_BYTES + 1, false)] {
            let mut stage =
                TurnStage::new(TableTranscriber::always(TableAnswer::Say("a".repeat(len))));
            stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
            stage.on_tick(&audio(0, 320, 1)).unwrap();
            let out = stage.on_tick(&marker(TickMarker::EndOfTurn, 2));
            if ok {
                assert!(matches!(out, Ok(Some(TurnOutcome::Said { .. }))));
            } else {
                assert_eq!(
                    out.unwrap_err(),
                    VoiceError::TranscriptTooLong {
                        bytes: len,
                        max: MAX_TEXT_BYTES
                    }
                );
                assert_eq!(
                    stage.last_turn().unwrap().turn.heard,
                    Heard::Failed("transcript_too_long".into())
                );
            }
        }
    }

    #[test]
    fn the_log_handle_sees_every_turn_after_the_stage_moved() {
        let stage = TurnStage::new(TableTranscriber::always(TableAnswer::Unasked));
        let log = stage.log();
        assert_eq!((log.closed(), log.last()), (0, None));
        let mut boxed: Box<dyn Stage> = Box::new(stage);
        let mut out = Vec::new();
        for (i, fill) in [0u8, 9].into_iter().enumerate() {
            let t = i as u64 * 10;
            boxed
                .on_tick(&marker(TickMarker::Start, t), &mut out)
                .unwrap();
            boxed.on_tick(&audio(fill, 640, t + 1), &mut out).unwrap();
            boxed
                .on_tick(&marker(TickMarker::EndOfTurn, t + 2), &mut out)
                .unwrap();
            let last = log.last().unwrap();
            assert_eq!((last.seq, last.ts_ns), (i as u64, t + 2));
            assert_eq!(last.turn.measurement.is_silent(), fill == 0);
        }
        assert!(out.is_empty());
        assert_eq!(log.closed(), 2);
    }

    #[test]
    fn a_turn_is_bounded_at_thirty_seconds_of_audio() {
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Say("long".into())));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        let chunk = 32_000; // one second
        for s in 0..29u64 {
            stage.on_tick(&audio(0, chunk, s * 1_000_000_000)).unwrap();
        }
        // Exactly 30 s is accepted ...
        stage.on_tick(&audio(0, chunk - 2, 29_000_000_000)).unwrap();
        stage.on_tick(&audio(0, 2, 29_500_000_000)).unwrap();
        assert_eq!(stage.buffered_bytes(), MAX_TURN_BYTES);
        // ... one more sample is not, and changes nothing.
        assert_eq!(
            stage.on_tick(&audio(0, 2, 29_900_000_000)).unwrap_err(),
            VoiceError::TurnTooLong {
                bytes: MAX_TURN_BYTES + 2,
                max: MAX_TURN_BYTES
            }
        );
        assert_eq!(stage.buffered_bytes(), MAX_TURN_BYTES);
        match stage
            .on_tick(&marker(TickMarker::EndOfTurn, 30_000_000_000))
            .unwrap()
        {
            Some(TurnOutcome::Said { measurement, .. }) => {
                assert_eq!(measurement.audio_bytes(), 960_000);
                assert_eq!(measurement.duration_ns(), 30_000_000_000);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
