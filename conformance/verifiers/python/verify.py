#!/usr/bin/env python3
"""Independent verifier for stream-window/1 receipts, their COSE_Sign1 envelopes, and stream-seal/1
(RFC 9162 proofs with hashlib, checkpoints and RFC 9942 inclusion receipts, completeness) and its
stream-seal/2 final seal (the call's documents by SHA-256), and
voice-turn/1 (check_voice_turn.py's checks: exact levels, canonical turns, negatives),
stop-latency/1 (check_stop_latency.py's checks: signed documents, negatives, tampered copies),
interaction-metrics/1 (check_interaction_metrics.py's checks: signed documents, panels, negatives,
tampered copies), and
the call registry (check_registry.py's checks: C2SP notes, cosignatures, tlog-proof files, forks,
policies).

Usage: verify.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

Checks every vector file it finds in CONFORMANCE_DIR (see ../../README.md for the formats),
prints one line per check, and closes with `python: N passed, N failed`. Exit status is 0
only if every check passed and at least one vector file was present.

Libraries: pycose (COSE_Sign1), cbor2 (CBOR), rfc8785 (canonical JSON), blake3,
cryptography (Ed25519, SHA-256), PyNaCl (libsodium's Ed25519 point checks), jsonschema
(optional schema file).
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.metadata
import io
import json
import re
import sys
from collections.abc import Mapping
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
    "seal": "stream-seal-vectors.json",
    "seal_schema": "stream-seal-1.schema.json",
    "seal2": "stream-seal-2-vectors.json",
    "seal2_schema": "stream-seal-2.schema.json",
    "voice_turn": "voice-turn-vectors.json",
    "registry": "call-registry-vectors.json",
    "stop_latency": "stop-latency-vectors.json",
    "interaction": "interaction-metrics-vectors.json",
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

def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


CBOR2_VERSION = _version("cbor2")
CBOR2_MAJOR = int(CBOR2_VERSION.split(".")[0]) if CBOR2_VERSION[:1].isdigit() else None


def thaw(x):
    """A decoded CBOR item with plain lists and dicts. cbor2 6.x decodes the arrays and maps
    inside a tag (and inside map keys) as tuples and frozendicts, cbor2 5.x as lists and dicts;
    every check here is written against lists and dicts."""
    if isinstance(x, cbor2.CBORTag):
        return cbor2.CBORTag(x.tag, thaw(x.value))
    if isinstance(x, (list, tuple)):
        return [thaw(y) for y in x]
    if isinstance(x, Mapping):
        return {k: thaw(y) for k, y in x.items()}
    return x


def cbor_decode_exact(data: bytes):
    fp = io.BytesIO(data)
    try:
        value = cbor2.CBORDecoder(fp).decode()
    except Exception as e:  # cbor2 raises several types for malformed input
        raise Refusal("cbor", f"malformed CBOR: {e}") from None
    if fp.tell() != len(data):
        raise Refusal("cbor", f"{len(data) - fp.tell()} trailing bytes after the CBOR item")
    return thaw(value)


def pycose_sign1(data: bytes) -> Sign1Message:
    """pycose's Sign1Message of the received bytes. pycose 1.1 decodes with the cbor2 5.x API
    (it wants the tag's array as a list); under cbor2 6.x the array is handed to pycose's own
    from_cose_obj as a list, decoded here."""
    if CBOR2_MAJOR is not None and CBOR2_MAJOR < 6:
        return Sign1Message.decode(data)
    item = cbor_decode_exact(data)
    if not isinstance(item, cbor2.CBORTag) or item.tag != Sign1Message.cbor_tag or type(item.value) is not list:
        raise TypeError("Bytes cannot be decoded as COSE_Sign1 message")
    return Sign1Message.from_cose_obj(item.value, True)


# A COSE_Sign1 ({1: -8}, payload "jouleclaw verifier dependency probe") signed with the RFC 8032
# section 7.1 TEST 1 key: verified at start, through every library this verifier uses.
PROBE_KEY = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
PROBE_COSE = bytes.fromhex(
    "d28443a10127a058236a6f756c65636c617720766572696669657220646570656e64656e63792070726f6265"
    "58409c26aa188d07ee726dd477b7a0e27a6a9694939adf49eb2d54a281c2f087cb82a2a5fc897ae55725b5d4"
    "d859bbb9d298e7720f50b098a13952a246693ae6e808")


def dependencies_unsupported() -> str | None:
    """None when the installed libraries verify a known-good COSE_Sign1 (cbor2 decoding with
    the checks here, pycose, cryptography); else why not. A verifier must never report a valid
    receipt as invalid because of a library it was not written for: it refuses to run instead."""
    versions = ", ".join(f"{m} {_version(m)}" for m in ("cbor2", "pycose"))
    try:
        item = cbor_decode_exact(PROBE_COSE)
        if not isinstance(item, cbor2.CBORTag) or type(item.value) is not list or type(item.value[1]) is not dict:
            return f"cbor2 does not decode a COSE_Sign1 as this verifier expects ({versions})"
        ed25519_verify_strict(item.value[3], sig_structure(item.value[0], item.value[2]), PROBE_KEY)
        msg = pycose_sign1(PROBE_COSE)
        msg.key = OKPKey(crv=Ed25519, x=PROBE_KEY)
        if not msg.verify_signature():
            return f"pycose does not verify a valid COSE_Sign1 ({versions})"
    except Exception as e:  # noqa: BLE001 - any failure of a known-good input is the environment's
        return f"a valid COSE_Sign1 does not verify with the installed libraries ({versions}): {type(e).__name__}: {e}"
    return None


def require_supported_dependencies(prog: str) -> None:
    """Exit 2 with a clear message when dependencies_unsupported() names a problem."""
    why = dependencies_unsupported()
    if why is not None:
        print(f"{prog}: unsupported dependency: {why}; install the pinned versions "
              f"(pip install -r {Path(__file__).resolve().parent / 'requirements.txt'})", file=sys.stderr)
        sys.exit(2)


def thumbprint(public_key: bytes) -> bytes:
    return hashlib.sha256(THUMBPRINT_PREFIX + public_key).digest()


PUBLIC_KEY_PREFIX = "jouleclaw-ed25519-public-key "  # spec/JCR1-COSE-PROFILE.md, "Key files"
PUBLIC_KEY_LINE = re.compile(r"jouleclaw-ed25519-public-key ([0-9a-f]{64})\n?")


def read_public_key_text(text: str) -> bytes:
    """The 32 key bytes of public key file text: the typed prefix, 64 lowercase hex digits and at
    most one newline. A secret key file (`jouleclaw-ed25519-secret-key ...`) and an untyped file
    (bare hex, which cannot be told from a seed) are refused with ValueError."""
    m = PUBLIC_KEY_LINE.fullmatch(text)
    if m is None:
        if text.startswith("jouleclaw-ed25519-secret-key "):
            raise ValueError("a secret key file, not a public key file")
        raise ValueError(f"not a public key file (expected {PUBLIC_KEY_PREFIX!r} and 64 lowercase hex digits)")
    return bytes.fromhex(m.group(1))


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
        msg = pycose_sign1(data)
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

# --------------------------------------------------------------------------------------------
# stream-seal/1 (spec/STREAM-SEAL.md): RFC 9162 trees and proofs, seal documents, RFC 9942
# checkpoints and inclusion receipts, completeness. Refusals carry the Rust code as their class.
# --------------------------------------------------------------------------------------------

SEAL_SCHEMA_ID = "stream-seal/1"
# stream-seal/2 (section 3.2): a final seal that also commits to the call's signed documents.
SEAL_SCHEMA_ID_V2 = "stream-seal/2"
MAX_SEALED_DOCUMENTS = 16
MAX_DOCUMENT_KIND_BYTES = 64
DOCUMENT_KIND = re.compile(r"[a-z][a-z0-9-]*/[1-9][0-9]*")
SEAL_LIMITS = {"document_bytes": 16_384, "depth": 2, "string_bytes": 4_096, "array_len": 64}
# (name, type) in canonical order; the seal decoder checks them in this order.
SEAL_FIELDS = (
    ("closed_at", "datetime"), ("empty_windows_skipped", "uint"), ("final", "bool"),
    ("first_window_id", "uint"), ("last_window_id", "uint"), ("root", "hex64"),
    ("schema", "schema"), ("steward", "text"), ("stream_id", "text"), ("tree_size", "uint"),
)
# Codes the seal schema gives itself; any other refusal of a seal document is a canonical-form one.
SEAL_SCHEMA_CODES = frozenset((
    "wrong_type", "null", "unknown_field", "missing_field", "empty_string", "negative_unsigned",
    "bad_closed_at", "seal_wrong_schema", "seal_bad_root", "seal_tree_size_zero",
    "seal_window_range_reversed", "seal_window_count_mismatch",
    "seal_bad_document_kind", "seal_bad_document_digest", "seal_too_many_documents", "seal_documents_not_final",
))
VDS_LABEL, VDP_LABEL, SEAL_DOC_LABEL = 395, 396, -65537
INCLUSION_PROOFS, CONSISTENCY_PROOFS = -1, -2


def sha256(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def leaf_hash(entry: bytes) -> bytes:
    return sha256(b"\x00" + entry)


def node_hash(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def split(n: int) -> int:
    """The largest power of two smaller than n (n >= 2)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 MTH over leaf hashes (already hashed with 0x00)."""
    n = len(leaves)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return leaves[0]
    k = split(n)
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def gen_path(m: int, leaves: list[bytes]) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = split(n)
    if m < k:
        return gen_path(m, leaves[:k]) + [mth(leaves[k:])]
    return gen_path(m - k, leaves[k:]) + [mth(leaves[:k])]


def gen_subproof(m: int, leaves: list[bytes], b: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if b else [mth(leaves)]
    k = split(n)
    if m <= k:
        return gen_subproof(m, leaves[:k], b) + [mth(leaves[k:])]
    return gen_subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


def path_len(m: int, n: int) -> int:
    length = 0
    while n > 1:
        k = split(n)
        if m >= k:
            m, n = m - k, n - k
        else:
            n = k
        length += 1
    return length


def proof_len(m: int, n: int) -> int:
    length, b = 0, True
    while m != n:
        k = split(n)
        if m <= k:
            n = k
        else:
            m, n, b = m - k, n - k, False
        length += 1
    return length if b else length + 1


def proof_path(hexes) -> list[bytes]:
    out = []
    for h in hexes:
        b = bytes.fromhex(h)
        if len(b) != 32:
            raise Refusal("proof_bad_element", f"path element of {len(b)} bytes")
        out.append(b)
    return out


def root_from_inclusion(index: int, size: int, leaf: bytes, path: list[bytes]) -> bytes:
    if index >= size:
        raise Refusal("proof_index_out_of_range", f"leaf index {index} >= tree size {size}")
    if len(path) != path_len(index, size):
        raise Refusal("proof_wrong_length", f"path of {len(path)} hashes, PATH({index}, {size}) has {path_len(index, size)}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise Refusal("proof_wrong_length", "path longer than the tree")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise Refusal("proof_wrong_length", "path shorter than the tree")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, path: list[bytes], root: bytes) -> None:
    if root_from_inclusion(index, size, leaf, path) != root:
        raise Refusal("proof_root_mismatch", "the path leads to another root")


def root_from_consistency(first: int, second: int, first_root: bytes, path: list[bytes]) -> bytes:
    if not 0 < first <= second:
        raise Refusal("proof_sizes_out_of_order", f"sizes ({first}, {second})")
    if len(path) != proof_len(first, second):
        raise Refusal("proof_wrong_length", f"path of {len(path)} hashes, PROOF({first}, {second}) has {proof_len(first, second)}")
    if first == second:
        return first_root
    if first & (first - 1) == 0:
        path = [first_root] + path
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Refusal("proof_wrong_length", "path longer than the trees")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise Refusal("proof_wrong_length", "path shorter than the trees")
    if fr != first_root:
        raise Refusal("proof_first_root_mismatch", "the path does not lead to the first root")
    return sr


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, path: list[bytes]) -> None:
    if root_from_consistency(first, second, first_root, path) != second_root:
        raise Refusal("proof_root_mismatch", "the path leads to another second root")


def is_document_kind(kind: str) -> bool:
    """name/version: [a-z][a-z0-9-]* "/" [1-9][0-9]*, at most 64 bytes (section 3.2)."""
    return len(kind.encode("utf-8")) <= MAX_DOCUMENT_KIND_BYTES and DOCUMENT_KIND.fullmatch(kind) is not None


def check_documents(x) -> dict:
    """`documents` of a stream-seal/2 seal, in the order of section 3.2."""
    if x is None:
        raise Refusal("null", "documents is null")
    if type(x) is not dict:
        raise Refusal("wrong_type", "documents is not an object")
    if len(x) > MAX_SEALED_DOCUMENTS:
        raise Refusal("seal_too_many_documents", f"{len(x)} documents, at most {MAX_SEALED_DOCUMENTS}")
    for k in sorted(x, key=lambda k: k.encode("utf-16-be")):  # the canonical (JCS) member order
        d = x[k]
        if not is_document_kind(k):
            raise Refusal("seal_bad_document_kind", f"documents key {k!r} is not name/version")
        if d is None:
            raise Refusal("null", f"documents[{k!r}] is null")
        if type(d) is not str:
            raise Refusal("wrong_type", f"documents[{k!r}] is not a string")
        if not HEX64.fullmatch(d):
            raise Refusal("seal_bad_document_digest", f"documents[{k!r}] is not 64 lowercase hex digits")
    return x


def decode_seal(data: bytes) -> dict:
    """The strict stream-seal/1 and stream-seal/2 decoder: canonical form first (class
    canonical:<kind>), then the schema; `schema` "stream-seal/2" selects the field set with
    `documents` (section 3.2), any other value is read as stream-seal/1."""
    try:
        v = parse_jcr1(data, SEAL_LIMITS)
    except Refusal as e:
        raise Refusal("canonical:" + e.cls, str(e)) from None
    if type(v) is not dict:
        raise Refusal("null" if v is None else "wrong_type", "the seal is not an object")
    v2 = v.get("schema") == SEAL_SCHEMA_ID_V2
    names = [f for f, _ in SEAL_FIELDS] + (["documents"] if v2 else [])
    for k in v:
        if k not in names:
            raise Refusal("unknown_field", f"unknown field {k!r}")
    docs_checked = not v2
    for name, ty in SEAL_FIELDS:
        if not docs_checked and name > "documents":
            if "documents" not in v:
                raise Refusal("missing_field", "documents missing")
            check_documents(v["documents"])
            docs_checked = True
        if name not in v:
            raise Refusal("missing_field", f"{name} missing")
        x = v[name]
        if x is None:
            raise Refusal("null", f"{name} is null")
        if ty == "uint":
            if type(x) is not int:
                raise Refusal("wrong_type", f"{name} is not an integer")
            if x < 0:
                raise Refusal("negative_unsigned", f"{name} is negative")
        elif ty == "bool":
            if type(x) is not bool:
                raise Refusal("wrong_type", f"{name} is not a boolean")
        else:
            if type(x) is not str:
                raise Refusal("wrong_type", f"{name} is not a string")
            if ty == "schema" and x not in (SEAL_SCHEMA_ID, SEAL_SCHEMA_ID_V2):
                raise Refusal("seal_wrong_schema", f"schema {x!r}")
            if ty == "text" and x == "":
                raise Refusal("empty_string", f"{name} is empty")
            if ty == "datetime":
                try:
                    check_closed_at(x)
                except Refusal:
                    raise Refusal("bad_closed_at", f"closed_at {x!r} is not a real YYYY-MM-DDTHH:MM:SSZ") from None
            if ty == "hex64" and not HEX64.fullmatch(x):
                raise Refusal("seal_bad_root", "root is not 64 lowercase hex digits")
    if v["tree_size"] == 0:
        raise Refusal("seal_tree_size_zero", "tree_size 0")
    if v["first_window_id"] > v["last_window_id"]:
        raise Refusal("seal_window_range_reversed", "first_window_id > last_window_id")
    if v["last_window_id"] - v["first_window_id"] + 1 != v["tree_size"] + v["empty_windows_skipped"]:
        raise Refusal("seal_window_count_mismatch", "last - first + 1 != tree_size + empty_windows_skipped")
    if v2 and not v["final"]:
        raise Refusal("seal_documents_not_final", "stream-seal/2 (documents) on a seal that is not final")
    # Round trip with the JCS library: the accepted value re-encodes to the input bytes.
    if rfc8785.dumps(v) != data:
        raise Refusal("canonical:non_canonical", "the seal does not re-encode to itself")
    return v


def seal_subject(seal: dict) -> str:
    return f"{seal['stream_id']}:seal:{seal['tree_size']}"


def seal_protected(seal: dict, seal_bytes: bytes, kid: bytes) -> bytes:
    """Section 4.1, rebuilt with cbor2 (canonical: shortest heads, keys in bytewise order)."""
    return cbor2.dumps({1: -8, 4: kid, 15: {1: seal["steward"], 2: seal_subject(seal)},
                        VDS_LABEL: 1, SEAL_DOC_LABEL: seal_bytes}, canonical=True)


def proof_cbor(a: int, b: int, path: list[bytes]) -> bytes:
    return cbor2.dumps([a, b, path], canonical=True)


def seal_unprotected(label: int | None, a: int = 0, b: int = 0, path: list[bytes] | None = None) -> dict:
    if label is None:
        return {}
    return {VDP_LABEL: {label: [proof_cbor(a, b, path or [])]}}


def seal_envelope(prot: bytes, unprot: dict, sig: bytes) -> bytes:
    return cbor2.dumps(cbor2.CBORTag(18, [prot, unprot, None, sig]), canonical=True)


def seal_strict_signature(sig: bytes, tbs: bytes, public_key: bytes) -> None:
    # Step 19: A and R canonical points of prime order (libsodium's is_valid_point refuses small
    # order, a torsion component and non-canonical encodings) ...
    if len(sig) != 64 or not crypto_core_ed25519_is_valid_point(public_key) \
            or not crypto_core_ed25519_is_valid_point(sig[:32]):
        raise Refusal("seal_cose_torsion", "key or R is not a canonical point of prime order")
    # ... step 20: S < L, cofactorless equation (OpenSSL through cryptography).
    try:
        ed25519_verify_strict(sig, tbs, public_key)
    except Refusal as e:
        raise Refusal("seal_cose_bad_signature", str(e)) from None


def seal_pycose_verify(cose: bytes, root: bytes, public_key: bytes) -> None:
    """Independent second check: pycose with the root as the detached payload (RFC 9942)."""
    try:
        msg = pycose_sign1(cose)
        msg.key = OKPKey(crv=Ed25519, x=public_key)
        ok = msg.verify_signature(detached_payload=root)
    except Exception as e:
        raise Refusal("seal_cose_bad_signature", f"pycose: {type(e).__name__}: {e}") from None
    if not ok:
        raise Refusal("seal_cose_bad_signature", "pycose: signature does not verify")


def seal_parse(data: bytes, public_key: bytes):
    """Steps 1-13 of section 5. Returns (seal, protected, unprotected, unprotected bytes, signature)."""
    if not data:
        raise Refusal("seal_cose_malformed", "empty input")
    if data[0] == 0x84:
        raise Refusal("seal_cose_untagged", "untagged COSE_Sign1")
    if data[0] >> 5 == 6 and data[0] != 0xD2:
        raise Refusal("seal_cose_wrong_tag", "another tag than 18")
    if data[0] != 0xD2:
        raise Refusal("seal_cose_malformed", "not a tagged COSE_Sign1")
    try:
        item = cbor_decode_exact(data)
    except Refusal as e:
        raise Refusal("seal_cose_malformed", str(e)) from None
    if not isinstance(item, cbor2.CBORTag) or item.tag != 18:
        raise Refusal("seal_cose_wrong_tag", "another tag than 18")
    body = item.value
    if not (type(body) is list and len(body) == 4):
        raise Refusal("seal_cose_malformed", "not an array of 4")
    prot, unprot, payload, sig = body
    if type(prot) is not bytes or type(unprot) is not dict or type(sig) is not bytes:
        raise Refusal("seal_cose_malformed", "protected, unprotected or signature of the wrong type")
    try:
        hdr = cbor_decode_exact(prot)
    except Refusal as e:
        raise Refusal("seal_cose_malformed", f"protected header: {e}") from None
    if type(hdr) is not dict:
        raise Refusal("seal_cose_malformed", "protected header is not a map")
    if type(hdr.get(1)) is not int or hdr.get(1) != -8:
        raise Refusal("seal_cose_alg_not_eddsa", f"alg {hdr.get(1)!r}")
    if type(hdr.get(VDS_LABEL)) is not int or hdr.get(VDS_LABEL) != 1:
        raise Refusal("seal_cose_vds_not_rfc9162", f"vds {hdr.get(VDS_LABEL)!r}")
    seal_bytes = hdr.get(SEAL_DOC_LABEL)
    if type(seal_bytes) is not bytes:
        raise Refusal("seal_cose_seal_missing", "no seal document under -65537")
    seal = decode_seal(seal_bytes)
    kid = hdr.get(4)
    if type(kid) is not bytes or len(kid) != 32:
        raise Refusal("seal_cose_bad_kid", "kid is not a 32-byte string")
    claims = hdr.get(15)
    if type(claims) is not dict or list(claims) != [1, 2] or not all(type(x) is str for x in claims.values()):
        raise Refusal("seal_cose_iss_mismatch", "CWT claims are not {1: tstr, 2: tstr}")
    if claims[1] != seal["steward"]:
        raise Refusal("seal_cose_iss_mismatch", "iss is not the seal's steward")
    if claims[2] != seal_subject(seal):
        raise Refusal("seal_cose_sub_mismatch", f"sub {claims[2]!r} is not {seal_subject(seal)!r}")
    if seal_protected(seal, seal_bytes, kid) != prot:
        raise Refusal("seal_cose_protected_not_canonical", "protected header differs from section 4.1 rebuilt")
    if payload is not None:
        raise Refusal("seal_cose_payload_attached", "payload is not nil")
    head = cbor2.dumps(prot)
    unprot_bytes = data[1 + 1 + len(head):len(data) - 67]
    if len(sig) != 64 or b"\xd2\x84" + head + unprot_bytes + b"\xf6\x58\x40" + sig != data:
        raise Refusal("seal_cose_envelope_not_canonical", "envelope is not d2 84 <prot> <unprot> f6 58 40 <sig>")
    if kid != thumbprint(public_key):
        raise Refusal("seal_cose_unknown_kid", "kid is not the thumbprint of the key")
    return seal, prot, unprot, unprot_bytes, sig


def seal_one_proof(unprot: dict, label: int):
    """Steps 14-15: None for {}, else (a, b, path)."""
    if not unprot:
        return None
    if len(unprot) != 1 or VDP_LABEL not in unprot:
        raise Refusal("seal_cose_bad_vdp", "unprotected header is not {396: ...}")
    vdp = unprot[VDP_LABEL]
    if type(vdp) is not dict or len(vdp) != 1 or label not in vdp or type(vdp[label]) is not list:
        raise Refusal("seal_cose_bad_vdp", f"vdp is not {{{label}: [...]}}")
    proofs = vdp[label]
    if len(proofs) != 1 or type(proofs[0]) is not bytes:
        raise Refusal("seal_cose_bad_vdp", f"{len(proofs)} proofs, expected one byte string")
    p = proofs[0]
    try:
        parts = cbor_decode_exact(p)
    except Refusal as e:
        raise Refusal("seal_cose_proof_malformed", str(e)) from None
    if type(parts) is not list or len(parts) != 3 or type(parts[2]) is not list:
        raise Refusal("seal_cose_proof_malformed", "proof is not [uint, uint, [* bstr]]")
    a, b, path = parts
    if type(a) is not int or type(b) is not int or a < 0 or b < 0 or a >= 2**64 or b >= 2**64:
        raise Refusal("seal_cose_proof_malformed", "proof sizes are not uint")
    for e in path:
        if type(e) is not bytes:
            raise Refusal("seal_cose_proof_malformed", "path element is not a byte string")
        if len(e) != 32:
            raise Refusal("proof_bad_element", f"path element of {len(e)} bytes")
    if proof_cbor(a, b, path) != p:
        raise Refusal("seal_cose_proof_malformed", "proof is not in deterministic CBOR")
    return a, b, path


def verify_inclusion_receipt(data: bytes, content_hash: bytes, public_key: bytes):
    seal, prot, unprot, unprot_bytes, sig = seal_parse(data, public_key)
    proof = seal_one_proof(unprot, INCLUSION_PROOFS)
    if proof is None:
        raise Refusal("seal_cose_bad_vdp", "an inclusion receipt needs {396: {-1: [proof]}}")
    size, index, path = proof
    if cbor2.dumps(seal_unprotected(INCLUSION_PROOFS, size, index, path), canonical=True) != unprot_bytes:
        raise Refusal("seal_cose_envelope_not_canonical", "unprotected header does not re-encode to itself")
    if size != seal["tree_size"]:
        raise Refusal("proof_tree_size_mismatch", f"proof tree size {size}, seal {seal['tree_size']}")
    root = root_from_inclusion(index, size, leaf_hash(content_hash), path)
    if root.hex() != seal["root"]:
        raise Refusal("proof_root_mismatch", "the inclusion path leads to another root")
    seal_strict_signature(sig, sig_structure(prot, root), public_key)
    seal_pycose_verify(data, root, public_key)
    return seal, index


def verify_checkpoint(data: bytes, public_key: bytes):
    seal, prot, unprot, unprot_bytes, sig = seal_parse(data, public_key)
    proof = seal_one_proof(unprot, CONSISTENCY_PROOFS)
    if cbor2.dumps(seal_unprotected(CONSISTENCY_PROOFS, *proof) if proof else {}, canonical=True) != unprot_bytes:
        raise Refusal("seal_cose_envelope_not_canonical", "unprotected header does not re-encode to itself")
    if proof is not None:
        if proof[1] != seal["tree_size"]:
            raise Refusal("proof_tree_size_mismatch", f"consistency second size {proof[1]}, seal {seal['tree_size']}")
        if not 0 < proof[0] < proof[1]:
            raise Refusal("proof_sizes_out_of_order", f"consistency sizes {proof[:2]}")
    root = bytes.fromhex(seal["root"])
    seal_strict_signature(sig, sig_structure(prot, root), public_key)
    seal_pycose_verify(data, root, public_key)
    return seal, proof


def consistency_step(prev: dict, seal: dict, proof) -> None:
    if proof is None:
        if prev["tree_size"] != seal["tree_size"]:
            raise Refusal("proof_tree_size_mismatch", "no consistency proof, sizes differ")
        if prev["root"] != seal["root"]:
            raise Refusal("proof_root_mismatch", "no consistency proof, roots differ")
        return
    first, second, path = proof
    if first != prev["tree_size"]:
        raise Refusal("proof_tree_size_mismatch", "consistency first size is not the previous tree size")
    verify_consistency(first, second, bytes.fromhex(prev["root"]), bytes.fromhex(seal["root"]), path)


MAX_NAMED_GAPS = 1024


def check_stream(receipts: list[dict], checkpoints: list[tuple]) -> list[dict]:
    """Section 6. receipts: {window_id, content_hash (bytes), stream_id, steward};
    checkpoints: (seal, consistency proof or None) from verify_checkpoint. Returns the problems."""
    problems = []
    if not checkpoints:
        return [{"code": "no_seals"}]
    fin = checkpoints[-1][0]
    chain_ok = True
    if checkpoints[0][1] is not None:
        problems.append({"code": "seal_chain_broken", "seal_index": 0, "reason": "first_seal_has_predecessor"})
        chain_ok = False
    for j in range(1, len(checkpoints)):
        prev, (s, proof) = checkpoints[j - 1][0], checkpoints[j]
        reason = None
        if prev["stream_id"] != s["stream_id"] or prev["steward"] != s["steward"]:
            reason = "stream_changed"
        elif prev["first_window_id"] != s["first_window_id"]:
            reason = "first_window_changed"
        elif s["tree_size"] < prev["tree_size"]:
            reason = "size_decreased"
        elif s["last_window_id"] < prev["last_window_id"]:
            reason = "last_window_decreased"
        elif s["closed_at"] < prev["closed_at"]:  # fixed-width UTC: text order is time order
            reason = "closed_at_regressed"
        elif prev["final"]:
            reason = "seal_after_final"
        if reason:
            problems.append({"code": "seal_chain_broken", "seal_index": j, "reason": reason})
            chain_ok = False
        try:
            consistency_step(prev, s, proof)
        except Refusal as e:
            problems.append({"code": "consistency_failed", "seal_index": j, "proof_code": e.cls})
    if not fin["final"]:
        problems.append({"code": "no_final_seal"})

    seen: dict[int, int] = {}
    max_id = None
    accepted = []  # (index, window_id, content_hash)
    for index, r in enumerate(receipts):
        w = r["window_id"]
        if r["stream_id"] != fin["stream_id"] or r["steward"] != fin["steward"]:
            problems.append({"code": "foreign_receipt", "index": index, "window_id": w})
            continue
        if w in seen:
            first = seen[w]
            problems.append({"code": "repeated_window", "index": index, "window_id": w, "first_index": first,
                             "same_content": receipts[first]["content_hash"] == r["content_hash"]})
            continue
        seen[w] = index
        if w < fin["first_window_id"] or w > fin["last_window_id"]:
            problems.append({"code": "extra_window", "index": index, "window_id": w})
            continue
        if max_id is not None and w < max_id:
            problems.append({"code": "reordered_window", "index": index, "window_id": w, "previous_window_id": max_id})
        max_id = w if max_id is None else max(max_id, w)
        accepted.append((index, w, r["content_hash"]))

    ids = sorted((w, i) for i, w, _ in accepted)
    id_list = [w for w, _ in ids]
    counts_ok = chain_ok
    prev_last, prev_size = None, 0
    for j, (s, _) in enumerate(checkpoints):
        lo = s["first_window_id"] if prev_last is None else prev_last + 1
        hi = s["last_window_id"]
        if chain_ok and lo <= hi + 1:
            a, b = bisect.bisect_left(id_list, lo), bisect.bisect_right(id_list, hi)
            found = b - a
            sealed = max(s["tree_size"] - prev_size, 0)
            width = 0 if lo > hi else hi - lo + 1
            if found < sealed:
                counts_ok = False
                missing = sealed - found
                gaps = max(width - found, 0)
                if gaps == missing and gaps <= MAX_NAMED_GAPS:
                    present = set(id_list[a:b])
                    for w in range(lo, hi + 1):
                        if w in present:
                            continue
                        k = bisect.bisect_left(id_list, w)
                        before = ids[k][1] if k < len(ids) else len(receipts)
                        problems.append({"code": "missing_window", "window_id": w, "before_index": before, "seal_index": j})
                else:
                    problems.append({"code": "missing_windows_unlocated", "seal_index": j, "count": missing,
                                     "window_ids": [lo, hi]})
            elif found > sealed:
                counts_ok = False
                problems.append({"code": "surplus_windows", "seal_index": j, "sealed": sealed, "found": found})
        size = s["tree_size"]
        if counts_ok and 1 <= size <= len(accepted):
            root = mth([leaf_hash(h) for _, _, h in accepted[:size]])
            if root.hex() != s["root"]:
                problems.append({"code": "root_mismatch", "seal_index": j, "tree_size": size})
            first, last = accepted[0][1], accepted[size - 1][1]
            if first != s["first_window_id"]:
                problems.append({"code": "window_range_mismatch", "seal_index": j, "field": "first_window_id",
                                 "sealed": s["first_window_id"], "found": first})
            if last != s["last_window_id"]:
                problems.append({"code": "window_range_mismatch", "seal_index": j, "field": "last_window_id",
                                 "sealed": s["last_window_id"], "found": last})
        prev_last, prev_size = hi, s["tree_size"]
    if len(accepted) != fin["tree_size"]:
        problems.append({"code": "tree_size_mismatch", "seal_index": len(checkpoints) - 1,
                         "sealed": fin["tree_size"], "found": len(accepted)})
    return problems


def seal_code_matches(got: str, expect: str) -> bool:
    """The same code, or both canonical-form refusals of a seal document (JCR-1 codes)."""
    if got == expect:
        return True
    return got.startswith("canonical:") and expect not in SEAL_SCHEMA_CODES and not expect.startswith(("seal_", "proof_"))


def expect_refusal(fn, expect: str) -> str:
    try:
        fn()
    except Refusal as e:
        if not seal_code_matches(e.cls, expect):
            raise Refusal("mismatch", f"refused as {e.cls} ({e}); the Rust code is {expect}") from None
        return f"refused [{e.cls}], rust code {expect}"
    raise Refusal("accepted", f"ACCEPTED; expected refusal {expect}")


def seal_entry(i: int) -> bytes:
    return blake3.blake3(f"jouleclaw stream-seal vector leaf {i}".encode()).digest()


# The vector file's "verified with another key" case carries no key: spec/STREAM-SEAL.md section 8
# names it (the Ed25519 key of the seed of 32 bytes 0x07). A case's own public_key_hex wins.
OTHER_KEY_CASE = "verified with another key"
OTHER_KEY_SEED = bytes([7]) * 32


def seal_negative_key(c: dict, pub: bytes) -> bytes:
    if "public_key_hex" in c:
        return bytes.fromhex(c["public_key_hex"])
    if c.get("description") == OTHER_KEY_CASE:
        return Ed25519PrivateKey.from_private_bytes(OTHER_KEY_SEED).public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return pub


def check_seal_file(rep: "Report", doc: dict, name: str) -> None:
    try:
        key = doc["key"]
        seed, pub = bytes.fromhex(key["seed_hex"]), bytes.fromhex(key["public_key_hex"])
        signer = Ed25519PrivateKey.from_private_bytes(seed)
    except (KeyError, TypeError, ValueError) as e:
        rep.fail(f"{name} key", f"malformed key: {e!r}")
        return

    def key_check():
        derived = signer.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        expect_equal("public key from seed", derived.hex(), key["public_key_hex"])
        expect_equal("kid (RFC 9679 thumbprint)", thumbprint(pub).hex(), key["kid_hex"])
        for part in ("trees", "inclusion", "consistency", "negative"):
            if not doc.get(part):
                raise Refusal("mismatch", f"no {part} vectors")
    rep.check(f"{name} key", key_check)

    biggest = max([t["size"] for t in doc.get("trees", [])] + [1000])
    leaves = [leaf_hash(seal_entry(i)) for i in range(biggest)]

    for t in doc.get("trees", []):
        def one(t=t):
            expect_equal("root_hex", mth(leaves[:t["size"]]).hex(), t["root_hex"])
        rep.check(f"{name} tree {t.get('size')}", one)

    for v in doc.get("inclusion", []):
        def one(v=v):
            m, n = v["leaf_index"], v["tree_size"]
            expect_equal("entry_hex", seal_entry(m).hex(), v["entry_hex"])
            lh = leaf_hash(bytes.fromhex(v["entry_hex"]))
            expect_equal("leaf_hash_hex", lh.hex(), v["leaf_hash_hex"])
            expect_equal("root_hex", mth(leaves[:n]).hex(), v["root_hex"])
            expect_equal("path_hex (PATH regenerated)", [h.hex() for h in gen_path(m, leaves[:n])], v["path_hex"])
            verify_inclusion(m, n, lh, proof_path(v["path_hex"]), bytes.fromhex(v["root_hex"]))
            return f"{len(v['path_hex'])} hashes"
        rep.check(f"{name} inclusion ({v.get('leaf_index')}, {v.get('tree_size')})", one)

    for v in doc.get("consistency", []):
        def one(v=v):
            m, n = v["first_size"], v["second_size"]
            expect_equal("first_root_hex", mth(leaves[:m]).hex(), v["first_root_hex"])
            expect_equal("second_root_hex", mth(leaves[:n]).hex(), v["second_root_hex"])
            expect_equal("path_hex (PROOF regenerated)", [h.hex() for h in gen_subproof(m, leaves[:n], True)], v["path_hex"])
            verify_consistency(m, n, bytes.fromhex(v["first_root_hex"]), bytes.fromhex(v["second_root_hex"]),
                               proof_path(v["path_hex"]))
            return f"{len(v['path_hex'])} hashes"
        rep.check(f"{name} consistency ({v.get('first_size')}, {v.get('second_size')})", one)

    stream = doc.get("stream") or {}
    windows = stream.get("windows", [])
    sid, steward = stream.get("stream_id"), stream.get("steward")

    def windows_check():
        if not windows or not stream.get("checkpoints"):
            raise Refusal("mismatch", "no stream windows or checkpoints")
        for i, w in enumerate(windows):
            expect_equal(f"windows[{i}].leaf_index", w["leaf_index"], i)
            expect_equal(f"windows[{i}].content_hash_hex", w["content_hash_hex"], seal_entry(i).hex())
            check_closed_at(w["closed_at"])
            if i and not w["window_id"] > windows[i - 1]["window_id"]:
                raise Refusal("mismatch", "window ids do not increase")
        return f"{len(windows)} windows"
    rep.check(f"{name} stream windows", windows_check)

    verified = []  # (seal, consistency proof) per checkpoint, for the chain check
    prev = None
    for j, cp in enumerate(stream.get("checkpoints", [])):
        def one(cp=cp, prev=prev):
            seal_bytes = cp["seal_json"].encode("utf-8")
            seal = decode_seal(seal_bytes)
            expect_equal("seal_json (canonical JSON of seal)", rfc8785.dumps(cp["seal"]), seal_bytes)
            n = seal["tree_size"]
            sealed = windows[:n]
            expect_equal("root", seal["root"], mth(leaves[:n]).hex())
            expect_equal("stream_id", seal["stream_id"], sid)
            expect_equal("steward", seal["steward"], steward)
            expect_equal("first_window_id", seal["first_window_id"], sealed[0]["window_id"])
            expect_equal("last_window_id", seal["last_window_id"], sealed[-1]["window_id"])
            expect_equal("closed_at", seal["closed_at"], sealed[-1]["closed_at"])
            expect_equal("final", seal["final"], n == len(windows) and cp is stream["checkpoints"][-1])
            expect_equal("subject", seal_subject(seal), cp["subject"])
            prot = seal_protected(seal, seal_bytes, thumbprint(pub))
            expect_equal("protected_hex", prot.hex(), cp["protected_hex"])
            tbs = sig_structure(prot, bytes.fromhex(seal["root"]))
            expect_equal("to_be_signed_hex", tbs.hex(), cp["to_be_signed_hex"])
            sig = signer.sign(tbs)
            expect_equal("signature_hex (recomputed from the test key)", sig.hex(), cp["signature_hex"])
            if prev is None:
                expect_equal("consistency", cp["consistency"], None)
                unprot = {}
            else:
                m = prev["tree_size"]
                path = gen_subproof(m, leaves[:n], True)
                expect_equal("consistency", cp["consistency"],
                             {"first_size": m, "path_hex": [h.hex() for h in path], "second_size": n})
                unprot = seal_unprotected(CONSISTENCY_PROOFS, m, n, path)
            expect_equal("cose_sign1_hex", seal_envelope(prot, unprot, sig).hex(), cp["cose_sign1_hex"])
            got, proof = verify_checkpoint(bytes.fromhex(cp["cose_sign1_hex"]), pub)
            expect_equal("verified seal", got, seal)
            if prev is not None:
                consistency_step(prev, got, proof)
            verified.append((got, proof))
            return "rebuilt byte for byte; strict Ed25519 + pycose (detached root)"
        rep.check(f"{name} checkpoint {j} (tree_size {cp.get('seal', {}).get('tree_size')})", one)
        prev_tree = prev["tree_size"] if prev else 0
        for inc in cp.get("inclusion", []):
            def one(inc=inc, cp=cp, prev_tree=prev_tree):
                i = inc["leaf_index"]
                w = windows[i]
                expect_equal("window_id", inc["window_id"], w["window_id"])
                n = cp["seal"]["tree_size"]
                if not prev_tree <= i < n:
                    raise Refusal("mismatch", f"leaf {i} not issued by this checkpoint [{prev_tree}, {n})")
                path = gen_path(i, leaves[:n])
                want = seal_envelope(bytes.fromhex(cp["protected_hex"]), seal_unprotected(INCLUSION_PROOFS, n, i, path),
                                     bytes.fromhex(cp["signature_hex"]))
                expect_equal("cose_sign1_hex", want.hex(), inc["cose_sign1_hex"])
                seal, index = verify_inclusion_receipt(bytes.fromhex(inc["cose_sign1_hex"]),
                                                       bytes.fromhex(w["content_hash_hex"]), pub)
                expect_equal("leaf_index", index, i)
                return "proof to root, strict Ed25519 + pycose"
            rep.check(f"{name} checkpoint {j} inclusion window {inc.get('window_id')}", one)
        try:
            prev = decode_seal(cp["seal_json"].encode("utf-8"))
        except Exception:
            prev = None

    def chain_check():
        issued = [inc["leaf_index"] for cp in stream.get("checkpoints", []) for inc in cp.get("inclusion", [])]
        expect_equal("inclusion receipts, one per window in leaf order", issued, list(range(len(windows))))
        if len(verified) != len(stream.get("checkpoints", [])):
            raise Refusal("mismatch", "a checkpoint failed")
        receipts = [{"window_id": w["window_id"], "content_hash": bytes.fromhex(w["content_hash_hex"]),
                     "stream_id": sid, "steward": steward} for w in windows]
        problems = check_stream(receipts, verified)
        expect_equal("completeness problems", problems, [])
        return "complete: no problem"
    rep.check(f"{name} stream completeness", chain_check)

    for c in doc.get("negative", []):
        def one(c=c):
            kind, expect = c["kind"], c.get("expect")
            if kind == "inclusion_proof":
                return expect_refusal(lambda: verify_inclusion(
                    c["leaf_index"], c["tree_size"], leaf_hash(bytes.fromhex(c["entry_hex"])),
                    proof_path(c["path_hex"]), bytes.fromhex(c["root_hex"])), expect)
            if kind == "consistency_proof":
                return expect_refusal(lambda: verify_consistency(
                    c["first_size"], c["second_size"], bytes.fromhex(c["first_root_hex"]),
                    bytes.fromhex(c["second_root_hex"]), proof_path(c["path_hex"])), expect)
            if kind == "seal_json":
                return expect_refusal(lambda: decode_seal(bytes.fromhex(c["input_hex"])), expect)
            if kind == "inclusion_receipt":
                key = seal_negative_key(c, pub)
                return expect_refusal(lambda: verify_inclusion_receipt(
                    bytes.fromhex(c["cose_sign1_hex"]), bytes.fromhex(c["entry_hex"]), key), expect)
            if kind == "completeness":
                cps = [verify_checkpoint(bytes.fromhex(h), pub) for h in c["checkpoints_hex"]]
                receipts = [{"window_id": r["window_id"], "content_hash": bytes.fromhex(r["content_hash_hex"]),
                             "stream_id": r["stream_id"], "steward": r["steward"]} for r in c["receipts"]]
                problems = check_stream(receipts, cps)
                if not problems:
                    raise Refusal("accepted", f"stream judged complete; expected {c.get('expect_problems')}")
                expect_equal("problems", problems, c["expect_problems"])
                return "problems: " + ", ".join(p["code"] for p in problems)
            raise Refusal("mismatch", f"unknown negative kind {kind!r}")
        rep.check(f"{name} negative #{c.get('n')} {c.get('kind')} {c.get('description', '')[:40]}", one)


def document_digest(cose_sign1: bytes) -> str:
    """What a stream-seal/2 seal commits to for one document: SHA-256 of its bytes as stored."""
    return hashlib.sha256(cose_sign1).hexdigest()


def check_seal2_file(rep: "Report", doc: dict, name: str) -> None:
    """stream-seal-2-vectors.json (section 3.2): sealed streams whose final seal commits to the
    call's documents (each digest recomputed from its bytes), and negative seal documents."""
    try:
        pub = bytes.fromhex(doc["key"]["public_key_hex"])
    except (KeyError, TypeError, ValueError) as e:
        rep.fail(f"{name} key", f"malformed key: {e!r}")
        return

    def key_check():
        expect_equal("kid (RFC 9679 thumbprint)", thumbprint(pub).hex(), doc["key"]["kid_hex"])
        if not doc.get("streams") or not doc.get("negative"):
            raise Refusal("mismatch", "no streams or no negative vectors")
    rep.check(f"{name} key", key_check)

    for si, stream in enumerate(doc.get("streams", [])):
        def one(stream=stream):
            windows = stream["windows"]
            for i, w in enumerate(windows):
                expect_equal(f"windows[{i}].entry_hex", w["entry_hex"], seal_entry(i).hex())
            leaves = [leaf_hash(bytes.fromhex(w["entry_hex"])) for w in windows]
            verified, prev = [], None
            for j, cp in enumerate(stream["checkpoints"]):
                seal, proof = verify_checkpoint(bytes.fromhex(cp["cose_sign1_hex"]), pub)
                expect_equal(f"checkpoint {j} seal_json", rfc8785.dumps(seal), cp["seal_json"].encode("utf-8"))
                expect_equal(f"checkpoint {j} root", seal["root"], mth(leaves[:seal["tree_size"]]).hex())
                expect_equal(f"checkpoint {j} stream_id", seal["stream_id"], doc["stream_id"])
                expect_equal(f"checkpoint {j} steward", seal["steward"], doc["steward"])
                last = j == len(stream["checkpoints"]) - 1
                expect_equal(f"checkpoint {j} schema", seal["schema"], SEAL_SCHEMA_ID_V2 if last else SEAL_SCHEMA_ID)
                if prev is not None:
                    consistency_step(prev, seal, proof)
                verified.append((seal, proof))
                prev = seal
            receipts = [{"window_id": w["window_id"], "content_hash": bytes.fromhex(w["entry_hex"]),
                         "stream_id": doc["stream_id"], "steward": doc["steward"]} for w in windows]
            expect_equal("completeness problems", check_stream(receipts, verified), [])
            fin = verified[-1][0]
            listed = {}
            for d in stream["documents"]:
                digest = document_digest(bytes.fromhex(d["cose_sign1_hex"]))
                expect_equal(f"digest of {d['kind']} (SHA-256 of its bytes)", digest, d["digest_hex"])
                listed[d["kind"]] = digest
            expect_equal("final seal documents", fin["documents"], listed)
            return f"{len(verified)} checkpoints, final stream-seal/2 with {len(listed)} document digests recomputed"
        rep.check(f"{name} stream {si} {stream.get('description', '')[:48]}", one)

    for c in doc.get("negative", []):
        def one(c=c):
            if c.get("kind") != "seal_json":
                raise Refusal("mismatch", f"unknown negative kind {c.get('kind')!r}")
            return expect_refusal(lambda: decode_seal(bytes.fromhex(c["input_hex"])), c["expect"])
        rep.check(f"{name} negative {c.get('description', '')[:48]}", one)


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


class PrefixedReport:
    """A Report whose check names start with a file name (for the voice-turn checker's `run`)."""

    def __init__(self, rep: Report, prefix: str) -> None:
        self.rep, self.prefix = rep, prefix

    def check(self, name: str, fn) -> None:
        self.rep.check(f"{self.prefix} {name}", fn)


def load_json_file(path: Path):
    """Vector files are pretty-printed JSON: parse strictly (no duplicate keys, no NaN, safe integers)."""
    text = path.read_text(encoding="utf-8")
    for tok in scan_numbers(text):
        check_number_token(tok)
    return json.loads(text, object_pairs_hook=_pairs, parse_float=_no_float, parse_constant=_no_constant)


def check_schema_file(rep: Report, present: dict, kind: str, doc, none_note: str, what: str,
                      instances, neighbours, note) -> None:
    """The check of the JSON Schema `present[kind + "_schema"]`: a valid draft 2020-12 schema that
    accepts each of `instances(doc)` (`what`, in a failure) and refuses each of its
    `neighbours(instances)`; without the vector file `doc`, the schema alone."""
    key = kind + "_schema"

    def one():
        import jsonschema
        schema = load_json_file(present[key])
        jsonschema.Draft202012Validator.check_schema(schema)
        if doc is None:
            return f"valid draft 2020-12 schema ({none_note})"
        val = jsonschema.Draft202012Validator(schema)
        items = instances(doc)
        for s in items:
            errs = list(val.iter_errors(s))
            if errs:
                raise Refusal("schema", f"{what} fails the JSON Schema: {errs[0].message}")
        for bad in neighbours(items):
            if not list(val.iter_errors(bad)):
                raise Refusal("schema", f"the JSON Schema accepts {bad}")
        return note(items)
    rep.check(FILES[key], one)


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
    require_supported_dependencies("verify.py")
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
    if not (set(present) - {"schema", "seal_schema"}) and not cose_wg:
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

    doc = load_or_fail(rep, present, "seal")
    if doc is not None:
        check_seal_file(rep, doc, FILES["seal"])
    if "seal_schema" in present:
        check_schema_file(
            rep, present, "seal", doc, "no seal vectors to apply it to", "a vector seal",
            lambda d: [cp["seal"] for cp in d["stream"]["checkpoints"]],
            # Its neighbour: the schema refuses a seal with an unknown field and one with tree_size -1.
            lambda seals: ({**seals[0], "extra": 1}, {**seals[0], "tree_size": -1}),
            lambda seals: f"draft 2020-12; accepts the {len(seals)} vector seals, refuses an unknown field and a negative size")

    doc2 = load_or_fail(rep, present, "seal2")
    if doc2 is not None:
        check_seal2_file(rep, doc2, FILES["seal2"])
    if "seal2_schema" in present:
        def seal2_neighbours(finals):
            # Its neighbours: no documents, an uppercase digest, a seal that is not final.
            bad_digest = {k: v.upper() for k, v in finals[0]["documents"].items()}
            return ({k: v for k, v in finals[0].items() if k != "documents"},
                    {**finals[0], "documents": bad_digest}, {**finals[0], "final": False})
        check_schema_file(
            rep, present, "seal2", doc2, "no stream-seal/2 vectors to apply it to", "a final stream-seal/2 seal",
            lambda d: [json.loads(st["checkpoints"][-1]["seal_json"]) for st in d["streams"]],
            seal2_neighbours,
            lambda finals: f"draft 2020-12; accepts the {len(finals)} final seals, refuses three neighbours")

    if "voice_turn" in present:
        # voice-turn/1 (spec/VOICE-TURN-V1.md): the standalone checker's checks, in this report.
        import check_voice_turn
        check_voice_turn.run(root, PrefixedReport(rep, FILES["voice_turn"]))

    if "registry" in present:
        # The call registry (spec/CALL-REGISTRY.md): the standalone checker's checks, in this report.
        import check_registry
        check_registry.run(root, PrefixedReport(rep, FILES["registry"]))
    if "stop_latency" in present:
        # stop-latency/1 (spec/STOP-LATENCY-V1.md): the standalone checker's checks, in this report.
        import check_stop_latency
        check_stop_latency.run(root, PrefixedReport(rep, FILES["stop_latency"]))
    if "interaction" in present:
        # interaction-metrics/1 (spec/INTERACTION-METRICS-V1.md): the standalone checker's checks.
        import check_interaction_metrics
        check_interaction_metrics.run(root, PrefixedReport(rep, FILES["interaction"]))

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
