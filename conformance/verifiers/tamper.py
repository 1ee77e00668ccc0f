#!/usr/bin/env python3
"""Self-test helper (standard library only): apply one named tampering to a copy of a
conformance directory, in place. `tamper.py list DIR` prints the cases that apply to DIR;
`tamper.py apply CASE DIR` applies one; `tamper.py verifiers CASE` prints the verifiers that
check the tampered family (each of them must fail on the copy; by default python, js and go)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECEIPTS = "stream-window-vectors.json"
WINDOWS = "stream-window-hash-vectors.json"
NEGATIVE = "stream-window-negative-vectors.json"
SIGNED = "stream-window-signed-vectors.json"
SIGNED_EXTRA = "stream-window-signed-negative-extra-vectors.json"
EDDSA = "cose-wg/eddsa-sig-01.json"
SEAL = "stream-seal-vectors.json"
SEAL2 = "stream-seal-2-vectors.json"
VOICE = "voice-turn-vectors.json"
REGISTRY = "call-registry-vectors.json"
STRUCTURED = "structured-output-vectors.json"
STRUCTURED_2020 = "structured-output-2020-vectors.json"
STOP_LATENCY = "stop-latency-vectors.json"
INTERACTION = "interaction-metrics-vectors.json"
LANGS = ("python", "js", "go")
# Which verifiers check structured-output-vectors.json (the Python checker `structured` always;
# see conformance/README.md for what the JS and Go verifiers check of it).
STRUCTURED_GRAMMAR = ("structured", "js", "go")
STRUCTURED_OUTCOME = ("structured", "js", "go")
STRUCTURED_PATH = ("structured",)


def flip_hex_digit(s: str, i: int = 0) -> str:
    c = s[i]
    return s[:i] + ("1" if c == "0" else "0") + s[i + 1:]


def flip_hex_byte(s: str, byte_index: int) -> str:
    """Flip the low bit of one byte of a hex string (negative index counts from the end)."""
    b = bytearray.fromhex(s)
    b[byte_index] ^= 0x01
    return b.hex()


def load(d: Path, name: str):
    return json.loads((d / name).read_text(encoding="utf-8"))


def save(d: Path, name: str, doc) -> None:
    (d / name).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def content_hash_digit(d: Path) -> None:
    doc = load(d, RECEIPTS)
    v = doc["vectors"][0]
    v["content_hash"] = flip_hex_digit(v["content_hash"], 7)
    save(d, RECEIPTS, doc)


def receipt_field(d: Path) -> None:
    doc = load(d, RECEIPTS)
    doc["vectors"][0]["receipt"]["joules_uj"] += 1
    save(d, RECEIPTS, doc)


def window_hash_digit(d: Path) -> None:
    doc = load(d, WINDOWS)
    v = doc["vectors"][0]
    v["window_hash"] = flip_hex_digit(v["window_hash"], 11)
    save(d, WINDOWS, doc)


def window_json_changed(d: Path) -> None:
    doc = load(d, WINDOWS)
    v = doc["vectors"][0]
    # still canonical JSON, different value: only the hash comparison can catch it
    v["canonical_json"] = v["canonical_json"].replace("0", "1", 1) if "0" in v["canonical_json"] else v["canonical_json"] + " "
    save(d, WINDOWS, doc)


def negative_accepted(d: Path) -> None:
    """Replace a negative case's input with a valid canonical receipt, which must be accepted."""
    doc = load(d, NEGATIVE)
    # Python's json with sorted keys, compact separators and ensure_ascii=False is RFC 8785 for
    # ASCII keys, integers and strings (same escapes, lowercase \u00xx). The self-test always
    # has a receipts file (the published one, or the synthetic one it fills in).
    r = load(d, RECEIPTS)["vectors"][0]["receipt"]
    good = json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    doc["cases"][0]["input_hex"] = good.hex()
    save(d, NEGATIVE, doc)


def signature_hex_byte(d: Path) -> None:
    doc = load(d, SIGNED)
    v = doc["vectors"][0]
    v["signature_hex"] = flip_hex_byte(v["signature_hex"], 5)
    save(d, SIGNED, doc)


def envelope_signature_byte(d: Path) -> None:
    doc = load(d, SIGNED)
    v = doc["vectors"][0]
    v["cose_sign1_hex"] = flip_hex_byte(v["cose_sign1_hex"], -5)  # inside the trailing 64-byte signature
    save(d, SIGNED, doc)


def signed_receipt_field(d: Path) -> None:
    """Change one digit of a receipt field in the payload, consistently in payload_hex and the envelope."""
    doc = load(d, SIGNED)
    v = doc["vectors"][0]
    payload = bytes.fromhex(v["payload_hex"])
    key = b'"tick_count":'
    i = payload.index(key) + len(key)
    new_digit = b"1" if payload[i:i + 1] != b"1" else b"2"
    changed = payload[:i] + new_digit + payload[i + 1:]
    v["payload_hex"] = changed.hex()
    v["cose_sign1_hex"] = v["cose_sign1_hex"].replace(payload.hex(), changed.hex())
    save(d, SIGNED, doc)


