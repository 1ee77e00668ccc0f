"""A voice call on a real Pipecat pipeline, with scripted processors standing in for the
transports, STT, LLM and TTS services, and a clock the script sets.

The pipeline is Pipecat's own: ``Pipeline`` of ``FrameProcessor`` subclasses (the output
transport's stand-in a ``BaseOutputTransport`` subclass, so the observer sees its pushes as a
transport's: the chunks it has written, its bot-speaking frames) plus Pipecat's
``IdentityFilter``, run by ``PipelineWorker`` (the class ``PipelineTask`` is a deprecated alias
of) under ``WorkerRunner`` (``PipelineRunner``'s), with the ``ReceiptObserver`` attached as a
Pipecat observer. The script says, for every step, at which stream time which stand-in pushes
which frame. The worker's clock is a ``BaseClock`` the conductor sets before each push, so the
pipeline clock each frame is stamped with is the script's time: nothing depends on how fast
the machine runs. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pipecat.clocks.base_clock import BaseClock
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    FunctionCallResultFrame,
    InputAudioRawFrame,
    LLMTextFrame,
    SystemFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.filters.identity_filter import IdentityFilter
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams
from pipecat.workers.runner import WorkerRunner

MS = 1_000_000
MIC_FRAME = 6_400  # 200 ms of 16 kHz 16-bit mono
TTS_FRAME = 4_800  # 200 ms of 12 kHz 16-bit mono
INTERRUPT = "interrupt"  # a script step: the user's transport broadcasts an interruption


class ScriptClock(BaseClock):
    """The pipeline clock, set by the conductor (nanoseconds)."""

    def __init__(self) -> None:
        self.now_ns = 0

    def start(self) -> None:
        pass

    def get_time(self) -> int:
        return self.now_ns


class StandIn(FrameProcessor):
    """Stands in for a transport or service: passes every frame on; the conductor makes it push
    the frames the script gives it, as the real service would."""

    async def process_frame(self, frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


class OutputStandIn(BaseOutputTransport):
    """Stands in for the output transport: passes every frame on (no media sender, no
    writing); the conductor makes it push the chunks a real transport pushes after writing
    them, and its ``BotStartedSpeakingFrame``/``BotStoppedSpeakingFrame``."""

    def __init__(self, **kwargs):
        super().__init__(TransportParams(), **kwargs)

    async def process_frame(self, frame, direction: FrameDirection):
        await FrameProcessor.process_frame(self, frame, direction)
        await self.push_frame(frame, direction)


@dataclass
class ScriptDone(SystemFrame):
    """Pushed after the last step: once the observer has seen it, it has seen every step."""


def mic(n: int = MIC_FRAME) -> InputAudioRawFrame:
    return InputAudioRawFrame(audio=bytes(n), sample_rate=16_000, num_channels=1)


def tts_audio(n: int = TTS_FRAME) -> TTSAudioRawFrame:
    return TTSAudioRawFrame(audio=bytes(n), sample_rate=12_000, num_channels=1)


def heard(text: str) -> TranscriptionFrame:
    return TranscriptionFrame(text=text, user_id="user", timestamp="")


def said(text: str) -> LLMTextFrame:
    return LLMTextFrame(text=text)


def tool_result(result) -> FunctionCallResultFrame:
    return FunctionCallResultFrame(
        function_name="get_weather", tool_call_id="call-1", arguments={}, result=result
    )


def user_speaks() -> UserStartedSpeakingFrame:
    return UserStartedSpeakingFrame()


def user_stops() -> UserStoppedSpeakingFrame:
    return UserStoppedSpeakingFrame()


def bot_started() -> BotStartedSpeakingFrame:
    return BotStartedSpeakingFrame()


def bot_stopped() -> BotStoppedSpeakingFrame:
    return BotStoppedSpeakingFrame()


def tts_started() -> TTSStartedFrame:
    return TTSStartedFrame()


def tts_stopped() -> TTSStoppedFrame:
    return TTSStoppedFrame()


async def run_call(script, observer, *, timeout_s: float = 30.0) -> None:
    """Runs `script` — ``(t_ms, who, frame)`` steps with `who` one of ``"user"``, ``"stt"``,
    ``"llm"``, ``"tts"`` (generation), ``"out"`` (the output transport: what was sent) and
    `frame` a frame, ``INTERRUPT``, or an async function called at that step (what happens
    outside the frames, e.g. a turn strategy's decision) — through a Pipecat pipeline with
    `observer` attached, then ends the pipeline with an ``EndFrame``."""
    clock = ScriptClock()
    stand_ins = {who: StandIn(name=who) for who in ("user", "stt", "llm", "tts")}
    stand_ins["out"] = OutputStandIn(name="out")
    pipeline = Pipeline([*stand_ins.values(), IdentityFilter()])
    worker = PipelineWorker(
        pipeline,
        clock=clock,
        observers=[observer],
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
        enable_turn_tracking=False,
    )
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(_worker, *_args):
        started.set()

    async def conduct():
        await started.wait()
        for t_ms, who, frame in script:
            clock.now_ns = t_ms * MS
            if callable(frame):
                await frame()
            elif frame == INTERRUPT:
                await stand_ins[who].broadcast_interruption()
            else:
                await stand_ins[who].push_frame(frame)
        await stand_ins["user"].push_frame(ScriptDone())
        while observer.ignored.get("ScriptDone", 0) == 0:
            await asyncio.sleep(0.001)
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.wait_for(asyncio.gather(runner.run(), conduct()), timeout_s)


# ------------------------------------------------------------------------------------------
# The scripts. 200 ms windows; the user's transport forwards audio while the user speaks.
# ------------------------------------------------------------------------------------------

def question(t0: int = 0):
    """Windows 0-1: the user asks; STT hears it; the turn ends."""
    return [
        (t0, "user", user_speaks()),
        (t0, "user", mic()),
        (t0 + 200, "user", mic()),
        (t0 + 350, "stt", heard("what's the weather in lisbon")),
        (t0 + 380, "user", user_stops()),
    ]


def answer_until_barge_in(barge_in_ms: int):
    """Windows 2-4: the bot answers (a tool result backs it) while the user's mic stays open;
    the TTS generates 2 s of audio at once, the transport sends it 200 ms at a time; the user
    cuts in at `barge_in_ms`."""
    return [
        (400, "user", mic()),
        (402, "llm", tool_result({"city": "Lisbon", "sky": "clear", "temp_c": 24})),
        (405, "tts", tts_started()),
        (410, "llm", said("It's clear and 24 degrees in Lisbon right now.")),
        (412, "tts", tts_audio(10 * TTS_FRAME)),
        (413, "tts", tts_stopped()),
        (415, "out", bot_started()),
        (430, "out", tts_audio()),
        (600, "user", mic()),
        (610, "out", tts_audio()),
        (800, "user", mic()),
        (810, "out", tts_audio()),
        (barge_in_ms, "user", user_speaks()),
        (barge_in_ms, "user", INTERRUPT),
    ]


BARGE_IN_MS = 840


def polite_bot():
    """The transport sends one last 50 ms chunk 60 ms after the barge-in, then the bot stops."""
    return [
        *question(),
        *answer_until_barge_in(BARGE_IN_MS),
        (BARGE_IN_MS + 60, "out", tts_audio(1_200)),
        (BARGE_IN_MS + 90, "out", bot_stopped()),
        (1000, "user", mic()),
        (1100, "stt", heard("thanks")),
        (1150, "user", user_stops()),
    ]


def rude_bot(late_ms: int = 300):
    """The transport keeps sending audio `late_ms` after the barge-in, then the bot stops."""
    return [
        *question(),
        *answer_until_barge_in(BARGE_IN_MS),
        (BARGE_IN_MS + 60, "out", tts_audio(1_200)),
        (1000, "user", mic()),
        (BARGE_IN_MS + late_ms, "out", tts_audio(1_200)),
        (BARGE_IN_MS + late_ms + 10, "out", bot_stopped()),
        (1220, "stt", heard("stop")),
        (1250, "user", user_stops()),
    ]


STORY_CHUNKS = 40
STORY_CHUNK = "Once upon a time a lighthouse keeper counted the ships that never came. " * 6


def storyteller(backed: bool):
    """The user asks for one thing (12.8 kB of audio); the LLM streams 40 chunks of text
    (17.3 kB) over windows 2-4 that nothing the user said accounts for, unless `backed`: then a
    retrieved document of the same size arrives first as the function call's result."""
    steps = [*question()]
    if backed:
        steps.append((390, "llm", tool_result(STORY_CHUNK * STORY_CHUNKS)))
    steps.extend((400 + 15 * i, "llm", said(STORY_CHUNK)) for i in range(STORY_CHUNKS))
    return steps
