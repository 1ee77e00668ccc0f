"""The interaction panel from the Python Pipeline: the signed interaction-metrics/1 document
(spec/INTERACTION-METRICS-V1.md), committed by the final seal, written to the run directory
and checked there by the CLI, the Python stream verifier and the binding."""

from __future__ import annotations

import hashlib
import json

import blake3
import pytest

import jouleclaw
from jouleclaw import CONTROL, MIC, TTS, Pipeline, SigningKey
from conftest import check_bound_to_receipts, flip_digit, mic_call, stream_verifier, verify_dir_everywhere

MS = 1_000_000
FRAME = 200 * MS
USER = {"custom": "user_speech"}
BACKCHANNEL = {"custom": "backchannel"}


def call(p: Pipeline, *, frames: int, user, agent, backchannel=()):
    """One tick sequence, frame by frame (200 ms, the meter's frame and the default window):
    mic audio at the frame's start, a user_speech marker in each frame of `user`, a backchannel
    marker in each frame of `backchannel`, TTS audio every 10 ms of each frame of `agent`."""
    for f in range(frames):
        t = f * FRAME
        p.push(t, MIC, "audio", bytes(640))
        if f in user:
            p.push(t + 1 * MS, CONTROL, "marker", marker=USER)
        if f in backchannel:
            p.push(t + 2 * MS, CONTROL, "marker", marker=BACKCHANNEL)
        if f in agent:
            for k in range(20):
                p.push(t + 5 * MS + k * 10 * MS, TTS, "audio", bytes(240))


TALK_THROUGH = dict(frames=18, user={0, 1, 2, 7, 15, 16}, agent=set(range(4, 13)), backchannel={7})
STOPPED = dict(frames=18, user={0, 1, 2, 7, 15, 16}, agent=set(range(4, 8)), backchannel={7})


def kinds(doc) -> list[str]:
    return [e.kind for e in doc.events]


def test_finish_signs_the_panel_of_the_ticks():
    key = SigningKey.rfc8032_test_key()
    p = Pipeline("did:example:steward", "call-1", signing_key=key)
    call(p, **TALK_THROUGH)
    doc = p.finish().interaction
    assert doc.schema == "interaction-metrics/1"
    # The last turn (frames 15-16) has no answer and nothing after it: no event.
    assert kinds(doc) == ["response", "backchannel_correct"]
    first = doc.events[0]
    # The user's turn ends at frame 3, the agent starts at frame 4: one frame.
    assert (first.tick, first.segment_tick, first.latency_ticks, first.latency_ns) == (3, 0, 1, FRAME)
    bc = doc.events[1]
    assert (bc.tick, bc.window_id, bc.latency_ticks) == (7, 7, None)
    assert doc.selectivity_backchannel == 1.0
    assert doc.counts["backchannel_correct"] == 1 and doc.counts["backchannel_error"] == 0
    assert json.loads(doc.panel_json)["counts"]["backchannel_total"] == 1
    assert doc.frame_count == 18 and doc.window_count == 18
    assert json.loads(doc.document_json)["jc_interaction_metrics"] == "interaction-metrics/1"
    v = jouleclaw.verify_interaction_metrics(doc.cose_sign1, key.public_key)
    assert v.content_hash_hex == doc.content_hash_hex


def test_an_agent_that_stops_for_a_backchannel_is_an_error():
    p = Pipeline("did:example:steward", "call-1")
    call(p, **STOPPED)
    doc = p.finish().interaction
    assert "backchannel_error" in kinds(doc) and "backchannel_correct" not in kinds(doc)
    assert doc.selectivity_backchannel == 0.0


def test_no_speech_gives_an_empty_panel_still_signed():
    p = Pipeline("did:example:steward", "call-1")
    call(p, frames=3, user=set(), agent=set())
    doc = p.finish().interaction
    assert doc.events == [] and doc.response_rate is None and doc.window_count == 3


def test_the_document_is_bound_to_the_receipts():
    key = SigningKey.rfc8032_test_key()
    fin, lines = mic_call(Pipeline("did:example:steward", "call-1", signing_key=key))
    doc = fin.interaction
    check_bound_to_receipts(jouleclaw.verify_interaction_metrics, doc.cose_sign1, key.public_key,
                            lines, windows=3)
    with pytest.raises(jouleclaw.VerifyError) as e:
        jouleclaw.verify_interaction_metrics(flip_digit(doc.cose_sign1, "frame_count"), key.public_key)
    assert e.value.code == "cose_bad_signature"


def final_seal_documents(out) -> dict:
    """The `documents` of the last checkpoint in seals.cbor, verified by the Python verifier."""
    vs = stream_verifier()
    pub = vs.v.read_public_key_text((out / "signer.pub").read_text(encoding="ascii"))
    last = jouleclaw.split_cbor_sequence((out / "seals.cbor").read_bytes())[-1]
    seal, _proof = vs.v.verify_checkpoint(last, pub)
    assert seal["final"]
    return seal["documents"]


def run(tmp_path, name, *, sealed, key=None, stream_id="call-1", scenario=TALK_THROUGH):
    out = tmp_path / name
    p = Pipeline("did:example:steward", stream_id, signing_key=key or SigningKey.generate(),
                 seal_every=4 if sealed else None, out_dir=out)
    call(p, **scenario)
    fin = p.finish()
    return out, fin


