#!/usr/bin/env python3
"""Independent checker for the stop-latency/1 vectors (spec/STOP-LATENCY-V1.md).

Usage: check_stop_latency.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

Reads CONFORMANCE_DIR/stop-latency-vectors.json and checks, from the spec alone:
  * documents: each canonical document hashes to content_hash, is exactly the JCR-1 encoding of
               a valid stop-latency/1 value, its protected header, Sig_structure and envelope
               are the bytes section 5 fixes, its Ed25519 signature verifies (strictly), it is
               bound to its receipts (count, RFC 9162 root, every yield listed, every listed
               window a yield or a failure, every barge_in_ignored finding's barge-in listed
               with late audio at or after its outbound time), deleting it is refused exactly
               when a receipt records a barge-in (a yield, or a barge_in_ignored finding
               whatever the verdict), and its summary is the nearest-rank p50/p95/max;
  * negative:  each document is refused; a schema code is the same code;
  * tampered:  each signed document with its receipts is refused.
When jsonschema is installed and CONFORMANCE_DIR/stop-latency-1.schema.json exists, every document
is also validated against that schema (which expresses only part of the rules).
Prints one line per check and closes with `stop-latency: N passed, N failed`. verify.py runs the
same checks (`run`) inside its own report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import blake3
import cbor2
import rfc8785

from check_voice_turn import (
    Refused, checker_main, expect, is_int, null_or_wrong, read_json, schema_check, string, uint,
)
from verify import Refusal, ed25519_verify_strict, leaf_hash, mth, require_supported_dependencies, thaw, thumbprint

FILE = "stop-latency-vectors.json"
SCHEMA_FILE = "stop-latency-1.schema.json"
SCHEMA_ID = "stop-latency/1"
SCHEMA_ID_V2 = "stop-latency/2"
SCHEMA_FILE_V2 = "stop-latency-2.schema.json"
CONTENT_TYPE = "application/vnd.jouleclaw.stop-latency+json"
DEADLINE_NS = 150_000_000
MAX_SAFE = 2**53 - 1
LIMITS = {"document_bytes": 8 << 20, "depth": 3, "string_bytes": 4096, "array_len": 16_384}
MAX_SIGNED = (8 << 20) + 16_384
TOP = ("barge_ins", "deadline_ns", "jc_stop_latency", "receipts_root", "steward", "stream_id", "window_count")
TOP_V2 = TOP + ("vantage",)
VANTAGE = ("excluded_buffer_ns", "point")
BARGE = ("audio_bytes", "barge_in_ts_ns", "end_ts_ns", "ended_by", "last_audio_ts_ns",
         "late_audio_bytes", "stop_latency_ns", "window_id")
SCHEMA_CODES = frozenset((
    "wrong_type", "null", "unknown_field", "missing_field", "wrong_schema", "negative_unsigned",
    "empty_name", "bad_root", "wrong_deadline", "bad_ended_by", "end_mismatch",
    "latency_mismatch", "late_mismatch", "out_of_order", "bad_vantage",
))


# ------------------------------------------------------------------------------------------
# JCR-1 canonical JSON under the stop-latency/1 limits (section 3)
# ------------------------------------------------------------------------------------------

def check_limits(v, depth: int = 0) -> None:
    if isinstance(v, str):
        if len(v.encode("utf-8", "surrogatepass")) > LIMITS["string_bytes"]:
            raise Refused("string_too_long")
    elif isinstance(v, (list, dict)):
        if depth + 1 > LIMITS["depth"]:
            raise Refused("depth_exceeded")
        items = v if isinstance(v, list) else list(v.keys()) + list(v.values())
        if isinstance(v, list) and len(v) > LIMITS["array_len"]:
            raise Refused("array_too_long")
        for x in items:
            check_limits(x, depth + 1)
    elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_SAFE:
        raise Refused("integer_out_of_range")


def parse_canonical(data: bytes):
    value = read_json(data, LIMITS["document_bytes"])
    check_limits(value)
    try:
        again = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as e:  # a lone surrogate (\ud800) is no Unicode text
        raise Refused("invalid_escape", f"cannot canonicalize: {e}") from None
    if again != data:
        raise Refused("non_canonical", "not the canonical encoding")
    return value


# ------------------------------------------------------------------------------------------
# The schema rules of section 4, in order
# ------------------------------------------------------------------------------------------

def uint_or_null(v):
    if v is None:
        return None
    if not is_int(v):
        raise Refused("wrong_type")
    if v < 0:
        raise Refused("negative_unsigned")
    return v


def fields(obj: dict, known) -> None:
    if any(k not in known for k in obj):
        raise Refused("unknown_field")
    if any(k not in obj for k in known):
        raise Refused("missing_field")


def check_barge_in(b) -> dict:
    if not isinstance(b, dict):
        raise null_or_wrong(b)
    fields(b, BARGE)
    audio = uint(b["audio_bytes"])
    t = uint(b["barge_in_ts_ns"])
    end = uint_or_null(b["end_ts_ns"])
    ended_by = string(b["ended_by"])
    last = uint_or_null(b["last_audio_ts_ns"])
    late = uint(b["late_audio_bytes"])
    latency = uint(b["stop_latency_ns"])
    uint(b["window_id"])
    if ended_by not in ("start", "stream_end"):
        raise Refused("bad_ended_by")
    if not ((ended_by == "start" and end is not None and end >= t) or (ended_by == "stream_end" and end is None)):
        raise Refused("end_mismatch")
    if last is None:
        ok = latency == 0 and audio == 0
    else:
        ok = t <= last and (end is None or last <= end) and audio > 0 and latency == last - t
    if not ok:
        raise Refused("latency_mismatch")
    if late > audio or (late > 0) != (latency > DEADLINE_NS):
        raise Refused("late_mismatch")
    return b


def check_names(steward: str, stream_id: str, receipts_root: str, deadline: int, expected_deadline: int) -> None:
    """The names, root and deadline rules every signed document shares, in the spec's order."""
    if not steward or not stream_id:
        raise Refused("empty_name")
    if len(receipts_root) != 64 or any(c not in "0123456789abcdef" for c in receipts_root):
        raise Refused("bad_root")
    if deadline != expected_deadline:
        raise Refused("wrong_deadline")


