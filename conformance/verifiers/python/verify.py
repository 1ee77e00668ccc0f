#!/usr/bin/env python3
"""Independent verifier for stream-window/1 receipts and their COSE_Sign1 envelopes.

Usage: verify.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

Checks every vector file it finds in CONFORMANCE_DIR (see ../../README.md for the formats),
prints one line per check, and closes with `python: N passed, N failed`. Exit status is 0
only if every check passed and at least one vector file was present.

Libraries: pycose (COSE_Sign1), cbor2 (CBOR), rfc8785 (canonical JSON), blake3,
cryptography (Ed25519, SHA-256), PyNaCl (libsodium's Ed25519 point checks), jsonschema
(optional schema file).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
from pathlib import Path

import blake3
import cbor2
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from nacl.bindings import crypto_core_ed25519_is_valid_point
from pycose.keys import EC2Key, OKPKey
from pycose.keys.curves import P256, Ed25519
from pycose.messages import Sign1Message

SCHEMA_ID = "stream-window/1"
CONTENT_TYPE = "application/vnd.jouleclaw.stream-window+json"
MAX_SAFE = 2**53 - 1
PROVENANCE = ("Estimator", "Rapl", "HwShunt")
FIELDS = frozenset((
    "jc_receipt", "id", "closed_at", "steward", "stream_id", "window_id", "window_hash", "tick_count",
    "inbound_bytes", "outbound_bytes", "joules_uj", "energy_provenance", "verdict", "conservation",
))
UINT_FIELDS = ("window_id", "tick_count", "inbound_bytes", "outbound_bytes", "joules_uj")
HEX64 = re.compile(r"[0-9a-f]{64}")
CLOSED_AT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")
THUMBPRINT_PREFIX = bytes.fromhex("a301012006215820")  # {1: 1, -1: 6, -2: h'<32 bytes>'}
# Canonical encodings of the eight Ed25519 points of small order (orders 1, 2, 4, 4, 8, 8, 8, 8).
# A strict verifier (ed25519-dalek verify_strict) refuses them as public key A and as R.
SMALL_ORDER = frozenset(bytes.fromhex(h) for h in (
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
))

FILES = {
    "receipts": "stream-window-vectors.json",
    "receipts_extended": "stream-window-vectors-extended.json",
    "window_hash": "stream-window-hash-vectors.json",
    "negative": "stream-window-negative-vectors.json",
    "signed": "stream-window-signed-vectors.json",
    "signed_extra": "stream-window-signed-negative-extra-vectors.json",
    "schema": "stream-window-1.schema.json",
}


# The receipt decoder's bounds, at their exact values (Limits::RECEIPT in jouleclaw-jcr1):
# a document of 65,536 bytes is accepted and one byte more is refused; the root object is
# depth 1; string lengths (keys included) count decoded UTF-8 bytes.
RECEIPT_LIMITS = {"document_bytes": 65_536, "depth": 3, "string_bytes": 4_096, "array_len": 64}


class Refusal(Exception):
    """A refused input, with the class of the refusal (see README.md)."""

    def __init__(self, cls: str, detail: str):
        super().__init__(f"[{cls}] {detail}")
        self.cls = cls


# --------------------------------------------------------------------------------------------
# Canonical JSON (JCR-1)
# --------------------------------------------------------------------------------------------

def scan_numbers(text: str):
    """Yield every number token outside strings (raw text, before any parsing)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "-" or "0" <= c <= "9":
            j = i + 1
            while j < n and text[j] in "0123456789.eE+-":
                j += 1
            yield text[i:j]
            i = j
        else:
            i += 1


def max_depth(text: str) -> int:
    """Deepest bracket nesting outside strings, from the raw text (no recursion)."""
    depth = deepest = 0
    in_str = esc = False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def check_number_token(tok: str) -> None:
    if any(ch in tok for ch in ".eE"):
        raise Refusal("number", f"number {tok!r} has a fraction or exponent")
    if tok == "-0":
        raise Refusal("number", "negative zero")
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", tok) and abs(int(tok)) > MAX_SAFE:
        raise Refusal("number", f"integer {tok} outside [-(2^53-1), 2^53-1]")


