#!/usr/bin/env python3
"""Independent checker for the interaction-metrics/1 vectors (spec/INTERACTION-METRICS-V1.md).

Usage: check_interaction_metrics.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

Reads CONFORMANCE_DIR/interaction-metrics-vectors.json and checks, from the spec alone:
  * documents: each canonical document hashes to content_hash, is exactly the JCR-1 encoding of
               a valid interaction-metrics/1 value (section 4, rules in order), its protected
               header, Sig_structure and envelope are the bytes section 5 fixes, its Ed25519
               signature verifies (strictly), it is bound to its receipts (section 6: stream,
               count, RFC 9162 root, every event's window a receipt) and its panel is the one
               section 3 computes from its events (numpy's pairwise mean, float for float);
  * negative:  each document is refused; a schema code is the same code;
  * tampered:  each signed document with its receipts is refused.
When jsonschema is installed and CONFORMANCE_DIR/interaction-metrics-1.schema.json exists, every
document is also validated against that schema (which expresses only part of the rules).
Prints one line per check and closes with `interaction-metrics: N passed, N failed`. verify.py
runs the same checks (`run`) inside its own report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import blake3

import check_stop_latency as sl
from check_stop_latency import Refused, fields, null_or_wrong, string, uint, uint_or_null
from check_voice_turn import checker_main, expect, schema_check
from verify import require_supported_dependencies

FILE = "interaction-metrics-vectors.json"
SCHEMA_FILE = "interaction-metrics-1.schema.json"
SCHEMA_ID = "interaction-metrics/1"
CONTENT_TYPE = "application/vnd.jouleclaw.interaction-metrics+json"
DEADLINE_NS = 150_000_000
MAX_WINDOW_NS = 60_000_000_000
TOP = ("config", "counts", "deadline_ns", "events", "frame_count", "jc_interaction_metrics",
       "receipts_root", "steward", "stream_id", "window_count")
CONFIG = ("backchannel_yield_window_ns", "no_yield_window_ns", "non_directed_response_window_ns",
          "non_directed_yield_window_ns", "tick_ns", "vocal_tic_response_window_ns",
          "vocal_tic_yield_window_ns")
KINDS = ("response", "no_response", "yield", "no_yield", "backchannel_correct", "backchannel_error",
         "vocal_tic_correct", "vocal_tic_error", "non_directed_correct", "non_directed_error",
         "agent_interrupts_user")
COUNTS = tuple(sorted(KINDS + ("yield_within_deadline",)))
EVENT = ("kind", "latency_ns", "segment_tick", "tick", "window_id")
SCHEMA_CODES = frozenset((
    "wrong_type", "null", "unknown_field", "missing_field", "wrong_schema", "negative_unsigned",
    "empty_name", "bad_root", "wrong_deadline", "bad_config", "bad_kind", "latency_mismatch",
    "tick_mismatch", "out_of_order", "counts_mismatch",
))
LIMITS = {"document_bytes": 8 << 20, "depth": 3, "string_bytes": 4096, "array_len": 65_536}
MAX_SIGNED = (8 << 20) + 16_384


def parse_canonical(data: bytes):
    saved = dict(sl.LIMITS)
    sl.LIMITS.update(LIMITS)
    try:
        return sl.parse_canonical(data)
    finally:
        sl.LIMITS.clear()
        sl.LIMITS.update(saved)


def within_deadline(tick_ns: int, latency_ticks: int) -> bool:
    return max(latency_ticks - 1, 0) * tick_ns <= DEADLINE_NS


def count_events(tick_ns: int, events: list) -> dict:
    out = {k: sum(1 for e in events if e["kind"] == k) for k in KINDS}
    out["yield_within_deadline"] = sum(
        1 for e in events if e["kind"] == "yield" and within_deadline(tick_ns, e["latency_ns"] // tick_ns))
    return out


def check_event(e, tick_ns: int, frame_count: int) -> dict:
    if not isinstance(e, dict):
        raise null_or_wrong(e)
    fields(e, EVENT)
    kind = string(e["kind"])
    latency = uint_or_null(e["latency_ns"])
    seg = uint(e["segment_tick"])
    tick = uint(e["tick"])
    uint_or_null(e["window_id"])
    if kind not in KINDS:
        raise Refused("bad_kind")
    has = kind in ("response", "yield")
    if has != (latency is not None) or (has and (latency % tick_ns != 0 or (kind == "yield" and latency == 0))):
        raise Refused("latency_mismatch")
    if seg > tick or tick >= frame_count:
        raise Refused("tick_mismatch")
    return e


def check_schema(root) -> dict:
    """An interaction-metrics/1 document's schema rules (section 4) in order, or Refused."""
    if not isinstance(root, dict):
        raise null_or_wrong(root)
    fields(root, TOP)
    if string(root["jc_interaction_metrics"]) != SCHEMA_ID:
        raise Refused("wrong_schema")
    steward, stream_id = string(root["steward"]), string(root["stream_id"])
    uint(root["window_count"])
    frame_count = uint(root["frame_count"])
    deadline = uint(root["deadline_ns"])
    rr = string(root["receipts_root"])
    for k in ("config", "counts"):
        if not isinstance(root[k], dict):
            raise null_or_wrong(root[k])
    if not isinstance(root["events"], list):
        raise null_or_wrong(root["events"])
    sl.check_names(steward, stream_id, rr, deadline, DEADLINE_NS)
    config = root["config"]
    fields(config, CONFIG)
    values = {k: uint(config[k]) for k in CONFIG}
    if values["tick_ns"] == 0 or any(v > MAX_WINDOW_NS for v in values.values()):
        raise Refused("bad_config")
    counts = root["counts"]
    fields(counts, COUNTS)
    for k in COUNTS:
        uint(counts[k])
    tick_ns = values["tick_ns"]
    events = [check_event(e, tick_ns, frame_count) for e in root["events"]]
    if any(b["tick"] < a["tick"] for a, b in zip(events, events[1:])):
        raise Refused("out_of_order")
    if count_events(tick_ns, events) != counts:
        raise Refused("counts_mismatch")
    return root