def signed_negative_accepted(d: Path) -> None:
    doc = load(d, SIGNED)
    doc["negative"][0]["cose_sign1_hex"] = doc["vectors"][0]["cose_sign1_hex"]
    save(d, SIGNED, doc)


def kid_digit(d: Path) -> None:
    doc = load(d, SIGNED)
    doc["key"]["kid_hex"] = flip_hex_digit(doc["key"]["kid_hex"], 3)
    save(d, SIGNED, doc)


def strict_negative_accepted(d: Path) -> None:
    """Replace a strict Ed25519 negative with a valid envelope and its key, which verifies."""
    doc = load(d, SIGNED_EXTRA)
    signed = load(d, SIGNED)
    doc["cases"][0]["cose_sign1_hex"] = signed["vectors"][0]["cose_sign1_hex"]
    doc["cases"][0]["public_key_hex"] = signed["key"]["public_key_hex"]
    save(d, SIGNED_EXTRA, doc)


def eddsa_signature_byte(d: Path) -> None:
    doc = load(d, EDDSA)
    doc["output"]["cbor"] = flip_hex_byte(doc["output"]["cbor"], -1)
    save(d, EDDSA, doc)


# stream-seal/1 (spec/STREAM-SEAL.md)

def _seal_edit(d: Path, fn) -> None:
    doc = load(d, SEAL)
    fn(doc)
    save(d, SEAL, doc)


def _first(items, pred):
    return next(x for x in items if pred(x))


def seal_tree_root(d: Path) -> None:
    def fn(doc):
        t = doc["trees"][5]
        t["root_hex"] = flip_hex_digit(t["root_hex"], 9)
    _seal_edit(d, fn)


def seal_inclusion_path(d: Path) -> None:
    def fn(doc):
        v = _first(doc["inclusion"], lambda v: len(v["path_hex"]) >= 2)
        v["path_hex"][1] = flip_hex_digit(v["path_hex"][1], 4)
    _seal_edit(d, fn)


def seal_inclusion_wrong_size(d: Path) -> None:
    """The same path and root, claimed for a tree one leaf larger (section 2.2: the size is not bound by the path)."""
    def fn(doc):
        v = _first(doc["inclusion"], lambda v: v["tree_size"] == 7 and v["leaf_index"] == 3)
        v["tree_size"] = 8
    _seal_edit(d, fn)


def seal_consistency_path(d: Path) -> None:
    def fn(doc):
        v = _first(doc["consistency"], lambda v: len(v["path_hex"]) >= 2)
        v["path_hex"][-1] = flip_hex_digit(v["path_hex"][-1], 0)
    _seal_edit(d, fn)


def seal_window_content_hash(d: Path) -> None:
    def fn(doc):
        w = doc["stream"]["windows"][2]
        w["content_hash_hex"] = flip_hex_digit(w["content_hash_hex"], 6)
    _seal_edit(d, fn)


def seal_checkpoint_signature(d: Path) -> None:
    def fn(doc):
        cp = doc["stream"]["checkpoints"][1]
        cp["cose_sign1_hex"] = flip_hex_byte(cp["cose_sign1_hex"], -7)  # inside the 64-byte signature
    _seal_edit(d, fn)


def seal_inclusion_receipt_signature(d: Path) -> None:
    def fn(doc):
        inc = doc["stream"]["checkpoints"][0]["inclusion"][1]
        inc["cose_sign1_hex"] = flip_hex_byte(inc["cose_sign1_hex"], -40)
    _seal_edit(d, fn)