def _pairs(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise Refusal("duplicate_key", f"duplicate key {k!r}")
        obj[k] = v
    return obj


def _no_float(tok: str):
    raise Refusal("number", f"number {tok!r} has a fraction or exponent")


def _no_constant(tok: str):
    raise Refusal("json", f"{tok} is not JSON")


def check_limits(value, limits: dict, depth: int = 1) -> None:
    if isinstance(value, str):
        if len(value.encode("utf-8", "surrogatepass")) > limits["string_bytes"]:
            raise Refusal("limit", f"string longer than {limits['string_bytes']} bytes")
    elif isinstance(value, (list, dict)):
        if depth > limits["depth"]:
            raise Refusal("limit", f"nesting deeper than {limits['depth']}")
        if isinstance(value, list):
            if len(value) > limits["array_len"]:
                raise Refusal("limit", f"array longer than {limits['array_len']} elements")
            for v in value:
                check_limits(v, limits, depth + 1)
        else:
            for k, v in value.items():
                check_limits(k, limits, depth + 1)
                check_limits(v, limits, depth + 1)


def parse_jcr1(data: bytes, limits: dict | None = None):
    """Strictly decode bytes that must be exactly the canonical JCR-1 encoding of a value."""
    if limits and len(data) > limits["document_bytes"]:
        raise Refusal("limit", f"document larger than {limits['document_bytes']} bytes")
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise Refusal("utf8", f"invalid UTF-8 at byte {e.start}") from None
    if text.startswith("\ufeff"):
        raise Refusal("utf8", "byte order mark")
    if limits and max_depth(text) > limits["depth"]:
        raise Refusal("limit", f"nesting deeper than {limits['depth']}")
    for tok in scan_numbers(text):
        check_number_token(tok)
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_float=_no_float, parse_constant=_no_constant)
    except Refusal:
        raise
    except (ValueError, RecursionError) as e:
        raise Refusal("json", f"not JSON: {e}") from None
    if limits:
        check_limits(value, limits)
    try:
        again = rfc8785.dumps(value)
    except rfc8785.IntegerDomainError as e:
        raise Refusal("number", str(e)) from None
    except rfc8785.CanonicalizationError as e:
        raise Refusal("string", f"cannot canonicalize: {e}") from None
    if again != data:
        raise Refusal("non_canonical", f"not the canonical encoding (first difference at byte {first_diff(again, data)})")
    return value


