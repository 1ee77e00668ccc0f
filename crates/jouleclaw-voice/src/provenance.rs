//! Provenance: text that was heard is marked by the channel it travels on.

use jouleclaw_stream::{Tick, TickKind, duplex};

/// Where a tick's text came from, as far as the stream layout says.
///
/// The mark is a channel property, not a second tick: in a stream laid out as
/// `StreamSpec::duplex_voice_default`, every `Text` tick on [`duplex::ASR`] is text heard from a
/// microphone, whether the [`crate::TurnStage`] produced it or an outside speech recognizer
/// wrote it. Heard text is the weakest provenance a stream has: it arrived because somebody in
/// the room made a noise. A keeper or an oracle asks [`Provenance::of`] and decides what may
/// come of it. `spec/VOICE-TURN-V1.md` section 7 says what the mark does and does not protect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provenance {
    /// Heard: a `Text` tick on the ASR channel. The weakest provenance.
    Voice,
    /// Anything else: this crate makes no claim about it.
    Unmarked,
}

impl Provenance {
    /// The provenance of `tick`: [`Provenance::Voice`] for a `Text` tick on [`duplex::ASR`].
    pub fn of(tick: &Tick) -> Self {
        if tick.channel_id == duplex::ASR && tick.kind == TickKind::Text {
            Self::Voice
        } else {
            Self::Unmarked
        }
    }

    /// `true` for [`Provenance::Voice`]: treat the content as the least trusted input there is.
    pub fn is_weakest(self) -> bool {
        self == Self::Voice
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use jouleclaw_stream::TickMarker;

    #[test]
    fn only_text_on_the_asr_channel_is_marked_as_heard() {
        let text = |ch| Tick::new(0, ch, TickKind::Text, Bytes::from_static(b"hi"), 0);
        assert_eq!(Provenance::of(&text(duplex::ASR)), Provenance::Voice);
        assert!(Provenance::of(&text(duplex::ASR)).is_weakest());
        for ch in [duplex::LLM, duplex::SUBSTRATE, duplex::CONTROL, duplex::MIC] {
            assert_eq!(Provenance::of(&text(ch)), Provenance::Unmarked, "{ch}");
        }
        let marker = Tick::marker(0, duplex::ASR, TickMarker::End, 0);
        assert_eq!(Provenance::of(&marker), Provenance::Unmarked);
        assert!(!Provenance::Unmarked.is_weakest());
    }
}
