"""ReceiptObserver on a real Pipecat pipeline (see scripted_call.py for the set-up)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from conftest import cli_verify, jouleclaw_cli, python_verifier
import scripted_call
from scripted_call import (
    BARGE_IN_MS,
    MS,
    mic,
    polite_bot,
    rude_bot,
    run_call,
    storyteller,
    user_speaks,
    user_stops,
)
from jouleclaw import SigningKey, verify
from jouleclaw.pipecat import ReceiptObserver, YieldEvent

STEWARD = "did:example:voice-agent"


def observe(script, out_dir=None, **kwargs) -> ReceiptObserver:
    observer = ReceiptObserver(
        steward=STEWARD, stream_id="call-1", out_dir=out_dir, **kwargs
    )
    asyncio.run(run_call(script, observer))
    return observer


def table(observer):
    return [(w.window_id, w.verdict.kind, w.finding.kind) for w in observer.receipts]


def test_a_polite_bot_gets_conforming_receipts_and_a_yield_on_the_barge_in_window(
    tmp_path, verify_outputs
):
    yields: list[YieldEvent] = []
    observer = observe(polite_bot(), tmp_path, on_yield=yields.append)
    assert table(observer) == [
        (0, "pass", "conforming"),
        (1, "pass", "conforming"),
        (2, "pass", "conforming"),
        (3, "pass", "conforming"),
        (4, "yield", "conforming"),
        (5, "pass", "conforming"),
    ]
    # on_yield fired once, on the barge-in tick itself, in stream time.
    assert [(e.ts_ns, e.window_id, e.verdict.kind) for e in yields] == [
        (BARGE_IN_MS * MS, 4, "yield")
    ]
    assert type(yields[0].frame).__name__ == "UserStartedSpeakingFrame"
    w4 = observer.receipts[4]
    assert [(e.ts_ns, e.verdict.kind) for e in w4.early] == [(BARGE_IN_MS * MS, "yield")]
    # The UserStartedSpeakingFrame of the question (the bot silent) and the InterruptionFrame
    # that follows the barge-in are not barge-ins.
    assert observer.ignored.get("UserStartedSpeakingFrame") == 1
    assert observer.ignored.get("InterruptionFrame") == 1
    assert observer.refused == {}
    decoded = verify_outputs(tmp_path, observer.receipts)
    assert decoded[4]["verdict"] == {"kind": "yield", "seen_at": 4}


def test_a_bot_that_talks_300_ms_past_the_barge_in_is_flagged_on_the_window_of_the_late_audio(
    tmp_path, verify_outputs
):
    observer = observe(rude_bot(late_ms=300), tmp_path)
    rows = table(observer)
    # The barge-in at 0.84 s is in window 4 (yield there); the late audio at 1.14 s is in
    # window 5, which carries the finding; window 6 (the user's "stop") is clean again.
    assert [r[2] for r in rows] == [
        "conforming",
        "conforming",
        "conforming",
        "conforming",
        "conforming",
        "barge_in_ignored",
        "conforming",
    ]
    assert [r[1] for r in rows] == ["pass", "pass", "pass", "pass", "yield", "pass", "pass"]
    late = observer.receipts[5].finding
    assert (late.barge_in_ts_ns, late.outbound_ts_ns) == (BARGE_IN_MS * MS, (BARGE_IN_MS + 300) * MS)
    decoded = verify_outputs(tmp_path, observer.receipts)
    assert decoded[5]["conservation"] == {
        "kind": "barge_in_ignored",
        "barge_in_ts_ns": BARGE_IN_MS * MS,
        "outbound_ts_ns": (BARGE_IN_MS + 300) * MS,
    }


def test_tts_that_stops_within_the_deadline_is_not_flagged(tmp_path, verify_outputs):
    # The neighbour of the rude bot: the last chunk 150 ms after the barge-in is in time.
    observer = observe(rude_bot(late_ms=150), tmp_path)
    verify_outputs(tmp_path, observer.receipts)
    assert all(w.finding.kind == "conforming" for w in observer.receipts)
    assert observer.receipts[4].verdict.kind == "yield"


def test_llm_text_nothing_backs_is_a_hallucination(tmp_path, verify_outputs):
    observer = observe(storyteller(backed=False), tmp_path)
    findings = [w.finding for w in observer.receipts]
    assert [f.kind for f in findings[:2]] == ["conforming", "conforming"]
    assert "hallucination" in [f.kind for f in findings[2:]]
    assert all(f.unaccounted > 0 for f in findings if f.kind == "hallucination")
    decoded = verify_outputs(tmp_path, observer.receipts)
    assert "hallucination" in [r["conservation"]["kind"] for r in decoded]


def test_the_same_text_backed_by_a_function_call_result_is_conforming(tmp_path, verify_outputs):
    observer = observe(storyteller(backed=True), tmp_path)
    verify_outputs(tmp_path, observer.receipts)
    assert observer.ticks.get(5) == 1  # the substrate channel took the function call result
    assert [w.finding.kind for w in observer.receipts] == ["conforming"] * len(observer.receipts)


def test_receipts_go_to_a_callback_and_to_the_pipecat_event_without_a_directory():
    got, events = [], []
    observer = ReceiptObserver(
        steward=STEWARD,
        stream_id="call-2",
        signing_key=SigningKey.rfc8032_test_key(),
        on_receipt=got.append,
    )

    @observer.event_handler("on_receipt")
    async def on_receipt(_observer, closed):
        events.append(closed.window_id)

    asyncio.run(run_call(polite_bot(), observer))
    assert [w.window_id for w in got] == events == [0, 1, 2, 3, 4, 5]
    key = SigningKey.rfc8032_test_key().public_key
    assert [verify(w.cose_sign1, key).receipt_id for w in got] == [
        f"call-2:{i:04}" for i in range(6)
    ]
    pv = python_verifier()
    assert [pv.verify_cose(w.cose_sign1, key)["id"] for w in got] == [
        f"call-2:{i:04}" for i in range(6)
    ]


def test_frames_the_table_does_not_name_are_counted_not_mapped():
    observer = observe(polite_bot())
    # Pipecat's own frames, and the test's end-of-script marker.
    assert observer.ignored.get("StartFrame") == 1
    assert observer.ignored.get("ScriptDone") == 1
    # Ticks by channel: control 3 (end_of_turn x2, barge_in), mic 6, asr 2, tts 6 (start,
    # 4 audio, end), llm 1, substrate 1.
    assert observer.ticks == {0: 3, 1: 6, 2: 2, 3: 6, 4: 1, 5: 1}


def test_an_existing_receipts_directory_is_never_overwritten(tmp_path):
    (tmp_path / "receipts.jsonl").write_text("earlier run\n")
    with pytest.raises(FileExistsError):
        ReceiptObserver(steward=STEWARD, stream_id="call-1", out_dir=tmp_path)
    assert (tmp_path / "receipts.jsonl").read_text() == "earlier run\n"


@pytest.mark.parametrize(
    "name",
    [
        "signer.pub",
        "receipts.jsonl",
        "receipts.cbor",
        "seals.cbor",
        "inclusion.cbor",
        "stop-latency.cbor",
        "interaction-metrics.cbor",
        "summary.json",
    ],
)
def test_any_run_file_of_the_stores_list_refuses_the_directory(tmp_path, name):
    import jouleclaw
    import jouleclaw.pipecat

    # The observer refuses by the store's one list (the native module's RUN_FILES), not a copy.
    assert jouleclaw.pipecat.RUN_FILES is jouleclaw.RUN_FILES
    assert name in jouleclaw.RUN_FILES
    (tmp_path / name).write_text("earlier run\n")
    with pytest.raises(FileExistsError):
        ReceiptObserver(steward=STEWARD, stream_id="call-1", out_dir=tmp_path)
    assert (tmp_path / name).read_text() == "earlier run\n"
    # A file of another name is no run file.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    ReceiptObserver(steward=STEWARD, stream_id="call-1", out_dir=other)


def test_a_tampered_receipts_file_fails_the_cli(tmp_path):
    observer = observe(polite_bot(), tmp_path)
    assert cli_verify(tmp_path).returncode == 0
    cbor = bytearray((tmp_path / "receipts.cbor").read_bytes())
    cbor[-1] ^= 1
    (tmp_path / "receipts.cbor").write_bytes(bytes(cbor))
    assert cli_verify(tmp_path).returncode == 1
    assert len(observer.receipts) == 6


def test_the_observer_keeps_only_the_latest_receipts_but_hands_on_every_one():
    got = []
    observer = observe(polite_bot(), keep_receipts=2, on_receipt=got.append)
    assert [w.window_id for w in observer.receipts] == [4, 5]
    assert [w.window_id for w in got] == [0, 1, 2, 3, 4, 5]


def test_only_audio_the_output_transport_pushed_is_on_the_tts_channel_and_counted_once():
    from scripted_call import TTS_FRAME

    observer = observe(polite_bot())
    stats = observer.audio_stats
    # Generated: the TTS's 2 s burst (not a tick). Sent: three 200 ms chunks and a 50 ms one.
    assert stats.generated_bytes == 10 * TTS_FRAME and stats.generated_ns == 2_000 * MS
    assert stats.sent_bytes == 3 * TTS_FRAME + 1_200 and stats.sent_ns == 650 * MS
    assert stats.unsent_ns == 1_350 * MS
    assert observer.receipts[2].outbound_bytes < TTS_FRAME + 100  # the chunk and the LLM text
    by_window = {a.window_id: a for a in observer.window_audio}
    assert by_window[2].generated_ns == 2_000 * MS and by_window[2].sent_ns == 200 * MS
    assert by_window[4].sent_ns == 250 * MS and by_window[4].generated_ns == 0


def test_the_first_push_mapping_counts_the_burst_and_fails_the_call():
    # The neighbour of the test above: TTS audio taken at its first push, as the observer used
    # to. The 2 s burst lands in window 2 and the ledger finds it unaccounted for.
    class FirstPush(ReceiptObserver):
        def _is_sent_speech(self, frame, sent):
            from pipecat.frames.frames import TTSAudioRawFrame

            return isinstance(frame, TTSAudioRawFrame)

    observer = FirstPush(steward=STEWARD, stream_id="call-1")
    asyncio.run(run_call(polite_bot(), observer))
    assert observer.receipts[2].finding.kind == "hallucination"


def test_bot_speaking_frames_count_only_from_the_output_transport():
    from scripted_call import bot_started, mic, user_speaks

    # A BotStartedSpeakingFrame from anything but the transport is no start: the user starting
    # to speak then is no barge-in.
    script = [(0, "tts", bot_started()), (10, "user", user_speaks()), (20, "user", mic())]
    observer = observe(script)
    assert observer.ignored.get("BotStartedSpeakingFrame") == 1
    assert 0 not in observer.ticks and not observer.bot_speaking
    observer = observe([(0, "out", bot_started()), (10, "user", user_speaks())])
    assert observer.ticks[0] == 1 and observer.ticks[3] == 1 and observer.bot_speaking


def test_audio_the_transport_sent_that_is_not_speech_is_counted_not_mapped():
    from pipecat.frames.frames import OutputAudioRawFrame

    mixer_only = OutputAudioRawFrame(audio=bytes(960), sample_rate=12_000, num_channels=1)
    observer = observe([(0, "out", mixer_only)])
    assert observer.audio_stats.other_sent_bytes == 960
    assert observer.audio_stats.other_sent_ns == 40 * MS
    assert 3 not in observer.ticks


def test_a_new_llm_response_answers_a_barge_in_only_once_the_bot_is_quiet():
    from pipecat.frames.frames import LLMFullResponseStartFrame

    from scripted_call import bot_started, bot_stopped, mic, said, tts_audio, user_speaks

    from scripted_call import user_stops

    def script(stop_first: bool, user_done: bool = True):
        steps = [(0, "user", mic()), (5, "out", bot_started()), (10, "out", tts_audio()),
                 (20, "user", user_speaks()), (200, "user", mic())]
        if stop_first:
            steps.append((40, "out", bot_stopped()))
        if user_done:
            steps.append((250, "user", user_stops()))
        steps += [(300, "llm", LLMFullResponseStartFrame()), (310, "llm", said("okay"))]
        return steps

    quiet = observe(script(stop_first=True))
    assert quiet.ticks[4] == 2  # the start marker and the text
    assert [w.finding.kind for w in quiet.receipts] == ["conforming", "conforming"]
    speaking = observe(script(stop_first=False))
    assert speaking.ticks[4] == 1 and speaking.ignored.get("LLMFullResponseStartFrame") == 1
    assert speaking.receipts[1].finding.kind == "barge_in_ignored"
    # The bot is quiet but the user who cut in has not ended the turn: a response starting
    # now answers a turn still being spoken, not the barge-in.
    still_talking = observe(script(stop_first=True, user_done=False))
    assert still_talking.ticks[4] == 1
    assert still_talking.ignored.get("LLMFullResponseStartFrame during the user's turn") == 1
    assert still_talking.receipts[1].finding.kind == "barge_in_ignored"


def test_the_run_directory_holds_the_signed_stop_latency_document(tmp_path):
    observer = observe(rude_bot(late_ms=300), tmp_path / "run", seal_every=2)
    (barge,) = observer.stop_latencies()
    assert barge.barge_in_ts_ns == BARGE_IN_MS * MS
    assert barge.last_audio_ts_ns == (BARGE_IN_MS + 300) * MS and not barge.within_deadline
    from conftest import jouleclaw_cli
    import subprocess

    run = tmp_path / "run"
    done = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", str(run / "signer.pub"), str(run)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stream complete" in done.stdout
    (run / "stop-latency.cbor").unlink()
    done = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", str(run / "signer.pub"), str(run)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1


def test_only_the_observed_destination_is_the_bots_voice():
    from scripted_call import tts_audio

    def chunk(destination):
        frame = tts_audio(960)
        frame.transport_destination = destination
        return frame

    script = [(0, "out", chunk(None)), (10, "out", chunk("music"))]
    default = observe(script)
    assert default.audio_stats.sent_bytes == 960 and default.ticks[3] == 1
    music = observe(script, destination="music")
    assert music.audio_stats.sent_bytes == 960 and music.ticks[3] == 1
    # The other destination's chunk is neither voice nor counted as sent by this observer.
    assert default.ignored.get("TTSAudioRawFrame") == 1


def leaky_bot(second_start_ms: int):
    """The user cuts in at 0.84 s and keeps talking until 1.25 s; the transport raises a new
    ``BotStartedSpeakingFrame`` at `second_start_ms` and then sends 300 ms more of the cancelled
    reply (the Pipecat pattern a cascade produces when the provider keeps streaming it)."""
    steps = [
        *scripted_call.question(),
        *scripted_call.answer_until_barge_in(BARGE_IN_MS),
        (BARGE_IN_MS + 20, "out", scripted_call.bot_stopped()),
        (second_start_ms, "out", scripted_call.bot_started()),
        (1000, "user", scripted_call.mic()),
        (BARGE_IN_MS + 300, "out", scripted_call.tts_audio(1_200)),
        (1220, "stt", scripted_call.heard("no, stop")),
        (1250, "user", scripted_call.user_stops()),
        (1300, "out", scripted_call.tts_audio(1_200)),
    ]
    return sorted(steps, key=lambda s: s[0])


def test_a_bot_start_during_the_users_turn_does_not_end_the_stop_latency(tmp_path):
    # The transport says the bot started again 40 ms after the barge-in, while the user still
    # speaks: that is not the bot's next turn. The audio 300 ms after the barge-in counts
    # (late), the measurement ends at the user's end of turn (1.25 s), and the early start is
    # recorded. Before, that start ended the measurement at once: stop latency 0 ms, nothing
    # late, although the listener heard the reply 300 ms after cutting in.
    observer = observe(leaky_bot(second_start_ms=BARGE_IN_MS + 40), tmp_path / "run", seal_every=2)
    assert observer.turns_during_user_turn == [(BARGE_IN_MS + 40) * MS]
    [b] = observer.stop_latencies()
    assert b.barge_in_ts_ns == BARGE_IN_MS * MS
    assert b.last_audio_ts_ns == (BARGE_IN_MS + 300) * MS
    assert b.stop_latency_ns == 300 * MS and b.late_audio_bytes == 1_200
    assert (b.ended_by, b.end_ts_ns) == ("start", 1250 * MS)
    assert any(w.finding.kind == "barge_in_ignored" for w in observer.receipts)
    o = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", "signer.pub", "."],
        cwd=tmp_path / "run", capture_output=True, text=True, timeout=60,
    )
    assert o.returncode == 0, o.stderr
    assert (
        "documents sealed by the final seal (stream-seal/2): interaction-metrics/1, stop-latency/1"
        in o.stdout
    )
    assert "interaction-metrics.cbor: verified and bound to the receipts" in o.stdout


def test_a_bot_start_after_the_users_turn_ends_the_stop_latency():
    # The neighbour: the bot starts again only after the user's end of turn: its next turn,
    # which ends the measurement there; nothing is recorded as a turn during the user's turn.
    steps = [s for s in leaky_bot(second_start_ms=1260) if s[0] != BARGE_IN_MS + 300]
    observer = observe(steps)
    assert observer.turns_during_user_turn == []
    [b] = observer.stop_latencies()
    assert b.last_audio_ts_ns is None and b.stop_latency_ns == 0
    assert (b.ended_by, b.end_ts_ns) == ("start", 1260 * MS)


# ------------------------------------------------------------------------------------------
# Interaction markers: user speech from Pipecat's VAD, backchannels from its turn strategy.
# ------------------------------------------------------------------------------------------


def vad_started():
    from pipecat.frames.frames import VADUserStartedSpeakingFrame

    return VADUserStartedSpeakingFrame()


def vad_stopped():
    from pipecat.frames.frames import VADUserStoppedSpeakingFrame

    return VADUserStoppedSpeakingFrame()


def backchannel_call(strategy, observer, *, words: str):
    """The question (VAD and turn), the bot's answer sent 200 ms at a time from 630 ms to
    2.43 s, and over it at 1.0-1.3 s the user's short speech (VAD only: no turn); at 1.5 s its
    transcript `words` reaches Pipecat's start strategy, which has seen the bot start."""
    from pipecat.frames.frames import BotStartedSpeakingFrame

    async def bot_started_seen():
        await strategy.process_frame(BotStartedSpeakingFrame())
        for _ in range(1000):  # the observer takes frames from its own queue
            if observer.bot_speaking:
                return
            await asyncio.sleep(0.001)

    async def transcript():
        # The observer takes frames from its own queue: the decision comes once it has taken
        # window 7's first frames (in a live call it lags by the queue's latency).
        for _ in range(1000):
            if observer.pipeline.open_window_id == 7:
                break
            await asyncio.sleep(0.001)
        await strategy.process_frame(scripted_call.heard(words))

    steps = [
        (0, "user", vad_started()),
        (0, "user", user_speaks()),
        (0, "user", mic()),
        (200, "user", mic()),
        (300, "user", vad_stopped()),
        (350, "stt", scripted_call.heard("what's the weather in lisbon")),
        (380, "user", user_stops()),
        (400, "user", mic()),
        (402, "llm", scripted_call.tool_result({"city": "Lisbon"})),
        (615, "out", scripted_call.bot_started()),
        (616, "out", bot_started_seen),
    ]
    for k in range(10):
        t = 630 + 200 * k
        steps.append((t, "out", scripted_call.tts_audio()))
        if t == 1030:
            steps.append((1040, "user", vad_started()))
        steps.append((t + 10, "user", mic()))
        if t == 1230:
            steps.append((1250, "user", vad_stopped()))
        if t == 1430:
            steps.append((1500, "stt", transcript))
            steps.append((1500, "stt", scripted_call.heard(words)))
    steps.append((2450, "out", scripted_call.bot_stopped()))
    steps.append((2600, "user", mic()))
    return steps


