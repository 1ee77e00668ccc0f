"""jouleclaw.livekit.ReceiptObserver on LiveKit's own room audio output, without a server.

The room output is livekit-agents' real ``_ParticipantAudioOutput`` over a real
``rtc.AudioSource`` (the SDK's native source; no room is joined: the track is never
published, so the output is told it is subscribed); the session is a stand-in event emitter
carrying LiveKit's own event classes (the real ``AgentSession`` runs in test_livekit_call.py).
Time is the test's: the observer's clock is set by the test, so no assertion depends on the
machine's speed.
"""

from __future__ import annotations

import asyncio
import json
import types

import pytest

pytest.importorskip("livekit.agents", reason="the LiveKit tests run in .ci/suites/31-livekit.sh")

from livekit import rtc  # noqa: E402
from livekit.agents.llm import FunctionCall, FunctionCallOutput  # noqa: E402
from livekit.agents.voice.events import (  # noqa: E402
    AgentStateChangedEvent,
    CloseEvent,
    CloseReason,
    FunctionToolsExecutedEvent,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
)
from livekit.agents.voice.room_io._output import _ParticipantAudioOutput  # noqa: E402

from jouleclaw import ASR, CONTROL, MIC, SUBSTRATE, TTS  # noqa: E402
from jouleclaw.livekit import ROOM_SOURCE_QUEUE_NS, ReceiptObserver  # noqa: E402

RATE = 12_000
MS = 1_000_000


class Clock:
    def __init__(self):
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def stand_in_session(audio_output):
    session = rtc.EventEmitter()
    session.output = types.SimpleNamespace(audio=audio_output, transcription=None)
    session.input = types.SimpleNamespace(audio=None)
    return session


class StandInActivity:
    """LiveKit's AgentActivity as AudioRecognition sees it: ``on_end_of_turn`` says whether
    the user's turn was committed (here: as the test sets it)."""

    def __init__(self, commits: bool):
        self.commits = commits

    def on_end_of_turn(self, info) -> bool:
        return self.commits


def deciding_session(audio_output, commits: bool, allow_interruptions: bool = True):
    """A stand-in session whose current speech LiveKit may interrupt, with a turn hook."""
    session = stand_in_session(audio_output)
    session._activity = StandInActivity(commits)
    session.current_speech = types.SimpleNamespace(allow_interruptions=allow_interruptions,
                                                   interrupted=False)
    return session


def user(session, state: str) -> None:
    old = "listening" if state == "speaking" else "speaking"
    session.emit("user_state_changed", UserStateChangedEvent(old_state=old, new_state=state))


def trace_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def control_markers(path) -> list[tuple[int, object]]:
    return [(t["ts_ns"], t["marker"]) for t in trace_lines(path) if t["channel_id"] == CONTROL]


async def speak(out, observer, clock, *, start_ns: int, ms: int) -> None:
    """The agent speaks `ms` of audio from `start_ns`: the output takes it and hands the
    frames on (the playback starts); returns once the first frame was handed over."""
    clock.ns = start_ns
    await out.capture_frame(frame(ms))
    out.flush()
    for _ in range(500):
        await asyncio.sleep(0.001)
        if observer.ticks.get(TTS, 0) >= 2:  # the start marker and the first frame
            return
    raise AssertionError("the room output handed no frame to the source")


async def user_over_agent(tmp_path, *, commits: bool, allow_interruptions: bool = True,
                          decide: str = "turn", **kwargs):
    """The agent speaks 300 ms from 30 ms; the user speaks over it from 50 ms to 250 ms
    (frames 0 and 1 of 200 ms); LiveKit decides at 400 ms (`decide`: "turn" calls the turn
    hook, "false" reports a false interruption, "false_then_turn" both, "none" nothing); the
    call ends at 600 ms."""
    clock = Clock()
    yields = []
    out = await room_output()
    observer = ReceiptObserver(steward="did:example:agent", stream_id="overlap", clock=clock,
                               out_dir=tmp_path / "run", on_yield=yields.append,
                               trace_path=tmp_path / "ticks.jsonl", **kwargs)
    session = deciding_session(out, commits, allow_interruptions)
    observer.attach(session)
    await speak(out, observer, clock, start_ns=30 * MS, ms=300)
    clock.ns = 50 * MS
    user(session, "speaking")
    clock.ns = 210 * MS
    observer._on_mic(frame(20))  # a mic frame in frame 1 while the user speaks
    clock.ns = 250 * MS
    user(session, "listening")
    await asyncio.wait_for(out._flush_task, 10)
    clock.ns = 400 * MS
    held_before = observer.ticks.get(CONTROL, 0)
    if decide == "turn":
        session._activity.on_end_of_turn(types.SimpleNamespace(new_transcript="Mm-hmm."))
    elif decide.startswith("false"):
        session.emit("agent_false_interruption", types.SimpleNamespace(resumed=True))
        if decide == "false_then_turn":
            clock.ns = 500 * MS
            session._activity.on_end_of_turn(types.SimpleNamespace(new_transcript="mm"))
    clock.ns = 600 * MS
    session.emit("close", CloseEvent(reason=CloseReason.USER_INITIATED))
    await out.aclose()
    return observer, yields, held_before


