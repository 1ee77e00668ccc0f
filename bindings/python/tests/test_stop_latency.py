"""Stop latency, seals and run directories from the Python Pipeline."""

from __future__ import annotations

import json
import subprocess

import pytest

import jouleclaw
from jouleclaw import CONTROL, MIC, TTS, Pipeline, SigningKey
from conftest import check_bound_to_receipts, flip_digit, jouleclaw_cli, mic_call

MS = 1_000_000


def call(p: Pipeline, barge_at: int, speak_until: int, end: int = 1_600 * MS, start_at=None):
    """Mic every 20 ms, TTS (240 B = 10 ms) every 10 ms from 0.5 s to speak_until, a barge-in."""
    events = []
    for t in range(0, end, 20 * MS):
        events.append((t, 1, lambda t=t: p.push(t, MIC, "audio", bytes(640))))
    for t in range(500 * MS, speak_until, 10 * MS):
        events.append((t, 3, lambda t=t: p.push(t, TTS, "audio", bytes(240))))
    events.append((barge_at, 0, lambda: p.push(barge_at, CONTROL, "marker", marker="barge_in")))
    if start_at is not None:
        events.append((start_at, 2, lambda: p.push(start_at, TTS, "marker", marker="start")))
    for _, _, push in sorted(events, key=lambda e: (e[0], e[1])):
        push()


def test_polite_stop_latency_is_measured_and_signed():
    key = SigningKey.rfc8032_test_key()
    p = Pipeline("did:example:steward", "call-1", signing_key=key)
    call(p, barge_at=1_040 * MS, speak_until=1_090 * MS, start_at=1_300 * MS)
    (open_,) = p.stop_latencies()
    assert open_.ended_by == "start"
    fin = p.finish()
    doc = fin.stop_latency
    (b,) = doc.barge_ins
    assert (b.window_id, b.barge_in_ts_ns, b.last_audio_ts_ns) == (5, 1_040 * MS, 1_080 * MS)
    assert (b.stop_latency_ns, b.late_audio_bytes, b.within_deadline) == (40 * MS, 0, True)
    assert (doc.p50_ns, doc.p95_ns, doc.max_ns) == (40 * MS, 40 * MS, 40 * MS)
    v = jouleclaw.verify_stop_latency(doc.cose_sign1, key.public_key)
    assert v.content_hash_hex == doc.content_hash_hex
    assert json.loads(doc.document_json)["jc_stop_latency"] == "stop-latency/1"


def test_rude_is_late_and_an_open_barge_in_reads_open():
    p = Pipeline("did:example:steward", "call-1")
    call(p, barge_at=1_040 * MS, speak_until=1_500 * MS)
    (b,) = p.stop_latencies()
    assert b.ended_by == "open"
    (b,) = p.finish().stop_latency.barge_ins
    assert (b.stop_latency_ns, b.within_deadline, b.ended_by) == (450 * MS, False, "stream_end")
    assert b.late_audio_bytes == 30 * 240


def test_a_tampered_document_is_refused():
    key = SigningKey.rfc8032_test_key()
    p = Pipeline("did:example:steward", "call-1", signing_key=key)
    call(p, barge_at=1_040 * MS, speak_until=1_090 * MS)
    signed = flip_digit(p.finish().stop_latency.cose_sign1, "stop_latency_ns")
    with pytest.raises(jouleclaw.VerifyError) as e:
        jouleclaw.verify_stop_latency(signed, key.public_key)
    assert e.value.code == "cose_bad_signature"
    with pytest.raises(jouleclaw.VerifyError) as e:
        jouleclaw.verify_stop_latency(signed, SigningKey.generate().public_key)
    assert e.value.code == "cose_unknown_kid"


def test_the_document_is_bound_to_the_receipts():
    key = SigningKey.rfc8032_test_key()
    p = Pipeline("did:example:steward", "call-1", signing_key=key)
    fin, lines = mic_call(p, barge_in_ns=610 * MS)
    check_bound_to_receipts(jouleclaw.verify_stop_latency, fin.stop_latency.cose_sign1, key.public_key,
                            lines, windows=4)


def test_seal_every_seals_and_gives_inclusion_receipts():
    p = Pipeline("did:example:steward", "call-1", seal_every=2, window_signatures="none")
    seals = []
    for t in range(0, 1_000 * MS, 20 * MS):
        o = p.push(t, MIC, "audio", bytes(640))
        if o.closed:
            assert o.closed.leaf_index is not None
            if o.closed.seal:
                seals.append(o.closed.seal)
    fin = p.finish()
    assert fin.seal is not None and fin.seal.is_final and fin.seal.tree_size == 5
    assert [s.tree_size for s in seals] == [2, 4]
    assert sum(len(s.inclusion) for s in seals) + len(fin.seal.inclusion) == 5
    with pytest.raises(jouleclaw.PipelinePoisoned) as e:
        p.push(2_000 * MS, MIC, "audio", bytes(640))
    assert e.value.code == "pipeline_finished"


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"epoch_unix": 2**62}, "epoch_out_of_range"),
        ({"epoch_unix": 253402300800}, "epoch_out_of_range"),
        ({"seal_every": 0}, "seal_every_zero"),
        ({"window_signatures": "none"}, "window_signatures_without_seal"),
        ({"seal_every": 1, "window_signatures": "some"}, "bad_window_signatures"),
    ],
)
def test_bad_configurations_are_refused_at_construction(kwargs, code):
    with pytest.raises(jouleclaw.ConfigError) as e:
        Pipeline("did:example:steward", "call-1", **kwargs)
    assert e.value.code == code


