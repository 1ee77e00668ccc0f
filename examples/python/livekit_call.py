#!/usr/bin/env python3
"""A real LiveKit call on this machine, offline, on loopback: livekit-server, an agent worker
(``livekit_agent.py``, signing receipts of the audio it hands to the room) and a user
participant written with the ``livekit`` SDK, which speaks espeak-ng speech at real-time pace
and logs every frame of the agent's audio it receives, with its arrival time.

    python examples/python/livekit_call.py --server-bin PATH/livekit-server \\
        --scenario polite --scenario rude --out /tmp/lk
    jouleclaw receipts verify --pub /tmp/lk/<room>/run/signer.pub /tmp/lk/<room>/run

Scenarios: ``polite`` (the user cuts in 4 s into a long answer; LiveKit's default
interruption handling; the first 3 s of the agent's first turn are its AEC warm-up, when it
does not interrupt), ``rude`` (the same cut-in 2.5 s into the answer, interruptions off),
``ahead`` (no cut-in: the TTS generates each sentence at once, seconds ahead of the room),
``backchannel`` (the user says "uh-huh" 5 s into the answer; LiveKit's ``min_words`` is 3, so
its transcript does not interrupt and the agent talks on) and ``bcdefault`` (the same
"uh-huh" under LiveKit's defaults) and ``mmhmm`` (the backchannel scenario with "mm-hmm", as
the Pipecat cascade says it; by hand: tiny.en's transcript of it varies more).

For every barge-in the report puts the signed stop latency (the barge-in, LiveKit's VAD start
of the user's speech, to the last frame the agent handed to the room after it) beside the far
end's (the same barge-in to the last frame of agent speech the user participant received).
Both are on CLOCK_MONOTONIC of this machine: the agent's stream time is monotonic time minus
the origin its observer reports.

Every process started here (the server, the worker and its job processes) is stopped here:
SIGTERM, then SIGKILL to its process group after a bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MIC_RATE = 16_000
FRAME_MS = 20
NS = 1_000_000_000
MS = 1_000_000
DEADLINE_NS = 150 * MS
#: A received 10 ms frame is agent speech when its RMS exceeds this (16-bit samples); the
#: receiver's decoder yields silence (RMS 0 to a few units) between and after the speech.
SPEECH_RMS = 200.0

QUESTION = "What is the weather like in Lisbon today?"
CUT_IN = "Stop talking please I have another question"
#: The backchannel of the suite: "uh-huh" (one word to tiny.en, "Uh-huh."); espeak-ng's
#: "mm-hmm" reaches it as "Mm-mm." or "Mm, mm." and once here, after Opus, as "And then the...",
#: which three words make a turn (scenario ``mmhmm``).
BACKCHANNEL = "uh-huh"


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, grace_s: float = 20) -> None:
    """SIGTERM to the process group it leads (it was started in a new session), then SIGKILL
    after `grace_s`: bounded."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


def wait_for_line(path: Path, needle: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}):\n"
                               + path.read_text(errors="replace")[-3000:])
        if needle in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"no {needle!r} within {timeout_s} s:\n"
                       + path.read_text(errors="replace")[-3000:])


@dataclass
class Server:
    url: str
    api_key: str
    api_secret: str
    log: Path