def frame(ms: int, value: int = 1000) -> rtc.AudioFrame:
    n = RATE * ms // 1000
    return rtc.AudioFrame(value.to_bytes(2, "little", signed=True) * n, RATE, 1, n)


async def room_output() -> _ParticipantAudioOutput:
    out = _ParticipantAudioOutput(
        room=None, sample_rate=RATE, num_channels=1,
        track_publish_options=rtc.TrackPublishOptions(),
    )
    out._subscribed_fut.set_result(None)
    out._forwarding_task = asyncio.ensure_future(out._forward_audio())
    return out


def test_attach_refuses_a_session_without_a_room_audio_output():
    observer = ReceiptObserver(steward="did:example:agent", stream_id="no-room")
    with pytest.raises(ValueError, match="RoomIO audio output"):
        observer.attach(stand_in_session(None))


def test_the_audio_handed_to_the_room_source_is_the_tts_channel_and_a_barge_in_is_signed(
    tmp_path,
):
    clock = Clock()
    yields = []

    async def run():
        out = await room_output()
        observer = ReceiptObserver(steward="did:example:agent", stream_id="unit", clock=clock,
                                   out_dir=tmp_path / "run", on_yield=yields.append)
        session = stand_in_session(out)
        observer.attach(session)
        # The user asks (ASR), LiveKit runs the tool, the agent starts thinking.
        clock.ns = 10 * MS
        user(session, "speaking")
        clock.ns = 20 * MS
        user(session, "listening")
        session.emit("user_input_transcribed",
                     UserInputTranscribedEvent(transcript="weather in Lisbon?", is_final=True))
        session.emit("user_input_transcribed",
                     UserInputTranscribedEvent(transcript="weather", is_final=False))
        session.emit("agent_state_changed",
                     AgentStateChangedEvent(old_state="listening", new_state="thinking"))
        call = FunctionCall(call_id="c1", name="get_weather", arguments='{"city":"Lisbon"}')
        session.emit("function_tools_executed", FunctionToolsExecutedEvent(
            function_calls=[call],
            function_call_outputs=[FunctionCallOutput(call_id="c1", name="get_weather",
                                                      output='{"sky":"clear"}', is_error=False)],
        ))
        # The TTS gives the output 300 ms of audio: the forwarding task hands it to the
        # source in 50 ms frames; the source takes 200 ms, then each frame waits for room.
        await speak(out, observer, clock, start_ns=30 * MS, ms=300)
        # The user cuts in while the agent speaks: a barge-in, once.
        clock.ns = 50 * MS
        user(session, "speaking")
        clock.ns = 60 * MS
        user(session, "listening")
        user(session, "speaking")
        await asyncio.wait_for(out._flush_task, 10)
        clock.ns = 400 * MS
        session.emit("close", CloseEvent(reason=CloseReason.USER_INITIATED))
        await out.aclose()
        return observer

    observer = asyncio.run(run())
    # Six 50 ms frames at 12 kHz, each a TTS tick of 1200 bytes, between the playback markers.
    assert observer.audio_stats.sent_bytes == 6 * 1200
    assert observer.audio_stats.generated_bytes == 300 * 24
    assert len(observer.sent_audio_ns) == 6
    kinds = [d.kind for d in observer.decisions]
    assert kinds.index("playback_started") < kinds.index("playback_finished")
    assert observer.ticks[TTS] == 6 + 2
    assert observer.ticks[ASR] == 1  # the interim transcript is not a tick
    assert observer.ticks[SUBSTRATE] == 1
    assert MIC not in observer.ticks
    # The first user turn (no agent speech yet) is no barge-in; the cut-in is one (this
    # session reports no turn decisions, so it is one at once), and the second "speaking" of
    # the same agent turn is not another: two end_of_turn, one barge_in, and a user_speech
    # marker for each of the three segments (all in the first 200 ms frame).
    assert observer.ticks[CONTROL] == 6
    (barge,) = observer.stop_latencies()
    assert barge.barge_in_ts_ns == 50 * MS
    assert [y.ts_ns for y in yields] == [50 * MS]
    # The frames the source took after the cut-in (it holds 200 ms: the fifth and sixth
    # waited for room) were stamped at 60 ms: the signed stop latency is 10 ms.
    assert barge.last_audio_ts_ns == 60 * MS and barge.stop_latency_ns == 10 * MS
    assert observer.finished is not None
    assert (tmp_path / "run" / "stop-latency.cbor").is_file()