@pytest.mark.parametrize("words, backchannel", [("Mm-hmm.", True), ("wait I have a question", False)])
def test_a_min_words_decision_over_the_bot_is_marked_as_a_backchannel(tmp_path, words, backchannel):
    from pipecat.turns.user_start import MinWordsUserTurnStartStrategy
    from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies

    strategy = MinWordsUserTurnStartStrategy(min_words=3)
    observer = ReceiptObserver(steward=STEWARD, stream_id="call-1", out_dir=tmp_path / "run",
                               seal_every=4)
    strategies = UserTurnStrategies(start=[strategy], stop=[SpeechTimeoutUserTurnStopStrategy()])
    assert observer.watch_user_turn_strategies(strategies) == 1
    asyncio.run(run_call(backchannel_call(strategy, observer, words=words), observer))
    doc = observer.interaction
    kinds = [e.kind for e in doc.events]
    # The question's VAD frames 0-1 are user speech, answered at frame 3 (630 ms).
    assert kinds[0] == "response" and doc.events[0].latency_ticks == 1
    if backchannel:
        # Pipecat's strategy reset (1 word < 3 while the bot speaks): marked at the next frame
        # taken (in frame 7), a backchannel the bot talked through.
        [(ts, why)] = observer.backchannels
        assert (ts // (200 * MS), why) == (7, "MinWordsUserTurnStartStrategy")
        assert kinds[1:] == ["backchannel_correct"]
        assert doc.events[1].tick == 7
        assert doc.selectivity_backchannel == 1.0
    else:
        # Enough words: the strategy starts a turn (no reset): nothing is marked; the speech
        # over the bot that no turn took is not user speech.
        assert observer.backchannels == []
        assert kinds[1:] == []
        assert doc.selectivity_backchannel is None
    assert all(w.finding.kind == "conforming" for w in observer.receipts)
    o = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", "signer.pub", "."],
        cwd=tmp_path / "run", capture_output=True, text=True, timeout=60,
    )
    assert o.returncode == 0, o.stdout + o.stderr
    assert "interaction-metrics.cbor: verified and bound to the receipts" in o.stdout


