"""A voice call on a real Pipecat pipeline, with scripted processors standing in for the
transports, STT, LLM and TTS services, and a clock the script sets: the stand-ins and the
conductor (``run_call``) of the Pipecat example, examples/python/pipecat_receipts.py, and the
scripts the tests play through them.

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

import sys
from pathlib import Path

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    LLMTextFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples/python"))

# The stand-ins, the clock and the conductor are the Pipecat example's.
from pipecat_receipts import (  # noqa: E402
    INTERRUPT,
    MS,
    heard,
    mic,
    question,
    run_call,
)
from pipecat_receipts import answer_until_barge_in as example_answer  # noqa: E402
from pipecat_receipts import tool as tool_result  # noqa: E402
from pipecat_receipts import tts as tts_audio  # noqa: E402

MIC_FRAME = 6_400  # 200 ms of 16 kHz 16-bit mono (``mic()``'s default)
TTS_FRAME = 4_800  # 200 ms of 12 kHz 16-bit mono (``tts_audio()``'s default)

__all__ = ["INTERRUPT", "MS", "heard", "mic", "question", "run_call", "tool_result", "tts_audio"]


def said(text: str) -> LLMTextFrame:
    return LLMTextFrame(text=text)


#: The turn and speech markers the scripts use, by what they say: each call makes a new frame.
user_speaks = UserStartedSpeakingFrame
user_stops = UserStoppedSpeakingFrame
bot_started = BotStartedSpeakingFrame
bot_stopped = BotStoppedSpeakingFrame
tts_started = TTSStartedFrame
tts_stopped = TTSStoppedFrame


# ------------------------------------------------------------------------------------------
# The scripts. 200 ms windows; the user's transport forwards audio while the user speaks.
# ------------------------------------------------------------------------------------------

BARGE_IN_MS = 840


def answer_until_barge_in(barge_in_ms: int):
    """Windows 2-4: the bot answers (a tool result backs it) while the user's mic stays open;
    the TTS generates 2 s of audio at once, the transport sends it 200 ms at a time; the user
    cuts in at `barge_in_ms`."""
    return example_answer(barge_in_ms, generated=10 * TTS_FRAME)


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