def test_the_largest_epoch_is_accepted():
    # The stream's last 200 ms window ends 9,007,199 s (2**53 ns, rounded down to a window)
    # after the epoch.
    Pipeline("did:example:steward", "call-1", epoch_unix=253402300799 - 9_007_199)


@pytest.mark.parametrize("seal_every", [None, 3])
def test_a_run_directory_verifies_with_the_cli(tmp_path, seal_every):
    key = SigningKey.generate()
    out = tmp_path / "run"
    p = Pipeline("did:example:steward", "call-1", signing_key=key, seal_every=seal_every, out_dir=out)
    call(p, barge_at=1_040 * MS, speak_until=1_090 * MS)
    fin = p.finish()
    assert fin.out_dir == str(out)
    names = {f.name for f in out.iterdir()}
    assert {"signer.pub", "receipts.jsonl", "receipts.cbor", "stop-latency.cbor", "summary.json"} <= names
    assert ("seals.cbor" in names) == (seal_every is not None)
    cli = jouleclaw_cli()
    # An unsealed run's completeness is unknown: accepted only on request.
    allow = [] if seal_every is not None else ["--allow-unsealed"]
    r = subprocess.run([cli, "receipts", "verify", *allow, "--pub", out / "signer.pub", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([cli, "report", out, *allow, "-o", tmp_path / "r.html"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # The document removed while a barge-in window exists: refused.
    (out / "stop-latency.cbor").unlink()
    r = subprocess.run([cli, "receipts", "verify", *allow, "--pub", out / "signer.pub", out], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "stop_latency_missing" in r.stdout + r.stderr


def one_tick_run(out, stream_id: str = "call-1"):
    """`out` after a finished one-tick call with its run directory there."""
    p = Pipeline("did:example:steward", stream_id, out_dir=out)
    p.push(0, MIC, "audio", bytes(640))
    p.finish()
    return out


def test_an_out_dir_holding_a_run_is_refused_and_an_empty_one_is_taken(tmp_path):
    (tmp_path / "receipts.jsonl").write_bytes(b"old\n")
    with pytest.raises(jouleclaw.ConfigError) as e:
        Pipeline("did:example:steward", "call-1", out_dir=tmp_path)
    assert e.value.code == "run_exists"
    assert (tmp_path / "receipts.jsonl").read_bytes() == b"old\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (one_tick_run(empty) / "summary.json").is_file()


def test_a_run_planted_before_finish_is_not_written_over(tmp_path):
    out = tmp_path / "run"
    p = Pipeline("did:example:steward", "call-1", out_dir=out)
    p.push(0, MIC, "audio", bytes(640))
    assert out.is_dir()  # created (and locked) when the pipeline was made
    (out / "stop-latency.cbor").write_bytes(b"planted")
    with pytest.raises(OSError):
        p.finish()
    assert (out / "stop-latency.cbor").read_bytes() == b"planted"


def test_two_pipelines_never_share_an_out_dir(tmp_path):
    out = tmp_path / "run"
    first = Pipeline("did:example:steward", "call-1", out_dir=out)
    # The second is refused when it is made, before it takes a tick: its call is not lost at
    # finish() (the lock is the store's, the one `jouleclaw run --out` takes).
    with pytest.raises(jouleclaw.ConfigError) as e:
        Pipeline("did:example:steward", "call-2", out_dir=out)
    assert e.value.code == "out_dir_locked"
    first.push(0, MIC, "audio", bytes(640))
    first.finish()
    assert (out / "summary.json").is_file()
    # Its neighbour: the lock goes with the run's writing; another directory is free all along.
    assert "call-2" in (one_tick_run(tmp_path / "other", "call-2") / "receipts.jsonl").read_text()
    # A pipeline dropped without finish() releases it.
    spare = tmp_path / "spare"
    dropped = Pipeline("did:example:steward", "call-3", out_dir=spare)
    del dropped
    import gc

    gc.collect()
    assert (one_tick_run(spare, "call-4") / "summary.json").is_file()


def test_an_out_dir_that_is_a_file_is_refused_and_left_alone(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"mine")
    with pytest.raises(jouleclaw.ConfigError) as e:
        Pipeline("did:example:steward", "call-1", out_dir=f)
    assert e.value.code == "out_dir_not_a_directory"
    assert f.read_bytes() == b"mine"
