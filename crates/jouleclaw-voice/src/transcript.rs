//! The transcriber seam: what a turn asks, and what it can be told.

use crate::error::{Result, VoiceError};
use crate::wav::WavAudio;

/// What asking for words produced.
///
/// Two named variants and not an `Option<String>`: a machine with no engine did not fail to hear
/// words, it did not ask, and that is a different answer from silence. `Said(String::new())` is a
/// room where nobody spoke; `Unasked` is a machine that has nothing to ask. A transcription that
/// failed is neither: it is an `Err`, and never an empty sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transcript {
    /// The engine's sentence, without the padding the engine adds around it.
    Said(String),
    /// No engine was asked: this machine has none.
    Unasked,
}

impl Transcript {
    /// The sentence, if one was asked for.
    pub fn said(&self) -> Option<&str> {
        match self {
            Self::Said(s) => Some(s),
            Self::Unasked => None,
        }
    }
}

/// Something that turns a spoken turn into words.
///
/// One required method. The call blocks until the engine answers, fails, or its wait ceiling
/// passes; an implementation that has no engine answers [`Transcript::Unasked`].
pub trait Transcriber {
    /// Transcribes one utterance.
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript>;
}

impl<T: Transcriber + ?Sized> Transcriber for &T {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        (**self).transcribe(audio)
    }
}

impl<T: Transcriber + ?Sized> Transcriber for Box<T> {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        (**self).transcribe(audio)
    }
}

/// One row's answer in a [`TableTranscriber`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableAnswer {
    /// Answer `Transcript::Said` with this sentence.
    Say(String),
    /// Answer `Transcript::Unasked`.
    Unasked,
    /// Fail with this error.
    Fail(VoiceError),
}

/// A deterministic stand-in transcriber that answers from a table keyed by the exact WAV bytes.
///
/// It performs no I/O and is what the turn stage is tested against: everything a turn does with
/// words (carrying them, telling "nothing was asked" from "nothing was said", failing honestly)
/// is asserted with it. Audio with no row gets the fallback answer, by default
/// [`VoiceError::NotInTable`].
#[derive(Debug, Clone)]
pub struct TableTranscriber {
    rows: Vec<(Vec<u8>, TableAnswer)>,
    fallback: TableAnswer,
}

impl Default for TableTranscriber {
    fn default() -> Self {
        Self::new()
    }
}

impl TableTranscriber {
    /// An empty table whose fallback is [`VoiceError::NotInTable`].
    pub fn new() -> Self {
        Self {
            rows: Vec::new(),
            fallback: TableAnswer::Fail(VoiceError::NotInTable),
        }
    }

    /// A table that answers `answer` to every utterance.
    pub fn always(answer: TableAnswer) -> Self {
        Self {
            rows: Vec::new(),
            fallback: answer,
        }
    }

    /// Adds (or replaces) the row for `audio`.
    pub fn with_row(mut self, audio: &WavAudio, answer: TableAnswer) -> Self {
        let key = audio.bytes();
        match self.rows.iter_mut().find(|(k, _)| k.as_slice() == key) {
            Some(row) => row.1 = answer,
            None => self.rows.push((key.to_vec(), answer)),
        }
        self
    }

    /// Sets the answer for audio with no row.
    pub fn with_fallback(mut self, answer: TableAnswer) -> Self {
        self.fallback = answer;
        self
    }
}

impl Transcriber for TableTranscriber {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        let key = audio.bytes();
        let answer = self
            .rows
            .iter()
            .find(|(k, _)| k.as_slice() == key)
            .map_or(&self.fallback, |(_, a)| a);
        match answer {
            TableAnswer::Say(s) => Ok(Transcript::Said(s.clone())),
            TableAnswer::Unasked => Ok(Transcript::Unasked),
            TableAnswer::Fail(e) => Err(e.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(fill: u8, len: usize) -> WavAudio {
        WavAudio::from_pcm16_mono_16k(&vec![fill; len]).unwrap()
    }

    #[test]
    fn table_answers_by_exact_audio_and_falls_back() {
        let hello = wav(1, 8);
        let quiet = wav(0, 8);
        let broken = wav(2, 8);
        let t = TableTranscriber::new()
            .with_row(&hello, TableAnswer::Say("hello".into()))
            .with_row(&quiet, TableAnswer::Say(String::new()))
            .with_row(
                &broken,
                TableAnswer::Fail(VoiceError::EngineError {
                    message: "boom".into(),
                }),
            );
        assert_eq!(
            t.transcribe(&hello).unwrap(),
            Transcript::Said("hello".into())
        );
        // Silence is a sentence with no words, not Unasked.
        assert_eq!(
            t.transcribe(&quiet).unwrap(),
            Transcript::Said(String::new())
        );
        assert_eq!(t.transcribe(&broken).unwrap_err().code(), "engine_error");
        assert_eq!(
            t.transcribe(&wav(1, 10)).unwrap_err(),
            VoiceError::NotInTable
        );
        let t = t.with_fallback(TableAnswer::Unasked);
        assert_eq!(t.transcribe(&wav(1, 10)).unwrap(), Transcript::Unasked);
        // A replaced row answers the new way.
        let t = t.with_row(&hello, TableAnswer::Say("bye".into()));
        assert_eq!(t.transcribe(&hello).unwrap().said(), Some("bye"));
        // Through a reference and a box.
        let boxed: Box<dyn Transcriber> = Box::new(t.clone());
        assert_eq!(boxed.transcribe(&hello).unwrap().said(), Some("bye"));
        fn via<T: Transcriber>(t: T, a: &WavAudio) -> Transcript {
            t.transcribe(a).unwrap()
        }
        assert_eq!(via(&t, &hello).said(), Some("bye"));
    }

    #[test]
    fn unasked_has_no_sentence_and_silence_has_an_empty_one() {
        assert_eq!(Transcript::Unasked.said(), None);
        assert_eq!(Transcript::Said(String::new()).said(), Some(""));
    }
}
