#!/usr/bin/env python3
"""Test helper: write a synthetic conformance directory in the published file formats.

This is NOT the source of the published vectors (the Rust generator in `jouleclaw-jcr1`
is). It exists so the verifiers can be exercised on every file kind, including kinds the
conformance directory does not carry yet, and so the self-test has signed vectors to
tamper with. Usage:

    make_test_vectors.py OUT_DIR [--seed PATH_TO_stream-window-vectors.json] [--cose-wg DIR]

The defaults are the repository's own copies: conformance/stream-window-vectors.json (the
seed's file, whose first three vectors are the seed's) and conformance/cose-wg/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import blake3
import cbor2
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

# RFC 8032 section 7.1, TEST 1 and TEST 2.
SEED_1 = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
SEED_2 = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
CONTENT_TYPE = "application/vnd.jouleclaw.stream-window+json"


def canon(value) -> bytes:
    return rfc8785.dumps(value)


def public_key(seed: bytes) -> bytes:
    return (
        Ed25519PrivateKey.from_private_bytes(seed)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def thumbprint(x: bytes) -> bytes:
    return hashlib.sha256(bytes.fromhex("a301012006215820") + x).digest()


def protected(kid: bytes, steward: str, rid: str, alg: int = -8, extra: dict | None = None) -> bytes:
    hdr = {1: alg, 3: CONTENT_TYPE, 4: kid, 15: {1: steward, 2: rid}}
    if extra:
        hdr.update(extra)
    return cbor2.dumps(hdr)


def tbs(prot: bytes, payload: bytes) -> bytes:
    return cbor2.dumps(["Signature1", prot, b"", payload])


def sign(seed: bytes, data: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).sign(data)


def envelope(prot: bytes, payload: bytes, sig: bytes, tag: int | None = 18, uhdr: dict | None = None) -> bytes:
    body = [prot, uhdr or {}, payload, sig]
    return cbor2.dumps(cbor2.CBORTag(tag, body) if tag is not None else body)


def receipt(stream_id, window_id, closed_at, verdict, conservation, **kw):
    r = {
        "jc_receipt": "stream-window/1",
        "id": f"{stream_id}:{window_id:04}",
        "closed_at": closed_at,
        "steward": kw.get("steward", "did:keri:EJ9testStewardAID000000000000000"),
        "stream_id": stream_id,
        "window_id": window_id,
        "window_hash": kw.get("window_hash", "d" * 64),
        "tick_count": kw.get("tick_count", 3),
        "inbound_bytes": kw.get("inbound_bytes", 100),
        "outbound_bytes": kw.get("outbound_bytes", 50),
        "joules_uj": kw.get("joules_uj", 10),
        "energy_provenance": kw.get("energy_provenance", "Rapl"),
        "verdict": verdict,
        "conservation": conservation,
    }
    return r


def big_document(base: str, size: int) -> str:
    """A receipt whose pass chain pads it to exactly `size` bytes (entries within the limits)."""
    chain = ['"' + "o" * 1000 + '"'] * 64
    doc = base.replace('["always-pass-stream"]', "[" + ",".join(chain) + "]")
    chain[0] = '"' + "o" * (1000 + size - len(doc.encode())) + '"'
    doc = base.replace('["always-pass-stream"]', "[" + ",".join(chain) + "]")
    assert len(doc.encode()) == size
    return doc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", default=str(REPO / "conformance/stream-window-vectors.json"))
    ap.add_argument("--cose-wg", default=str(REPO / "conformance/cose-wg"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    seed_doc = json.loads(Path(args.seed).read_text(encoding="utf-8"))
    extra = [
        ("Fail verdict, barge-in ignored, HwShunt, leap day.",
         receipt("s\u00e9ance/\u2028\U0001F600", 12345, "2028-02-29T23:59:59Z",
                 {"kind": "fail", "oracle": "latency", "reason": "late \"outbound\"\n"},
                 {"kind": "barge_in_ignored", "barge_in_ts_ns": 2**53 - 1, "outbound_ts_ns": 0},
                 energy_provenance="HwShunt", steward="steward \u00fc\u0001")),
        ("NeedMore verdict, zero counters, window 0.",
         receipt("x", 0, "2026-12-31T00:00:00Z",
                 {"kind": "need_more", "oracle": "asr", "reason": ""},
                 {"kind": "conforming"}, tick_count=0, inbound_bytes=0, outbound_bytes=0, joules_uj=0)),
        ("At the receipt limits: 4096-byte steward, 64-entry chain.",
         receipt("limits", 9999, "2000-02-29T12:30:45Z",
                 {"kind": "pass", "chain": ["o"] * 64},
                 {"kind": "hallucination", "unaccounted": 1}, steward="\u00e9" * 2048)),
    ]
    vectors = [dict(v) for v in seed_doc["vectors"]]
    for desc, r in extra:
        vectors.append({"n": len(vectors) + 1, "description": desc,
                        "content_hash": blake3.blake3(canon(r)).hexdigest(), "receipt": r})
    doc = dict(seed_doc, vector_count=len(vectors), vectors=vectors)
    (out / "stream-window-vectors.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    windows = [
        {"stream_id": "stream-demo", "window_id": 1, "ticks": [{"ts_ns": 0, "kind": "inbound", "bytes": 3200}]},
        {"b": [], "a": {"z": "\u00e9\u0000", "y": -9007199254740991}},
    ]
    wh = {"_comment": "synthetic test helper output", "vectors": []}
    for i, w in enumerate(windows, 1):
        c = canon(w)
        wh["vectors"].append({"n": i, "description": f"window {i}", "canonical_json": c.decode("utf-8"),
                              "window_hash": blake3.blake3(c).hexdigest()})
    (out / "stream-window-hash-vectors.json").write_text(json.dumps(wh, indent=2) + "\n", encoding="utf-8")

    base = canon(vectors[0]["receipt"]).decode("utf-8")
    neg_inputs = [
        ("bom", "\ufeff" + base),
        ("trailing newline", base + "\n"),
        ("whitespace", base.replace(":", ": ", 1)),
        ("key order", '{"id":"stream-demo:0001",' + base[1:].replace(',"id":"stream-demo:0001"', "")),
        ("duplicate key", base[:-1] + ',"joules_uj":350}'),
        ("fraction", base.replace('"joules_uj":350', '"joules_uj":350.0')),
        ("exponent", base.replace('"joules_uj":350', '"joules_uj":3.5e2')),
        ("negative zero", base.replace('"joules_uj":350', '"joules_uj":-0')),
        ("above 2^53-1", base.replace('"joules_uj":350', '"joules_uj":9007199254740992')),
        ("negative integer", base.replace('"joules_uj":350', '"joules_uj":-1')),
        ("escaped solidus", base.replace("did:keri", "did:\\/keri")),
        ("uppercase unicode escape", base.replace("did:keri", "did\\u003Akeri")),
        ("lone surrogate escape", base.replace("did:keri", "did:\\ud800keri")),
        ("missing field", base.replace('"joules_uj":350,', "")),
        ("extra field", base[:-1] + ',"zz":1}'),
        ("wrong schema id", base.replace("stream-window/1", "stream-window/2")),
        ("id not derived", base.replace('"id":"stream-demo:0001"', '"id":"stream-demo:1"')),
        ("impossible date", base.replace("2026-06-05", "2026-02-30")),
        ("non-leap 29 Feb", base.replace("2026-06-05", "2025-02-29")),
        ("hour 24", base.replace("T00:00:00Z", "T24:00:00Z")),
        ("uppercase window hash", base.replace("a" * 64, "A" * 64)),
        ("unknown provenance", base.replace("Estimator", "Guess")),
        ("empty pass chain", base.replace('["always-pass-stream"]', "[]")),
        ("NaN", base.replace('"joules_uj":350', '"joules_uj":NaN')),
        ("top-level array", "[" + base + "]"),
        ("string of 4097 bytes", base.replace("did:keri:EJ9testStewardAID000000000000000", "s" * 4097)),
        ("chain of 65 entries", base.replace('["always-pass-stream"]', "[" + ",".join(['"o"'] * 65) + "]")),
        ("document of 65537 bytes", big_document(base, 65_537)),
        ("truncated", base[:-1]),
    ]
    cases = []
    for i, (d, s) in enumerate(neg_inputs, 1):
        cases.append({"n": i, "description": d, "input_hex": s.encode("utf-8").hex(), "expect_refusal": "test-helper"})
    cases.append({"n": len(cases) + 1, "description": "invalid utf-8",
                  "input_hex": base.encode().replace(b"did:keri", b"did:\xc0\xafkeri").hex(), "expect_refusal": "test-helper"})
    (out / "stream-window-negative-vectors.json").write_text(
        json.dumps({"_comment": "synthetic test helper output", "cases": cases}, indent=2) + "\n", encoding="utf-8")

    pub = public_key(SEED_1)
    kid = thumbprint(pub)
    signed = {"_comment": "synthetic test helper output",
              "key": {"seed_hex": SEED_1.hex(), "public_key_hex": pub.hex(), "kid_hex": kid.hex()},
              "vectors": [], "negative": []}
    for v in vectors:
        r = v["receipt"]
        payload = canon(r)
        prot = protected(kid, r["steward"], r["id"])
        t = tbs(prot, payload)
        sig = sign(SEED_1, t)
        signed["vectors"].append({"n": v["n"], "description": v["description"],
                                  "content_hash": blake3.blake3(payload).hexdigest(),
                                  "payload_hex": payload.hex(), "protected_hex": prot.hex(),
                                  "to_be_signed_hex": t.hex(), "signature_hex": sig.hex(),
                                  "cose_sign1_hex": envelope(prot, payload, sig).hex()})

    r = vectors[0]["receipt"]
    payload = canon(r)
    prot = protected(kid, r["steward"], r["id"])
    sig = sign(SEED_1, tbs(prot, payload))
    bad_payload = payload.replace(b'"joules_uj":350', b'"joules_uj":351')
    bad_prot = protected(kid, r["steward"], r["id"]).replace(b"vnd.jouleclaw", b"vnd.jouleclbw")
    flipped = bytearray(sig)
    flipped[0] ^= 1
    ws_payload = payload.replace(b":", b": ", 1)

    def resigned(p=prot, pl=payload, seed=SEED_1, **kw):
        return envelope(p, pl, sign(seed, tbs(p, pl)), **kw)

    negs = [
        ("tampered payload", envelope(prot, bad_payload, sig)),
        ("tampered protected header", envelope(bad_prot, payload, sig)),
        ("flipped signature bit", envelope(prot, payload, bytes(flipped))),
        ("signed with another key", resigned(seed=SEED_2)),
        ("untagged", resigned(tag=None)),
        ("wrong tag 98", resigned(tag=98)),
        ("alg -7", resigned(p=protected(kid, r["steward"], r["id"], alg=-7))),
        ("alg -19", resigned(p=protected(kid, r["steward"], r["id"], alg=-19))),
        ("alg in unprotected header", resigned(uhdr={1: -8})),
        ("crit present", resigned(p=protected(kid, r["steward"], r["id"], extra={2: [15]}))),
        ("validly signed non-canonical payload", resigned(pl=ws_payload)),
        ("iss mismatch", resigned(p=protected(kid, "did:other", r["id"]))),
        ("sub mismatch", resigned(p=protected(kid, r["steward"], "stream-demo:0002"))),
        ("kid of another key", resigned(p=protected(thumbprint(public_key(SEED_2)), r["steward"], r["id"]))),
        ("trailing byte", resigned() + b"\x00"),
        ("unknown protected label", resigned(p=protected(kid, r["steward"], r["id"], extra={99: 1}))),
    ]
    for i, (d, b) in enumerate(negs, 1):
        signed["negative"].append({"n": i, "description": d, "cose_sign1_hex": b.hex(), "expect_refusal": "test-helper"})
    (out / "stream-window-signed-vectors.json").write_text(json.dumps(signed, indent=2) + "\n", encoding="utf-8")

    uint = {"type": "integer", "minimum": 0, "maximum": 2**53 - 1}
    nonempty = {"type": "string", "minLength": 1}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "stream-window/1 (synthetic test helper copy)",
        "type": "object",
        "additionalProperties": False,
        "required": ["jc_receipt", "id", "closed_at", "steward", "stream_id", "window_id", "window_hash",
                     "tick_count", "inbound_bytes", "outbound_bytes", "joules_uj", "energy_provenance",
                     "verdict", "conservation"],
        "properties": {
            "jc_receipt": {"const": "stream-window/1"}, "id": nonempty,
            "closed_at": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
            "steward": nonempty, "stream_id": nonempty, "window_id": uint,
            "window_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "tick_count": uint, "inbound_bytes": uint, "outbound_bytes": uint, "joules_uj": uint,
            "energy_provenance": {"enum": ["Estimator", "Rapl", "HwShunt"]},
            "verdict": {"type": "object"}, "conservation": {"type": "object"},
        },
    }
    (out / "stream-window-1.schema.json").write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")

    cw = Path(args.cose_wg)
    if cw.is_dir():
        (out / "cose-wg").mkdir(exist_ok=True)
        for f in sorted(cw.iterdir()):
            shutil.copy(f, out / "cose-wg" / f.name)
    print(f"wrote synthetic vectors to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
