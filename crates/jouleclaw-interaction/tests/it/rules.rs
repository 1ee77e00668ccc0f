//! Every rule of `spec/INTERACTION-METRICS-V1.md` section 2 on a hand-written trajectory, each
//! with its neighbour on the other side of the rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use common::{brief, events, events_with};
use jouleclaw_interaction::{InteractionConfig, Panel};

#[test]
fn response_and_its_latency() {
    assert_eq!(brief("u u u . . a a . . u u"), [("response", 3, Some(2))]);
}

#[test]
fn no_response_when_the_user_speaks_again_first() {
    assert_eq!(
        brief("u u . . u u . a"),
        [("no_response", 2, None), ("response", 6, Some(1))]
    );
}

#[test]
fn a_turn_the_agent_talks_at_the_end_of_gets_no_response_event() {
    assert_eq!(brief("u u a"), []);
    assert_eq!(brief("u u . a"), [("response", 2, Some(1))]);
}

#[test]
fn a_backchannel_is_no_turn() {
    // The user's "mm-hmm" over the agent, which stops: no response is owed for it.
    assert_eq!(brief("a a aub ub . . a"), [("backchannel_error", 2, None)]);
    // The same speech without the backchannel flag is an interruption, yielded to, and a turn.
    assert_eq!(
        brief("a a au u . . a"),
        [("yield", 2, Some(1)), ("response", 4, Some(2))]
    );
}

#[test]
fn end_of_conversation_filter_drops_a_last_one_frame_user_segment() {
    assert_eq!(brief("a a a a a a au"), []);
    // Two frames are a segment: the agent talks over it.
    assert_eq!(brief("a a a a a au au"), [("no_yield", 5, None)]);
}

#[test]
fn yield_latency_is_frames_to_the_first_silent_agent_frame() {
    assert_eq!(brief("a a a au au a . . . . . ."), [("yield", 3, Some(3))]);
}

#[test]
fn yield_inside_the_window_and_past_it() {
    // Interruption at frame 2; the no-yield window is 10 frames (2 s): frames 2..12.
    let talk = |stop: usize| {
        let mut t = vec!["a", "a", "au", "au"];
        while t.len() < stop {
            t.push("a");
        }
        t.extend([".", ".", "."]);
        t.join(" ")
    };
    assert_eq!(brief(&talk(11)), [("yield", 2, Some(9))]);
    assert_eq!(brief(&talk(12)), [("no_yield", 2, None)]);
}

#[test]
fn stopping_on_the_next_frame_is_within_the_150_ms_deadline() {
    let e = events("a au u u . .");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].latency_ticks, Some(1));
    let p = Panel::of(&InteractionConfig::default(), &e);
    assert_eq!(p.yield_latency_mean, Some(0.2));
    assert_eq!(p.yield_rate_deadline, Some(1.0));
    // Two frames: 200 ms of agent speech after the interruption's frame: past 150 ms.
    let e = events("a au au u . .");
    assert_eq!(e[0].latency_ticks, Some(2));
    let p = Panel::of(&InteractionConfig::default(), &e);
    assert_eq!(p.yield_rate, Some(1.0));
    assert_eq!(p.yield_rate_deadline, Some(0.0));
}

#[test]
fn backchannel_talked_through_and_yielded_to() {
    // Window: 5 frames (1 s) from the backchannel's start, frames 3..8.
    assert_eq!(
        brief("a a a aub aub a a a a a ."),
        [("backchannel_correct", 3, None)]
    );
    assert_eq!(
        brief("a a a aub aub a . . . . ."),
        [("backchannel_error", 3, None)]
    );
    // Stopping at frame 8 is past the window.
    assert_eq!(
        brief("a a a aub aub a a a . . ."),
        [("backchannel_correct", 3, None)]
    );
}

#[test]
fn priority_backchannel_then_vocal_tic_then_non_directed() {
    assert_eq!(
        brief("a a aubv aun a a a a a a ."),
        [("backchannel_correct", 2, None)]
    );
    assert_eq!(
        brief("a a aun auv a a a a a a ."),
        [("vocal_tic_correct", 2, None)]
    );
    assert_eq!(
        brief("a a aun au a a a a a a ."),
        [("non_directed_correct", 2, None)]
    );
}

#[test]
fn vocal_tic_and_non_directed_during_agent_speech() {
    assert_eq!(
        brief("a a auv au a a a a a a ."),
        [("vocal_tic_correct", 2, None)]
    );
    assert_eq!(
        brief("a a aun aun . . . ."),
        [("non_directed_error", 2, None)]
    );
}

#[test]
fn vocal_tic_in_user_speech_that_starts_in_silence() {
    // The agent starts at frame 4, within 10 frames of the segment's end (frame 2): an error,
    // dated at the agent's start; the turn itself got a response.
    assert_eq!(
        brief("uv u . . a a ."),
        [("response", 2, Some(2)), ("vocal_tic_error", 4, None)]
    );
    // Starting at frame 12 (= 2 + 10) is still within; at 13 it is not.
    let late = |start: usize| {
        let mut t = vec!["uv", "u"];
        while t.len() < start {
            t.push(".");
        }
        t.extend(["a", "."]);
        t.join(" ")
    };
    assert_eq!(
        brief(&late(12)),
        [("response", 2, Some(10)), ("vocal_tic_error", 12, None)]
    );
    assert_eq!(
        brief(&late(13)),
        [("vocal_tic_correct", 0, None), ("response", 2, Some(11))]
    );
}

#[test]
fn out_of_turn_effects_during_silence() {
    assert_eq!(brief("v v . . . a"), [("vocal_tic_error", 5, None)]);
    assert_eq!(brief("v v . . . ."), [("vocal_tic_correct", 0, None)]);
    assert_eq!(brief("n . . . ."), [("non_directed_correct", 0, None)]);
    assert_eq!(brief(". n . a ."), [("non_directed_error", 3, None)]);
}

#[test]
fn out_of_turn_effects_during_agent_speech() {
    // The agent stops 5 frames (1.0 s) after the effect: an error; 6 frames: no event at all.
    assert_eq!(
        brief("a a av a a a a . . ."),
        [("vocal_tic_error", 2, None)]
    );
    assert_eq!(brief("a a av a a a a a . . ."), []);
    assert_eq!(brief("a an a . . ."), [("non_directed_error", 1, None)]);
}

#[test]
fn the_agent_talking_over_the_user() {
    assert_eq!(brief("u u au au . ."), [("agent_interrupts_user", 2, None)]);
    let p = Panel::of(
        &InteractionConfig::default(),
        &events("u u au au . . u u . a a . ."),
    );
    // One interruption over two user turns (the first was talked over: no response).
    assert_eq!(p.counts.agent_interrupts_count, 1);
    assert_eq!(p.counts.no_response_count, 1);
    assert_eq!(p.response_total(), 2);
    assert_eq!(p.agent_interruption_rate, Some(0.5));
}

#[test]
fn events_name_their_window() {
    for e in events("u u . a a . . a au au . .") {
        assert_eq!(e.window_id, Some(e.tick));
    }
}

#[test]
fn the_windows_are_configurable() {
    let config = InteractionConfig {
        no_yield_window_ns: 400_000_000,
        ..InteractionConfig::default()
    };
    // With a 2-frame no-yield window, stopping 3 frames after the interruption is no yield.
    assert_eq!(
        events_with(config, "a a a au au a . . . . . .")[0]
            .kind
            .as_str(),
        "no_yield"
    );
}