def seal_document_changed(d: Path) -> None:
    """The checkpoint's seal says one more empty window and a later last window: still a valid seal, another document."""
    def fn(doc):
        cp = doc["stream"]["checkpoints"][0]
        cp["seal"]["last_window_id"] += 1
        cp["seal"]["empty_windows_skipped"] += 1
        cp["seal_json"] = json.dumps(cp["seal"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    _seal_edit(d, fn)


def seal_consistency_record(d: Path) -> None:
    def fn(doc):
        c = doc["stream"]["checkpoints"][2]["consistency"]
        c["path_hex"][0] = flip_hex_digit(c["path_hex"][0], 2)
    _seal_edit(d, fn)


def seal_negative_proof_accepted(d: Path) -> None:
    """An inclusion_proof negative replaced by a valid proof."""
    def fn(doc):
        good = _first(doc["inclusion"], lambda v: v["tree_size"] == 7 and v["leaf_index"] == 3)
        c = _first(doc["negative"], lambda c: c["kind"] == "inclusion_proof")
        for k in ("entry_hex", "leaf_index", "path_hex", "root_hex", "tree_size"):
            c[k] = good[k]
    _seal_edit(d, fn)


def seal_negative_consistency_accepted(d: Path) -> None:
    def fn(doc):
        good = _first(doc["consistency"], lambda v: len(v["path_hex"]) >= 2)
        c = _first(doc["negative"], lambda c: c["kind"] == "consistency_proof")
        for k in ("first_root_hex", "first_size", "path_hex", "second_root_hex", "second_size"):
            c[k] = good[k]
    _seal_edit(d, fn)


def seal_negative_json_accepted(d: Path) -> None:
    def fn(doc):
        good = doc["stream"]["checkpoints"][1]["seal_json"].encode("utf-8")
        c = _first(doc["negative"], lambda c: c["kind"] == "seal_json" and c["expect"] == "seal_window_count_mismatch")
        c["input_hex"] = good.hex()
    _seal_edit(d, fn)


def seal_negative_receipt_accepted(d: Path) -> None:
    """An inclusion_receipt negative replaced by a valid receipt and its leaf's content hash."""
    def fn(doc):
        inc = doc["stream"]["checkpoints"][0]["inclusion"][2]
        w = doc["stream"]["windows"][inc["leaf_index"]]
        c = _first(doc["negative"], lambda c: c["kind"] == "inclusion_receipt" and c["expect"] == "proof_root_mismatch")
        c["cose_sign1_hex"], c["entry_hex"] = inc["cose_sign1_hex"], w["content_hash_hex"]
    _seal_edit(d, fn)


def seal_negative_stream_complete(d: Path) -> None:
    """A completeness negative replaced by the whole, untouched stream."""
    def fn(doc):
        st = doc["stream"]
        c = _first(doc["negative"], lambda c: c["kind"] == "completeness")
        c["checkpoints_hex"] = [cp["cose_sign1_hex"] for cp in st["checkpoints"]]
        c["receipts"] = [{"content_hash_hex": w["content_hash_hex"], "steward": st["steward"],
                          "stream_id": st["stream_id"], "window_id": w["window_id"]} for w in st["windows"]]
    _seal_edit(d, fn)


def seal_negative_problem_dropped(d: Path) -> None:
    """A completeness negative that still fails, but with one expected problem fewer."""
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["kind"] == "completeness" and len(c["expect_problems"]) >= 2)
        c["expect_problems"].pop()
    _seal_edit(d, fn)


# stream-seal/2 (spec/STREAM-SEAL.md section 3.2)

def seal2_document_bytes(d: Path) -> None:
    """One byte of a sealed document changed: its SHA-256 is no longer the listed digest."""
    def fn(doc):
        v = doc["streams"][0]["documents"][1]
        v["cose_sign1_hex"] = flip_hex_byte(v["cose_sign1_hex"], -1)
    _edit(d, SEAL2, fn)


def seal2_document_digest(d: Path) -> None:
    """The file's digest of a document changed (bytes untouched): the recomputed digest differs."""
    def fn(doc):
        v = doc["streams"][0]["documents"][0]
        v["digest_hex"] = flip_hex_digit(v["digest_hex"], 12)
    _edit(d, SEAL2, fn)


def seal2_document_dropped(d: Path) -> None:
    """A document the final seal commits to is missing from the stream's documents."""
    def fn(doc):
        doc["streams"][0]["documents"].pop()
    _edit(d, SEAL2, fn)


def seal2_document_added(d: Path) -> None:
    """The sealed call that states it has no document is given one."""
    def fn(doc):
        doc["streams"][1]["documents"].append(doc["streams"][0]["documents"][0])
    _edit(d, SEAL2, fn)


def seal2_final_signature(d: Path) -> None:
    def fn(doc):
        cp = doc["streams"][0]["checkpoints"][-1]
        cp["cose_sign1_hex"] = flip_hex_byte(cp["cose_sign1_hex"], -9)  # inside the 64-byte signature
    _edit(d, SEAL2, fn)


def seal2_seal_json_changed(d: Path) -> None:
    """The file's text of the final seal lists one document fewer than the signed seal."""
    def fn(doc):
        cp = doc["streams"][0]["checkpoints"][-1]
        seal = json.loads(cp["seal_json"])
        seal["documents"].pop("interaction-metrics/1")
        cp["seal_json"] = json.dumps(seal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    _edit(d, SEAL2, fn)


def seal2_window_entry(d: Path) -> None:
    def fn(doc):
        w = doc["streams"][0]["windows"][3]
        w["entry_hex"] = flip_hex_digit(w["entry_hex"], 8)
    _edit(d, SEAL2, fn)


def seal2_negative_accepted(expect: str):
    """A negative seal document replaced by the valid final stream-seal/2 seal."""
    def apply(d: Path) -> None:
        def fn(doc):
            good = doc["streams"][0]["checkpoints"][-1]["seal_json"].encode("utf-8")
            _first(doc["negative"], lambda c: c["expect"] == expect)["input_hex"] = good.hex()
        _edit(d, SEAL2, fn)
    return apply


def seal2_negative_code(d: Path) -> None:
    def fn(doc):
        _first(doc["negative"], lambda c: c["expect"] == "seal_bad_document_kind")["expect"] = "seal_bad_document_digest"
    _edit(d, SEAL2, fn)


# voice-turn/1 (spec/VOICE-TURN-V1.md)

def _edit(d: Path, name: str, fn) -> None:
    doc = load(d, name)
    fn(doc)
    save(d, name, doc)


def voice_level_near_boundary(d: Path) -> None:
    """Level vector 11 (7.6e-14 below -590.5) says -590: what rounding an f64 logarithm may give."""
    def fn(doc):
        v = _first(doc["levels"], lambda v: v["n"] == 11)
        v["expect"]["rms_dbfs_hundredths"] += 1
    _edit(d, VOICE, fn)


def voice_level_sum_squares(d: Path) -> None:
    def fn(doc):
        v = doc["levels"][1]
        v["sum_squares"] = str(int(v["sum_squares"]) + 1)
    _edit(d, VOICE, fn)


def voice_turn_content_hash(d: Path) -> None:
    def fn(doc):
        v = doc["turns"][0]
        v["content_hash"] = flip_hex_digit(v["content_hash"], 13)
    _edit(d, VOICE, fn)


def voice_turn_heard(d: Path) -> None:
    def fn(doc):
        v = _first(doc["turns"], lambda v: v["heard"] == "said")
        v["heard"] = "unasked"
    _edit(d, VOICE, fn)


def voice_turn_pcm(d: Path) -> None:
    """The turn's audio half as loud (every sample halved): its document no longer carries its
    measurement, though the sample count and duration still agree."""
    def fn(doc):
        v = _first(doc["turns"], lambda v: any(any(seg["samples"]) for seg in v["pcm"]))
        for seg in v["pcm"]:
            seg["samples"] = [s // 2 for s in seg["samples"]]
    _edit(d, VOICE, fn)


def voice_negative_accepted(d: Path) -> None:
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["expect_refusal"] == "rms_above_peak")
        c["input_hex"] = doc["turns"][0]["canonical"].encode("utf-8").hex()
    _edit(d, VOICE, fn)


def voice_negative_code(d: Path) -> None:
    """A schema-rule negative expecting another schema code: the rule order decides the code."""
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["expect_refusal"] == "rms_above_peak")
        c["expect_refusal"] = "level_out_of_range"
    _edit(d, VOICE, fn)


# structured output (spec/STRUCTURED-OUTPUT.md)

def structured_digest(d: Path) -> None:
    def fn(doc):
        g = doc["grammars"][0]
        g["digest"] = flip_hex_digit(g["digest"], 5)
    _edit(d, STRUCTURED, fn)


def structured_canonical_form(d: Path) -> None:
    """Another limit in the canonical form: the digest no longer binds it."""
    def fn(doc):
        g = doc["grammars"][0]
        n = g["limits"]["max_depth"]
        g["canonical_form"] = g["canonical_form"].replace(f'"max_depth":{n},', f'"max_depth":{n + 1},', 1)
    _edit(d, STRUCTURED, fn)


def structured_accepted_as_refused(d: Path) -> None:
    def fn(doc):
        c = _first(doc["cases"], lambda c: c["outcome"] == "accepted")
        c.update(outcome="refused", code="wrong_type", **{"class": "schema"}, offset=0, path="")
    _edit(d, STRUCTURED, fn)


def structured_refused_as_accepted(d: Path) -> None:
    def fn(doc):
        c = _first(doc["cases"], lambda c: c.get("class") == "schema")
        c["outcome"] = "accepted"
        for k in ("code", "class", "offset", "path"):
            c.pop(k, None)
    _edit(d, STRUCTURED, fn)


def structured_syntax_as_schema(d: Path) -> None:
    """A document that is not JSON, labelled a schema refusal."""
    def fn(doc):
        c = _first(doc["cases"], lambda c: c.get("code") == "trailing_bytes")
        c["class"], c["code"] = "schema", "wrong_type"
    _edit(d, STRUCTURED, fn)


def structured_schema_as_syntax(d: Path) -> None:
    """A JSON document refused by the schema, labelled a syntax refusal."""
    def fn(doc):
        c = _first(doc["cases"], lambda c: c.get("code") == "unknown_property")
        c["class"], c["code"] = "syntax", "syntax"
    _edit(d, STRUCTURED, fn)


def structured_path(d: Path) -> None:
    def fn(doc):
        c = _first(doc["cases"], lambda c: c.get("class") == "schema" and c["path"].startswith("/args/"))
        c["path"] = "/args/nowhere"
    _edit(d, STRUCTURED, fn)


def structured_2020_relabel(name: str):
    """A JSON Schema profile case (by name) with its outcome flipped: each exercises a rule of
    the profile (depth, wide or fine bounds, other properties, unions read side by side)."""
    def tamper(d: Path) -> None:
        def fn(doc):
            c = _first(doc["cases"], lambda c: c["name"] == name)
            if c["outcome"] == "refused":
                c["outcome"] = "accepted"
                for k in ("code", "class", "offset", "path"):
                    c.pop(k, None)
            else:
                c.update(outcome="refused", code="wrong_type", **{"class": "schema"}, offset=0, path="")
        _edit(d, STRUCTURED_2020, fn)
    return tamper


def no_vector_files(d: Path) -> None:
    for f in list(d.rglob("*.json")):
        f.unlink()


# The call registry (spec/CALL-REGISTRY.md)

def _flip_b64_char(text: str, at: int) -> str:
    c = text[at]
    return text[:at] + ("B" if c == "A" else "A") + text[at + 1:]


def registry_cosignature_byte(d: Path) -> None:
    """A valid proof whose w1 cosignature has one base64 character changed."""
    def fn(doc):
        p = doc["valid_proofs"][0]
        at = p["proof"].index("\u2014 witness.example/w1 ") + len("\u2014 witness.example/w1 ") + 20
        p["proof"] = _flip_b64_char(p["proof"], at)
    _edit(d, REGISTRY, fn)


def registry_leaf_changed(d: Path) -> None:
    def fn(doc):
        doc["leaves"][1]["canonical"] = doc["leaves"][1]["canonical"].replace('"seal_tree_size":5', '"seal_tree_size":6')
    _edit(d, REGISTRY, fn)


def registry_negative_accepted(d: Path) -> None:
    def fn(doc):
        _first(doc["negative_proofs"], lambda n: n["expect"] == "quorum_not_met")["expect"] = "valid"
    _edit(d, REGISTRY, fn)


def registry_fork_called_consistent(d: Path) -> None:
    def fn(doc):
        doc["forks"][0]["expect"] = "consistent"
    _edit(d, REGISTRY, fn)
# stop-latency/1 (spec/STOP-LATENCY-V1.md)

def stop_latency_content_hash(d: Path) -> None:
    def fn(doc):
        v = doc["documents"][0]
        v["content_hash"] = flip_hex_digit(v["content_hash"], 5)
    _edit(d, STOP_LATENCY, fn)


def stop_latency_signature_byte(d: Path) -> None:
    def fn(doc):
        v = doc["documents"][0]
        v["cose_sign1_hex"] = flip_hex_byte(v["cose_sign1_hex"], -3)
    _edit(d, STOP_LATENCY, fn)


def stop_latency_latency_changed(d: Path) -> None:
    """The document says the agent stopped 1 ns later (latency and last audio both moved, so the
    document still passes its own rules): the hash, the signature and the envelope disagree."""
    def fn(doc):
        v = _first(doc["documents"], lambda v: '"stop_latency_ns":40000000' in v["canonical"])
        v["canonical"] = v["canonical"].replace('"last_audio_ts_ns":1080000000', '"last_audio_ts_ns":1080000001').replace(
            '"stop_latency_ns":40000000', '"stop_latency_ns":40000001')
    _edit(d, STOP_LATENCY, fn)


def stop_latency_receipt_removed(d: Path) -> None:
    def fn(doc):
        doc["documents"][0]["receipts"].pop()
    _edit(d, STOP_LATENCY, fn)


def stop_latency_summary_changed(d: Path) -> None:
    def fn(doc):
        v = _first(doc["documents"], lambda v: v["summary"] is not None)
        v["summary"]["p95_ns"] -= 1
    _edit(d, STOP_LATENCY, fn)


def stop_latency_negative_accepted(d: Path) -> None:
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["expect_refusal"] == "late_mismatch")
        c["input_hex"] = doc["documents"][0]["canonical"].encode("utf-8").hex()
    _edit(d, STOP_LATENCY, fn)