def test_speech_over_the_agent_livekit_drops_is_a_backchannel_not_a_barge_in(tmp_path):
    observer, yields, held = asyncio.run(user_over_agent(tmp_path, commits=False))
    # Held until LiveKit decided: nothing of the user's speech was pushed before.
    assert held == 0
    markers = control_markers(tmp_path / "ticks.jsonl")
    # user_speech in each 200 ms frame the user spoke in, the backchannel stamped when the
    # speech began, then the end of the user's turn; no barge-in.
    assert markers == [
        (50 * MS, {"custom": "backchannel"}),
        (50 * MS, {"custom": "user_speech"}),
        (210 * MS, {"custom": "user_speech"}),
        (250 * MS, "end_of_turn"),
    ]
    assert observer.stop_latencies() == [] and yields == []
    assert "barge_in_ignored" not in {w.finding.kind for w in observer.receipts}
    # The signed interaction document reads it as a backchannel talked through (the agent's
    # audio runs to the last frame with a tick, 250 ms), not as an interruption.
    kinds = [e.kind for e in observer.interaction.events]
    assert "backchannel_correct" in kinds
    assert not {"yield", "no_yield"} & set(kinds)
    assert (tmp_path / "run" / "interaction-metrics.cbor").is_file()
    (decided,) = [d for d in observer.decisions if d.kind.startswith("overlap_")]
    assert decided.kind == "overlap_backchannel"
    assert decided.detail["reason"] == "LiveKit dropped the user's turn"
    # Every tick held was pushed, in order, after the decision: the trace is in time order.
    ts = [t["ts_ns"] for t in trace_lines(tmp_path / "ticks.jsonl")]
    assert ts == sorted(ts) and observer.refused == {}


def test_a_false_interruption_with_no_turn_after_it_is_a_backchannel(tmp_path):
    observer, yields, held = asyncio.run(
        user_over_agent(tmp_path, commits=True, decide="false"))
    assert held == 0
    assert (50 * MS, {"custom": "backchannel"}) in control_markers(tmp_path / "ticks.jsonl")
    assert observer.stop_latencies() == []
    (decided,) = [d for d in observer.decisions if d.kind.startswith("overlap_")]
    assert decided.detail["reason"] == "a false interruption and no turn at the end of the call"


def test_a_turn_committed_after_a_false_interruption_is_a_barge_in(tmp_path):
    # LiveKit's false-interruption timer resumes the speech when no transcript came within
    # 2 s; a transcript that comes later still commits the turn and interrupts the agent.
    observer, _, _ = asyncio.run(
        user_over_agent(tmp_path, commits=True, decide="false_then_turn"))
    assert control_markers(tmp_path / "ticks.jsonl")[0] == (50 * MS, "barge_in")
    assert len(observer.stop_latencies()) == 1