@contextmanager
def livekit_server(binary: Path, workdir: Path) -> Iterator[Server]:
    """livekit-server bound to 127.0.0.1 only (signal, RTC over UDP and TCP), one key pair
    made up for the run, rooms created on join."""
    port, tcp, udp = free_port(), free_port(), free_port(socket.SOCK_DGRAM)
    key, secret = "jc-devkey", secrets.token_hex(24)
    config = workdir / "livekit.yaml"
    config.write_text(
        f"port: {port}\n"
        "bind_addresses: [\"127.0.0.1\"]\n"
        "rtc:\n"
        f"  udp_port: {udp}\n"
        f"  tcp_port: {tcp}\n"
        "  node_ip: 127.0.0.1\n"
        "  use_external_ip: false\n"
        "  enable_loopback_candidate: true\n"
        "  ips:\n"
        "    includes: [\"127.0.0.1/32\"]\n"
        "keys:\n"
        f"  {key}: {secret}\n"
        "room:\n"
        "  auto_create: true\n"
        "  empty_timeout: 10\n"
        "  departure_timeout: 5\n"
        "logging:\n"
        "  level: info\n"
    )
    log = workdir / "livekit-server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(binary), "--config", str(config)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError("livekit-server exited:\n" + log.read_text()[-3000:])
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("livekit-server did not listen within 60 s")
                time.sleep(0.2)
        yield Server(f"ws://127.0.0.1:{port}", key, secret, log)
    finally:
        stop_process(proc)


@contextmanager
def agent_worker(server: Server, out: Path, workdir: Path, python: str = sys.executable
                 ) -> Iterator[subprocess.Popen]:
    """``livekit_agent.py start`` registered with the server (its job processes in the
    same process group)."""
    log = workdir / "agent-worker.log"
    env = dict(os.environ, JC_LK_OUT=str(out), PYTHONUNBUFFERED="1")
    env.pop("LIVEKIT_DEV_MODE", None)
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [python, str(HERE / "livekit_agent.py"), "start", "--url", server.url,
             "--api-key", server.api_key, "--api-secret", server.api_secret,
             "--log-level", "INFO"],
            stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    try:
        wait_for_line(log, "registered worker", proc, 180)
        yield proc
    finally:
        stop_process(proc)
        proc.log = log  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------------
# The user participant
# ----------------------------------------------------------------------------------------


def espeak_16k(text: str) -> bytes:
    from livekit_agent import resample, wav_pcm

    done = subprocess.run(["espeak-ng", "--stdout", "-v", "en-us+m3", "-s", "150", text],
                          capture_output=True, check=True, timeout=30)
    pcm, rate = wav_pcm(done.stdout)
    return resample(pcm, rate, MIC_RATE)


@dataclass
class Scenario:
    name: str
    cut_in_after_s: Optional[float]  # None: the user only asks
    cut_in: str = CUT_IN
    time_limit_s: float = 90


SCENARIOS = {
    "polite": Scenario("polite", cut_in_after_s=4.0),
    "rude": Scenario("rude", cut_in_after_s=2.5),
    "ahead": Scenario("ahead", cut_in_after_s=None),
    "backchannel": Scenario("backchannel", cut_in_after_s=5.0, cut_in=BACKCHANNEL),
    "bcdefault": Scenario("bcdefault", cut_in_after_s=5.0, cut_in=BACKCHANNEL),
    "mmhmm": Scenario("mmhmm", cut_in_after_s=5.0, cut_in="mm-hmm"),
}


@dataclass
class FarEnd:
    """What the user participant did and heard, on CLOCK_MONOTONIC (ns)."""

    said: list[tuple[str, int, int]] = field(default_factory=list)  # text, start, end
    frames: list[tuple[int, float, int]] = field(default_factory=list)  # arrival, rms, bytes
    speech_starts: list[int] = field(default_factory=list)

    def speech(self) -> list[int]:
        return [t for t, rms, _ in self.frames if rms > SPEECH_RMS]