def stop_latency_negative_code(d: Path) -> None:
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["expect_refusal"] == "late_mismatch")
        c["expect_refusal"] = "latency_mismatch"
    _edit(d, STOP_LATENCY, fn)


def stop_latency_tampered_accepted(d: Path) -> None:
    """A tampered case replaced by an untouched document and its receipts."""
    def fn(doc):
        c = _first(doc["tampered"], lambda c: c["expect_refusal"] == "yield_unlisted")
        c["cose_sign1_hex"] = doc["documents"][0]["cose_sign1_hex"]
        c["receipts"] = doc["documents"][0]["receipts"]
    _edit(d, STOP_LATENCY, fn)


def stop_latency_finding_tamper_accepted(expect: str, n_doc: int):
    """A re-signed tamper refused by a finding rule replaced by an untouched document (one whose
    receipts record barge_in_ignored findings) and its receipts."""
    def apply(d: Path) -> None:
        def fn(doc):
            good = _first(doc["documents"], lambda v: v["n"] == n_doc)
            c = _first(doc["tampered"], lambda c: c["expect_refusal"] == expect)
            c["cose_sign1_hex"], c["receipts"] = good["cose_sign1_hex"], good["receipts"]
        _edit(d, STOP_LATENCY, fn)
    return apply


def stop_latency_finding_codes_swapped(d: Path) -> None:
    """finding_unlisted and finding_contradicted exchanged: each tamper is refused with the other."""
    def fn(doc):
        swap = {"finding_unlisted": "finding_contradicted", "finding_contradicted": "finding_unlisted"}
        for c in doc["tampered"]:
            c["expect_refusal"] = swap.get(c["expect_refusal"], c["expect_refusal"])
    _edit(d, STOP_LATENCY, fn)
