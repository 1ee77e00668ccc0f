"""A LiveKit Agents observer that mints a signed ``stream-window/1`` receipt for every window of
a call.

``ReceiptObserver`` attaches to a running ``livekit.agents.AgentSession`` (livekit-agents 1.8,
room I/O from ``RoomIO``), turns what the session does into ticks of the duplex voice stream
and pushes them into a ``jouleclaw.Pipeline`` (Rust), the same pipeline the Pipecat observer
(``jouleclaw.pipecat``) feeds: judging, hashing, minting, signing and the stop-latency
document all happen there; this module only maps the session onto ticks.

Outbound audio is the audio the agent's room output hands to the room. In livekit-agents 1.8
the session's audio output ends in ``_ParticipantAudioOutput`` (``livekit/agents/voice/
room_io/_output.py``): its ``capture_frame`` only queues the TTS audio (50 ms frames, in a
channel), and its ``_forward_audio`` task takes them one at a time and awaits
``rtc.AudioSource.capture_frame(frame)`` on the ``rtc.AudioSource`` its local track
publishes (``queue_size_ms=200``). That call returns once the SDK's native source has taken
the frame into its queue, which the WebRTC track drains in real time (10 ms per 10 ms); when
the queue is full the call waits for room. So the observer puts a thin tap around that
source (the output's ``_audio_source``): each frame is a TTS audio tick stamped when its
``capture_frame`` returned. An interruption drops what the source still queues
(``clear_queue``: at most 200 ms, counted in ``audio_stats.cleared_ns``): that audio is on the
receipts as handed to the room and never reached the far end. Audio the TTS generated and the
output never handed to the room (dropped by an interruption before ``_forward_audio`` took
it) is counted as generated (the output's ``capture_frame``) and never judged as spoken.

Event mapping (``session.on(...)`` handlers; ``audio_output`` is the ``_ParticipantAudioOutput``):

=====================================================  ====================================
LiveKit (source)                                       tick
=====================================================  ====================================
a frame the session reads from its audio input         ``mic`` (1) audio, the PCM bytes
(``session.input.audio``, tapped: the room's input      (the input's sample rate)
stream, after RoomIO's resampling)
``user_input_transcribed`` with ``is_final``           ``asr`` (2) text, the transcript
text the LLM node hands to the transcription output    ``llm`` (4) text, each delta as
(``session.output.transcription``, tapped: the          generated (before the transcript
output's ``capture_text``, called as the LLM streams)   synchronizer paces it)
``agent_state_changed`` to ``thinking`` while the      ``start`` marker on ``llm`` (4): a
agent is not speaking                                  new response once the agent went quiet
``rtc.AudioSource.capture_frame`` of the room output   ``tts`` (3) audio, the frame's bytes
returned (the tap)                                     (the output's sample rate)
``playback_started`` of the room output                ``start`` marker on ``tts`` (3)
``playback_finished`` of the room output               ``end`` marker on ``tts`` (3)
``user_state_changed`` to ``speaking``, then each     ``{"custom":"user_speech"}`` marker on
200 ms frame with a tick until ``listening``           ``control`` (0), one per frame
``user_state_changed`` to ``speaking`` while the       ``barge_in`` marker on ``control`` (0),
agent speaks (between the two playback events),        once per agent turn, stamped when the
once LiveKit decided it interrupts (see below)         speech began
the same speech, once LiveKit decided it does not      ``{"custom":"backchannel"}`` marker on
interrupt                                              ``control`` (0), stamped likewise
``user_state_changed`` to ``listening``                ``end_of_turn`` marker on ``control``
``function_tools_executed``                            ``substrate`` (5) text: each output
                                                       (``FunctionCallOutput.output``)
``close`` (the session closed)                         the call ends: the open window is
                                                       closed, documents signed, ``out_dir``
                                                       written
=====================================================  ====================================

User speech over the agent is decided by LiveKit, not guessed here. When the user starts
speaking while the agent's interruptible speech plays, the observer holds every tick (in
order, with its own stamp) until LiveKit decided: the turn committed (the activity's
``on_end_of_turn`` returned ``True``, wrapped at ``attach``) or the speech interrupted
(``playback_finished`` with ``interrupted``) make it a ``barge_in``; the turn dropped
(``on_end_of_turn`` returned ``False``: fewer words than ``min_words``) makes it a
``backchannel``; with no such decision within ``max_hold_ns`` or by the call's end, it is a
``backchannel`` if LiveKit called its pause false (``agent_false_interruption``; not final
before that, since a later transcript still commits the turn) and a ``barge_in`` otherwise.
Then the marker is pushed with the speech's start time and the held ticks after it, so the
receipts are those of a decision known at once; only their minting waits. Speech over an
agent that cannot be interrupted is a ``barge_in`` at once (LiveKit judges nothing).
spec/LIVEKIT-OBSERVER.md section 2.1 cites the livekit-agents 1.8.9 code.

What each stamp means, and what it hides:

* the barge-in is LiveKit's VAD start of speech (Silero, ``user_state_changed``): the moment
  the session knows the user talks. LiveKit's default interruption handling then waits until
  the speech has lasted ``min_duration`` (0.5 s) before it pauses the output (and, the
  interruption confirmed, interrupts it); for the first ``aec_warmup_duration`` (3 s) of the
  agent's first turn it does not interrupt at all. All of that is inside the signed stop
  latency, as it should be: the agent went on talking.
* a TTS audio tick is the moment the frame entered the room source's queue. The far end
  receives it later: the rest of the queue (up to 200 ms), Opus encoding, the SFU
  (livekit-server) and the receiver's jitter buffer. Audio cleared from the queue at an
  interruption is on the receipts and never arrives. The stop latency therefore measures the
  agent's decision to stop (its last frame handed over after the barge-in), not what the user
  heard: the far end's figure differs by the queue still playing and the transport.
* ``playback_started``/``playback_finished`` are the room output's own: the first frame of a
  segment forwarded, and the segment played out or interrupted.

Time: every tick is stamped with ``clock()`` in stream nanoseconds: by default
``time.monotonic_ns()`` minus the observer's ``origin_monotonic_ns`` (taken when it is
built), so every stamp comes from one clock, read when the event reaches the observer, on the
session's event loop; no wall clock enters the Rust core. (CLOCK_MONOTONIC is shared by the
processes of one machine, so a far-end participant on the same host can log arrivals on the
same time line.) A window closes when a tick with a time in a later window arrives, or when
the call ends.

When the call ends (the session's ``close`` event, or ``finish()``) the pipeline signs the
``interaction-metrics/1`` document (the interaction panel of the ticks) and the
stop-latency document (by default ``stop-latency/2`` with ``vantage`` ``"sent"`` and the 200 ms
of RoomIO's source queue as ``excluded_buffer_ns``: the times mark the hand-over to the room's
source, and that queue plays after it) and, with ``seal_every``, the final seal, and writes
``out_dir`` exactly as the Pipecat observer does. Ticks the window refuses are counted in
``refused``.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from livekit.agents.voice import io as lk_io
from livekit.agents.voice.room_io._output import _ParticipantAudioOutput

from . import (
    ASR,
    CONTROL,
    LLM,
    MIC,
    RUN_FILES,
    SUBSTRATE,
    TTS,
    ClosedWindow,
    Finished,
    InteractionDocument,
    JouleclawError,
    Pipeline,
    SigningKey,
    StopLatency,
    StopLatencyDocument,
    StreamSpec,
    Verdict,
)

__all__ = [
    "AudioStats",
    "ReceiptObserver",
    "YieldEvent",
    "LIVEKIT_AGENTS_VERSIONS",
    "ROOM_SOURCE_QUEUE_NS",
    "USER_SPEECH",
    "BACKCHANNEL",
]

#: The livekit-agents versions this observer is tested against.
LIVEKIT_AGENTS_VERSIONS = ">=1.8,<1.9"

_NS_PER_S = 1_000_000_000

#: The audio RoomIO's ``rtc.AudioSource`` queues after the observer's stamp in livekit-agents
#: 1.8.9 (``queue_size_ms=200``): the default ``excluded_buffer_ns`` of the signed document.
ROOM_SOURCE_QUEUE_NS = 200_000_000

#: The interaction markers (spec/STREAM-SUBSTRATE.md, "Interaction markers") the observer writes.
USER_SPEECH = {"custom": "user_speech"}
BACKCHANNEL = {"custom": "backchannel"}

#: The user's speech frame for ``user_speech`` markers: tau-voice's 200 ms tick, the interaction
#: meter's default frame (spec/INTERACTION-METRICS-V1.md section 1).
SPEECH_FRAME_NS = 200_000_000



@dataclass(frozen=True)
class YieldEvent:
    """A barge-in the oracle answered with ``yield``, on the barge-in tick itself."""

    ts_ns: int
    window_id: int
    verdict: Verdict


@dataclass
class AudioStats:
    """Outbound audio of one window (``window_id``) or of the whole call (``window_id`` None).

    ``generated_*``: the TTS audio the room output was given (its ``capture_frame``).
    ``sent_*``: the frames handed to the room's ``rtc.AudioSource`` (the TTS channel's ticks).
    ``cleared_*``: audio the source still queued when an interruption cleared it (the SDK's
    own estimate, ``queued_duration``): handed to the room, never sent on. Durations are the
    audio's own length."""

    window_id: Optional[int] = None
    generated_bytes: int = 0
    generated_ns: int = 0
    sent_bytes: int = 0
    sent_ns: int = 0
    cleared_ns: int = 0
    clears: int = 0

    @property
    def unsent_ns(self) -> int:
        """Audio generated and never handed to the room, at least 0."""
        return max(0, self.generated_ns - self.sent_ns)


