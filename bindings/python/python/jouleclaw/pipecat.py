"""A Pipecat observer that mints a signed ``stream-window/1`` receipt for every window of a call.

``ReceiptObserver`` watches the frames of a Pipecat pipeline (pipecat-ai 1.14; the observer API
``BaseObserver.on_push_frame(FramePushed)``), turns the ones
it knows into ticks of the duplex voice stream, and pushes them into a ``jouleclaw.Pipeline``
(Rust). Judging, hashing, minting and signing all happen there; this module only maps frames to
ticks and hands the results on.

Outbound audio is the audio the output transport has sent. A TTS service's
``TTSAudioRawFrame`` is audio *generated*: Pipecat's ``BaseOutputTransport`` resamples it to
its output rate, cuts it into chunks of ``audio_out_10ms_chunks`` x 10 ms, queues the chunks,
writes them one at a time (``MediaSender`` in ``pipecat/transports/base_output.py``) and, after
each write returned, pushes the written chunk downstream as a **new** frame of the same class.
Only those pushes are mapped onto the TTS channel, each chunk once, stamped with the pipeline
clock at the push (just after its write returned). Audio generated and never sent (dropped by
an interruption, or still queued when the call ended) is counted in ``audio_stats`` and never
judged as spoken. "The bot speaks" is what the transport says: its ``BotStartedSpeakingFrame``
(pushed before the first chunk of a run is written) and ``BotStoppedSpeakingFrame`` (after the
last one, or at once when an interruption drains the queue).

Frame mapping (each frame is taken on its first push only, ``FramePushed.first_push``; an
upstream copy of a frame that was broadcast both ways is skipped, its downstream twin counts):

================================================  =========================================
Pipecat frame (pushed by)                         tick
================================================  =========================================
``InputAudioRawFrame`` (and subclasses)           ``mic`` (1) audio, the PCM bytes
``TranscriptionFrame`` (final)                    ``asr`` (2) text, the UTF-8 text
``LLMTextFrame``                                  ``llm`` (4) text, the UTF-8 text
``LLMFullResponseStartFrame`` while the bot is    ``start`` marker on ``llm`` (4): a new
not speaking                                      response once the bot went quiet (the
                                                  ledger takes an outbound start as the
                                                  answer to a barge-in; while the bot still
                                                  speaks the frame is ignored)
``TTSAudioRawFrame``/``SpeechOutputAudioRawFrame``  ``tts`` (3) audio, the PCM bytes as sent
(a ``BaseOutputTransport``, downstream)           (the transport's output sample rate)
``BotStartedSpeakingFrame`` (the transport)       ``start`` marker on ``tts`` (3); after a
                                                  barge-in while the user still speaks (no
                                                  ``UserStoppedSpeakingFrame`` yet): a
                                                  ``{"custom": "turn_during_user_turn"}``
                                                  marker instead, and the ``start`` follows
                                                  the ``end_of_turn`` when the user stops
``BotStoppedSpeakingFrame`` (the transport)       ``end`` marker on ``tts`` (3)
``UserStartedSpeakingFrame`` while the bot        ``barge_in`` marker on ``control`` (0)
speaks, or ``InterruptionFrame`` while the        (one per bot turn: the second of the pair
bot speaks                                        is not a second barge-in)
``UserStoppedSpeakingFrame``                      ``end_of_turn`` marker on ``control`` (0)
``InputAudioRawFrame`` while the user speaks      also a ``{"custom": "user_speech"}`` marker
(Pipecat's VAD: between ``VADUserStarted-``       on ``control`` (0), one per 200 ms frame
and ``VADUserStoppedSpeakingFrame``), or a         of the interaction panel; while the bot
``UserSpeakingFrame``, or the                     speaks only once Pipecat started a user
``UserStartedSpeakingFrame`` itself               turn, from that frame's own time (see
                                                  "Interaction markers" below)
a user-turn start strategy's                      ``{"custom": "user_speech"}`` and
``on_reset_aggregation`` event while the bot      ``{"custom": "backchannel"}`` on
speaks (``MinWordsUserTurnStartStrategy``: a      ``control`` (0), at the next frame the
transcript with fewer than ``min_words``          observer takes: Pipecat decided the
words), or a ``UserBackchannelFrame``             user's speech is not an interruption
``FunctionCallResultFrame``                       ``substrate`` (5) text: ``result`` as UTF-8
                                                  (a ``str`` as is, anything else as compact
                                                  JSON with sorted keys)
``FunctionCallsStartedFrame`` (the LLM service),  per call, the call ``{"name": ...,
with a ``toolset`` only                           "arguments": ...}`` as ``text`` on the tool
                                                  channel (``TOOL_CALLS``, 6, by default), then
                                                  an ``end`` marker there: one turn of the
                                                  toolset's oracle (see "Tool calls" below)
``EndFrame`` (the output transport passing it     the call ends: the open window is closed,
on, after its last chunk was written),            the documents signed, ``out_dir`` written
``CancelFrame`` (its first push)
``TTSAudioRawFrame`` from anything else (the      not a tick: counted as generated audio in
TTS service: generation, not sending)             ``audio_stats``
other ``OutputAudioRawFrame`` the transport       not a tick: counted in ``audio_stats`` as
sent (a mixer's frames between speech runs)       ``other_sent``
everything else (``TTSStartedFrame`` and          ignored, counted in ``ignored``
``TTSStoppedFrame``: generation boundaries;
``TTSTextFrame``: the words being spoken, not
new LLM output)
================================================  =========================================

A payload larger than the spec's ``max_chunk_bytes`` becomes several ticks of at most that
size, all at the frame's time. A function call's result is the substrate that backs what the
bot says next: without it the ledger counts the bot's answer against the user's input alone.
Only the transport's default destination (``transport_destination`` ``None``) is observed
unless ``destination`` names another.

What a TTS tick's time means, per Pipecat 1.14 output transport (the ``vantage`` the document
can state, and the buffer after it that no stamp here sees):

* **Local audio** (``LocalAudioOutputTransport``, PyAudio): the write blocks until the device
  took the chunk, so the stamp is the end of the chunk's hand-over to the sound card
  (``"sent"``); the device buffer (PortAudio's output latency, often 10-200 ms) still plays
  after it: give it as ``excluded_buffer_ns`` when known.
* **WebSocket** (``WebsocketServerTransport``, ``FastAPIWebsocketTransport``): the write hands
  the serialized chunk to the socket; the transport paces writes to real time, so the stamp
  falls about one chunk (``audio_out_10ms_chunks`` x 10 ms, 40 ms by default) after the bytes
  left. Whatever the far end buffers before playing is not seen: unknown unless the client
  says.
* **WebRTC** (``SmallWebRTCTransport``, Daily): the write hands the frame to the outgoing
  track; the network and the far end's jitter buffer (tens of ms, adaptive) follow, not seen.

A transport or a test sink that reports playout can give ``clock`` the played time and
``vantage="played"``; the tick clock must still never go backwards across channels (a
played time that lags the mic is refused as ``tick_ts_decreasing``), so such a clock must
report played times no earlier than the last tick it stamped.

Interaction markers (the interaction panel, ``spec/INTERACTION-METRICS-V1.md``, signed as
``interaction-metrics/1`` at the end of the call): the meter needs, per 200 ms frame, whether the
user spoke and whether user speech over the bot was a backchannel. What Pipecat 1.14 decides,
and what the observer maps:

* **User speech** is what Pipecat's VAD says (``VADUserStartedSpeakingFrame`` to
  ``VADUserStoppedSpeakingFrame``, from ``VADProcessor`` or the user aggregator's VAD): it starts
  ``start_secs`` after the speech began and ends ``stop_secs`` after it ended (Silero's
  ``VADParams``), so the panel's user segments are the VAD's.
* **Over the bot**, Pipecat's user-turn *start strategy* decides whether speech is a new user
  turn (and, with ``enable_interruptions``, an interruption). ``VADUserTurnStartStrategy``
  starts one on the VAD's start; ``MinWordsUserTurnStartStrategy(min_words=N)`` starts one only
  once a transcript has ``N`` words while the bot speaks (1 word otherwise), and for a shorter
  transcript fires its ``on_reset_aggregation`` event and starts nothing: no
  ``UserStartedSpeakingFrame``, no ``InterruptionFrame``, the bot keeps talking
  (``pipecat/turns/user_start/min_words_user_turn_start_strategy.py``). No frame carries that
  decision, so the observer listens to that event on the strategies given as
  ``user_turn_strategies`` (the object given to ``UserTurnProcessor`` or the user aggregator).
  Until Pipecat decided, speech over the bot is not marked as user speech: a turn start makes
  its own frame and the following ones user speech (and a ``barge_in``, as above), so the user's
  segment starts in the frame where Pipecat interrupted the bot, while the bot's audio still
  runs, not at the next microphone chunk the observer takes (which a loaded machine can deliver
  after the interrupted bot's last audio, in a later frame: the interruption would then not be
  one the panel sees as starting over the bot); a reset while the bot speaks
  is marked as a one-frame backchannel segment (``user_speech`` and ``backchannel`` in the same
  frame), dated at the first frame the observer takes after the event, i.e. when Pipecat
  decided (after the transcript), not when the user started to speak.
* ``UserBackchannelFrame`` (a short acknowledgment "pushed in place of a transcription, so the
  bot keeps talking", consumed by ``LLMUserAggregator``) is marked the same way while the bot
  speaks; nothing in pipecat-ai 1.14 itself pushes one (a service or processor of the
  application may).

What the observer cannot know: whether the user *meant* a backchannel (only that Pipecat did not
take the speech as a turn); speech the VAD did not detect or the STT did not transcribe (no
transcript: no decision, nothing marked); the reason of a reset other than
``MinWordsUserTurnStartStrategy``'s (a ``WakePhraseUserTurnStartStrategy`` also resets when no
wake phrase was heard: not listened to); vocal tics and speech not directed at the agent
(Pipecat 1.14 makes no such decision: ``vocal_tic`` / ``non_directed`` are never marked).

Time: every tick is stamped with ``clock(data)`` in stream nanoseconds. The default is
``data.timestamp``, the pipeline clock (nanoseconds since the pipeline task started, read when
the frame was pushed), so windows follow the pipeline's own time and no wall clock enters the
Rust core. A window closes when a frame of any kind arrives with a time in a later window, or
at ``EndFrame``/``CancelFrame`` (or ``finish()``).

Tool calls: with ``toolset`` (a ``jouleclaw.Toolset``: an MCP ``tools/list`` result or an
OpenAI ``tools`` array compiled into one grammar), the pipeline's oracle also judges every tool
call the LLM makes, as ``jouleclaw run --llm-tools`` judges the LLM channel
(``spec/STRUCTURED-OUTPUT.md``, "Toolsets" and "StructuredOutputOracle"): the call is routed by
its name as its bytes arrive (an unknown name fails at the byte that leaves every tool's name,
``unknown_tag`` at ``/name``) and its arguments are judged by that tool's schema (paths below
``/arguments``). Pipecat 1.14's LLM services parse a call's streamed argument text before any
frame carries it (``FunctionCallsStartedFrame``'s ``FunctionCallFromLLM.arguments`` is a
mapping; a call whose text does not parse is dropped by the service with a warning and never
seen here), so the call's bytes are rebuilt as ``{"name":NAME,"arguments":ARGS}`` with ``ARGS``
``json.dumps`` of the mapping (key order kept, compact, non-ASCII as is; a ``str`` given as
arguments is taken as the model's own text). The call goes on its own outbound text channel,
``tool_channel`` (default ``TOOL_CALLS``, 6, which ``tool_call_spec()`` adds to the spec; with
no ``spec`` given the observer uses ``tool_call_spec()``), so the LLM's spoken text on the
``llm`` channel is never judged as a call; ``tool_channel=LLM`` judges the ``llm`` channel
itself, as ``jouleclaw run --llm-tools`` does, for an agent that speaks only through tools
(every ``LLMTextFrame`` is then a call's bytes). A call that fails fails its window's verdict
(the reason names the turn, code, byte offset and path), and the oracle's name
``structured:<digest prefix>`` in the receipts and the run summary's ``llm_schema`` digest
name the whole toolset. Each call is also judged on its own with ``Toolset.validate``: a
``ToolCallEvent`` (name, id, the bytes, the ``CallVerdict``) goes to ``tool_calls``, the
``on_tool_call`` callback and the ``on_tool_call`` event. Tools the toolset left out are in
``toolset.refused``; a call to one is an unknown name.

Every closed window goes to the ``on_receipt`` callback and the observer's ``on_receipt``
event as it closes. When the call ends (``EndFrame``/``CancelFrame``, cleanup, or
``finish()``) the pipeline signs the ``stop-latency/1`` document (every barge-in: its time, the
last audio sent after it, the stop latency), the ``interaction-metrics/1`` document (the
interaction panel's events) and, with ``seal_every``, the final seal committing to both, and
writes ``out_dir`` as ``jouleclaw run`` does (``signer.pub``, ``receipts.jsonl``,
``receipts.cbor``, ``seals.cbor``, ``stop-latency.cbor``, ``interaction-metrics.cbor``,
``summary.json``; each file written new, then renamed; layout ``stream-at-rest/2``: no
``inclusion.cbor``, each window's inclusion receipt is derived from ``seals.cbor``). The ``on_yield`` callback and
event fire on the barge-in tick itself, with a ``YieldEvent``. A tick the window refuses never
stops the pipeline: it is counted in ``refused`` by its stable code.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    SpeechOutputAudioRawFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    UserBackchannelFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.turns.user_start import MinWordsUserTurnStartStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from . import (
    ASR,
    CONTROL,
    LLM,
    MIC,
    RUN_FILES,
    SUBSTRATE,
    TTS,
    CallVerdict,
    ClosedWindow,
    Finished,
    InteractionDocument,
    JouleclawError,
    Pipeline,
    SigningKey,
    StopLatency,
    StopLatencyDocument,
    StreamSpec,
    Toolset,
    Verdict,
)

__all__ = [
    "AudioStats",
    "ReceiptObserver",
    "ToolCallEvent",
    "YieldEvent",
    "PIPECAT_VERSIONS",
    "TOOL_CALLS",
    "tool_call_spec",
    "tool_call_bytes",
]

#: The pipecat-ai versions this observer is tested against.
PIPECAT_VERSIONS = ">=1.14,<1.15"

_NS_PER_S = 1_000_000_000

#: The interaction panel's frame (``tick_ns`` of ``interaction-metrics/1``): one
#: ``user_speech`` marker per frame of user speech.
INTERACTION_FRAME_NS = 200_000_000

USER_SPEECH = {"custom": "user_speech"}
BACKCHANNEL = {"custom": "backchannel"}



#: The tool-call channel ``tool_call_spec()`` adds: outbound text, one turn per call.
TOOL_CALLS = 6


def tool_call_spec(spec: Optional[StreamSpec] = None, channel: int = TOOL_CALLS) -> StreamSpec:
    """`spec` (default the duplex voice layout) with one more channel, `channel`: outbound
    ``text``, ``application/json``, for the tool calls a toolset judges."""
    base = json.loads((spec or StreamSpec.duplex_voice_default()).to_json())
    base["channels"].append(
        {"id": channel, "direction": "outbound", "kind": "text", "mime": "application/json"}
    )
    return StreamSpec.from_json(json.dumps(base))


def tool_call_bytes(name: str, arguments) -> bytes:
    """The call ``{"name":NAME,"arguments":ARGS}`` as UTF-8: ``ARGS`` is `arguments` as
    compact JSON (key order kept, non-ASCII as is), or `arguments` itself when it is a ``str``
    (the model's own text)."""
    args = arguments if isinstance(arguments, str) else json.dumps(
        arguments, separators=(",", ":"), ensure_ascii=False, default=str
    )
    head = json.dumps({"name": name}, separators=(",", ":"), ensure_ascii=False)[:-1]
    return (head + ',"arguments":' + args + "}").encode("utf-8")


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call the LLM made, judged by the observer's toolset."""

    ts_ns: int
    window_id: int
    name: str
    tool_call_id: str
    call: bytes
    verdict: CallVerdict


@dataclass(frozen=True)
class YieldEvent:
    """A barge-in the oracle answered with ``yield``, on the barge-in tick itself."""

    ts_ns: int
    window_id: int
    verdict: Verdict
    frame: Frame


@dataclass
class AudioStats:
    """Outbound audio of one window (``window_id``) or of the whole call (``window_id`` None).

    ``generated_*``: the TTS service's ``TTSAudioRawFrame``s, at the TTS's sample rate, counted
    in the window of their first push. ``sent_*``: the chunks the output transport wrote, at
    its output sample rate, in the window of the push after the write (these are the TTS
    channel's ticks). ``other_sent_*``: other audio the transport wrote (a mixer's frames
    between speech runs), not on the TTS channel. Durations are the audio's own length
    (bytes / (rate x channels x 2)), so audio at different rates compares.
    """

    window_id: Optional[int] = None
    generated_bytes: int = 0
    generated_ns: int = 0
    sent_bytes: int = 0
    sent_ns: int = 0
    other_sent_bytes: int = 0
    other_sent_ns: int = 0

    @property
    def unsent_ns(self) -> int:
        """Audio generated and not (yet) sent: ``generated_ns - sent_ns``, at least 0. Over a
        call this is what interruptions dropped plus what was still queued at the end. The
        transport pads the last chunk of a speech run with silence to a whole chunk, so sent
        audio can exceed generated audio by up to one chunk per run (then this is 0)."""
        return max(0, self.generated_ns - self.sent_ns)


def _audio_ns(frame: OutputAudioRawFrame) -> int:
    per_s = frame.sample_rate * frame.num_channels * 2
    return len(frame.audio) * _NS_PER_S // per_s if per_s > 0 else 0


class ReceiptObserver(BaseObserver):
    """Mints a signed receipt for every window of the pipeline it observes (see the module docs).

    Args:
        steward: The receipts' ``steward``.
        stream_id: The receipts' ``stream_id``.
        signing_key: The signer (default: a fresh key; ``public_key`` tells which).
        spec: The stream spec (default: ``StreamSpec.duplex_voice_default()``).
        epoch_unix: The Unix second at stream time 0 (each receipt's ``closed_at`` is it plus
            the window's end in whole seconds).
        seal_every: Seal the stream: a ``stream-seal/1`` checkpoint every this many windows
            and a final one at the end (default ``None``: one signature per window, unsealed).
        window_signatures: With ``seal_every``: which windows are also signed one by one,
            ``"all"`` (default), ``"non_pass"`` or ``"none"``.
        out_dir: A run directory the pipeline writes when the call ends (``signer.pub``,
            ``receipts.jsonl``, ``receipts.cbor``, ``seals.cbor`` when sealed (no
            ``inclusion.cbor``: layout ``stream-at-rest/2``), ``stop-latency.cbor``,
            ``interaction-metrics.cbor``, ``summary.json``: what ``jouleclaw receipts
            verify --pub DIR/signer.pub DIR`` and ``jouleclaw report DIR`` read). Created if
            missing; a directory that already holds one of these files is refused.
        on_receipt: Called with every ``ClosedWindow``.
        on_yield: Called with a ``YieldEvent`` on the barge-in tick.
        clock: Stream time of a push, in nanoseconds (default: ``data.timestamp``).
        keep_receipts: How many of the latest receipts ``receipts`` (and of the latest windows'
            ``window_audio``) are kept (memory stays bounded on a long call; ``out_dir`` and
            ``on_receipt`` see every one).
        destination: The output transport destination whose audio is the bot's voice
            (default ``None``: the transport's default destination).
        vantage: What the TTS audio ticks' times mark, stated in the signed document
            (``stop-latency/2``): ``"sent"`` (the default clock: just after the output
            transport's write of the chunk returned) or ``"played"`` (a ``clock`` that gives
            the sink's playout time). ``None`` (default): a ``stop-latency/1`` document, which
            states neither.
        excluded_buffer_ns: With ``vantage``: the audio the transport keeps buffered after
            that point, which the stop latency does not include, when known (see the module
            docs per transport); ``None``: not known.
        user_turn_strategies: The ``UserTurnStrategies`` given to Pipecat's
            ``UserTurnProcessor`` or user aggregator: the observer listens to the
            ``on_reset_aggregation`` event of each ``MinWordsUserTurnStartStrategy`` in it, the
            decision that speech over the bot is not a turn (marked as a backchannel; see
            "Interaction markers"). ``None``: no such decision is seen.
        toolset: A ``jouleclaw.Toolset``: the oracle judges every tool call the LLM makes with
            it (see the module docs, "Tool calls"). ``None`` (default): calls are not judged.
        tool_channel: With ``toolset``: the channel the calls go on (default ``TOOL_CALLS``;
            ``LLM`` judges the ``llm`` channel as ``jouleclaw run --llm-tools`` does). It must
            be a text channel of ``spec``; with no ``spec``, ``tool_call_spec()`` adds it.
        on_tool_call: With ``toolset``: called with a ``ToolCallEvent`` for every call.
    """

    def __init__(
        self,
        *,
        steward: str,
        stream_id: str,
        signing_key: Optional[SigningKey] = None,
        spec: Optional[StreamSpec] = None,
        epoch_unix: int = 0,
        out_dir: Union[str, os.PathLike, None] = None,
        on_receipt: Optional[Callable[[ClosedWindow], None]] = None,
        on_yield: Optional[Callable[[YieldEvent], None]] = None,
        clock: Optional[Callable[[FramePushed], int]] = None,
        keep_receipts: int = 1024,
        destination: Optional[str] = None,
        seal_every: Optional[int] = None,
        window_signatures: str = "all",
        vantage: Optional[str] = None,
        excluded_buffer_ns: Optional[int] = None,
        user_turn_strategies: Optional[UserTurnStrategies] = None,
        toolset: Optional[Toolset] = None,
        tool_channel: Optional[int] = None,
        on_tool_call: Optional[Callable[[ToolCallEvent], None]] = None,
        **kwargs,
    ):
        # Every push, not only the first: the end of the call is the EndFrame's push by the
        # output transport, which is not its first. Every other frame is taken at its first
        # push only (``data.first_push``).
        super().__init__(observe_every_push=True, **kwargs)
        if out_dir is not None:
            out = Path(out_dir)
            taken = [name for name in RUN_FILES if (out / name).exists()]
            if taken:
                raise FileExistsError(f"{out} already holds {', '.join(taken)}")
            out.mkdir(parents=True, exist_ok=True)
        if toolset is not None and tool_channel is None:
            tool_channel = TOOL_CALLS
            if spec is None:
                spec = tool_call_spec()
        self._pipeline = Pipeline(
            steward,
            stream_id,
            signing_key=signing_key,
            spec=spec,
            epoch_unix=epoch_unix,
            seal_every=seal_every,
            window_signatures=window_signatures,
            out_dir=None if out_dir is None else str(out_dir),
            vantage=vantage,
            excluded_buffer_ns=excluded_buffer_ns,
            toolset=toolset,
            tool_channel=tool_channel,
        )
        self._toolset = toolset
        self._tool_channel = tool_channel
        self._on_tool_call = on_tool_call
        self._spec = self._pipeline.spec
        self._max_chunk = self._spec.max_chunk_bytes
        self._clock = clock or (lambda data: data.timestamp)
        self._on_receipt = on_receipt
        self._on_yield = on_yield
        self._destination = destination
        self._bot_speaking = False
        self._barged_in = False
        self._user_speaking = False
        self._deferred_start: Optional[int] = None
        self._vad_speaking = False
        self._speech_frame: Optional[int] = None
        self._backchannel_pending = False
        self._finished = False
        #: Backchannels marked: (stream ns, what decided it: the strategy's or frame's class).
        self.backchannels: list[tuple[int, str]] = []
        #: Times (stream ns) the bot started speaking again after a barge-in while the user's
        #: turn was still open: not taken as the bot's next turn (see ``_map``), each recorded
        #: as a ``{"custom": "turn_during_user_turn"}`` marker on ``tts``.
        self.turns_during_user_turn: list[int] = []
        #: Frames taken (first pushes, upstream broadcast copies left out).
        self.frames_seen = 0
        #: The latest ``keep_receipts`` receipts, in window order.
        self.receipts: deque[ClosedWindow] = deque(maxlen=keep_receipts)
        #: Ticks pushed, by channel id.
        self.ticks: dict[int, int] = {}
        #: Frames not mapped to a tick, by class name.
        self.ignored: dict[str, int] = {}
        #: Ticks the pipeline refused, by refusal code.
        self.refused: dict[str, int] = {}
        #: Outbound audio of the whole call: generated, sent, not sent (see ``AudioStats``).
        self.audio_stats = AudioStats()
        #: Outbound audio per window, the latest ``keep_receipts`` windows that had any.
        self.window_audio: deque[AudioStats] = deque(maxlen=keep_receipts)
        #: What the pipeline's ``finish()`` returned (the signed stop-latency document, the
        #: final seal), once the call has ended.
        self.finished: Optional[Finished] = None
        #: With a toolset: the latest ``keep_receipts`` tool calls, each judged on its own.
        self.tool_calls: deque[ToolCallEvent] = deque(maxlen=keep_receipts)
        self._register_event_handler("on_receipt", sync=True)
        self._register_event_handler("on_tool_call", sync=True)
        self._register_event_handler("on_yield", sync=True)
        if user_turn_strategies is not None:
            self.watch_user_turn_strategies(user_turn_strategies)

    def watch_user_turn_strategies(self, strategies: UserTurnStrategies) -> int:
        """Listens to the ``on_reset_aggregation`` event of each
        ``MinWordsUserTurnStartStrategy`` in `strategies` (the object given to Pipecat's
        ``UserTurnProcessor`` or user aggregator): a reset while the bot speaks is Pipecat
        deciding that the user's speech is not a turn, marked as a backchannel (see the module
        docs, "Interaction markers"). Returns how many strategies are watched."""
        n = 0
        for strategy in strategies.start or []:
            if isinstance(strategy, MinWordsUserTurnStartStrategy):
                strategy.add_event_handler("on_reset_aggregation", self._on_reset_aggregation)
                n += 1
        return n

    @property
    def public_key(self) -> bytes:
        """The signer's 32-byte public key."""
        return self._pipeline.public_key

    @property
    def public_key_text(self) -> str:
        """The public key file text (``signer.pub``)."""
        return self._pipeline.public_key_text

    @property
    def toolset(self) -> Optional[Toolset]:
        """The toolset the tool calls are judged with, if any."""
        return self._toolset

    @property
    def pipeline(self) -> Pipeline:
        """The underlying ``jouleclaw.Pipeline``."""
        return self._pipeline

    @property
    def stop_latency(self) -> Optional[StopLatencyDocument]:
        """The signed ``stop-latency/1`` document of the call, once it has ended."""
        return None if self.finished is None else self.finished.stop_latency

    @property
    def interaction(self) -> Optional[InteractionDocument]:
        """The signed ``interaction-metrics/1`` document of the call, once it has ended."""
        return None if self.finished is None else self.finished.interaction

    def stop_latencies(self) -> list[StopLatency]:
        """Every barge-in so far: its time, the last audio sent after it, the stop latency."""
        if self.finished is not None:
            return list(self.finished.stop_latency.barge_ins)
        return self._pipeline.stop_latencies()

    @property
    def bot_speaking(self) -> bool:
        """Whether the output transport last said the bot started speaking."""
        return self._bot_speaking

    async def on_push_frame(self, data: FramePushed):
        """Maps one pushed frame onto the stream (see the module docs)."""
        frame = data.frame
        if self._finished:
            return
        if isinstance(frame, EndFrame):
            # The call ends when the output transport passes the EndFrame on: its stop() has
            # waited for every queued chunk to be written, so all the audio sent is in. (A
            # pipeline without an output transport ends at cleanup.)
            if data.direction == FrameDirection.DOWNSTREAM and isinstance(
                data.source, BaseOutputTransport
            ):
                await self._close_due(int(self._clock(data)))
                await self.finish()
            return
        if not data.first_push:
            return
        if data.direction == FrameDirection.UPSTREAM and frame.broadcast_sibling_id is not None:
            return
        self.frames_seen += 1
        ts = int(self._clock(data))
        await self._close_due(ts)
        if isinstance(frame, CancelFrame):
            await self.finish()
            return
        if self._backchannel_pending:
            # Pipecat decided (between the previous frame taken and this one) that the
            # user's speech over the bot is not a turn.
            self._backchannel_pending = False
            await self._backchannel(ts, "MinWordsUserTurnStartStrategy")
        sent = self._sent_by_transport(data)
        if sent and frame.transport_destination != self._destination:
            # Another destination's audio and bot-speaking frames: not this voice.
            self._count(self.ignored, type(frame).__name__)
            return
        await self._map(frame, ts, sent)

    @staticmethod
    def _sent_by_transport(data: FramePushed) -> bool:
        """Whether the frame comes from the output transport, downstream: for audio, a chunk
        the transport has written."""
        return isinstance(data.source, BaseOutputTransport) and (
            data.direction == FrameDirection.DOWNSTREAM
        )

    def _is_sent_speech(self, frame: Frame, sent: bool) -> bool:
        """Whether an audio frame is the bot's voice as sent: a chunk of TTS or speech audio
        the output transport pushed after writing it."""
        return sent and isinstance(frame, (TTSAudioRawFrame, SpeechOutputAudioRawFrame))

    async def _map(self, frame: Frame, ts: int, sent: bool):
        if isinstance(frame, InputAudioRawFrame):
            await self._push(ts, MIC, "audio", frame, payload=frame.audio)
            await self._user_speech(ts, frame)
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._vad_speaking = True
            self._count(self.ignored, type(frame).__name__)
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._vad_speaking = False
            self._count(self.ignored, type(frame).__name__)
        elif isinstance(frame, UserSpeakingFrame):
            await self._user_speech(ts, frame)
        elif isinstance(frame, UserBackchannelFrame):
            if self._bot_speaking:
                await self._backchannel(ts, type(frame).__name__)
            else:
                self._count(self.ignored, "UserBackchannelFrame while the bot is silent")
        elif isinstance(frame, TranscriptionFrame):
            await self._push(ts, ASR, "text", frame, payload=frame.text.encode("utf-8"))
        elif isinstance(frame, LLMTextFrame):
            await self._push(ts, LLM, "text", frame, payload=frame.text.encode("utf-8"))
        elif isinstance(frame, LLMFullResponseStartFrame) and not self._bot_speaking:
            # The ledger takes an outbound start as the answer to a pending barge-in: a new
            # response counts as one only once the transport says the bot has stopped, and
            # only once the user's turn has ended (before that it is the cascade answering a
            # turn still being spoken, not the bot's next turn).
            if self._barge_in_open():
                self._count(self.ignored, "LLMFullResponseStartFrame during the user's turn")
            else:
                await self._push(ts, LLM, "marker", frame, marker="start")
        elif isinstance(frame, OutputAudioRawFrame):
            await self._map_output_audio(frame, ts, sent)
        elif isinstance(frame, BotStartedSpeakingFrame) and sent:
            if self._barge_in_open():
                # The transport says the bot speaks again while the user who cut in is still
                # talking: the cancelled reply still draining, or a reply over the user. Not
                # the next turn: the barge-in stays pending, so the audio keeps counting
                # against it; recorded, and the turn starts when the user's turn ends.
                self._bot_speaking = True
                self._deferred_start = ts
                self.turns_during_user_turn.append(ts)
                await self._push(
                    ts, TTS, "marker", frame, marker={"custom": "turn_during_user_turn"}
                )
            else:
                self._bot_speaking, self._barged_in = True, False
                await self._push(ts, TTS, "marker", frame, marker="start")
        elif isinstance(frame, BotStoppedSpeakingFrame) and sent:
            self._bot_speaking = False
            await self._push(ts, TTS, "marker", frame, marker="end")
        elif isinstance(frame, (UserStartedSpeakingFrame, InterruptionFrame)):
            if isinstance(frame, UserStartedSpeakingFrame):
                self._user_speaking = True
            if self._bot_speaking and not self._barged_in:
                self._barged_in = True
                await self._push(ts, CONTROL, "marker", frame, marker="barge_in")
            else:
                self._count(self.ignored, type(frame).__name__)
            if isinstance(frame, UserStartedSpeakingFrame):
                # The user's turn starts now: user speech from this frame on (while the VAD
                # says the user speaks), not from the next microphone chunk.
                await self._user_speech(ts, frame)
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._user_speaking = False
            await self._push(ts, CONTROL, "marker", frame, marker="end_of_turn")
            if self._deferred_start is not None:
                # The bot started speaking during the user's turn and still speaks: its next
                # turn begins now that the user's turn has ended.
                self._deferred_start = None
                if self._bot_speaking:
                    self._barged_in = False
                    await self._push(ts, TTS, "marker", frame, marker="start")
        elif isinstance(frame, FunctionCallResultFrame):
            result = frame.result
            if not isinstance(result, str):
                result = json.dumps(result, sort_keys=True, separators=(",", ":"), default=str)
            await self._push(ts, SUBSTRATE, "text", frame, payload=result.encode("utf-8"))
        elif isinstance(frame, FunctionCallsStartedFrame) and self._toolset is not None:
            for call in frame.function_calls:
                await self._tool_call(ts, frame, call.function_name, call.tool_call_id,
                                      call.arguments)
        else:
            # Every frame the table does not name: TTSStartedFrame/TTSStoppedFrame (generation
            # boundaries), TTSTextFrame (the words being spoken, not new LLM output), the bot
            # speaking frames of another destination, ...
            self._count(self.ignored, type(frame).__name__)

    async def _tool_call(self, ts: int, frame: Frame, name: str, tool_call_id: str,
                         arguments) -> None:
        """One call: its bytes as text on the tool channel, then an ``end`` marker (one turn
        of the toolset's oracle); judged on its own too (``tool_calls``)."""
        call = tool_call_bytes(name, arguments)
        await self._push(ts, self._tool_channel, "text", frame, payload=call)
        await self._push(ts, self._tool_channel, "marker", frame, marker="end")
        event = ToolCallEvent(ts, self._spec.window_of(ts), name, tool_call_id, call,
                              self._toolset.validate(call))
        self.tool_calls.append(event)
        if self._on_tool_call is not None:
            self._on_tool_call(event)
        await self._call_event_handler("on_tool_call", event)

    async def _on_reset_aggregation(self, strategy) -> None:
        """``MinWordsUserTurnStartStrategy`` reset: a transcript with fewer words than it
        needs. While the bot speaks that is Pipecat deciding not to interrupt it; marked at
        the next frame taken (the event carries no time)."""
        if self._bot_speaking and not self._finished:
            self._backchannel_pending = True
        else:
            self._count(self.ignored, "on_reset_aggregation while the bot is silent")

    async def _backchannel(self, ts: int, why: str) -> None:
        """A one-frame backchannel segment: ``user_speech`` and ``backchannel`` at `ts`."""
        self.backchannels.append((ts, why))
        self._speech_frame = ts // INTERACTION_FRAME_NS
        await self._push(ts, CONTROL, "marker", None, marker=USER_SPEECH)
        await self._push(ts, CONTROL, "marker", None, marker=BACKCHANNEL)

    async def _user_speech(self, ts: int, frame: Frame) -> None:
        """One ``user_speech`` marker per interaction frame while Pipecat's VAD says the user
        speaks; over the bot only once Pipecat started a user turn."""
        if not self._vad_speaking or (self._bot_speaking and not self._user_speaking):
            return
        f = ts // INTERACTION_FRAME_NS
        if f != self._speech_frame:
            self._speech_frame = f
            await self._push(ts, CONTROL, "marker", frame, marker=USER_SPEECH)

    def _barge_in_open(self) -> bool:
        """A barge-in is pending and the user's turn has not ended."""
        return self._barged_in and self._user_speaking

    async def _map_output_audio(self, frame: OutputAudioRawFrame, ts: int, sent: bool):
        n, ns = len(frame.audio), _audio_ns(frame)
        window = self._window_audio(ts)
        if self._is_sent_speech(frame, sent):
            for stats in (self.audio_stats, window):
                stats.sent_bytes += n
                stats.sent_ns += ns
            await self._push(ts, TTS, "audio", frame, payload=frame.audio)
        elif sent:
            for stats in (self.audio_stats, window):
                stats.other_sent_bytes += n
                stats.other_sent_ns += ns
        elif isinstance(frame, TTSAudioRawFrame):
            for stats in (self.audio_stats, window):
                stats.generated_bytes += n
                stats.generated_ns += ns
        else:
            # Audio on its way to the transport that no TTS generated (e.g. a sound the
            # application queued): it counts when the transport sends it.
            self._count(self.ignored, type(frame).__name__)

    def _window_audio(self, ts: int) -> AudioStats:
        window_id = self._spec.window_of(ts)
        if not self.window_audio or self.window_audio[-1].window_id != window_id:
            self.window_audio.append(AudioStats(window_id=window_id))
        return self.window_audio[-1]

    async def finish(self):
        """Closes the open window, signs the stop-latency document (and the final seal) and
        writes ``out_dir``. Called at ``EndFrame``/``CancelFrame`` and on cleanup; later calls
        do nothing."""
        if self._finished:
            return
        self._finished = True
        try:
            self.finished = self._pipeline.finish()
        except JouleclawError as e:
            self._count(self.refused, e.code)
            return
        if self.finished.last is not None:
            await self._emit(self.finished.last)

    async def cleanup(self):
        """Pipecat's cleanup hook: finishes if the pipeline ended without an EndFrame."""
        await self.finish()
        await super().cleanup()

    async def _close_due(self, ts: int):
        open_id = self._pipeline.open_window_id
        if open_id is not None and self._spec.window_of(ts) > open_id:
            try:
                closed = self._pipeline.close_window()
            except JouleclawError as e:
                self._count(self.refused, e.code)
                return
            if closed is not None:
                await self._emit(closed)

    async def _push(self, ts: int, channel: int, kind: str, frame: Optional[Frame], *,
                    payload: Optional[bytes] = None, marker: Optional[Union[str, dict]] = None):
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
            if outcome.closed is not None:
                await self._emit(outcome.closed)
            if outcome.early is not None and outcome.early.kind == "yield":
                event = YieldEvent(ts, outcome.window_id, outcome.early, frame)
                if self._on_yield is not None:
                    self._on_yield(event)
                await self._call_event_handler("on_yield", event)

    async def _emit(self, closed: ClosedWindow):
        self.receipts.append(closed)
        if self._on_receipt is not None:
            self._on_receipt(closed)
        await self._call_event_handler("on_receipt", closed)

    @staticmethod
    def _count(table: dict, key) -> None:
        table[key] = table.get(key, 0) + 1