# interaction-metrics/1 (spec/INTERACTION-METRICS-V1.md)

def interaction_content_hash(d: Path) -> None:
    def fn(doc):
        v = doc["documents"][0]
        v["content_hash"] = flip_hex_digit(v["content_hash"], 5)
    _edit(d, INTERACTION, fn)


def interaction_signature_byte(d: Path) -> None:
    def fn(doc):
        v = doc["documents"][0]
        v["cose_sign1_hex"] = flip_hex_byte(v["cose_sign1_hex"], -3)
    _edit(d, INTERACTION, fn)


def interaction_event_moved(d: Path) -> None:
    """The first response is said to have come one frame later (latency and counts still
    consistent): the hash, the signature and the panel disagree."""
    def fn(doc):
        v = doc["documents"][0]
        v["canonical"] = v["canonical"].replace('"latency_ns":400000000', '"latency_ns":600000000', 1)
    _edit(d, INTERACTION, fn)


def interaction_receipt_removed(d: Path) -> None:
    def fn(doc):
        doc["documents"][0]["receipts"].pop()
    _edit(d, INTERACTION, fn)


def interaction_panel_changed(d: Path) -> None:
    def fn(doc):
        doc["documents"][0]["panel"]["counts"]["agent_interrupts_count"] += 1
    _edit(d, INTERACTION, fn)


