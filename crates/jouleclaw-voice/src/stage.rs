//! The cascade stage: one inbound turn of mic audio in, one ASR text tick out.

use bytes::Bytes;
use jouleclaw_pipeline::{Stage, StageFailure};
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};

use crate::error::{Result, VoiceError};
use crate::transcript::{Transcriber, Transcript};
use crate::wav::{PCM_BYTES_PER_SECOND, WavAudio};

/// The bound on one turn: 30 s of 16 kHz 16-bit mono audio, 960,000 bytes. A stuck key is not
/// an open microphone until reboot.
pub const MAX_TURN_BYTES: usize = 30 * PCM_BYTES_PER_SECOND;

/// The turn stage's name as a pipeline [`Stage`] (in stage events and reports).
pub const TURN_STAGE_NAME: &str = "turn";

/// How a turn that ended without failing ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The transcriber was asked and answered.
    Said {
        /// One `Text` tick on [`duplex::ASR`] carrying the sentence as UTF-8, in the window and
        /// at the timestamp of the `EndOfTurn` marker that closed the turn.
        tick: Tick,
        /// PCM bytes the turn held.
        audio_bytes: usize,
    },
    /// No transcriber was asked: this machine has none. No text tick is produced.
    Unasked {
        /// PCM bytes the turn held.
        audio_bytes: usize,
    },
}

/// Turns the audio ticks of one inbound turn into one ASR text tick.
///
/// The stage reads the [`duplex::MIC`] channel only: a `Start` marker opens a turn, `Audio` ticks
/// (16 kHz 16-bit mono little-endian PCM) fill it, an `EndOfTurn` marker closes it. The turn's
/// audio is encoded as WAV and handed to the transcriber. Ticks on other channels and other
/// markers are ignored (`Ok(None)`).
///
/// Refusals that leave the stage unchanged: a second `Start` ([`VoiceError::TurnAlreadyOpen`]),
/// `EndOfTurn` with no open turn ([`VoiceError::NoOpenTurn`]), audio outside a turn
/// ([`VoiceError::AudioOutsideTurn`]), a non-audio payload on the mic
/// ([`VoiceError::NotAudio`]), an odd-length chunk ([`VoiceError::OddPcmLength`]) and a chunk
/// that would take the turn past [`MAX_TURN_BYTES`] ([`VoiceError::TurnTooLong`]; the turn keeps
/// what it had and can still be ended).
///
/// An `EndOfTurn` always closes an open turn. If the turn then fails (no audio, or the
/// transcriber fails), the error is returned and no text tick exists: a failed transcription is
/// never an empty transcript.
#[derive(Debug)]
pub struct TurnStage<T> {
    transcriber: T,
    turn: Option<Vec<u8>>,
}

impl<T: Transcriber> TurnStage<T> {
    /// A stage with no open turn.
    pub fn new(transcriber: T) -> Self {
        Self {
            transcriber,
            turn: None,
        }
    }

    /// `true` while a turn is open.
    pub fn is_open(&self) -> bool {
        self.turn.is_some()
    }

    /// PCM bytes held by the open turn (0 when none is open).
    pub fn buffered_bytes(&self) -> usize {
        self.turn.as_ref().map_or(0, Vec::len)
    }

    /// The transcriber.
    pub fn transcriber(&self) -> &T {
        &self.transcriber
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
                self.turn = Some(Vec::new());
                Ok(None)
            }
            TickKind::Marker(TickMarker::EndOfTurn) => {
                let pcm = self.turn.take().ok_or(VoiceError::NoOpenTurn)?;
                self.finish(&pcm, tick).map(Some)
            }
            TickKind::Marker(_) => Ok(None),
            TickKind::Audio => {
                let turn = self.turn.as_mut().ok_or(VoiceError::AudioOutsideTurn)?;
                let len = tick.bytes.len();
                if !len.is_multiple_of(2) {
                    return Err(VoiceError::OddPcmLength { len });
                }
                let bytes = turn.len().saturating_add(len);
                if bytes > MAX_TURN_BYTES {
                    return Err(VoiceError::TurnTooLong {
                        bytes,
                        max: MAX_TURN_BYTES,
                    });
                }
                turn.extend_from_slice(&tick.bytes);
                Ok(None)
            }
            other => Err(VoiceError::NotAudio {
                kind: other.tag().as_str(),
            }),
        }
    }

    fn finish(&self, pcm: &[u8], end: &Tick) -> Result<TurnOutcome> {
        if pcm.is_empty() {
            return Err(VoiceError::EmptyTurn);
        }
        let audio = WavAudio::from_pcm16_mono_16k(pcm)?;
        let audio_bytes = pcm.len();
        Ok(match self.transcriber.transcribe(&audio)? {
            Transcript::Said(sentence) => TurnOutcome::Said {
                tick: Tick::new(
                    end.window_id,
                    duplex::ASR,
                    TickKind::Text,
                    Bytes::from(sentence),
                    end.ts_ns,
                ),
                audio_bytes,
            },
            Transcript::Unasked => TurnOutcome::Unasked { audio_bytes },
        })
    }
}

/// The turn stage as a pipeline stage: a turn that was `Said` produces its ASR text tick, which
/// joins the stream right after the `EndOfTurn` marker; `Unasked` produces nothing; a refusal or
/// a failed turn is a [`StageFailure`] with the [`VoiceError`] code, which the pipeline hands to
/// the oracles (the [`crate::TranscriptionOracle`] fails the window of a failed turn).
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
        let out = stage
            .on_tick(&marker(TickMarker::EndOfTurn, 400_000_000))
            .unwrap();
        assert_eq!(
            out,
            Some(TurnOutcome::Said {
                tick: Tick::new(
                    2,
                    duplex::ASR,
                    TickKind::Text,
                    Bytes::from_static(b"turn on the light"),
                    400_000_000
                ),
                audio_bytes: 9_600,
            })
        );
        assert!(!stage.is_open());
    }

    #[test]
    fn unasked_produces_no_tick_and_silence_an_empty_one() {
        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Unasked));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        stage.on_tick(&audio(0, 320, 1)).unwrap();
        let out = stage.on_tick(&marker(TickMarker::EndOfTurn, 2)).unwrap();
        assert_eq!(out, Some(TurnOutcome::Unasked { audio_bytes: 320 }));

        let mut stage = TurnStage::new(TableTranscriber::always(TableAnswer::Say(String::new())));
        stage.on_tick(&marker(TickMarker::Start, 0)).unwrap();
        stage.on_tick(&audio(0, 320, 1)).unwrap();
        match stage.on_tick(&marker(TickMarker::EndOfTurn, 2)).unwrap() {
            Some(TurnOutcome::Said { tick, .. }) => assert!(tick.bytes.is_empty()),
            other => panic!("unexpected {other:?}"),
        }
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
        assert_eq!(
            stage.on_tick(&marker(TickMarker::EndOfTurn, 6)).unwrap(),
            Some(TurnOutcome::Unasked { audio_bytes: 4 })
        );
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
            Some(TurnOutcome::Said { audio_bytes, .. }) => assert_eq!(audio_bytes, 960_000),
            other => panic!("unexpected {other:?}"),
        }
    }
}