def check_schema(root) -> dict:
    """A stop-latency/1 or /2 document's schema rules (section 4) in order, or Refused."""
    if not isinstance(root, dict):
        raise null_or_wrong(root)
    # stop-latency/2 (section 10) adds `vantage`; the id selects the field set.
    v2 = root.get("jc_stop_latency") == SCHEMA_ID_V2
    fields(root, TOP_V2 if v2 else TOP)
    if string(root["jc_stop_latency"]) not in (SCHEMA_ID, SCHEMA_ID_V2):
        raise Refused("wrong_schema")
    steward, stream_id = string(root["steward"]), string(root["stream_id"])
    uint(root["window_count"])
    deadline = uint(root["deadline_ns"])
    rr = string(root["receipts_root"])
    if not isinstance(root["barge_ins"], list):
        raise null_or_wrong(root["barge_ins"])
    check_names(steward, stream_id, rr, deadline, DEADLINE_NS)
    if v2:
        vantage = root["vantage"]
        if not isinstance(vantage, dict):
            raise null_or_wrong(vantage)
        fields(vantage, VANTAGE)
        uint_or_null(vantage["excluded_buffer_ns"])
        if string(vantage["point"]) not in ("sent", "played"):
            raise Refused("bad_vantage")
    bs = [check_barge_in(b) for b in root["barge_ins"]]
    for a, b in zip(bs, bs[1:]):
        if b["window_id"] < a["window_id"] or b["barge_in_ts_ns"] < a["barge_in_ts_ns"]:
            raise Refused("out_of_order")
    return root


def decode(data: bytes) -> dict:
    return check_schema(parse_canonical(data))


# ------------------------------------------------------------------------------------------
# The signature (sections 5 and 6): every byte rebuilt, never trusted to a CBOR encoder
# ------------------------------------------------------------------------------------------