@pytest.mark.parametrize("sealed", [True, False])
def test_the_run_directory_holds_it_and_every_verifier_accepts_it(tmp_path, sealed):
    out, fin = run(tmp_path, "run", sealed=sealed)
    data = (out / "interaction-metrics.cbor").read_bytes()
    assert data == fin.interaction.cose_sign1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outputs"]["interaction-metrics.cbor"] == blake3.blake3(data).hexdigest()
    if sealed:
        docs = final_seal_documents(out)
        assert docs["interaction-metrics/1"] == hashlib.sha256(data).hexdigest()
        assert docs["stop-latency/1"] == hashlib.sha256((out / "stop-latency.cbor").read_bytes()).hexdigest()
    for who, (code, text) in verify_dir_everywhere(out, sealed=sealed).items():
        assert code == 0, f"{who}: {text}"
    assert not list(out.glob(".*.tmp"))


def test_a_sealed_run_directory_is_layout_2_and_layout_1_still_verifies(tmp_path):
    """out_dir is written as `jouleclaw run` writes it: layout stream-at-rest/2, no
    inclusion.cbor (every verifier derives the inclusion receipts from seals.cbor). The same
    directory with inclusion.cbor (layout stream-at-rest/1, from the receipts the pipeline
    returned) verifies too, and one receipt short is refused by every verifier."""
    out = tmp_path / "run"
    p = Pipeline("did:example:steward", "call-1", signing_key=SigningKey.generate(),
                 seal_every=4, out_dir=out)
    seals = []
    for f in range(18):
        o = p.push(f * FRAME, MIC, "audio", bytes(640))
        if o.closed and o.closed.seal:
            seals.append(o.closed.seal)
    seals.append(p.finish().seal)
    assert not (out / "inclusion.cbor").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["layout"] == "stream-at-rest/2"
    assert "inclusion.cbor" not in summary["outputs"] and "seals.cbor" in summary["outputs"]
    for who, (code, text) in verify_dir_everywhere(out, sealed=True).items():
        assert code == 0, f"{who}: {text}"
    inclusion = [r for s in seals for _, r in s.inclusion]
    assert len(inclusion) == 18
    # Layout stream-at-rest/1: the summary names the files it wrote, so it goes.
    (out / "summary.json").unlink()
    (out / "inclusion.cbor").write_bytes(b"".join(inclusion))
    for who, (code, text) in verify_dir_everywhere(out, sealed=True).items():
        assert code == 0, f"{who}: {text}"
    (out / "inclusion.cbor").write_bytes(b"".join(inclusion[:-1]))
    for who, (code, text) in verify_dir_everywhere(out, sealed=True).items():
        assert code != 0, f"{who} accepted an inclusion.cbor one receipt short"


def other_call(tmp_path, key, sealed):
    """The document of another call signed by the same key."""
    _, fin = run(tmp_path, "other", sealed=sealed, key=key, stream_id="call-2")
    return fin.interaction.cose_sign1


@pytest.mark.parametrize("sealed", [True, False])
@pytest.mark.parametrize("tamper", ["deleted", "altered", "another_call", "an_old_one"])
def test_every_verifier_refuses_a_tampered_document(tmp_path, sealed, tamper):
    key = SigningKey.generate()
    out, fin = run(tmp_path, "run", sealed=sealed, key=key)
    path = out / "interaction-metrics.cbor"
    if tamper == "deleted":
        path.unlink()
        expect = {"document_missing"} if sealed else {"interaction_metrics_missing"}
    elif tamper == "altered":
        b = bytearray(path.read_bytes())
        i = b.index(b'"frame_count":') + len('"frame_count":')
        b[i] = ord("9") if b[i] != ord("9") else ord("8")
        path.write_bytes(bytes(b))
        expect = {"cose_bad_signature"}
    elif tamper == "another_call":
        path.write_bytes(other_call(tmp_path, key, sealed))
        expect = {"stream_mismatch"}
    else:
        # The same call's stream and key, one window shorter: an earlier document of it.
        out2 = tmp_path / "old"
        p = Pipeline("did:example:steward", "call-1", signing_key=key, out_dir=out2)
        call(p, **{**TALK_THROUGH, "frames": TALK_THROUGH["frames"] - 1})
        path.write_bytes(p.finish().interaction.cose_sign1)
        expect = {"window_count_mismatch", "root_mismatch"}
    if sealed and tamper != "deleted":
        expect |= {"document_digest_mismatch"}
    results = verify_dir_everywhere(out, sealed=sealed)
    for who, (code, text) in results.items():
        assert code == 1, f"{who} accepted it: {text}"
        for c in expect:
            assert c in text, f"{who} does not name {c}: {text}"


def test_a_planted_interaction_file_blocks_the_run(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "interaction-metrics.cbor").write_bytes(b"planted")
    with pytest.raises(jouleclaw.ConfigError) as e:
        Pipeline("did:example:steward", "call-1", out_dir=out)
    assert e.value.code == "run_exists"
    assert (out / "interaction-metrics.cbor").read_bytes() == b"planted"