@dataclass
class Decision:
    """One turn decision LiveKit made, as the session reported it (not signed)."""

    ts_ns: int
    kind: str
    detail: dict = field(default_factory=dict)


def _frame_bytes(frame: Any) -> bytes:
    # ``rtc.AudioFrame.data`` is a memoryview of int16 samples: its bytes, as they are.
    return bytes(frame.data)


def _frame_ns(frame: Any) -> int:
    return frame.samples_per_channel * _NS_PER_S // frame.sample_rate if frame.sample_rate else 0


class _SourceTap:
    """Stands in for the room output's ``rtc.AudioSource``: every call goes to the source;
    ``capture_frame`` is reported once it returned, ``clear_queue`` with what it dropped."""

    def __init__(self, source: Any, observer: "ReceiptObserver"):
        self._jc_source = source
        self._jc_observer = observer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jc_source, name)

    async def capture_frame(self, frame: Any) -> None:
        await self._jc_source.capture_frame(frame)
        self._jc_observer._on_audio_sent(frame)

    def clear_queue(self) -> None:
        queued = self._jc_source.queued_duration
        self._jc_source.clear_queue()
        self._jc_observer._on_queue_cleared(queued)


class _MicTap(lk_io.AudioInput):
    """The session's audio input, passed through: each frame read is a mic tick."""

    def __init__(self, source: lk_io.AudioInput, observer: "ReceiptObserver"):
        super().__init__(label="jouleclaw", source=source)
        self._jc_observer = observer

    async def __anext__(self) -> Any:
        frame = await super().__anext__()
        self._jc_observer._on_mic(frame)
        return frame