def first_diff(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


# --------------------------------------------------------------------------------------------
# stream-window/1 receipt rules (including those JSON Schema cannot express)
# --------------------------------------------------------------------------------------------

def is_uint(v) -> bool:
    return type(v) is int and 0 <= v <= MAX_SAFE


def is_text(v, nonempty=True) -> bool:
    return type(v) is str and (len(v) > 0 or not nonempty)


def days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def check_closed_at(s) -> None:
    m = CLOSED_AT.fullmatch(s) if type(s) is str else None
    if not m:
        raise Refusal("schema", "closed_at is not YYYY-MM-DDTHH:MM:SSZ")
    y, mo, d, h, mi, se = (int(g) for g in m.groups())
    if not (1 <= mo <= 12 and 1 <= d <= days_in_month(y, mo) and h <= 23 and mi <= 59 and se <= 59):
        raise Refusal("calendar", f"closed_at {s} is not a real UTC date-time")


def check_variant(obj, what: str, variants: dict) -> None:
    if type(obj) is not dict:
        raise Refusal("schema", f"{what} is not an object")
    kind = obj.get("kind")
    if kind not in variants:
        raise Refusal("schema", f"{what}.kind {kind!r} unknown")
    spec = variants[kind]
    if set(obj) != set(spec) | {"kind"}:
        raise Refusal("schema", f"{what} ({kind}) has fields {sorted(obj)}, expected {sorted(set(spec) | {'kind'})}")
    for k, ok in spec.items():
        if not ok(obj[k]):
            raise Refusal("schema", f"{what}.{k} invalid")


VERDICTS = {
    "pass": {"chain": lambda v: type(v) is list and len(v) >= 1 and all(is_text(x) for x in v)},
    "yield": {"seen_at": is_uint},
    "fail": {"oracle": is_text, "reason": lambda v: is_text(v, nonempty=False)},
    "need_more": {"oracle": is_text, "reason": lambda v: is_text(v, nonempty=False)},
}
CONSERVATION = {
    "conforming": {},
    "hallucination": {"unaccounted": is_uint},
    "barge_in_ignored": {"barge_in_ts_ns": is_uint, "outbound_ts_ns": is_uint},
}


def check_receipt(r, schema_validator=None) -> None:
    if type(r) is not dict:
        raise Refusal("schema", "receipt is not an object")
    if set(r) != FIELDS:
        missing, extra = sorted(FIELDS - set(r)), sorted(set(r) - FIELDS)
        raise Refusal("schema", f"fields: missing {missing}, unknown {extra}")
    if r["jc_receipt"] != SCHEMA_ID:
        raise Refusal("schema", f"jc_receipt {r['jc_receipt']!r}")
    for k in ("steward", "stream_id"):
        if not is_text(r[k]):
            raise Refusal("schema", f"{k} must be a non-empty string")
    for k in UINT_FIELDS:
        if not is_uint(r[k]):
            raise Refusal("schema", f"{k} must be an integer in [0, 2^53-1]")
    if type(r["window_hash"]) is not str or not HEX64.fullmatch(r["window_hash"]):
        raise Refusal("schema", "window_hash must be 64 lowercase hex digits")
    if r["energy_provenance"] not in PROVENANCE:
        raise Refusal("schema", f"energy_provenance {r['energy_provenance']!r}")
    check_variant(r["verdict"], "verdict", VERDICTS)
    check_variant(r["conservation"], "conservation", CONSERVATION)
    check_closed_at(r["closed_at"])
    if type(r["id"]) is not str or r["id"] != f"{r['stream_id']}:{r['window_id']:04d}":
        raise Refusal("id", f"id {r['id']!r} is not stream_id:window_id (4-digit zero pad)")
    if schema_validator is not None:
        errs = list(schema_validator.iter_errors(r))
        if errs:
            raise Refusal("schema", f"JSON Schema: {errs[0].message}")


def check_receipt_bytes(data: bytes, schema_validator=None):
    value = parse_jcr1(data, RECEIPT_LIMITS)
    check_receipt(value, schema_validator)
    return value


# --------------------------------------------------------------------------------------------
# COSE_Sign1 profile
# --------------------------------------------------------------------------------------------

def cbor_decode_exact(data: bytes):
    fp = io.BytesIO(data)
    try:
        value = cbor2.CBORDecoder(fp).decode()
    except Exception as e:  # cbor2 raises several types for malformed input
        raise Refusal("cbor", f"malformed CBOR: {e}") from None
    if fp.tell() != len(data):
        raise Refusal("cbor", f"{len(data) - fp.tell()} trailing bytes after the CBOR item")
    return value


def thumbprint(public_key: bytes) -> bytes:
    return hashlib.sha256(THUMBPRINT_PREFIX + public_key).digest()


def sig_structure(protected: bytes, payload: bytes, external_aad: bytes = b"") -> bytes:
    return cbor2.dumps(["Signature1", protected, external_aad, payload])


def protected_header(kid: bytes, steward: str, rid: str) -> bytes:
    return cbor2.dumps({1: -8, 3: CONTENT_TYPE, 4: kid, 15: {1: steward, 2: rid}})


def ed25519_verify_strict(sig: bytes, msg: bytes, public_key: bytes) -> None:
    if len(sig) != 64 or len(public_key) != 32:
        raise Refusal("signature", "signature or public key of the wrong length")
    if public_key in SMALL_ORDER or sig[:32] in SMALL_ORDER:
        raise Refusal("signature", "small-order public key or R")
    # OpenSSL checks S < L and compares R byte for byte, but accepts a public key written
    # non-canonically (y >= p) and any mixed-order point for which the cofactorless equation
    # holds. libsodium's is_valid_point requires a canonical encoding of a curve point that is
    # not of small order and lies in the prime-order subgroup; applied to A and to R it makes
    # the cofactored and cofactorless equations agree (README, "Strict Ed25519").
    if not crypto_core_ed25519_is_valid_point(public_key):
        raise Refusal("signature", "public key is not a canonical, torsion-free point of large order")
    if not crypto_core_ed25519_is_valid_point(sig[:32]):
        raise Refusal("signature", "R is not a canonical, torsion-free point of large order")
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(sig, msg)
    except (InvalidSignature, ValueError):
        raise Refusal("signature", "Ed25519 signature does not verify") from None


def verify_cose(data: bytes, public_key: bytes, schema_validator=None):
    """Verify a stream-window/1 COSE_Sign1 against a public key; return the receipt or raise Refusal."""
    item = cbor_decode_exact(data)
    if not isinstance(item, cbor2.CBORTag):
        raise Refusal("tag", "untagged COSE_Sign1 (tag 18 required)")
    if item.tag != 18:
        raise Refusal("tag", f"CBOR tag {item.tag}, expected 18")
    body = item.value
    if not (type(body) is list and len(body) == 4):
        raise Refusal("structure", "COSE_Sign1 is not a 4-element array")
    prot, unprot, payload, sig = body
    if type(prot) is not bytes or type(payload) is not bytes or type(sig) is not bytes:
        raise Refusal("structure", "protected, payload and signature must be byte strings")
    if type(unprot) is not dict:
        raise Refusal("structure", "unprotected header is not a map")
    if cbor2.dumps(item) != data:
        raise Refusal("cbor", "envelope is not in deterministic CBOR encoding")
    if unprot:
        raise Refusal("header", f"unprotected header not empty (labels {sorted(map(str, unprot))})")
    if len(sig) != 64:
        raise Refusal("structure", f"signature is {len(sig)} bytes, expected 64")
    hdr = cbor_decode_exact(prot)
    if type(hdr) is not dict:
        raise Refusal("header", "protected header is not a map")
    if 2 in hdr:
        raise Refusal("header", "crit (label 2) present")
    if hdr.get(1) != -8 or type(hdr.get(1)) is not int:
        raise Refusal("header", f"alg {hdr.get(1)!r}, expected -8 (EdDSA)")
    if list(hdr) != [1, 3, 4, 15]:
        raise Refusal("header", f"protected labels {list(hdr)}, expected [1, 3, 4, 15]")
    if hdr[3] != CONTENT_TYPE:
        raise Refusal("header", f"content type {hdr[3]!r}")
    kid, claims = hdr[4], hdr[15]
    if type(kid) is not bytes or len(kid) != 32:
        raise Refusal("header", "kid is not a 32-byte string")
    if type(claims) is not dict or list(claims) != [1, 2] or not all(type(v) is str for v in claims.values()):
        raise Refusal("header", "CWT claims must be {1: iss, 2: sub} text")
    if cbor2.dumps(hdr) != prot:
        raise Refusal("header", "protected header is not in deterministic CBOR encoding")
    if kid != thumbprint(public_key):
        raise Refusal("kid", "kid is not the RFC 9679 thumbprint of the verification key")
    # Signature, directly with cryptography (RFC 8032 verification) ...
    ed25519_verify_strict(sig, sig_structure(prot, payload), public_key)
    # ... and through pycose, on the received bytes.
    try:
        msg = Sign1Message.decode(data)
        msg.key = OKPKey(crv=Ed25519, x=public_key)
        ok = msg.verify_signature()
    except Exception as e:
        raise Refusal("signature", f"pycose: {e}") from None
    if not ok:
        raise Refusal("signature", "pycose: signature does not verify")
    try:
        receipt = check_receipt_bytes(payload, schema_validator)
    except Refusal as e:
        raise Refusal("payload:" + e.cls, str(e)) from None
    if claims[1] != receipt["steward"]:
        raise Refusal("claims", "CWT iss does not equal the receipt steward")
    if claims[2] != receipt["id"]:
        raise Refusal("claims", "CWT sub does not equal the receipt id")
    return receipt


# --------------------------------------------------------------------------------------------
# Generic COSE_Sign1 (cose-wg Examples): tag optional, alg from either bucket, ES256 or EdDSA
# --------------------------------------------------------------------------------------------

def b64url(s: str) -> bytes:
    import base64
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def verify_cose_wg(case: dict) -> None:
    sign0 = case["input"]["sign0"]
    key = sign0["key"]
    aad = bytes.fromhex(sign0.get("external", ""))
    data = bytes.fromhex(case["output"]["cbor"])
    item = cbor_decode_exact(data)
    if isinstance(item, cbor2.CBORTag):
        if item.tag != 18:
            raise Refusal("tag", f"CBOR tag {item.tag}, expected 18")
        item = item.value
    if not (type(item) is list and len(item) == 4):
        raise Refusal("structure", "not a 4-element array")
    prot, unprot, payload, sig = item
    hdr = cbor_decode_exact(prot) if prot else {}
    alg = hdr.get(1, unprot.get(1))
    # cose-wg (sign-pass-01) and pycose sign an empty protected map as h'' even when it
    # travels as h'a0'. The stream-window/1 profile never has an empty protected header.
    tbs = sig_structure(prot if hdr else b"", payload, aad)
    expect_tbs = case.get("intermediates", {}).get("ToBeSign_hex")
    # The intermediates of a "fail" example describe the message before it was altered.
    if expect_tbs and not case.get("fail") and bytes.fromhex(expect_tbs) != tbs:
        raise Refusal("structure", "Sig_structure differs from the example's ToBeSign")
    if alg == -8 and key.get("crv") == "Ed25519":
        x = bytes.fromhex(key["x_hex"])
        ed25519_verify_strict(sig, tbs, x)
        if "d_hex" in key and not case.get("fail"):
            again = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(key["d_hex"])).sign(tbs)
            if again != sig:
                raise Refusal("signature", "signature recomputed from d differs (Ed25519 is deterministic)")
        cose_key = OKPKey(crv=Ed25519, x=x)
    elif alg == -7 and key.get("crv") == "P-256":
        cose_key = EC2Key(crv=P256, x=b64url(key["x"]), y=b64url(key["y"]))
    else:
        raise Refusal("header", f"unsupported alg {alg!r}")
    msg = Sign1Message.from_cose_obj([prot, unprot, payload, sig], True)
    msg.key = cose_key
    msg.external_aad = aad
    try:
        ok = msg.verify_signature()
    except Exception as e:
        raise Refusal("signature", f"pycose: {e}") from None
    if not ok:
        raise Refusal("signature", "pycose: signature does not verify")