def decode(data: bytes) -> dict:
    """An interaction-metrics/1 document from its canonical bytes, or Refused."""
    return check_schema(parse_canonical(data))


def verify_signed(data: bytes, public_key: bytes) -> dict:
    """The document of a signed interaction-metrics/1, or Refused (section 5: the checks of
    spec/STOP-LATENCY-V1.md section 6 in order, with this content type and subject)."""
    return sl.verify_signed_document(data, public_key, MAX_SIGNED, CONTENT_TYPE, decode, "interaction-metrics")


def binding_problems(doc: dict, receipt_lines: list[str]) -> list[str]:
    return bind(doc, [json.loads(line) for line in receipt_lines],
                [blake3.blake3(line.encode("utf-8")).digest() for line in receipt_lines])


def bind(doc: dict, receipts: list[dict], hashes: list[bytes]) -> list[str]:
    """Section 6's problem codes, in order: `receipts` decoded, in window order, with each
    receipt's BLAKE3 content hash in `hashes`."""
    out = sl.bind_stream(doc, receipts, hashes)
    windows = {r["window_id"] for r in receipts}
    named = set()
    for e in doc["events"]:
        w = e["window_id"]
        if w is not None and w not in windows and w not in named:
            named.add(w)
            out.append("event_window_missing")
    return out