async def user_participant(server: Server, room_name: str, sc: Scenario, tail_s: float = 3.0
                           ) -> FarEnd:
    """Joins the room, asks the question, cuts in `sc.cut_in_after_s` after the agent's
    answer begins to arrive, waits until the agent has been silent for `tail_s` after its
    last answer, and leaves. Publishes 20 ms frames at real-time pace (silence in between)."""
    from livekit import api, rtc

    far = FarEnd()
    question, cut_in = espeak_16k(QUESTION), espeak_16k(sc.cut_in)
    token = (api.AccessToken(server.api_key, server.api_secret)
             .with_identity("user").with_name("user")
             .with_grants(api.VideoGrants(room_join=True, room=room_name)).to_jwt())
    room = rtc.Room()
    receivers: list[asyncio.Task] = []
    last_speech = [0]

    async def receive(track: rtc.Track) -> None:
        stream = rtc.AudioStream(track, sample_rate=MIC_RATE, num_channels=1)
        async for ev in stream:
            now = time.monotonic_ns()
            samples = np.frombuffer(bytes(ev.frame.data), dtype=np.int16)
            rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if samples.size else 0
            far.frames.append((now, rms, samples.size * 2))
            if rms > SPEECH_RMS:
                if now - last_speech[0] > 1 * NS:
                    far.speech_starts.append(now)
                last_speech[0] = now

    @room.on("track_subscribed")
    def _subscribed(track, publication, participant):
        if track.kind == rtc.TrackKind.KIND_AUDIO:
            receivers.append(asyncio.ensure_future(receive(track)))

    await room.connect(server.url, token)
    source = rtc.AudioSource(MIC_RATE, 1, queue_size_ms=100)
    track = rtc.LocalAudioTrack.create_audio_track("mic", source)
    await room.local_participant.publish_track(
        track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE))

    step = MIC_RATE * FRAME_MS // 1000
    silence = bytes(step * 2)
    t0 = time.monotonic()
    tick = 0
    plan = [(QUESTION, question, None)]
    if sc.cut_in_after_s is not None:
        plan.append((sc.cut_in, cut_in, sc.cut_in_after_s))
    index, pos, speaking_since = 0, 0, None
    started = time.monotonic_ns()
    try:
        while True:
            now_ns = time.monotonic_ns()
            if now_ns - started > sc.time_limit_s * NS:
                raise RuntimeError(f"the {sc.name} call did not end within {sc.time_limit_s} s")
            audio = silence
            if speaking_since is None and index < len(plan):
                text, pcm, after = plan[index]
                if after is None:
                    due = now_ns - started > 1 * NS
                else:
                    # the agent's answer (to what the user said last, begun once the user
                    # began it: under load the agent may start before the question's tail)
                    # arrived `after` ago
                    answer = [s for s in far.speech_starts if s > far.said[-1][1]]
                    due = bool(answer) and now_ns - answer[0] >= after * NS
                if due:
                    speaking_since, pos = now_ns, 0
            if speaking_since is not None:
                text, pcm, _ = plan[index]
                audio = pcm[pos : pos + step * 2].ljust(step * 2, b"\0")
                pos += step * 2
                if pos >= len(pcm):
                    far.said.append((text, speaking_since, time.monotonic_ns()))
                    index, speaking_since = index + 1, None
            await source.capture_frame(rtc.AudioFrame(audio, MIC_RATE, 1, step))
            if (index >= len(plan) and last_speech[0] > far.said[-1][2]
                    and now_ns - last_speech[0] > tail_s * NS):
                break
            if (index >= len(plan) and last_speech[0] <= far.said[-1][2]
                    and now_ns - far.said[-1][2] > 12 * NS):
                break  # no answer to the cut-in (the rude agent ignores it)
            tick += 1
            await asyncio.sleep(max(0.0, t0 + tick * FRAME_MS / 1000 - time.monotonic()))
    finally:
        await room.disconnect()
        for r in receivers:
            r.cancel()
        await source.aclose()
    return far


# ----------------------------------------------------------------------------------------
# One call and its comparison
# ----------------------------------------------------------------------------------------


@dataclass
class CallResult:
    scenario: Scenario
    room: str
    out_dir: Path  # the run directory (receipts, seals, stop latency)
    agent: dict  # agent.json
    far: FarEnd
    comparisons: list[dict] = field(default_factory=list)
    panel: Optional[dict] = None


