"""The extension module on its own: the Rust pipeline, receipts, refusals and verification."""

import json
import threading
from pathlib import Path

import pytest

import jouleclaw
from jouleclaw import (
    ASR,
    CONTROL,
    LLM,
    MIC,
    TTS,
    ConfigError,
    JouleclawError,
    Pipeline,
    PipelinePoisoned,
    ReceiptError,
    SigningKey,
    StreamSpec,
    TickRefused,
    VerifyError,
)

REPO = Path(__file__).resolve().parents[3]
MS = 1_000_000

# The demo fixture of jouleclaw-pipeline (crates/jouleclaw-pipeline/src/demo.rs).
DEMO_STEWARD = "did:keri:EJ9testStewardAID000000000000000"
DEMO_STREAM = "stream-demo"
DEMO_EPOCH = 1_780_617_600


def replay_demo_trace(pipeline):
    """Pushes conformance/traces/duplex-demo.jsonl through `pipeline`; returns the windows."""
    windows = []
    for line in (REPO / "conformance/traces/duplex-demo.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        payload = None
        if "bytes_len" in rec:
            payload = bytes(rec["bytes_len"])
        elif "bytes_hex" in rec:
            payload = bytes.fromhex(rec["bytes_hex"])
        outcome = pipeline.push(
            rec["ts_ns"], rec["channel_id"], rec["kind"], payload=payload, marker=rec.get("marker")
        )
        if outcome.closed is not None:
            windows.append(outcome.closed)
    last = pipeline.close_window()
    if last is not None:
        windows.append(last)
    return windows


def demo_pipeline():
    return Pipeline(
        DEMO_STEWARD,
        DEMO_STREAM,
        signing_key=SigningKey.rfc8032_test_key(),
        epoch_unix=DEMO_EPOCH,
    )


def test_the_demo_trace_reproduces_the_golden_receipts_byte_for_byte():
    windows = replay_demo_trace(demo_pipeline())
    golden = (REPO / "examples/golden/wave47_streaming_pipeline.receipts.jsonl").read_bytes()
    cose_hex = (REPO / "examples/golden/wave47_streaming_pipeline.cose.hex").read_text().split()
    assert [w.receipt_json for w in windows] == golden.splitlines()
    assert [w.cose_sign1.hex() for w in windows] == cose_hex
    kinds = [(w.window_id, w.verdict.kind, w.finding.kind) for w in windows]
    assert kinds[6] == (6, "yield", "conforming")
    assert kinds[9][2] == "hallucination"
    assert kinds[10][2] == "barge_in_ignored"


def test_every_demo_receipt_verifies_alone_and_in_a_batch():
    key = SigningKey.rfc8032_test_key()
    windows = replay_demo_trace(demo_pipeline())
    for w in windows:
        v = jouleclaw.verify(w.cose_sign1, key.public_key)
        assert v.content_hash == w.content_hash
        assert v.receipt_json == w.receipt_json
        assert v.receipt_id == w.receipt_id == f"{DEMO_STREAM}:{w.window_id:04}"
        assert v.kid == key.kid
    batch = jouleclaw.verify_batch([w.cose_sign1 for w in windows], key.public_key_text)
    assert [b.window_id for b in batch] == [w.window_id for w in windows]


def test_a_barge_in_yields_on_its_own_tick():
    p = Pipeline("did:example:steward", "call-1")
    assert p.push(0, MIC, "audio", bytes(6400)).early is None
    out = p.push(40 * MS, CONTROL, "marker", marker="barge_in")
    assert out.early is not None and out.early.kind == "yield" and out.early.seen_at == 0
    assert out.closed is None
    closed = p.close_window()
    assert closed.verdict.kind == "yield"
    assert [e.ts_ns for e in closed.early] == [40 * MS]
    assert p.close_window() is None


def test_a_tick_of_a_later_window_closes_the_open_one():
    p = Pipeline("did:example:steward", "call-1")
    p.push(0, MIC, "audio", bytes(6400))
    assert p.open_window_id == 0
    out = p.push(200 * MS, MIC, "audio", bytes(6400))
    assert out.closed is not None and out.closed.window_id == 0
    assert out.window_id == 1 and p.open_window_id == 1


def test_late_outbound_after_a_barge_in_is_flagged_on_the_late_tick_and_timely_is_not():
    def run(late_ms):
        p = Pipeline("did:example:steward", "call-1")
        p.push(0, MIC, "audio", bytes(6400))
        p.push(10 * MS, TTS, "marker", marker="start")
        p.push(20 * MS, TTS, "audio", bytes(1200))
        p.push(40 * MS, CONTROL, "marker", marker="barge_in")
        return p.push((40 + late_ms) * MS, TTS, "audio", bytes(1200)).finding

    late = run(151)
    assert late.kind == "barge_in_ignored"
    assert (late.barge_in_ts_ns, late.outbound_ts_ns) == (40 * MS, 191 * MS)
    assert run(150).kind == "conforming"


def test_a_refused_tick_raises_tick_refused_with_its_code_and_changes_nothing():
    p = Pipeline("did:example:steward", "call-1")
    p.push(100 * MS, MIC, "audio", bytes(10))
    cases = [
        (dict(ts_ns=50 * MS, channel_id=MIC, kind="audio", payload=b"x"), "tick_ts_decreasing"),
        (dict(ts_ns=120 * MS, channel_id=99, kind="audio", payload=b"x"), "tick_unknown_channel"),
        (dict(ts_ns=120 * MS, channel_id=MIC, kind="text", payload=b"x"), "tick_kind_mismatch"),
        (dict(ts_ns=120 * MS, channel_id=MIC, kind="smell"), "trace_unknown_kind"),
        (dict(ts_ns=120 * MS, channel_id=CONTROL, kind="marker"), "trace_bad_marker"),
        (dict(ts_ns=120 * MS, channel_id=CONTROL, kind="marker", marker="wave"), "trace_bad_marker"),
        (dict(ts_ns=120 * MS, channel_id=MIC, kind="audio", marker="start"), "trace_bad_marker"),
        (
            dict(ts_ns=120 * MS, channel_id=CONTROL, kind="marker", marker="end", payload=b"x"),
            "trace_bad_payload",
        ),
        (
            dict(ts_ns=120 * MS, channel_id=MIC, kind="audio", payload=bytes(32_769)),
            "tick_chunk_too_large",
        ),
        (
            dict(ts_ns=120 * MS, channel_id=MIC, kind="audio", payload=b"x", window_id=3),
            "tick_ts_outside_window",
        ),
    ]
    for kwargs, code in cases:
        with pytest.raises(TickRefused) as info:
            p.push(**kwargs)
        assert info.value.code == code, kwargs
        assert isinstance(info.value, JouleclawError)
    # The accepted neighbours: the largest chunk, a custom marker.
    p.push(120 * MS, MIC, "audio", payload=bytes(32_768))
    p.push(130 * MS, CONTROL, "marker", marker={"custom": "dtmf:5"})
    closed = p.close_window()
    assert closed.tick_count == 3
    assert closed.inbound_bytes == 10 + 32_768


def test_a_window_already_closed_cannot_take_a_tick():
    p = Pipeline("did:example:steward", "call-1")
    p.push(300 * MS, MIC, "audio", bytes(10))
    p.close_window()
    with pytest.raises(TickRefused) as info:
        p.push(310 * MS, MIC, "audio", bytes(10))
    assert info.value.code == "trace_window_regressed"
    # A later window is fine.
    assert p.push(400 * MS, MIC, "audio", bytes(10)).window_id == 2


def test_names_and_keys_that_cannot_make_a_receipt_are_refused_when_built():
    with pytest.raises(ConfigError) as info:
        Pipeline("", "call-1")
    assert info.value.code == "unencodable"
    with pytest.raises(ConfigError) as info:
        Pipeline("did:example:steward", "x" * 5000)
    assert info.value.code == "unencodable"
    with pytest.raises(ConfigError) as info:
        SigningKey.from_seed(b"short")
    assert info.value.code == "bad_key_file"
    with pytest.raises(ConfigError) as info:
        SigningKey.from_text("ABCD")
    assert info.value.code == "bad_key_file"
    with pytest.raises(ConfigError) as info:
        StreamSpec.from_json('{"tick_window_ms": 200}')
    assert info.value.code == "spec_bad_json"
    assert Pipeline("s", "x" * 4000).stream_id == "x" * 4000


def test_the_epoch_range_follows_from_the_last_window_the_stream_can_close():
    # The last second of 9999 as the epoch: its window ending 1 s of stream time later could
    # not be encoded and poisoned the pipeline. Refused when built.
    with pytest.raises(ConfigError) as info:
        Pipeline("did:example:steward", "call-1", epoch_unix=253402300799)
    assert info.value.code == "epoch_out_of_range"
    # A window ends at or below 2**53 ns (a receipt integer): the stream's last window
    # (200 ms) ends at the largest multiple of 200 ms there, and must still close in 9999.
    window = 200 * MS
    last_end = 2**53 // window * window
    largest = 253402300799 - last_end // 10**9
    with pytest.raises(ConfigError) as info:
        Pipeline("did:example:steward", "call-1", epoch_unix=largest + 1)
    assert info.value.code == "epoch_out_of_range"
    # The neighbour: the largest epoch is accepted, and a tick in the stream's very last
    # window closes at the last second of 9999.
    p = Pipeline("did:example:steward", "call-1", epoch_unix=largest)
    p.push(last_end - 1, MIC, "audio", bytes(10))
    closed = p.close_window()
    assert closed.closed_at == "9999-12-31T23:59:59Z"
    assert closed.window_id == last_end // window - 1


def test_a_key_round_trips_through_its_text_and_its_seed():
    key = jouleclaw.keygen()
    again = SigningKey.from_text(key.secret_text())
    assert again.public_key == key.public_key
    assert len(key.public_key) == 32
    assert key.public_key_text == "jouleclaw-ed25519-public-key " + key.public_key.hex() + "\n"
    # A secret key file is never a public key, and the reverse.
    with pytest.raises(ConfigError) as info:
        jouleclaw.verify(b"", key.secret_text())
    assert info.value.code == "bad_key_file"
    with pytest.raises(ConfigError) as info:
        SigningKey.from_text(key.public_key_text)
    assert info.value.code == "bad_key_file"
    assert key.secret_text() not in repr(key)
    test_key = SigningKey.from_seed(
        bytes.fromhex(SigningKey.rfc8032_test_key().secret_text().removeprefix("jouleclaw-ed25519-secret-key ").strip())
    )
    assert test_key.public_key.hex() == (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    )


def test_a_tampered_receipt_or_a_wrong_key_raises_verify_error_with_its_code():
    key = SigningKey.rfc8032_test_key()
    w = replay_demo_trace(demo_pipeline())[0]
    assert jouleclaw.verify(w.cose_sign1, key).window_id == 0
    tampered = bytearray(w.cose_sign1)
    tampered[-1] ^= 1
    with pytest.raises(VerifyError) as info:
        jouleclaw.verify(bytes(tampered), key.public_key)
    assert info.value.code == "cose_bad_signature"
    with pytest.raises(VerifyError) as info:
        jouleclaw.verify(w.cose_sign1, jouleclaw.keygen().public_key)
    assert info.value.code == "cose_unknown_kid"
    with pytest.raises(VerifyError) as info:
        jouleclaw.verify(w.cose_sign1[1:], key.public_key)
    assert info.value.code == "cose_untagged"
    with pytest.raises(ConfigError):
        jouleclaw.verify(w.cose_sign1, b"\x00" * 31)


def test_a_batch_reports_each_bad_item_in_place():
    key = SigningKey.rfc8032_test_key()
    windows = replay_demo_trace(demo_pipeline())[:4]
    items = [w.cose_sign1 for w in windows]
    bad = bytearray(items[2])
    bad[-5] ^= 0x40
    items[2] = bytes(bad)
    results = jouleclaw.verify_batch(items, key.public_key)
    assert isinstance(results[2], VerifyError) and results[2].code == "cose_bad_signature"
    assert [r.window_id for i, r in enumerate(results) if i != 2] == [0, 1, 3]


def test_a_cbor_sequence_splits_into_its_items_and_a_broken_one_is_refused():
    windows = replay_demo_trace(demo_pipeline())
    seq = b"".join(w.cose_sign1 for w in windows)
    assert jouleclaw.split_cbor_sequence(seq) == [w.cose_sign1 for w in windows]
    with pytest.raises(VerifyError) as info:
        jouleclaw.split_cbor_sequence(seq[:-3])
    assert info.value.code == "cose_malformed"


def test_the_spec_round_trips_through_the_spec_file_format():
    spec = StreamSpec.duplex_voice_default()
    text = (REPO / "conformance/traces/duplex-voice-default.spec.json").read_text()
    assert StreamSpec.from_json(text).channels == spec.channels
    assert StreamSpec.from_json(spec.to_json()).to_json() == spec.to_json()
    assert spec.window_of(199_999_999) == 0 and spec.window_of(200 * MS) == 1
    assert [c[0] for c in spec.channels] == [CONTROL, MIC, ASR, TTS, LLM, jouleclaw.SUBSTRATE]


def test_pipelines_run_on_several_threads_at_once():
    key = SigningKey.rfc8032_test_key()
    results = {}

    def run(i):
        results[i] = [w.receipt_json for w in replay_demo_trace(demo_pipeline())]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4
    assert all(r == results[0] for r in results.values())
    assert len(results[0]) == 13
    assert key.public_key  # the test key is the demo's signer


def test_the_exception_families_share_one_base():
    for cls in (ConfigError, TickRefused, ReceiptError, PipelinePoisoned, VerifyError):
        assert issubclass(cls, JouleclawError)
        assert cls is not JouleclawError
