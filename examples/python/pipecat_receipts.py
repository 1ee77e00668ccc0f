#!/usr/bin/env python3
"""Signed per-window receipts for a Pipecat voice call, offline.

A Pipecat pipeline (pipecat-ai 1.14) of scripted stand-ins for the transports, STT, LLM and TTS
services (the output transport's a BaseOutputTransport subclass: the audio it pushes is the
audio sent) runs a short call under Pipecat's own PipelineWorker and WorkerRunner, with
jouleclaw's ReceiptObserver attached. The user asks about the weather, a tool answers, the bot
speaks, the user cuts in at 0.84 s and the bot stops within 60 ms; the user asks again, and this
time the bot keeps talking 300 ms past the second barge-in. The pipeline clock is set by the
script, so the output is the same on every run.

    pip install ./bindings/python "pipecat-ai==1.14.0"
    python examples/python/pipecat_receipts.py --out /tmp/call-receipts
    jouleclaw receipts verify --pub /tmp/call-receipts/signer.pub /tmp/call-receipts/receipts.cbor

Prints one row per window (the columns of `jouleclaw run`) and writes receipts.jsonl,
receipts.cbor and signer.pub to --out (default: a fresh temporary directory). The receipts are
signed with the published RFC 8032 test key: for demos only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from loguru import logger
from pipecat.clocks.base_clock import BaseClock
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    FunctionCallResultFrame,
    InputAudioRawFrame,
    LLMFullResponseStartFrame,
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
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams
from pipecat.workers.runner import WorkerRunner

import jouleclaw
from jouleclaw.pipecat import ReceiptObserver

MS = 1_000_000
INTERRUPT = "interrupt"


class ScriptClock(BaseClock):
    """The pipeline clock, set by the script before every push."""

    def __init__(self):
        self.now_ns = 0

    def start(self):
        pass

    def get_time(self):
        return self.now_ns


class StandIn(FrameProcessor):
    """Stands in for a transport or service: passes frames on and pushes the script's."""

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


class OutputStandIn(BaseOutputTransport):
    """Stands in for the output transport: passes frames on and pushes the script's (the
    chunks it has written, its bot speaking frames)."""

    def __init__(self, **kwargs):
        super().__init__(TransportParams(), **kwargs)

    async def process_frame(self, frame, direction):
        await FrameProcessor.process_frame(self, frame, direction)
        await self.push_frame(frame, direction)


@dataclass
class ScriptDone(SystemFrame):
    """Marks the end of the script."""


def mic(n=6_400):
    return InputAudioRawFrame(audio=bytes(n), sample_rate=16_000, num_channels=1)


def tts(n=4_800):
    return TTSAudioRawFrame(audio=bytes(n), sample_rate=12_000, num_channels=1)


def heard(text):
    return TranscriptionFrame(text=text, user_id="user", timestamp="")


def tool(result):
    return FunctionCallResultFrame(
        function_name="get_weather", tool_call_id="call-1", arguments={}, result=result
    )


def question(t0=0):
    """Windows 0-1 (from `t0` ms): the user asks; STT hears it; the turn ends."""
    return [
        (t0, "user", UserStartedSpeakingFrame()),
        (t0, "user", mic()),
        (t0 + 200, "user", mic()),
        (t0 + 350, "stt", heard("what's the weather in lisbon")),
        (t0 + 380, "user", UserStoppedSpeakingFrame()),
    ]


def answer_until_barge_in(barge_in_ms, generated=4 * 4_800):
    """Windows 2-4: a tool answers; the TTS generates `generated` bytes at once, the transport
    sends them 200 ms at a time while the user's mic stays open; the user cuts in at
    `barge_in_ms`."""
    return [
        (400, "user", mic()),
        (402, "llm", tool({"city": "Lisbon", "sky": "clear", "temp_c": 24})),
        (405, "tts", TTSStartedFrame()),
        (410, "llm", LLMTextFrame(text="It's clear and 24 degrees in Lisbon right now.")),
        (412, "tts", tts(generated)),  # generated: at once
        (413, "tts", TTSStoppedFrame()),
        (415, "out", BotStartedSpeakingFrame()),
        (430, "out", tts()),  # sent: 200 ms at a time
        (600, "user", mic()),
        (610, "out", tts()),
        (800, "user", mic()),
        (810, "out", tts()),
        (barge_in_ms, "user", UserStartedSpeakingFrame()),
        (barge_in_ms, "user", INTERRUPT),
    ]


SCRIPT = [
    # 0-1: the user asks.
    *question(),
    # 2-4: a tool answers; the bot speaks (0.8 s generated); the user cuts in at 0.84 s; the
    # bot stops in 60 ms.
    *answer_until_barge_in(840),
    (900, "out", tts(1_200)),
    (930, "out", BotStoppedSpeakingFrame()),
    # 5-6: the user asks again; the bot answers.
    (1000, "user", mic()),
    (1100, "stt", heard("and tomorrow in porto")),
    (1180, "user", UserStoppedSpeakingFrame()),
    (1200, "user", mic()),
    (1205, "llm", tool({"city": "Porto", "sky": "rain", "temp_c": 17})),
    (1210, "tts", TTSStartedFrame()),
    (1214, "llm", LLMFullResponseStartFrame()),
    (1215, "llm", LLMTextFrame(text="Tomorrow Porto gets rain and 17 degrees.")),
    (1216, "tts", tts(3 * 4_800)),
    (1217, "tts", TTSStoppedFrame()),
    (1220, "out", BotStartedSpeakingFrame()),
    (1230, "out", tts()),
    # 7-8: a second barge-in at 1.44 s, and the bot talks on until 1.74 s.
    (1400, "user", mic()),
    (1410, "out", tts()),
    (1440, "user", UserStartedSpeakingFrame()),
    (1440, "user", INTERRUPT),
    (1600, "user", mic()),
    (1740, "out", tts(1_200)),
    (1750, "out", BotStoppedSpeakingFrame()),
    (1780, "stt", heard("stop")),
    (1790, "user", UserStoppedSpeakingFrame()),
]