def run_call(server: Server, out: Path, name: str) -> CallResult:
    sc = SCENARIOS[name]
    room = f"{name}-{uuid.uuid4().hex[:8]}"
    far = asyncio.run(asyncio.wait_for(user_participant(server, room, sc), sc.time_limit_s + 30))
    report = out / room / "agent.json"
    deadline = time.monotonic() + 60
    while not report.is_file():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the agent wrote no {report} within 60 s of the user leaving")
        time.sleep(0.2)
    result = CallResult(sc, room, out / room / "run", json.loads(report.read_text()), far)
    (out / room / "far.json").write_text(json.dumps(
        {"said": far.said, "frames": far.frames, "speech_starts": far.speech_starts}))
    result.comparisons = compare(result)
    return result


def compare(result: CallResult) -> list[dict]:
    """For each signed barge-in, on the agent's stream time: the far end's stop (the last agent
    speech frame the user participant received after the barge-in, before the agent's next
    answer) beside the signed one (the last frame handed to the room), and like with like the
    last speech frame handed to the room (trailing silence is audio on the receipts, not
    speech the far end can detect)."""
    a = result.agent
    origin = a["origin_monotonic_ns"]
    speech = [t - origin for t in result.far.speech()]
    said = [(t0 - origin, t1 - origin) for _, t0, t1 in result.far.said]
    out = []
    for s in a["stop_latencies"]:
        b = s["barge_in_ts_ns"]
        nxt = min((d["ts_ns"] for d in a["decisions"]
                   if d["kind"] == "playback_started" and d["ts_ns"] > b), default=None)
        # The next answer is handed over from `nxt` on and reaches the far end after it (60 ms
        # at the earliest here); what the interrupted answer left in the source queue was
        # cleared before `nxt` and arrives before it: far-end speech before `nxt` is the
        # interrupted answer's.
        far_after = [t for t in speech if t >= b and (nxt is None or t < nxt)]
        far_last = max(far_after) if far_after else None
        agent_speech = [t for t, rms in a["sent_levels"]
                        if rms > SPEECH_RMS and t >= b and (nxt is None or t < nxt)]
        agent_last = max(agent_speech) if agent_speech else None
        cut = next((t0 for t0, t1 in said if t0 <= b <= t1 + 500 * MS), None)
        out.append({
            "barge_in_ns": b,
            "user_began_ns": cut,
            "vad_delay_ms": None if cut is None else (b - cut) / MS,
            "signed_stop_latency_ms": s["stop_latency_ns"] / MS,
            "agent_last_speech_ms": None if agent_last is None else (agent_last - b) / MS,
            "far_end_stop_latency_ms": None if far_last is None else (far_last - b) / MS,
            "far_end_minus_agent_speech_ms": (
                None if far_last is None or agent_last is None else (far_last - agent_last) / MS
            ),
            "user_wait_ms": None if far_last is None or cut is None else (far_last - cut) / MS,
        })
    return out


