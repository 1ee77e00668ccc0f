//! The interaction markers: fixed `Custom` marker names that say what kind of user speech a
//! frame holds, on the existing wire (`spec/STREAM-SUBSTRATE.md`, "Interaction markers").
//!
//! None of them is a barge-in: the ledger, the barge-in detector and the window's
//! `has_barge_in` see them as any other custom marker (no pending barge-in, no `yield`, no
//! `barge_in_ignored`). A real interruption stays [`crate::TickMarker::BargeIn`].

use crate::TickMarker;

/// `{"custom":"user_speech"}`: the user spoke during the frame (200 ms by default) this marker
/// lies in. One marker per frame of user speech, on an inbound channel.
pub const USER_SPEECH: &str = "user_speech";

/// `{"custom":"backchannel"}`: the user speech segment starting in this frame is a
/// backchannel ("mm-hmm"): the user means the agent to keep talking.
pub const BACKCHANNEL: &str = "backchannel";

/// `{"custom":"vocal_tic"}`: a vocal tic ("um", a cough, a sniffle) is audible in this frame.
pub const VOCAL_TIC: &str = "vocal_tic";

/// `{"custom":"non_directed"}`: speech not directed at the agent ("hold on", a side
/// conversation) is audible in this frame.
pub const NON_DIRECTED: &str = "non_directed";

/// Every interaction marker name, in the order above.
pub const INTERACTION_MARKERS: &[&str] = &[USER_SPEECH, BACKCHANNEL, VOCAL_TIC, NON_DIRECTED];

/// The custom marker `{"custom":"<name>"}`.
pub fn marker(name: &str) -> TickMarker {
    TickMarker::Custom(name.to_owned())
}

/// The interaction marker name of `marker`, if it is one of [`INTERACTION_MARKERS`].
pub fn interaction_name(marker: &TickMarker) -> Option<&'static str> {
    match marker {
        TickMarker::Custom(name) => INTERACTION_MARKERS
            .iter()
            .copied()
            .find(|known| *known == name.as_str()),
        _ => None,
    }
}