def pairwise_sum(a: list[float]) -> float:
    """numpy's add.reduce over a contiguous float64 array (section 3)."""
    n = len(a)
    if n < 8:
        res = 0.0
        for x in a:
            res += x
        return res
    if n <= 128:
        r = list(a[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum(a[:n2]) + pairwise_sum(a[n2:])


def panel(doc: dict) -> dict:
    """Section 3 over one document's events (without config)."""
    tick_ns = doc["config"]["tick_ns"]
    t = tick_ns / 1e9
    c = count_events(tick_ns, doc["events"])
    resp, yld = [], []
    for e in doc["events"]:
        if e["kind"] == "response":
            end, s = e["tick"], e["segment_tick"]
            a = end + e["latency_ns"] // tick_ns
            resp.append(a * t - (s * t + (end - s) * t))
        elif e["kind"] == "yield":
            yld.append((e["latency_ns"] // tick_ns) * t)

    def mean(v):
        return pairwise_sum(v) / len(v) if v else None

    def rate(n, d):
        return n / d if d else None

    def sel(ok, err):
        r = rate(err, ok + err)
        return None if r is None else 1.0 - r

    rt = c["response"] + c["no_response"]
    yt = c["yield"] + c["no_yield"]
    return {
        "response_latency_mean": mean(resp),
        "yield_latency_mean": mean(yld),
        "response_rate": rate(c["response"], rt),
        "yield_rate": rate(c["yield"], yt),
        "agent_interruption_rate": rate(c["agent_interrupts_user"], rt),
        "selectivity_backchannel": sel(c["backchannel_correct"], c["backchannel_error"]),
        "selectivity_vocal_tic": sel(c["vocal_tic_correct"], c["vocal_tic_error"]),
        "selectivity_non_directed": sel(c["non_directed_correct"], c["non_directed_error"]),
        "counts": {
            "n_simulations": 1,
            "response_total": rt,
            "yield_total": yt,
            "backchannel_total": c["backchannel_correct"] + c["backchannel_error"],
            "vocal_tic_total": c["vocal_tic_correct"] + c["vocal_tic_error"],
            "non_directed_total": c["non_directed_correct"] + c["non_directed_error"],
            "agent_interrupts_count": c["agent_interrupts_user"],
        },
        "substrate": {
            "yield_rate_deadline": rate(c["yield_within_deadline"], yt),
            "deadline_ns": DEADLINE_NS,
            "yield_within_deadline_count": c["yield_within_deadline"],
            "response_count": c["response"],
            "no_response_count": c["no_response"],
            "yield_count": c["yield"],
            "no_yield_count": c["no_yield"],
            "backchannel_error_count": c["backchannel_error"],
            "vocal_tic_error_count": c["vocal_tic_error"],
            "non_directed_error_count": c["non_directed_error"],
        },
    }


def f64_hex(v):
    """Each float as the 16 hex digits of its binary64 bits, as the vectors write it."""
    import struct
    if isinstance(v, float):
        return struct.pack(">d", v).hex()
    if isinstance(v, dict):
        return {k: f64_hex(x) for k, x in v.items()}
    return v


def run(directory: Path, rep) -> None:
    """Every check of the interaction-metrics vectors in `directory`."""
    doc = json.loads((directory / FILE).read_text(encoding="utf-8"))
    public_key = bytes.fromhex(doc["public_key"])

    sl.check_header(rep, doc, public_key, SCHEMA_ID, CONTENT_TYPE, DEADLINE_NS)

    validator = None
    schema_path = directory / SCHEMA_FILE
    jsonschema = sl.optional_jsonschema()
    if jsonschema is not None and schema_path.exists():
        def neighbours():
            bad = json.loads(doc["documents"][0]["canonical"])
            bad["events"][0]["kind"] = "interruption"
            return (bad, {**json.loads(doc["documents"][0]["canonical"]), "note": 1})
        validator = sl.load_validator(rep, jsonschema, schema_path, neighbours, "the JSON Schema")

    for v in doc.get("documents", []):
        def one(v=v):
            schema_check(validator, v["canonical"])
            d = sl.check_signed_vector(v, public_key, CONTENT_TYPE, "interaction-metrics", decode, verify_signed,
                                       binding_problems)
            expect("panel", f64_hex(panel(d)), v["panel"])
        rep.check(f"documents #{v['n']}: {v['description']}", one)

    sl.check_negatives(rep, doc, decode, SCHEMA_CODES)
    sl.check_tampered(rep, doc, public_key, verify_signed, binding_problems)


def main(argv: list[str]) -> int:
    require_supported_dependencies("check_interaction_metrics.py")
    return checker_main(argv, "interaction-metrics", run)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