def interaction_latency_mean_last_bit(d: Path) -> None:
    """The panel's L_R one float step away: the checkers compute the mean exactly."""
    def fn(doc):
        v = _first(doc["documents"], lambda v: v["panel"]["response_latency_mean"] is not None)
        v["panel"]["response_latency_mean"] = flip_hex_byte(v["panel"]["response_latency_mean"], -1)
    _edit(d, INTERACTION, fn)


def interaction_negative_accepted(d: Path) -> None:
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["expect_refusal"] == "counts_mismatch")
        c["input_hex"] = doc["documents"][0]["canonical"].encode("utf-8").hex()
    _edit(d, INTERACTION, fn)


def interaction_negative_code(d: Path) -> None:
    def fn(doc):
        c = _first(doc["negative"], lambda c: c["expect_refusal"] == "tick_mismatch")
        c["expect_refusal"] = "out_of_order"
    _edit(d, INTERACTION, fn)


def interaction_tampered_accepted(d: Path) -> None:
    def fn(doc):
        c = _first(doc["tampered"], lambda c: c["expect_refusal"] == "event_window_missing")
        c["cose_sign1_hex"] = doc["documents"][0]["cose_sign1_hex"]
        c["receipts"] = doc["documents"][0]["receipts"]
    _edit(d, INTERACTION, fn)