def test_speech_over_the_agent_livekit_commits_is_a_barge_in_stamped_when_it_began(tmp_path):
    observer, yields, held = asyncio.run(user_over_agent(tmp_path, commits=True))
    assert held == 0
    markers = control_markers(tmp_path / "ticks.jsonl")
    assert markers[0] == (50 * MS, "barge_in")
    assert {"custom": "backchannel"} not in [m for _, m in markers]
    (barge,) = observer.stop_latencies()
    assert barge.barge_in_ts_ns == 50 * MS
    # The agent's audio went on past the deadline after it (the neighbour of the backchannel
    # test: the same ticks, LiveKit's other decision).
    assert not barge.within_deadline
    assert "barge_in_ignored" in {w.finding.kind for w in observer.receipts}
    kinds = [e.kind for e in observer.interaction.events]
    assert {"yield", "no_yield"} & set(kinds)
    assert not {"backchannel_correct", "backchannel_error"} & set(kinds)
    # The yield is reported when the held barge-in reaches the pipeline.
    assert [y.ts_ns for y in yields] == [50 * MS]


def test_speech_over_an_uninterruptible_agent_is_a_barge_in_at_once(tmp_path):
    # LiveKit judges nothing when the agent's speech does not allow interruptions (the rude
    # agent): the strict reading, a barge-in when the user began, pushed at once.
    observer, yields, held = asyncio.run(
        user_over_agent(tmp_path, commits=False, allow_interruptions=False))
    assert held >= 2  # the user_speech and barge_in markers, before any decision
    assert control_markers(tmp_path / "ticks.jsonl")[:2] == [
        (50 * MS, {"custom": "user_speech"}), (50 * MS, "barge_in")]
    assert len(observer.stop_latencies()) == 1


def test_speech_livekit_never_decides_on_is_a_barge_in_at_the_bound(tmp_path):
    observer, _, _ = asyncio.run(
        user_over_agent(tmp_path, commits=False, decide="none", max_hold_ns=100 * MS))
    assert control_markers(tmp_path / "ticks.jsonl")[0] == (50 * MS, "barge_in")
    (decided,) = [d for d in observer.decisions if d.kind.startswith("overlap_")]
    assert decided.detail["reason"] == "no decision within max_hold_ns"
    # and without a bound reached, the end of the call decides the same way
    observer, _, _ = asyncio.run(
        user_over_agent(tmp_path / "b", commits=False, decide="none"))
    (decided,) = [d for d in observer.decisions if d.kind.startswith("overlap_")]
    assert decided.kind == "overlap_barge_in"
    assert decided.detail["reason"] == "no decision at the end of the call"


def test_the_signed_document_states_the_room_source_vantage_by_default(tmp_path):
    observer, _, _ = asyncio.run(user_over_agent(tmp_path, commits=True))
    doc = observer.stop_latency
    assert doc.schema == "stop-latency/2"
    assert doc.vantage == "sent" and doc.excluded_buffer_ns == ROOM_SOURCE_QUEUE_NS
    observer, _, _ = asyncio.run(
        user_over_agent(tmp_path / "v1", commits=True, vantage=None, excluded_buffer_ns=None))
    assert observer.stop_latency.schema == "stop-latency/1"
    assert observer.stop_latency.vantage is None


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path):
    (tmp_path / "ticks.jsonl").write_text("kept")
    with pytest.raises(FileExistsError, match="tick trace"):
        ReceiptObserver(steward="did:example:agent", stream_id="x", out_dir=tmp_path / "run",
                        trace_path=tmp_path / "ticks.jsonl")
    with pytest.raises(ValueError, match="max_hold_ns"):
        ReceiptObserver(steward="did:example:agent", stream_id="x", out_dir=tmp_path / "run",
                        max_hold_ns=0)
    assert (tmp_path / "ticks.jsonl").read_text() == "kept"
    assert not (tmp_path / "run").exists()
    # the neighbour: a new trace file is accepted and written
    ReceiptObserver(steward="did:example:agent", stream_id="x", out_dir=tmp_path / "run",
                    trace_path=tmp_path / "new.jsonl").finish()
    assert (tmp_path / "new.jsonl").is_file() and (tmp_path / "run").is_dir()


def test_the_observer_refuses_by_the_stores_list_of_run_files(tmp_path):
    import jouleclaw
    import jouleclaw.livekit

    assert jouleclaw.livekit.RUN_FILES is jouleclaw.RUN_FILES
    assert jouleclaw.RUN_FILES[-1] == "summary.json"
    assert "stop-latency.cbor" in jouleclaw.RUN_FILES