def interaction_panel(result: CallResult, jouleclaw_bin: Path, work: Path) -> dict:
    """τ-voice's interaction panel of the ticks the observer pushed: its tick trace
    (``ticks.jsonl``) replayed by ``jouleclaw run`` (which writes interaction-metrics.cbor),
    then read by ``jouleclaw metrics interaction --json``: the substrate's meter on exactly the
    observer's ticks."""
    replay = work / f"replay-{result.room}"
    for args in (["run", str(result.out_dir.parent / "ticks.jsonl"), "--out", str(replay)],
                 ["metrics", "interaction", "--allow-unsealed", "--json", str(replay)]):
        done = subprocess.run([str(jouleclaw_bin), *args], capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"jouleclaw {args[0]} failed: {done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def panel_line(p: dict) -> str:
    c, s = p["counts"], p["substrate"]

    def f(v, unit=""):
        return "-" if v is None else f"{v:.2f}{unit}"

    return (f"L_R {f(p['response_latency_mean'], ' s')} (n={s['response_count']}), "
            f"R_R {f(p['response_rate'])}, L_Y {f(p['yield_latency_mean'], ' s')}, "
            f"R_Y {f(p['yield_rate'])} (n={c['yield_total']}), R_Y@150ms "
            f"{f(s['yield_rate_deadline'])}, I_A {f(p['agent_interruption_rate'])} "
            f"(n={c['agent_interrupts_count']}), S_BC {f(p['selectivity_backchannel'])} "
            f"(n={c['backchannel_total']})")


def report(result: CallResult, out=sys.stdout) -> None:
    a = result.agent
    findings = a["findings"]
    kinds = list(findings.values())
    print(f"scenario {result.scenario.name} (room {result.room}): {len(findings)} windows; "
          f"{kinds.count('conforming')} conforming, {kinds.count('hallucination')} "
          f"hallucination, {kinds.count('barge_in_ignored')} barge_in_ignored", file=out)
    for t in a["transcripts"]:
        print(f"  asr {t['ts_ns'] / NS:.2f}s: {t['text']!r}", file=out)
    au = a["audio"]
    print(f"  audio handed to the room {au['sent_ns'] / NS:.2f} s (generated "
          f"{au['generated_ns'] / NS:.2f} s); cleared from the source queue "
          f"{au['cleared_ns'] / MS:.0f} ms in {au['clears']} clears", file=out)
    print(f"  far end: {len(result.far.frames)} frames received, "
          f"{len(result.far.speech())} with speech", file=out)
    print("  LiveKit's decisions: " + ", ".join(
        f"{d['ts_ns'] / NS:.2f}s {d['kind']}" + (" (interrupted)" if d.get("interrupted") else "")
        + (f" ({d['queued_ns'] / MS:.0f} ms)" if "queued_ns" in d else "")
        for d in a["decisions"]), file=out)
    for c in result.comparisons:
        print(f"  barge-in at {c['barge_in_ns'] / NS:.3f}s (the user's first sound "
              f"{fmt(c['vad_delay_ms'])} ms earlier): signed stop latency "
              f"{c['signed_stop_latency_ms']:.1f} ms, last speech handed to the room "
              f"{fmt(c['agent_last_speech_ms'])} ms, last speech heard at the far end "
              f"{fmt(c['far_end_stop_latency_ms'])} ms (far end after the agent: "
              f"{fmt(c['far_end_minus_agent_speech_ms'])} ms); the user heard the agent "
              f"{fmt(c['user_wait_ms'])} ms past the first sound of the cut-in", file=out)
    if len(result.far.said) > 1:
        text, _, said_end = result.far.said[-1]
        heard = [t for t in result.far.speech() if t > said_end]
        print(f"  after the user said {text!r}: the far end heard agent speech for "
              f"{(max(heard) - said_end) / NS if heard else 0:.2f} s more", file=out)


def fmt(ms: Optional[float]) -> str:
    return "-" if ms is None else f"{ms:.0f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-bin", type=Path, required=True)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--jouleclaw-bin", type=Path, default=None,
                        help="the jouleclaw CLI: check each call's signed interaction panel "
                             "against its tick trace replayed by jouleclaw run")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="livekit-call-"))
    out.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as work:
        with livekit_server(args.server_bin, Path(work)) as server:
            with agent_worker(server, out, Path(work)):
                for name in args.scenario or ["polite", "rude"]:
                    result = run_call(server, out, name)
                    report(result)
                    print(f"  run directory {result.out_dir}")
                    result.panel = result.agent["interaction"]
                    if result.panel is not None:
                        print(f"  interaction panel (signed): {panel_line(result.panel)}")
                    if args.jouleclaw_bin is not None:
                        replayed = interaction_panel(result, args.jouleclaw_bin, out)
                        print("  the same panel from the tick trace replayed by jouleclaw run: "
                              + ("yes" if replayed == result.panel else
                                 f"NO: {panel_line(replayed)}"))
                    results.append(result)
    if args.json:
        args.json.write_text(json.dumps([
            {"scenario": r.scenario.name, "room": r.room, "comparisons": r.comparisons,
             "findings": r.agent["findings"], "stop_latencies": r.agent["stop_latencies"],
             "panel": r.panel}
            for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