def observed_worker(pipeline, observer, **params):
    """A PipelineWorker running `pipeline` with `observer` attached (no idle timeout, no RTVI,
    no turn tracking; `params` go to the worker), and an event set once the pipeline has
    started."""
    worker = PipelineWorker(
        pipeline,
        observers=[observer],
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
        enable_turn_tracking=False,
        **params,
    )
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(_worker, *_args):
        started.set()

    return worker, started


async def run_call(script, observer, *, timeout_s=30.0):
    """Runs `script`, ``(t_ms, who, frame)`` steps with `who` one of the stand-ins ``"user"``,
    ``"stt"``, ``"llm"``, ``"tts"`` and ``"out"`` (the output transport) and `frame` a frame,
    ``INTERRUPT`` or an async function called at that step, through a Pipecat pipeline of the
    stand-ins with `observer` attached, then ends the pipeline with an EndFrame."""
    clock = ScriptClock()
    stand_ins = {who: StandIn(name=who) for who in ("user", "stt", "llm", "tts")}
    stand_ins["out"] = OutputStandIn(name="out")
    pipeline = Pipeline([*stand_ins.values(), IdentityFilter()])
    worker, started = observed_worker(pipeline, observer, clock=clock)

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


def row(w):
    v = w.verdict
    verdict = f"yield@{v.seen_at}" if v.kind == "yield" else v.kind
    early = f"{w.early[0].verdict.kind}@{jouleclaw.format_ts(w.early[0].ts_ns)}" if w.early else "-"
    f = w.finding
    if f.kind == "hallucination":
        finding = f"hallucination(+{f.unaccounted}B)"
    elif f.kind == "barge_in_ignored":
        finding = (
            f"barge_in_ignored({jouleclaw.format_ts(f.barge_in_ts_ns)}"
            f"->{jouleclaw.format_ts(f.outbound_ts_ns)})"
        )
    else:
        finding = f.kind
    return (
        f"{w.window_id:>6} {w.tick_count:>5} {w.inbound_bytes:>8} {w.outbound_bytes:>8}  "
        f"{verdict:<10} {early:<15} {finding:<36} {w.content_hash_hex[:16]}"
    )


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="receipts directory (default: a temporary one)")
    args = parser.parse_args(argv)
    # Pipecat logs every pipeline step at DEBUG; keep its warnings and errors only.
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    out = args.out or Path(tempfile.mkdtemp(prefix="jouleclaw-pipecat-"))
    yields = []
    observer = ReceiptObserver(
        steward="did:example:voice-agent",
        stream_id="pipecat-call",
        signing_key=jouleclaw.SigningKey.rfc8032_test_key(),
        epoch_unix=1_780_617_600,
        out_dir=out,
        on_yield=yields.append,
        seal_every=3,
    )
    asyncio.run(run_call(SCRIPT, observer))
    for s in observer.stop_latencies():
        print(f"stop latency: barge-in at {jouleclaw.format_ts(s.barge_in_ts_ns)}, "
              f"last audio sent {s.stop_latency_ns / 1e6:.0f} ms after it")

    print(
        f"{'window':>6} {'ticks':>5} {'in_B':>8} {'out_B':>8}  "
        f"{'verdict':<10} {'early':<15} {'finding':<36} content_hash"
    )
    for w in observer.receipts:
        print(row(w))
    for e in yields:
        print(f"on_yield: barge-in at {jouleclaw.format_ts(e.ts_ns)} in window {e.window_id}")
    results = jouleclaw.verify_batch([w.cose_sign1 for w in observer.receipts], observer.public_key)
    bad = [r for r in results if isinstance(r, Exception)]
    print(
        f"{len(results) - len(bad)}/{len(results)} receipts verify; "
        f"ignored frames: {dict(sorted(observer.ignored.items()))}"
    )
    a = observer.audio_stats
    print(f"audio: generated {a.generated_ns / 1e9:.2f} s, sent {a.sent_ns / 1e9:.2f} s, "
          f"never sent {a.unsent_ns / 1e9:.2f} s")
    doc = observer.interaction
    if doc is not None:
        print(f"interaction panel (signed, interaction-metrics.cbor): {len(doc.events)} events "
              f"{[e.kind for e in doc.events]}")
    print(f"wrote the run directory {out} (receipts, seals, stop-latency.cbor, "
          f"interaction-metrics.cbor, summary.json)")
    print(f"check: jouleclaw receipts verify --pub {out}/signer.pub {out}")
    print("WARNING: these receipts are signed with the published RFC 8032 test key.")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