def test_user_speech_is_marked_once_per_frame_while_the_vad_says_the_user_speaks():
    observer = ReceiptObserver(steward=STEWARD, stream_id="call-1")
    steps = [(0, "user", mic()), (100, "user", vad_started())]
    steps += [(100 + 20 * k, "user", mic(640)) for k in range(1, 30)]  # to 680 ms
    steps += [(690, "user", vad_stopped()), (700, "user", mic()), (900, "user", mic())]
    asyncio.run(run_call(steps, observer))
    # Markers in frames 0-3 (120 ms to 680 ms), one each; none before the VAD start or after
    # its stop.
    assert observer.ticks.get(0) == 4
    assert observer.interaction.frame_count == 5


def test_user_speech_over_the_bot_starts_at_the_turn_start_not_the_next_microphone_chunk():
    from scripted_call import INTERRUPT, bot_started, bot_stopped, mic, tts_audio, user_speaks, user_stops

    # The bot speaks through frame 4 (its last chunk at 810 ms) and stops at 850 ms, right after
    # Pipecat starts the user's turn over it at 840 ms (frame 4); the next microphone chunk the
    # observer takes comes late, at 1,010 ms (frame 5), as on a loaded machine. The user's segment
    # starts in frame 4, over the bot: one interruption, yielded within the window.
    steps = [
        (0, "user", mic()), (200, "user", mic()), (400, "user", mic()),
        (415, "out", bot_started()), (430, "out", tts_audio()), (600, "user", mic()),
        (610, "out", tts_audio()), (800, "user", mic()), (810, "out", tts_audio()),
        (820, "user", vad_started()),
        (840, "user", user_speaks()), (840, "user", INTERRUPT),
        (850, "out", bot_stopped()),
        (1010, "user", mic()), (1100, "user", vad_stopped()), (1150, "user", user_stops()),
        (1300, "user", mic()),
    ]
    observer = ReceiptObserver(steward=STEWARD, stream_id="call-1")
    asyncio.run(run_call(steps, observer))
    doc = observer.interaction
    assert [(e.kind, e.tick) for e in doc.events if e.kind in ("yield", "no_yield")] == [("yield", 4)]
    assert doc.yield_rate == 1.0
