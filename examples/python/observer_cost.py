#!/usr/bin/env python3
"""What ReceiptObserver costs per frame, in microseconds, on this machine.

Feeds the observer the frames of a call as Pipecat hands them over (``FramePushed`` events on
the pipeline clock): every 20 ms a 16 kHz microphone frame; every 40 ms a 12 kHz chunk the
output transport sent (and its share of the TTS's generated audio); every 200 ms a frame the
observer ignores. A window of 200 ms closes (hashed, minted, signed) every ten mic frames.
("mic+close" is the mic frame that closes a window; "hop" a frame passed on by a
later processor, which the observer sees and skips.) Prints the cost per frame by kind over `--seconds` of call time, next to the floor: a
Pipecat observer that does nothing.

    python examples/python/observer_cost.py --seconds 600
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from loguru import logger
from pipecat.frames.frames import (
    BotSpeakingFrame,
    InputAudioRawFrame,
    TTSAudioRawFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from jouleclaw import SigningKey
from jouleclaw.pipecat import ReceiptObserver

MS = 1_000_000


class Idle(BaseObserver):
    """The floor: an observer that does nothing."""

    async def on_push_frame(self, data: FramePushed):
        pass


def frames(seconds: int):
    """(kind, FramePushed) in pipeline-clock order: 20 ms steps."""
    stt = FrameProcessor(name="stt")
    tts = FrameProcessor(name="tts")
    out = BaseOutputTransport(TransportParams(), name="out")
    mic = bytes(640)
    chunk = bytes(960)
    generated = bytes(1_764)  # 40 ms at 22.05 kHz
    for step in range(seconds * 50):
        ts = step * 20 * MS
        kind = "mic+close" if step % 10 == 0 and step else "mic"
        frame = InputAudioRawFrame(mic, 16_000, 1)
        yield kind, FramePushed(stt, tts, frame, FrameDirection.DOWNSTREAM, ts)
        # The same frame passed on by the next processors (VAD, STT, user turns, LLM, TTS):
        # pushes the observer sees and skips.
        for _ in range(5):
            yield "hop", FramePushed(stt, tts, frame, FrameDirection.DOWNSTREAM, ts, False)
        if step % 2 == 0:
            yield "generated", FramePushed(tts, out, TTSAudioRawFrame(generated, 22_050, 1),
                                           FrameDirection.DOWNSTREAM, ts + 1)
            yield "sent", FramePushed(out, out, TTSAudioRawFrame(chunk, 12_000, 1),
                                      FrameDirection.DOWNSTREAM, ts + 2)
        if step % 10 == 0:
            yield "ignored", FramePushed(out, out, BotSpeakingFrame(),
                                         FrameDirection.DOWNSTREAM, ts + 3)


async def measure(observer, events) -> dict[str, list[int]]:
    costs: dict[str, list[int]] = {}
    for kind, data in events:
        t0 = time.perf_counter_ns()
        await observer.on_push_frame(data)
        costs.setdefault(kind, []).append(time.perf_counter_ns() - t0)
    return costs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=600, help="call time to feed")
    args = parser.parse_args(argv)
    logger.remove()
    events = list(frames(args.seconds))
    observer = ReceiptObserver(steward="did:example:bench", stream_id="cost",
                               signing_key=SigningKey.rfc8032_test_key(), keep_receipts=4)
    costs = asyncio.run(measure(observer, events))
    floor = asyncio.run(measure(Idle(), events))
    windows = observer.pipeline.open_window_id or 0
    print(f"{len(events)} frames, {args.seconds} s of call time, {windows} windows closed")
    print("kind        frames   mean_us  median_us  p99_us   floor_mean_us")
    for kind in ("mic", "mic+close", "sent", "generated", "ignored", "hop"):
        c, f = costs[kind], floor[kind]
        p99 = sorted(c)[int(len(c) * 0.99)]
        print(f"{kind:10} {len(c):7}  {statistics.mean(c) / 1e3:8.1f}  "
              f"{statistics.median(c) / 1e3:9.1f}  {p99 / 1e3:6.1f}   "
              f"{statistics.mean(f) / 1e3:8.2f}")
    everything = [x for c in costs.values() for x in c]
    print(f"all frames: mean {statistics.mean(everything) / 1e3:.1f} us; "
          f"{sum(everything) / 1e9 / args.seconds * 100:.2f} % of one core per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
