"""A Pipecat observer that mints a signed ``stream-window/1`` receipt for every window of a call.

``ReceiptObserver`` watches the frames of a Pipecat pipeline (pipecat-ai 1.14; the observer API
``BaseObserver.on_push_frame(FramePushed)`` with ``observe_every_push=False``), turns the ones
it knows into ticks of the duplex voice stream, and pushes them into a ``jouleclaw.Pipeline``
(Rust). Judging, hashing, minting and signing all happen there; this module only maps frames to
ticks and hands the results on.

Frame mapping (each frame is taken on its first push only; an upstream copy of a frame that
was broadcast both ways is skipped, its downstream twin counts):

============================================  =========================================
Pipecat frame                                 tick
============================================  =========================================
``InputAudioRawFrame`` (and subclasses)       ``mic`` (1) audio, the PCM bytes
``TranscriptionFrame`` (final)                ``asr`` (2) text, the UTF-8 text
``LLMTextFrame``                              ``llm`` (4) text, the UTF-8 text
``TTSAudioRawFrame``                          ``tts`` (3) audio, the PCM bytes
``TTSStartedFrame``                           ``start`` marker on ``tts`` (3)
``TTSStoppedFrame``                           ``end`` marker on ``tts`` (3)
``BotStoppedSpeakingFrame``                   ``end`` marker on ``tts`` (3)
``UserStartedSpeakingFrame`` while the bot    ``barge_in`` marker on ``control`` (0)
speaks, or ``InterruptionFrame`` while the    (one per bot turn: the second of the pair
bot speaks                                    is not a second barge-in)
``UserStoppedSpeakingFrame``                  ``end_of_turn`` marker on ``control`` (0)
``FunctionCallResultFrame``                   ``substrate`` (5) text: ``result`` as UTF-8
                                              (a ``str`` as is, anything else as compact
                                              JSON with sorted keys)
``EndFrame``, ``CancelFrame``                 the open window is closed; outputs finish
everything else (``TTSTextFrame``, the words  ignored, counted in ``ignored``
being spoken, is not new LLM output)
============================================  =========================================

"The bot speaks" from a ``TTSStartedFrame`` or ``BotStartedSpeakingFrame`` until the next
``TTSStoppedFrame`` or ``BotStoppedSpeakingFrame``. A payload larger than the spec's
``max_chunk_bytes`` becomes several ticks of at most that size, all at the frame's time.
A function call's result is the substrate that backs what the bot says next: without it the
ledger counts the bot's answer against the user's input alone.

Time: every tick is stamped with ``clock(data)`` in stream nanoseconds. The default is
``data.timestamp``, the pipeline clock (nanoseconds since the pipeline task started, read when
the frame was pushed), so windows follow the pipeline's own time and no wall clock enters the
Rust core. A window closes when a frame of any kind arrives with a time in a later window, or
at ``EndFrame``/``CancelFrame`` (or ``finish()``).

Receipts go to ``out_dir`` (``receipts.jsonl``: one canonical receipt per line;
``receipts.cbor``: the tagged COSE_Sign1 items as an RFC 8742 sequence; ``signer.pub``: the
public key; the formats of ``jouleclaw run``, without its ``summary.json``) and/or to the
``on_receipt`` callback and the observer's ``on_receipt`` event. The ``on_yield`` callback and
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
    InputAudioRawFrame,
    InterruptionFrame,
    LLMTextFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection

from . import (
    ASR,
    CONTROL,
    LLM,
    MIC,
    SUBSTRATE,
    TTS,
    ClosedWindow,
    JouleclawError,
    Pipeline,
    SigningKey,
    StreamSpec,
    Verdict,
)

__all__ = ["ReceiptObserver", "YieldEvent", "PIPECAT_VERSIONS"]

#: The pipecat-ai versions this observer is tested against.
PIPECAT_VERSIONS = ">=1.14,<1.15"


@dataclass(frozen=True)
class YieldEvent:
    """A barge-in the oracle answered with ``yield``, on the barge-in tick itself."""

    ts_ns: int
    window_id: int
    verdict: Verdict
    frame: Frame


class ReceiptObserver(BaseObserver):
    """Mints a signed receipt for every window of the pipeline it observes (see the module docs).

    Args:
        steward: The receipts' ``steward``.
        stream_id: The receipts' ``stream_id``.
        signing_key: The signer (default: a fresh key; ``public_key`` tells which).
        spec: The stream spec (default: ``StreamSpec.duplex_voice_default()``).
        epoch_unix: The Unix second at stream time 0 (each receipt's ``closed_at`` is it plus
            the window's end in whole seconds).
        out_dir: A directory for ``receipts.jsonl``, ``receipts.cbor`` and ``signer.pub``
            (created if missing; existing receipt files are never overwritten).
        on_receipt: Called with every ``ClosedWindow``.
        on_yield: Called with a ``YieldEvent`` on the barge-in tick.
        clock: Stream time of a push, in nanoseconds (default: ``data.timestamp``).
        keep_receipts: How many of the latest receipts ``receipts`` holds (memory stays
            bounded on a long call; ``out_dir`` and ``on_receipt`` see every one).
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
        **kwargs,
    ):
        super().__init__(observe_every_push=False, **kwargs)
        self._pipeline = Pipeline(
            steward, stream_id, signing_key=signing_key, spec=spec, epoch_unix=epoch_unix
        )
        self._spec = self._pipeline.spec
        self._max_chunk = self._spec.max_chunk_bytes
        self._clock = clock or (lambda data: data.timestamp)
        self._on_receipt = on_receipt
        self._on_yield = on_yield
        self._bot_speaking = False
        self._barged_in = False
        self._finished = False
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
        self._jsonl = self._cbor = None
        if out_dir is not None:
            out = Path(out_dir)
            out.mkdir(parents=True, exist_ok=True)
            # "x": refuse to overwrite the receipts of an earlier run.
            self._jsonl = open(out / "receipts.jsonl", "xb")
            self._cbor = open(out / "receipts.cbor", "xb")
            with open(out / "signer.pub", "x", encoding="ascii") as f:
                f.write(self._pipeline.public_key_text)
        self._register_event_handler("on_receipt", sync=True)
        self._register_event_handler("on_yield", sync=True)

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

    async def on_push_frame(self, data: FramePushed):
        """Maps one pushed frame onto the stream (see the module docs)."""
        frame = data.frame
        if data.direction == FrameDirection.UPSTREAM and frame.broadcast_sibling_id is not None:
            return
        if self._finished:
            return
        self.frames_seen += 1
        ts = int(self._clock(data))
        await self._close_due(ts)
        if isinstance(frame, (EndFrame, CancelFrame)):
            await self.finish()
            return
        await self._map(frame, ts)

    async def _map(self, frame: Frame, ts: int):
        if isinstance(frame, InputAudioRawFrame):
            await self._push(ts, MIC, "audio", frame, payload=frame.audio)
        elif isinstance(frame, TranscriptionFrame):
            await self._push(ts, ASR, "text", frame, payload=frame.text.encode("utf-8"))
        elif isinstance(frame, LLMTextFrame):
            await self._push(ts, LLM, "text", frame, payload=frame.text.encode("utf-8"))
        elif isinstance(frame, TTSAudioRawFrame):
            await self._push(ts, TTS, "audio", frame, payload=frame.audio)
        elif isinstance(frame, TTSStartedFrame):
            self._bot_speaking, self._barged_in = True, False
            await self._push(ts, TTS, "marker", frame, marker="start")
        elif isinstance(frame, (TTSStoppedFrame, BotStoppedSpeakingFrame)):
            self._bot_speaking = False
            await self._push(ts, TTS, "marker", frame, marker="end")
        elif isinstance(frame, BotStartedSpeakingFrame):
            if not self._bot_speaking:
                self._bot_speaking, self._barged_in = True, False
            self._count(self.ignored, type(frame).__name__)
        elif isinstance(frame, (UserStartedSpeakingFrame, InterruptionFrame)):
            if self._bot_speaking and not self._barged_in:
                self._barged_in = True
                await self._push(ts, CONTROL, "marker", frame, marker="barge_in")
            else:
                self._count(self.ignored, type(frame).__name__)
        elif isinstance(frame, UserStoppedSpeakingFrame):
            await self._push(ts, CONTROL, "marker", frame, marker="end_of_turn")
        elif isinstance(frame, FunctionCallResultFrame):
            result = frame.result
            if not isinstance(result, str):
                result = json.dumps(result, sort_keys=True, separators=(",", ":"), default=str)
            await self._push(ts, SUBSTRATE, "text", frame, payload=result.encode("utf-8"))
        else:
            # Every frame the table does not name, TTSTextFrame included (the words being
            # spoken, not new LLM output).
            self._count(self.ignored, type(frame).__name__)

    async def finish(self):
        """Closes the open window and the output files. Called at ``EndFrame``/``CancelFrame``
        and on cleanup; later calls do nothing."""
        if self._finished:
            return
        self._finished = True
        try:
            closed = self._pipeline.close_window()
            if closed is not None:
                await self._emit(closed)
        except JouleclawError as e:
            self._count(self.refused, e.code)
        finally:
            for f in (self._jsonl, self._cbor):
                if f is not None:
                    f.close()

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
                    payload: Optional[bytes] = None, marker: Optional[str] = None):
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
        if self._jsonl is not None:
            self._jsonl.write(closed.receipt_json + b"\n")
            self._jsonl.flush()
        if self._cbor is not None:
            self._cbor.write(closed.cose_sign1)
            self._cbor.flush()
        if self._on_receipt is not None:
            self._on_receipt(closed)
        await self._call_event_handler("on_receipt", closed)

    @staticmethod
    def _count(table: dict, key) -> None:
        table[key] = table.get(key, 0) + 1