CASES = {
    "content-hash-hex-digit": (RECEIPTS, content_hash_digit),
    "receipt-field-changed": (RECEIPTS, receipt_field),
    "window-hash-hex-digit": (WINDOWS, window_hash_digit),
    "window-json-changed": (WINDOWS, window_json_changed),
    "negative-case-accepted": (NEGATIVE, negative_accepted),
    "signature-hex-byte": (SIGNED, signature_hex_byte),
    "envelope-signature-byte": (SIGNED, envelope_signature_byte),
    "signed-receipt-field-changed": (SIGNED, signed_receipt_field),
    "signed-negative-accepted": (SIGNED, signed_negative_accepted),
    "kid-hex-digit": (SIGNED, kid_digit),
    "strict-negative-accepted": (SIGNED_EXTRA, strict_negative_accepted),
    "cose-wg-eddsa-signature-byte": (EDDSA, eddsa_signature_byte),
    "seal-tree-root-hex-digit": (SEAL, seal_tree_root),
    "seal-inclusion-path-hash": (SEAL, seal_inclusion_path),
    "seal-inclusion-claimed-for-a-larger-tree": (SEAL, seal_inclusion_wrong_size),
    "seal-consistency-path-hash": (SEAL, seal_consistency_path),
    "seal-window-content-hash": (SEAL, seal_window_content_hash),
    "seal-checkpoint-signature-byte": (SEAL, seal_checkpoint_signature),
    "seal-inclusion-receipt-signature-byte": (SEAL, seal_inclusion_receipt_signature),
    "seal-document-changed": (SEAL, seal_document_changed),
    "seal-checkpoint-consistency-record": (SEAL, seal_consistency_record),
    "seal-negative-inclusion-proof-accepted": (SEAL, seal_negative_proof_accepted),
    "seal-negative-consistency-proof-accepted": (SEAL, seal_negative_consistency_accepted),
    "seal-negative-seal-json-accepted": (SEAL, seal_negative_json_accepted),
    "seal-negative-inclusion-receipt-accepted": (SEAL, seal_negative_receipt_accepted),
    "seal-negative-stream-complete": (SEAL, seal_negative_stream_complete),
    "seal-negative-problem-dropped": (SEAL, seal_negative_problem_dropped),
    "seal2-document-byte-changed": (SEAL2, seal2_document_bytes),
    "seal2-document-digest-hex-digit": (SEAL2, seal2_document_digest),
    "seal2-sealed-document-dropped": (SEAL2, seal2_document_dropped),
    "seal2-unsealed-document-added": (SEAL2, seal2_document_added),
    "seal2-final-seal-signature-byte": (SEAL2, seal2_final_signature),
    "seal2-seal-json-document-dropped": (SEAL2, seal2_seal_json_changed),
    "seal2-window-entry-hex-digit": (SEAL2, seal2_window_entry),
    "seal2-negative-not-final-accepted": (SEAL2, seal2_negative_accepted("seal_documents_not_final")),
    "seal2-negative-too-many-accepted": (SEAL2, seal2_negative_accepted("seal_too_many_documents")),
    "seal2-negative-bad-kind-accepted": (SEAL2, seal2_negative_accepted("seal_bad_document_kind")),
    "seal2-negative-bad-digest-accepted": (SEAL2, seal2_negative_accepted("seal_bad_document_digest")),
    "seal2-negative-missing-documents-accepted": (SEAL2, seal2_negative_accepted("missing_field")),
    "seal2-negative-documents-in-v1-accepted": (SEAL2, seal2_negative_accepted("unknown_field")),
    "seal2-negative-code-changed": (SEAL2, seal2_negative_code),
    "voice-level-near-a-rounding-boundary": (VOICE, voice_level_near_boundary),
    "voice-level-sum-squares": (VOICE, voice_level_sum_squares),
    "voice-turn-content-hash-hex-digit": (VOICE, voice_turn_content_hash),
    "voice-turn-heard-changed": (VOICE, voice_turn_heard),
    "voice-turn-pcm-changed": (VOICE, voice_turn_pcm),
    "voice-negative-accepted": (VOICE, voice_negative_accepted),
    "voice-negative-code-changed": (VOICE, voice_negative_code),
    "stop-latency-content-hash-hex-digit": (STOP_LATENCY, stop_latency_content_hash),
    "stop-latency-signature-byte": (STOP_LATENCY, stop_latency_signature_byte),
    "stop-latency-latency-changed": (STOP_LATENCY, stop_latency_latency_changed),
    "stop-latency-receipt-removed": (STOP_LATENCY, stop_latency_receipt_removed),
    "stop-latency-summary-changed": (STOP_LATENCY, stop_latency_summary_changed),
    "stop-latency-negative-accepted": (STOP_LATENCY, stop_latency_negative_accepted),
    "stop-latency-negative-code-changed": (STOP_LATENCY, stop_latency_negative_code),
    "stop-latency-tampered-accepted": (STOP_LATENCY, stop_latency_tampered_accepted),
    "stop-latency-finding-contradicted-tamper-accepted": (STOP_LATENCY, stop_latency_finding_tamper_accepted("finding_contradicted", 2)),
    "stop-latency-finding-unlisted-tamper-accepted": (STOP_LATENCY, stop_latency_finding_tamper_accepted("finding_unlisted", 4)),
    "stop-latency-finding-codes-swapped": (STOP_LATENCY, stop_latency_finding_codes_swapped),
    # interaction-metrics/1: checked by the Python, JavaScript and Go verifiers.
    "interaction-content-hash-hex-digit": (INTERACTION, interaction_content_hash, ("python", "js", "go")),
    "interaction-signature-byte": (INTERACTION, interaction_signature_byte, ("python", "js", "go")),
    "interaction-event-latency-changed": (INTERACTION, interaction_event_moved, ("python", "js", "go")),
    "interaction-receipt-removed": (INTERACTION, interaction_receipt_removed, ("python", "js", "go")),
    "interaction-panel-count-changed": (INTERACTION, interaction_panel_changed, ("python", "js", "go")),
    "interaction-latency-mean-last-bit": (INTERACTION, interaction_latency_mean_last_bit, ("python", "js", "go")),
    "interaction-negative-accepted": (INTERACTION, interaction_negative_accepted, ("python", "js", "go")),
    "interaction-negative-code-changed": (INTERACTION, interaction_negative_code, ("python", "js", "go")),
    "interaction-tampered-accepted": (INTERACTION, interaction_tampered_accepted, ("python", "js", "go")),
    "structured-digest-hex-digit": (STRUCTURED, structured_digest, STRUCTURED_GRAMMAR),
    "structured-canonical-form-changed": (STRUCTURED, structured_canonical_form, STRUCTURED_GRAMMAR),
    "structured-accepted-case-labelled-refused": (STRUCTURED, structured_accepted_as_refused, STRUCTURED_OUTCOME),
    "structured-refused-case-labelled-accepted": (STRUCTURED, structured_refused_as_accepted, STRUCTURED_OUTCOME),
    "structured-syntax-case-labelled-schema": (STRUCTURED, structured_syntax_as_schema, STRUCTURED_OUTCOME),
    "structured-schema-case-labelled-syntax": (STRUCTURED, structured_schema_as_syntax, STRUCTURED_OUTCOME),
    "structured-schema-path-changed": (STRUCTURED, structured_path, STRUCTURED_PATH),
    "structured-2020-too-deep-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("deeper than max_depth"), STRUCTURED_OUTCOME),
    "structured-2020-wide-bound-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("big above"), STRUCTURED_OUTCOME),
    "structured-2020-fine-bound-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("fine 0.1 (binary64 would round the bound to it)"), STRUCTURED_OUTCOME),
    "structured-2020-other-property-labelled-refused": (STRUCTURED_2020, structured_2020_relabel("a dog with an other property"), STRUCTURED_OUTCOME),
    # Unions read side by side: one branch accepting is enough; every branch refusing refuses.
    "structured-2020-one-branch-takes-it-labelled-refused": (STRUCTURED_2020, structured_2020_relabel("a member only the open bank branch takes"), STRUCTURED_OUTCOME),
    "structured-2020-every-branch-refuses-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("the card branch refuses first, the bank branch at the close"), STRUCTURED_OUTCOME),
    "structured-2020-repeated-key-in-a-branch-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("a repeated key in a branch"), STRUCTURED_OUTCOME),
    "structured-2020-mixed-array-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("tags of both kinds"), STRUCTURED_OUTCOME),
    # pattern: every verifier matches it with its own engine.
    "structured-2020-pattern-mismatch-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("a lower-case letter"), STRUCTURED_OUTCOME),
    "structured-2020-pattern-anywhere-labelled-refused": (STRUCTURED_2020, structured_2020_relabel("a code, a note matching anywhere"), STRUCTURED_OUTCOME),
    # A union nested in a union is one union: its tagged pair is read beside the untagged branch.
    "structured-2020-nested-union-tag-after-labelled-refused": (STRUCTURED_2020, structured_2020_relabel("a tagged branch with its tag after another member"), STRUCTURED_OUTCOME),
    # Of two candidate tags the smaller by code point is the tag (not by UTF-16 code unit).
    "structured-2020-astral-tag-labelled-refused": (STRUCTURED_2020, structured_2020_relabel("the tag smaller by code point first"), STRUCTURED_OUTCOME),
    # A repeated key deep inside a free-form value; a free-form branch makes a union free-form.
    "structured-2020-deep-repeated-key-labelled-accepted": (STRUCTURED_2020, structured_2020_relabel("a repeated key two levels inside another property"), STRUCTURED_OUTCOME),
    "structured-2020-free-form-union-labelled-refused": (STRUCTURED_2020, structured_2020_relabel("an object neither model takes, in a free-form union"), STRUCTURED_OUTCOME),
    # structured-output vectors are optional for `check` (an absent file is a skip line), so the
    # structured checker is not required to fail when every file is gone.
    "registry-cosignature-byte": (REGISTRY, registry_cosignature_byte),
    "registry-leaf-changed": (REGISTRY, registry_leaf_changed),
    "registry-negative-accepted": (REGISTRY, registry_negative_accepted),
    "registry-fork-called-consistent": (REGISTRY, registry_fork_called_consistent),
    "no-vector-files": (None, no_vector_files),
}


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "list":
        d = Path(argv[2])
        for name, (needs, *_) in CASES.items():
            if needs is None or (d / needs).is_file():
                print(name)
        return 0
    if len(argv) == 4 and argv[1] == "apply" and argv[2] in CASES:
        CASES[argv[2]][1](Path(argv[3]))
        return 0
    if len(argv) == 3 and argv[1] == "verifiers" and argv[2] in CASES:
        entry = CASES[argv[2]]
        print(" ".join(entry[2] if len(entry) > 2 else LANGS))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