# --------------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------------

class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def ok(self, name: str, note: str = "") -> None:
        self.passed += 1
        print(f"ok    {name}" + (f"  ({note})" if note else ""))

    def fail(self, name: str, why: str) -> None:
        self.failed += 1
        print(f"FAIL  {name}: {why}")

    def check(self, name: str, fn) -> None:
        try:
            note = fn()
        except Refusal as e:
            self.fail(name, str(e))
        except Exception as e:  # a malformed vector file is a failure, not a crash
            self.fail(name, f"{type(e).__name__}: {e}")
        else:
            self.ok(name, note or "")


def load_json_file(path: Path):
    """Vector files are pretty-printed JSON: parse strictly (no duplicate keys, no NaN, safe integers)."""
    text = path.read_text(encoding="utf-8")
    for tok in scan_numbers(text):
        check_number_token(tok)
    return json.loads(text, object_pairs_hook=_pairs, parse_float=_no_float, parse_constant=_no_constant)


def check_receipts_file(rep: Report, present: dict, kind: str, validator) -> None:
    doc = load_or_fail(rep, present, kind)
    if doc is None:
        return
    name = FILES[kind]

    def header():
        expect_equal("schema_id", doc.get("schema_id"), SCHEMA_ID)
        expect_equal("vector_count", doc.get("vector_count"), len(doc["vectors"]))
        if not doc["vectors"]:
            raise Refusal("mismatch", "no vectors")
    rep.check(f"{name} header", header)
    for v in doc.get("vectors", []):
        def one(v=v):
            check_receipt(v["receipt"], validator)
            canonical = rfc8785.dumps(v["receipt"])
            expect_equal("content_hash", blake3.blake3(canonical).hexdigest(), v["content_hash"])
            # Round trip: parse the canonical bytes strictly, re-encode, compare bytes.
            parsed = check_receipt_bytes(canonical, validator)
            expect_equal("round trip", rfc8785.dumps(parsed), canonical)
            return f"{len(canonical)} canonical bytes, hash ok"
        rep.check(f"{name} #{v.get('n')} {v.get('description', '')[:48]}", one)