def head(major: int, n: int) -> bytes:
    m = major << 5
    if n < 24:
        return bytes([m | n])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes([m | extra]) + n.to_bytes(size, "big")
    raise ValueError("length too large")


def bstr(b: bytes) -> bytes:
    return head(2, len(b)) + b


def tstr(s: str) -> bytes:
    b = s.encode("utf-8")
    return head(3, len(b)) + b


def protected_bytes(steward: str, subject: str, kid: bytes, content_type: str = CONTENT_TYPE) -> bytes:
    """The canonical protected header of a signed document (stop-latency/1 by default; the
    interaction-metrics/1 profile is the same with its own content type)."""
    return (b"\xa4\x01\x27\x03" + tstr(content_type) + b"\x04" + bstr(kid)
            + b"\x0f\xa2\x01" + tstr(steward) + b"\x02" + tstr(subject))


def sig_structure(protected: bytes, payload: bytes) -> bytes:
    return b"\x84" + tstr("Signature1") + bstr(protected) + b"\x40" + bstr(payload)


def envelope(protected: bytes, payload: bytes, signature: bytes) -> bytes:
    return b"\xd2\x84" + bstr(protected) + b"\xa0" + bstr(payload) + bstr(signature)


def verify_signed_document(data: bytes, public_key: bytes, max_signed: int, content_type: str,
                           decode_payload: Callable[[bytes], dict], kind: str) -> dict:
    """The document of a signed document of `content_type` whose subject is `<stream_id>:<kind>`,
    decoded by `decode_payload`, or Refused (section 6 in order; interaction-metrics/1 section 5
    applies the same checks)."""
    if len(data) > max_signed:
        raise Refused("cose_too_large")
    if not data or data[0] != 0xD2:
        raise Refused("cose_untagged" if data[:1] == b"\x84" else "cose_wrong_tag" if data and data[0] >> 5 == 6 else "cose_malformed")
    try:
        item = thaw(cbor2.loads(data))
    except Exception:  # noqa: BLE001 - any decoding failure is malformed
        raise Refused("cose_malformed") from None
    if not isinstance(item, cbor2.CBORTag) or item.tag != 18 or not isinstance(item.value, list) or len(item.value) != 4:
        raise Refused("cose_malformed")
    protected, unprotected, payload, signature = item.value
    if not isinstance(protected, bytes) or not isinstance(unprotected, dict) or not isinstance(signature, bytes):
        raise Refused("cose_malformed")
    if payload is None:
        raise Refused("cose_payload_detached")
    if not isinstance(payload, bytes):
        raise Refused("cose_malformed")
    if unprotected:
        raise Refused("cose_unprotected_not_empty")
    try:
        header = thaw(cbor2.loads(protected))
    except Exception:  # noqa: BLE001
        raise Refused("cose_malformed") from None
    if not isinstance(header, dict):
        raise Refused("cose_malformed")
    if header.get(1) != -8:
        raise Refused("cose_alg_not_eddsa")
    if header.get(3) != content_type:
        raise Refused("cose_content_type_mismatch")
    kid = header.get(4)
    if not isinstance(kid, bytes) or len(kid) != 32:
        raise Refused("cose_bad_kid")
    claims = header.get(15)
    if not isinstance(claims, dict) or set(claims) != {1, 2} or not all(isinstance(v, str) for v in claims.values()):
        raise Refused("cose_bad_cwt_claims")
    iss, sub = claims[1], claims[2]
    if protected_bytes(iss, sub, kid, content_type) != protected:
        raise Refused("cose_protected_not_canonical")
    if len(signature) != 64 or envelope(protected, payload, signature) != data:
        raise Refused("cose_envelope_not_canonical")
    if kid != thumbprint(public_key):
        raise Refused("cose_unknown_kid")
    try:
        ed25519_verify_strict(signature, sig_structure(protected, payload), public_key)
    except Refusal:
        raise Refused("cose_bad_signature") from None
    doc = decode_payload(payload)
    if iss != doc["steward"]:
        raise Refused("cose_iss_mismatch")
    if sub != f"{doc['stream_id']}:{kind}":
        raise Refused("cose_sub_mismatch")
    return doc


