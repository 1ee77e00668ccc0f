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
from jouleclaw.livekit import ReceiptObserver  # noqa: E402

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
        session.emit("user_state_changed",
                     UserStateChangedEvent(old_state="listening", new_state="speaking"))
        clock.ns = 20 * MS
        session.emit("user_state_changed",
                     UserStateChangedEvent(old_state="speaking", new_state="listening"))
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
        clock.ns = 30 * MS
        await out.capture_frame(frame(300))
        out.flush()
        for _ in range(500):
            await asyncio.sleep(0.001)
            if observer.ticks.get(TTS, 0) >= 2:  # the start marker and the first frame
                break
        # The user cuts in while the agent speaks: a barge-in, once.
        clock.ns = 50 * MS
        session.emit("user_state_changed",
                     UserStateChangedEvent(old_state="listening", new_state="speaking"))
        clock.ns = 60 * MS
        session.emit("user_state_changed",
                     UserStateChangedEvent(old_state="speaking", new_state="listening"))
        session.emit("user_state_changed",
                     UserStateChangedEvent(old_state="listening", new_state="speaking"))
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
    # The first user turn (no agent speech yet) is no barge-in; the cut-in is one, and the
    # second "speaking" of the same agent turn is not another: two end_of_turn, one barge_in.
    assert observer.ticks[CONTROL] == 3
    (barge,) = observer.stop_latencies()
    assert barge.barge_in_ts_ns == 50 * MS
    assert [y.ts_ns for y in yields] == [50 * MS]
    # The frames the source took after the cut-in (it holds 200 ms: the fifth and sixth
    # waited for room) were stamped at 60 ms: the signed stop latency is 10 ms.
    assert barge.last_audio_ts_ns == 60 * MS and barge.stop_latency_ns == 10 * MS
    assert observer.finished is not None
    assert (tmp_path / "run" / "stop-latency.cbor").is_file()