def load_or_fail(rep: Report, present: dict, kind: str):
    if kind not in present:
        return None
    try:
        return load_json_file(present[kind])
    except (Refusal, ValueError, OSError) as e:
        rep.fail(FILES[kind], f"cannot load: {e}")
        return None


def expect_equal(what: str, got, want) -> None:
    if got != want:
        raise Refusal("mismatch", f"{what}: computed {got!r}, file has {want!r}")


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    rep = Report()
    print(f"python verifier: {root}")
    present = {k: (root / f) for k, f in FILES.items() if (root / f).is_file()}
    cose_wg = sorted((root / "cose-wg").glob("*.json")) if (root / "cose-wg").is_dir() else []
    for k, f in FILES.items():
        if k not in present:
            print(f"skip  {f}: absent")
    if not cose_wg:
        print("skip  cose-wg/*.json: absent")
    if not (set(present) - {"schema"}) and not cose_wg:
        rep.fail("discovery", f"no vector file in {root}")
        return finish(rep)

    validator = None
    if "schema" in present:
        def load_schema():
            nonlocal validator
            import jsonschema
            schema = load_json_file(present["schema"])
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            return "draft 2020-12, used alongside the hand-written rules"
        rep.check(FILES["schema"], load_schema)

    for kind in ("receipts", "receipts_extended"):
        check_receipts_file(rep, present, kind, validator)

    doc = load_or_fail(rep, present, "window_hash")
    if doc is not None:
        name = FILES["window_hash"]
        if not doc.get("vectors"):
            rep.fail(name, "no vectors")
        for v in doc.get("vectors", []):
            def one(v=v):
                data = v["canonical_json"].encode("utf-8")
                parse_jcr1(data)  # re-canonicalizes and requires byte equality
                if not HEX64.fullmatch(v["window_hash"]):
                    raise Refusal("mismatch", "window_hash is not 64 lowercase hex")
                expect_equal("window_hash", blake3.blake3(data).hexdigest(), v["window_hash"])
            rep.check(f"{name} #{v.get('n')} {v.get('description', '')[:48]}", one)

    doc = load_or_fail(rep, present, "negative")
    if doc is not None:
        name = FILES["negative"]
        if not doc.get("cases"):
            rep.fail(name, "no cases")
        for c in doc.get("cases", []):
            def one(c=c):
                try:
                    check_receipt_bytes(bytes.fromhex(c["input_hex"]), validator)
                except Refusal as e:
                    return f"refused [{e.cls}], rust code {c.get('expect_refusal')}"
                raise Refusal("accepted", f"input was ACCEPTED; expected refusal {c.get('expect_refusal')}")
            rep.check(f"{name} #{c.get('n')} {c.get('description', '')[:48]}", one)

    doc = load_or_fail(rep, present, "signed")
    if doc is not None:
        name = FILES["signed"]
        try:
            key = doc["key"]
            seed = bytes.fromhex(key["seed_hex"])
            pub = bytes.fromhex(key["public_key_hex"])
            signer = Ed25519PrivateKey.from_private_bytes(seed)
        except (KeyError, TypeError, ValueError) as e:
            rep.fail(f"{name} key", f"malformed key: {e!r}")
            return finish(rep)

        def key_check():
            derived = signer.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            expect_equal("public key from seed", derived.hex(), key["public_key_hex"])
            expect_equal("kid (RFC 9679 thumbprint)", thumbprint(pub).hex(), key["kid_hex"])
        rep.check(f"{name} key", key_check)
        if not doc.get("vectors"):
            rep.fail(name, "no signed vectors")
        for v in doc.get("vectors", []):
            def one(v=v):
                payload = bytes.fromhex(v["payload_hex"])
                expect_equal("content_hash", blake3.blake3(payload).hexdigest(), v["content_hash"])
                receipt = check_receipt_bytes(payload, validator)
                prot = protected_header(thumbprint(pub), receipt["steward"], receipt["id"])
                expect_equal("protected_hex", prot.hex(), v["protected_hex"])
                tbs = sig_structure(prot, payload)
                expect_equal("to_be_signed_hex", tbs.hex(), v["to_be_signed_hex"])
                sig = signer.sign(tbs)
                expect_equal("signature_hex (recomputed from the test key)", sig.hex(), v["signature_hex"])
                envelope = cbor2.dumps(cbor2.CBORTag(18, [prot, {}, payload, sig]))
                expect_equal("cose_sign1_hex", envelope.hex(), v["cose_sign1_hex"])
                verify_cose(bytes.fromhex(v["cose_sign1_hex"]), pub, validator)
                return "recomputed bytes equal; pycose + Ed25519 verify"
            rep.check(f"{name} #{v.get('n')} {v.get('description', '')[:48]}", one)
        for c in doc.get("negative", []):
            def one(c=c):
                try:
                    verify_cose(bytes.fromhex(c["cose_sign1_hex"]), pub, validator)
                except Refusal as e:
                    return f"refused [{e.cls}], rust code {c.get('expect_refusal')}"
                raise Refusal("accepted", f"envelope was ACCEPTED; expected refusal {c.get('expect_refusal')}")
            rep.check(f"{name} negative #{c.get('n')} {c.get('description', '')[:40]}", one)

    doc = load_or_fail(rep, present, "signed_extra")
    if doc is not None:
        name = FILES["signed_extra"]
        if not doc.get("cases"):
            rep.fail(name, "no cases")
        for c in doc.get("cases", []):
            def one(c=c):
                try:
                    verify_cose(bytes.fromhex(c["cose_sign1_hex"]), bytes.fromhex(c["public_key_hex"]), validator)
                except Refusal as e:
                    if e.cls != "signature":
                        raise Refusal("mismatch", f"refused for another reason ({e}); expected the signature check") from None
                    return f"refused [{e.cls}]"
                raise Refusal("accepted", f"envelope was ACCEPTED; expected refusal by the strict rule {c.get('rule')}")
            rep.check(f"{name} #{c.get('n')} {c.get('rule')}", one)

    for path in cose_wg:
        def one(path=path):
            case = load_json_file(path)
            should_fail = bool(case.get("fail"))
            try:
                verify_cose_wg(case)
            except Refusal as e:
                if should_fail:
                    return f"refused as expected [{e.cls}]"
                raise
            if should_fail:
                raise Refusal("accepted", "example marked fail was ACCEPTED")
            return "verifies"
        rep.check(f"cose-wg/{path.name}", one)

    return finish(rep)


def finish(rep: Report) -> int:
    print(f"python: {rep.passed} passed, {rep.failed} failed")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