def verify_signed(data: bytes, public_key: bytes) -> dict:
    """The document of a signed stop-latency/1, or Refused (section 6 in order)."""
    return verify_signed_document(data, public_key, MAX_SIGNED, CONTENT_TYPE, decode, "stop-latency")


# ------------------------------------------------------------------------------------------
# The binding to the receipts (section 7) and the summary
# ------------------------------------------------------------------------------------------

def binding_problems(doc: dict, receipt_lines: list[str]) -> list[str]:
    """Section 7's problem codes, in order, for the receipts' canonical lines."""
    receipts = [json.loads(line) for line in receipt_lines]
    hashes = [blake3.blake3(line.encode("utf-8")).digest() for line in receipt_lines]
    return bind(doc, receipts, hashes)


def bind_stream(doc: dict, receipts: list[dict], hashes: list[bytes]) -> list[str]:
    """The first binding problems every signed document shares: the stream, the window count,
    the receipts' Merkle root."""
    out = []
    if any(r["steward"] != doc["steward"] or r["stream_id"] != doc["stream_id"] for r in receipts):
        out.append("stream_mismatch")
    if doc["window_count"] != len(receipts):
        out.append("window_count_mismatch")
    if mth([leaf_hash(h) for h in hashes]).hex() != doc["receipts_root"]:
        out.append("root_mismatch")
    return out


def bind(doc: dict, receipts: list[dict], hashes: list[bytes]) -> list[str]:
    """Section 7's problem codes, in order: `receipts` decoded, in window order, with each
    receipt's BLAKE3 content hash in `hashes`."""
    out = bind_stream(doc, receipts, hashes)
    by_window = {r["window_id"]: r for r in receipts}
    listed = sorted({b["window_id"] for b in doc["barge_ins"]})
    for w in listed:
        r = by_window.get(w)
        if r is None:
            out.append("barge_in_window_missing")
            continue
        v = r["verdict"]
        if not ((v["kind"] == "yield" and v.get("seen_at") == w) or v["kind"] == "fail"):
            out.append("barge_in_not_yielded")
    for r in receipts:
        if r["verdict"]["kind"] == "yield" and r["window_id"] not in listed:
            out.append("yield_unlisted")
    # Values, not only membership: what a receipt's barge_in_ignored finding states (the barge-in
    # at B, outbound past its deadline at T) must be what the first listed barge-in at B says.
    for r in receipts:
        c = r["conservation"]
        if c["kind"] != "barge_in_ignored":
            continue
        t_b, t_out = c["barge_in_ts_ns"], c["outbound_ts_ns"]
        b = next((b for b in doc["barge_ins"] if b["barge_in_ts_ns"] == t_b), None)
        if b is None:
            out.append("finding_unlisted")
            continue
        open_then = b["end_ts_ns"] is None or b["end_ts_ns"] >= t_out
        late_then = b["late_audio_bytes"] > 0 and b["last_audio_ts_ns"] is not None and b["last_audio_ts_ns"] >= t_out
        if b["window_id"] > r["window_id"] or not open_then or not late_then:
            out.append("finding_contradicted")
    return out


def records_barge_in(receipt: dict) -> bool:
    """A receipt records a barge-in: a yield verdict, or a barge_in_ignored finding whatever the
    verdict (a fail outranks the yield of its window)."""
    return receipt["verdict"]["kind"] == "yield" or receipt["conservation"]["kind"] == "barge_in_ignored"


def required(receipt_lines: list[str]) -> bool:
    """Section 7: without a document, a stream some receipt of which records a barge-in is refused
    (stop_latency_missing)."""
    return first_barge_in([json.loads(line) for line in receipt_lines]) is not None


def first_barge_in(receipts: list[dict]):
    """The first decoded receipt that records a barge-in, or None."""
    return next((r for r in receipts if records_barge_in(r)), None)