class _TextTap(lk_io.TextOutput):
    """The session's transcription output, passed through: each text delta is LLM output."""

    def __init__(self, next_in_chain: lk_io.TextOutput, observer: "ReceiptObserver"):
        super().__init__(label="jouleclaw", next_in_chain=next_in_chain)
        self._jc_observer = observer

    async def capture_text(self, text: str) -> None:
        self._jc_observer._on_llm_text(text)
        await self.next_in_chain.capture_text(text)

    def flush(self) -> None:
        self.next_in_chain.flush()


class ReceiptObserver:
    """Mints a signed receipt for every window of a LiveKit Agents session (see the module docs).

    Build it, start the session (``await session.start(agent, room=ctx.room, ...)``), then
    ``observer.attach(session)``. The arguments are the Pipecat observer's:

    Args:
        steward: The receipts' ``steward``.
        stream_id: The receipts' ``stream_id``.
        signing_key: The signer (default: a fresh key; ``public_key`` tells which).
        spec: The stream spec (default: ``StreamSpec.duplex_voice_default()``; its byte budget
            assumes 16 kHz input and 12 kHz output audio: set RoomIO's rates to match).
        epoch_unix: The Unix second at stream time 0 (default: now).
        out_dir: A run directory written when the call ends (see ``RUN_FILES``); a directory
            that already holds one of these files is refused.
        on_receipt: Called with every ``ClosedWindow``.
        on_yield: Called with a ``YieldEvent`` on the barge-in tick.
        clock: Stream time now, in nanoseconds (default: monotonic since construction).
        keep_receipts: How many of the latest receipts (and windows' audio) are kept.
        seal_every: Seal the stream every this many windows (default ``None``: unsealed).
        window_signatures: With ``seal_every``: ``"all"``, ``"non_pass"`` or ``"none"``.
        vantage: What the TTS ticks' times mark, stated in the signed ``stop-latency/2``
            document: ``"sent"`` (the default), the hand-over to the room's audio source.
            ``None`` signs ``stop-latency/1``, which states nothing.
        excluded_buffer_ns: With ``vantage``: the audio buffered after that point which the
            stop latency does not include. Default ``ROOM_SOURCE_QUEUE_NS`` (200 ms): RoomIO's
            audio source in livekit-agents 1.8.9 (``queue_size_ms=200``; the SDK does not
            report it, so a different RoomIO needs this set). The server, Opus and the far
            end's jitter buffer follow and are not known here.
        max_hold_ns: How long (stream time) user speech over the agent is held for LiveKit's
            decision (default 10 s; the held ticks are bounded by it). Undecided by then, it
            is a backchannel after a false interruption and a barge-in otherwise.
        trace_path: A new file to write every tick pushed to, as a tick trace
            (spec/TICK-TRACE.md), for ``jouleclaw run``; an existing file is refused.
    """

    def __init__(
        self,
        *,
        steward: str,
        stream_id: str,
        signing_key: Optional[SigningKey] = None,
        spec: Optional[StreamSpec] = None,
        epoch_unix: Optional[int] = None,
        out_dir: Union[str, os.PathLike, None] = None,
        on_receipt: Optional[Callable[[ClosedWindow], None]] = None,
        on_yield: Optional[Callable[[YieldEvent], None]] = None,
        clock: Optional[Callable[[], int]] = None,
        keep_receipts: int = 1024,
        seal_every: Optional[int] = None,
        window_signatures: str = "all",
        vantage: Optional[str] = "sent",
        excluded_buffer_ns: Optional[int] = ROOM_SOURCE_QUEUE_NS,
        max_hold_ns: int = 10 * _NS_PER_S,
        trace_path: Union[str, os.PathLike, None] = None,
    ):
        if max_hold_ns <= 0:
            raise ValueError("max_hold_ns must be positive")
        if trace_path is not None and os.path.lexists(trace_path):
            raise FileExistsError(f"{trace_path} exists: the tick trace is written to a new file")
        if out_dir is not None:
            out = Path(out_dir)
            taken = [name for name in RUN_FILES if (out / name).exists()]
            if taken:
                raise FileExistsError(f"{out} already holds {', '.join(taken)}")
            out.mkdir(parents=True, exist_ok=True)
        #: ``time.monotonic_ns()`` at stream time 0 (the default clock's origin).
        self.origin_monotonic_ns = time.monotonic_ns()
        self._pipeline = Pipeline(
            steward,
            stream_id,
            signing_key=signing_key,
            spec=spec,
            epoch_unix=int(time.time()) if epoch_unix is None else epoch_unix,
            seal_every=seal_every,
            window_signatures=window_signatures,
            out_dir=None if out_dir is None else str(out_dir),
            vantage=vantage,
            excluded_buffer_ns=excluded_buffer_ns,
        )
        self._spec = self._pipeline.spec
        self._max_chunk = self._spec.max_chunk_bytes
        origin = self.origin_monotonic_ns
        self._clock = clock or (lambda: time.monotonic_ns() - origin)
        self._on_receipt = on_receipt
        self._on_yield = on_yield
        self._agent_speaking = False
        self._barged_in = False
        self._finished = False
        self._session: Any = None
        self._audio_output: Optional[_ParticipantAudioOutput] = None
        self._last_ts = 0
        self._user_speaking = False
        self._speech_frame: Optional[int] = None
        # User speech that began during an interruptible agent turn, until LiveKit decided
        # whether it interrupts: the ticks since, in push order (see _decide).
        self._held: Optional[list[tuple]] = None
        self._held_since = 0
        self._turn_hooked = False
        self._held_false = False
        self._max_hold_ns = max_hold_ns
        # Opened last: a refused argument above leaves no file behind.
        self._trace = None if trace_path is None else open(trace_path, "x", encoding="ascii")
        #: The latest ``keep_receipts`` receipts, in window order.
        self.receipts: deque[ClosedWindow] = deque(maxlen=keep_receipts)
        #: Ticks pushed, by channel id.
        self.ticks: dict[int, int] = {}
        #: Session events not mapped to a tick, by name.
        self.ignored: dict[str, int] = {}
        #: Ticks the pipeline refused, by refusal code.
        self.refused: dict[str, int] = {}
        #: Outbound audio of the whole call (see ``AudioStats``).
        self.audio_stats = AudioStats()
        #: Outbound audio per window, the latest ``keep_receipts`` windows that had any.
        self.window_audio: deque[AudioStats] = deque(maxlen=keep_receipts)
        #: The turn decisions LiveKit reported (states, playback, false interruptions).
        self.decisions: deque[Decision] = deque(maxlen=keep_receipts)
        #: Stream time of every TTS audio tick (bounded like ``receipts``).
        self.sent_audio_ns: deque[int] = deque(maxlen=16 * keep_receipts)
        #: What the pipeline's ``finish()`` returned, once the call has ended.
        self.finished: Optional[Finished] = None

    # -- public -------------------------------------------------------------------------------

    @property
    def public_key(self) -> bytes:
        """The signer's 32-byte public key."""
        return self._pipeline.public_key

    @property
    def public_key_text(self) -> str:
        """The public key file text (``signer.pub``)."""
        return self._pipeline.public_key_text

    @property
    def pipeline(self) -> Pipeline:
        """The underlying ``jouleclaw.Pipeline``."""
        return self._pipeline

    @property
    def stop_latency(self) -> Optional[StopLatencyDocument]:
        """The signed stop-latency document of the call, once it has ended."""
        return None if self.finished is None else self.finished.stop_latency

    @property
    def interaction(self) -> Optional[InteractionDocument]:
        """The signed ``interaction-metrics/1`` document of the call (tau-voice's interaction
        panel of its ticks: the user_speech and backchannel markers, the agent's audio), once
        it has ended."""
        return None if self.finished is None else self.finished.interaction

    def stop_latencies(self) -> list[StopLatency]:
        """Every barge-in so far: its time, the last audio sent after it, the stop latency."""
        if self.finished is not None:
            return list(self.finished.stop_latency.barge_ins)
        return self._pipeline.stop_latencies()

    @property
    def agent_speaking(self) -> bool:
        """Whether the room output last reported a playback started and not yet finished."""
        return self._agent_speaking

    def now_ns(self) -> int:
        """Stream time now (the observer's clock)."""
        return int(self._clock())

    def attach(self, session: Any) -> None:
        """Observes ``session`` (an ``AgentSession`` already started with room I/O): taps its
        audio input, its transcription output, the room audio output's ``rtc.AudioSource`` and
        ``pause``, and the current activity's turn decisions (``on_end_of_turn``), and listens
        to its events. Raises ``ValueError`` when the session has no room audio
        output (nothing would reach the receipts as sent)."""
        if self._session is not None:
            raise ValueError("this observer is already attached to a session")
        room_out = session.output.audio
        while room_out is not None and not isinstance(room_out, _ParticipantAudioOutput):
            room_out = room_out.next_in_chain
        if room_out is None:
            raise ValueError(
                "the session has no RoomIO audio output (_ParticipantAudioOutput): start it "
                "with room I/O and audio output enabled before attaching"
            )
        self._session = session
        self._audio_output = room_out
        room_out._audio_source = _SourceTap(room_out._audio_source, self)
        upstream_pause = room_out.pause

        def pause() -> None:
            self._on_paused()
            upstream_pause()

        room_out.pause = pause
        # LiveKit's turn decision: AudioRecognition calls its hooks' (the AgentActivity's)
        # on_end_of_turn with the user's turn; it returns whether the turn was committed (a
        # reply, interrupting the agent) or dropped (too few words while the agent speaks).
        activity = getattr(session, "_activity", None)
        upstream_turn = getattr(activity, "on_end_of_turn", None)
        self._turn_hooked = upstream_turn is not None
        if upstream_turn is not None:

            def on_end_of_turn(info: Any) -> bool:
                committed = upstream_turn(info)
                self._on_turn_decided(bool(committed), getattr(info, "new_transcript", ""))
                return committed

            activity.on_end_of_turn = on_end_of_turn
        upstream_capture = room_out.capture_frame

        async def capture_frame(frame: Any) -> None:
            self._on_audio_generated(frame)
            await upstream_capture(frame)

        room_out.capture_frame = capture_frame
        room_out.on("playback_started", self._on_playback_started)
        room_out.on("playback_finished", self._on_playback_finished)
        if session.input.audio is not None:
            session.input.audio = _MicTap(session.input.audio, self)
        if session.output.transcription is not None:
            session.output.transcription = _TextTap(session.output.transcription, self)
        session.on("user_state_changed", self._on_user_state)
        session.on("agent_state_changed", self._on_agent_state)
        session.on("user_input_transcribed", self._on_transcribed)
        session.on("function_tools_executed", self._on_tools)
        session.on("agent_false_interruption", self._on_false_interruption)
        session.on("close", self._on_close)

    def finish(self) -> Optional[Finished]:
        """Closes the open window, signs the stop-latency and interaction documents (and the
        final seal, committing to both) and writes ``out_dir``. Called at the session's
        ``close``; later calls do nothing."""
        if self._finished:
            return self.finished
        now = self._now()
        if self._held is not None:
            self._decide_undecided("at the end of the call", now)
        self._finished = True
        self._close_due(now)
        try:
            self.finished = self._pipeline.finish()
        except JouleclawError as e:
            self._count(self.refused, e.code)
            return None
        finally:
            if self._trace is not None:
                self._trace.close()
        if self.finished.last is not None:
            self._emit(self.finished.last)
        return self.finished

    # -- the taps and handlers ----------------------------------------------------------------

    def _now(self) -> int:
        # One clock, read on one event loop: never decreasing, except if a custom clock does.
        ts = max(int(self._clock()), self._last_ts)
        self._last_ts = ts
        return ts

    def _on_mic(self, frame: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        self._push(ts, MIC, "audio", payload=_frame_bytes(frame))

    def _on_audio_generated(self, frame: Any) -> None:
        if self._finished:
            return
        ts = self._now()
        n, ns = len(_frame_bytes(frame)), _frame_ns(frame)
        for stats in (self.audio_stats, self._window_audio(ts)):
            stats.generated_bytes += n
            stats.generated_ns += ns

    def _on_audio_sent(self, frame: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        payload = _frame_bytes(frame)
        ns = _frame_ns(frame)
        for stats in (self.audio_stats, self._window_audio(ts)):
            stats.sent_bytes += len(payload)
            stats.sent_ns += ns
        self.sent_audio_ns.append(ts)
        self._push(ts, TTS, "audio", payload=payload)

    def _on_queue_cleared(self, queued_s: float) -> None:
        ts = self._now()
        ns = int(queued_s * _NS_PER_S)
        for stats in (self.audio_stats, self._window_audio(ts)):
            stats.cleared_ns += ns
            stats.clears += 1
        self.decisions.append(Decision(ts, "queue_cleared", {"queued_ns": ns}))

    def _on_llm_text(self, text: str) -> None:
        if self._finished or not text:
            return
        ts = self._now()
        self._close_due(ts)
        self._push(ts, LLM, "text", payload=text.encode("utf-8"))

    def _on_playback_started(self, ev: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        self.decisions.append(Decision(ts, "playback_started"))
        self._agent_speaking, self._barged_in = True, False
        self._push(ts, TTS, "marker", marker="start")

    def _on_playback_finished(self, ev: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        self.decisions.append(
            Decision(ts, "playback_finished", {
                "interrupted": bool(ev.interrupted),
                "playback_position_s": float(ev.playback_position),
            })
        )
        self._agent_speaking = False
        if ev.interrupted and self._held is not None:
            self._decide("barge_in", "the agent's speech was interrupted", ts)
        self._push(ts, TTS, "marker", marker="end")

    def _on_user_state(self, ev: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        self.decisions.append(Decision(ts, f"user_{ev.new_state}"))
        if ev.new_state == "speaking":
            self._user_speaking, self._speech_frame = True, None
            if not self._agent_speaking or self._barged_in or self._held is not None:
                # No agent turn to interrupt, one already interrupted, or one LiveKit is still
                # deciding on (this speech is decided with it).
                self._count(self.ignored, "user_state_changed:speaking")
                self._mark_user_speech(ts)
            elif self._interruptible():
                # LiveKit decides later whether this interrupts: hold the ticks until it did.
                self._held, self._held_since, self._held_false = [], ts, False
                self._mark_user_speech(ts)
            else:
                self._barged_in = True
                self._mark_user_speech(ts)
                self._push(ts, CONTROL, "marker", marker="barge_in")
        elif ev.new_state == "listening":
            self._user_speaking = False
            self._push(ts, CONTROL, "marker", marker="end_of_turn")
        else:
            self._count(self.ignored, f"user_state_changed:{ev.new_state}")

    def _on_agent_state(self, ev: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        self.decisions.append(Decision(ts, f"agent_{ev.new_state}"))
        if ev.new_state == "thinking" and not self._agent_speaking:
            # The ledger takes an outbound start as the answer to a pending barge-in: a new
            # response counts as one only once the room output says the agent stopped.
            self._push(ts, LLM, "marker", marker="start")
        else:
            self._count(self.ignored, f"agent_state_changed:{ev.new_state}")

    def _on_transcribed(self, ev: Any) -> None:
        if self._finished:
            return
        if not ev.is_final or not ev.transcript:
            self._count(self.ignored, "user_input_transcribed:interim")
            return
        ts = self._now()
        self._close_due(ts)
        self._push(ts, ASR, "text", payload=ev.transcript.encode("utf-8"))

    def _on_tools(self, ev: Any) -> None:
        ts = self._event_time()
        if ts is None:
            return
        for out in ev.function_call_outputs:
            result = out.output
            if not isinstance(result, str):
                result = json.dumps(result, sort_keys=True, separators=(",", ":"), default=str)
            self._push(ts, SUBSTRATE, "text", payload=result.encode("utf-8"))

    def _on_false_interruption(self, ev: Any) -> None:
        ts = self._now()
        resumed = bool(getattr(ev, "resumed", False))
        self.decisions.append(Decision(ts, "agent_false_interruption", {"resumed": resumed}))
        if self._held is not None:
            # Not final: a transcript that comes later still commits the turn (and interrupts
            # the resumed speech). Kept for the bound and the call's end.
            self._held_false = True

    def _on_paused(self) -> None:
        self.decisions.append(Decision(self._now(), "output_paused"))

    def _on_turn_decided(self, committed: bool, transcript: str) -> None:
        ts = self._now()
        self.decisions.append(
            Decision(ts, "turn_committed" if committed else "turn_dropped",
                     {"transcript": transcript})
        )
        if self._held is not None and not self._finished:
            if committed:
                self._decide("barge_in", "LiveKit committed the user's turn", ts)
            else:
                self._decide("backchannel", "LiveKit dropped the user's turn", ts)

    # -- user speech over the agent -----------------------------------------------------------

    def _interruptible(self) -> bool:
        """Whether LiveKit will decide on user speech now: the agent's current speech allows
        interruptions and the observer sees LiveKit's turn decisions."""
        speech = getattr(self._session, "current_speech", None)
        return (
            self._turn_hooked
            and speech is not None
            and bool(getattr(speech, "allow_interruptions", False))
            and not getattr(speech, "interrupted", True)
        )

    def _mark_user_speech(self, ts: int) -> None:
        frame = ts // SPEECH_FRAME_NS
        if self._user_speaking and frame != self._speech_frame:
            self._speech_frame = frame
            self._enqueue((ts, CONTROL, "marker", None, USER_SPEECH))

    def _decide_undecided(self, when: str, ts: int) -> None:
        if self._held_false:
            self._decide("backchannel", f"a false interruption and no turn {when}", ts)
        else:
            self._decide("barge_in", f"no decision {when}", ts)

    def _decide(self, kind: str, reason: str, ts: int) -> None:
        """LiveKit decided on the held user speech: a ``barge_in`` (it interrupts, or the
        observer could not tell) or a ``backchannel`` marker, stamped when that speech began,
        then every held tick, in order."""
        held, since = self._held or [], self._held_since
        self._held, self._held_false = None, False
        self.decisions.append(Decision(ts, f"overlap_{kind}", {
            "reason": reason, "user_began_ns": since, "held_ticks": len(held),
        }))
        if kind == "barge_in":
            self._barged_in = True
            marker: Any = "barge_in"
        else:
            marker = BACKCHANNEL
        self._close_due(since)
        self._push_now(since, CONTROL, "marker", None, marker)
        for item in held:
            self._close_due(item[0])
            self._push_now(*item)

    def _on_close(self, ev: Any) -> None:
        self.decisions.append(Decision(self._now(), "close", {"reason": str(ev.reason)}))
        self.finish()

    # -- the pipeline -------------------------------------------------------------------------

    def _event_time(self) -> Optional[int]:
        """Now, in stream time, with the windows that ended before it closed; None once the call
        has finished (the event is not taken)."""
        if self._finished:
            return None
        ts = self._now()
        self._close_due(ts)
        return ts

    def _window_audio(self, ts: int) -> AudioStats:
        window_id = self._spec.window_of(ts)
        if not self.window_audio or self.window_audio[-1].window_id != window_id:
            self.window_audio.append(AudioStats(window_id=window_id))
        return self.window_audio[-1]

    def _close_due(self, ts: int) -> None:
        if self._held is not None:
            return  # windows close as the held ticks are pushed
        open_id = self._pipeline.open_window_id
        if open_id is not None and self._spec.window_of(ts) > open_id:
            try:
                closed = self._pipeline.close_window()
            except JouleclawError as e:
                self._count(self.refused, e.code)
                return
            if closed is not None:
                self._emit(closed)

    def _push(self, ts: int, channel: int, kind: str, *, payload: Optional[bytes] = None,
              marker: Optional[str] = None) -> None:
        self._mark_user_speech(ts)
        self._enqueue((ts, channel, kind, payload, marker))

    def _enqueue(self, item: tuple) -> None:
        if self._held is None:
            self._push_now(*item)
            return
        self._held.append(item)
        if item[0] - self._held_since > self._max_hold_ns:
            self._decide_undecided("within max_hold_ns", item[0])

    def _push_now(self, ts: int, channel: int, kind: str, payload: Optional[bytes],
                  marker: Any) -> None:
        chunks = [payload] if payload is None or len(payload) <= self._max_chunk else [
            payload[i : i + self._max_chunk] for i in range(0, len(payload), self._max_chunk)
        ]
        for chunk in chunks:
            try:
                outcome = self._pipeline.push(ts, channel, kind, payload=chunk, marker=marker)
            except JouleclawError as e:
                self._count(self.refused, e.code)
                return
            self._count(self.ticks, channel)
            if self._trace is not None:
                self._write_trace(ts, channel, kind, chunk, marker, outcome.window_id)
            if outcome.closed is not None:
                self._emit(outcome.closed)
            if outcome.early is not None and outcome.early.kind == "yield":
                if self._on_yield is not None:
                    self._on_yield(YieldEvent(ts, outcome.window_id, outcome.early))

    def _write_trace(self, ts: int, channel: int, kind: str, payload: Optional[bytes],
                     marker: Any, window_id: int) -> None:
        # One line of spec/TICK-TRACE.md per accepted tick: `jouleclaw run` replays the call.
        line: dict[str, Any] = {"ts_ns": ts, "channel_id": channel, "kind": kind}
        if marker is not None:
            line["marker"] = marker
        if payload:
            line["bytes_hex"] = payload.hex()
        if window_id != self._spec.window_of(ts):
            line["window_id"] = window_id
        self._trace.write(json.dumps(line, separators=(",", ":")) + "\n")

    def _emit(self, closed: ClosedWindow) -> None:
        self.receipts.append(closed)
        if self._on_receipt is not None:
            self._on_receipt(closed)

    @staticmethod
    def _count(table: dict, key: Any) -> None:
        table[key] = table.get(key, 0) + 1