def yields_failed(receipt_lines: list[str]) -> list[str]:
    """The receipts with every yield verdict turned into a fail (a failure outranks the yield)."""
    out = []
    for line in receipt_lines:
        r = json.loads(line)
        if r["verdict"]["kind"] == "yield":
            r["verdict"] = {"kind": "fail", "chain": ["barge-in-detector"]}
        out.append(json.dumps(r, sort_keys=True, separators=(",", ":")))
    return out


def nearest_rank(values: list[int], p: int) -> int:
    s = sorted(values)
    rank = max(1, -(-p * len(s) // 100))
    return s[rank - 1]


def summary(doc: dict):
    v = [b["stop_latency_ns"] for b in doc["barge_ins"]]
    if not v:
        return None
    return {"p50_ns": nearest_rank(v, 50), "p95_ns": nearest_rank(v, 95), "max_ns": nearest_rank(v, 100)}


# ------------------------------------------------------------------------------------------

# The checks of a signed-document vector file shared with interaction-metrics/1 (the same
# COSE_Sign1 profile): the file's header, one document rebuilt and verified byte for byte, the
# negative inputs refused in the spec's order, the tampered documents refused.

def optional_jsonschema():
    """The jsonschema module when it is installed (the schema files are an optional extra check)."""
    try:
        import jsonschema
    except ImportError:
        return None
    return jsonschema


def load_validator(rep, jsonschema, path: Path, neighbours: Callable[[], tuple], what: str):
    """The check `load <file>`: the JSON Schema at `path` is valid and refuses each of its
    `neighbours()`; its validator (None when it could not be built)."""
    built = []

    def load():
        schema = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        built.append(jsonschema.Draft202012Validator(schema))
        for b in neighbours():
            if not list(built[0].iter_errors(b)):
                raise AssertionError(f"{what} accepts {b}")
    rep.check(f"load {path.name}", load)
    return built[0] if built else None


def check_header(rep, doc: dict, public_key: bytes, schema_id: str, content_type: str, deadline_ns: int) -> None:
    def header():
        expect("schema", doc["schema"], schema_id)
        expect("content_type", doc["content_type"], content_type)
        expect("deadline_ns", doc["deadline_ns"], deadline_ns)
        expect("kid", doc["kid"], thumbprint(public_key).hex())
    rep.check("header", header)


def check_signed_vector(v: dict, public_key: bytes, content_type: str, kind: str,
                        decode_payload: Callable[[bytes], dict], verify: Callable[[bytes, bytes], dict],
                        binding: Callable[[dict, list], list]) -> dict:
    """One document vector: its hash, protected header, Sig_structure and envelope rebuilt, the
    signed bytes verified back to the document, its root and its binding to the receipts."""
    data = v["canonical"].encode("utf-8")
    expect("content_hash", blake3.blake3(data).hexdigest(), v["content_hash"])
    d = decode_payload(data)
    subject = f"{d['stream_id']}:{kind}"
    protected = protected_bytes(d["steward"], subject, thumbprint(public_key), content_type)
    expect("protected", protected.hex(), v["protected_hex"])
    expect("to_be_signed", sig_structure(protected, data).hex(), v["to_be_signed_hex"])
    signed = bytes.fromhex(v["cose_sign1_hex"])
    expect("envelope", envelope(protected, data, signed[-64:]).hex(), v["cose_sign1_hex"])
    expect("verified document", verify(signed, public_key), d)
    expect("receipts_root", d["receipts_root"], v["receipts_root"])
    expect("binding problems", binding(d, v["receipts"]), [])
    return d


def check_negatives(rep, doc: dict, decode_payload: Callable[[bytes], dict], schema_codes) -> None:
    for v in doc.get("negative", []):
        def one(v=v):
            try:
                decode_payload(bytes.fromhex(v["input_hex"]))
            except Refused as r:
                if v["expect_refusal"] in schema_codes:
                    expect("code", r.code, v["expect_refusal"])
                return
            raise AssertionError("accepted a must-refuse document")
        rep.check(f"negative #{v['n']}: {v['description']} ({v['expect_refusal']})", one)


def check_tampered(rep, doc: dict, public_key: bytes, verify: Callable[[bytes, bytes], dict],
                   binding: Callable[[dict, list], list]) -> None:
    for v in doc.get("tampered", []):
        def one(v=v):
            try:
                d = verify(bytes.fromhex(v["cose_sign1_hex"]), public_key)
            except Refused:
                return
            problems = binding(d, v["receipts"])
            if not problems:
                raise AssertionError("accepted a tampered document")
            expect("first binding problem", problems[0], v["expect_refusal"])
        rep.check(f"tampered #{v['n']}: {v['description']} ({v['expect_refusal']})", one)


def run(directory: Path, rep) -> None:
    """Every check of the stop-latency vectors in `directory`."""
    doc = json.loads((directory / FILE).read_text(encoding="utf-8"))
    public_key = bytes.fromhex(doc["public_key"])

    check_header(rep, doc, public_key, SCHEMA_ID, CONTENT_TYPE, DEADLINE_NS)

    validator = None
    validator_v2 = None
    schema_path = directory / SCHEMA_FILE
    jsonschema = optional_jsonschema()
    if jsonschema is not None and schema_path.exists():
        def neighbours():
            # Its neighbour: the schema refuses an unknown field and an open measurement.
            bad = json.loads(doc["documents"][0]["canonical"])
            bad["barge_ins"][0]["ended_by"] = "open"
            return (bad, {**json.loads(doc["documents"][0]["canonical"]), "note": 1})
        validator = load_validator(rep, jsonschema, schema_path, neighbours, "the JSON Schema")
        if (directory / SCHEMA_FILE_V2).exists():
            def neighbours_v2():
                # Its neighbours: a stop-latency/1 document, and a vantage point it does not know.
                v1 = json.loads(doc["documents"][0]["canonical"])
                bad = {**v1, "jc_stop_latency": SCHEMA_ID_V2,
                       "vantage": {"excluded_buffer_ns": None, "point": "heard"}}
                return (v1, bad)
            validator_v2 = load_validator(rep, jsonschema, directory / SCHEMA_FILE_V2, neighbours_v2,
                                          "the stop-latency/2 JSON Schema")

    for v in doc.get("documents", []):
        def one(v=v):
            is_v2 = json.loads(v["canonical"]).get("jc_stop_latency") == SCHEMA_ID_V2
            schema_check(validator_v2 if is_v2 else validator, v["canonical"])
            d = check_signed_vector(v, public_key, CONTENT_TYPE, "stop-latency", decode, verify_signed, binding_problems)
            # Deleting the document: refused when the call has a barge-in (each vector's document
            # lists its call's barge-ins), also when the yield verdicts are failures but a receipt
            # records barge_in_ignored.
            expect("refused without the document (stop_latency_missing)", required(v["receipts"]), bool(d["barge_ins"]))
            findings = any(json.loads(line)["conservation"]["kind"] == "barge_in_ignored" for line in v["receipts"])
            expect("refused without the document, yields failed", required(yields_failed(v["receipts"])), findings)
            expect("summary", summary(d), v["summary"])
        rep.check(f"documents #{v['n']}: {v['description']}", one)

    check_negatives(rep, doc, decode, SCHEMA_CODES)

    # Derived from the first document: inputs JCR-1 refuses that Python's json module reads (a
    # lone surrogate escape, a byte-order mark); JavaScript and Go refuse them too.
    if doc.get("documents"):
        first = doc["documents"][0]["canonical"]
        steward = json.dumps(json.loads(first)["steward"])
        for what, data in (("a lone surrogate in steward", first.replace(steward, '"\\ud800x"', 1).encode("utf-8")),
                           ("a byte-order mark", b"\xef\xbb\xbf" + first.encode("utf-8"))):
            def one(data=data):
                try:
                    decode(data)
                except Refused as r:
                    return f"refused [{r.code}]"
                raise AssertionError("accepted a must-refuse document")
            rep.check(f"negative (derived): {what}", one)

    check_tampered(rep, doc, public_key, verify_signed, binding_problems)


def main(argv: list[str]) -> int:
    require_supported_dependencies("check_stop_latency.py")
    return checker_main(argv, "stop-latency", run)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
