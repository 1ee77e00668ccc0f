#!/usr/bin/env python3
"""Independent checker for the call-registry vectors (spec/CALL-REGISTRY.md).

Usage: check_registry.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

Reads CONFORMANCE_DIR/call-registry-vectors.json and checks, from the spec alone:
  * leaves:      each call's final seal (verified with verify.py's stream-seal/1 checks) gives
                 the registry-leaf/1 canonical bytes (rfc8785), entry and RFC 9162 leaf hash;
  * checkpoints: each C2SP signed note verifies under the steward's verifier key and its body
                 (origin, size, base64 root) is the vector's;
  * proofs:      each c2sp.org/tlog-proof@v1 file verifies under its policy (seal, steward
                 signature, cosignature/v1 lines, quorum, inclusion), and every negative one is
                 refused;
  * forks:       two checkpoints of one size with different roots, or a consistency proof that
                 does not verify, are a fork; their accepted neighbours are consistent;
  * policies:    the policy rules.
Prints one line per check and closes with `call-registry: N passed, N failed`. verify.py runs
the same checks (`run`) inside its own report.

Libraries: rfc8785, blake3, cryptography and pynacl (through verify.py's strict Ed25519).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import sys
from pathlib import Path

import blake3
import rfc8785

import verify as v
from check_voice_turn import checker_main

FILE = "call-registry-vectors.json"
MAX_NOTE = 64 * 1024
MAX_NOTE_SIGNATURES = 64
MAX_WITNESSES = 63
MAX_PROOF = 256 * 1024


class Refused(Exception):
    def __init__(self, code: str, detail: str = ""):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


def b64(text: str, code: str) -> bytes:
    """Standard base64 with padding and zero unused bits: the one encoding of its bytes
    (b64decode alone accepts non-zero unused bits)."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise Refused(code, "not standard base64") from None
    if base64.b64encode(raw).decode() != text:
        raise Refused(code, "not the one base64 encoding of its bytes")
    return raw


def key_id(name: str, alg: int, key: bytes) -> int:
    return struct.unpack(">I", hashlib.sha256(name.encode() + b"\n" + bytes([alg]) + key).digest()[:4])[0]


def valid_name(name: str) -> bool:
    return 0 < len(name.encode()) <= 255 and not any(c.isspace() or c == "+" or ord(c) < 0x20 for c in name)


def parse_vkey(vkey: str, alg: int) -> tuple[str, int, bytes]:
    parts = vkey.split("+", 2)
    if len(parts) != 3 or len(parts[1]) != 8:
        raise Refused("verifier_key_invalid", vkey)
    name, hash16, b64text = parts
    raw = b64(b64text, "verifier_key_invalid")
    if not valid_name(name) or len(raw) != 33 or raw[0] != alg:
        raise Refused("verifier_key_invalid", vkey)
    if key_id(name, alg, raw[1:]) != int(hash16, 16):
        raise Refused("verifier_key_invalid", "hash is not the key ID")
    return name, int(hash16, 16), raw[1:]


def parse_policy(text: str) -> dict:
    log, witnesses, quorum = None, [], None
    for n, line in enumerate(text.split("\n"), 1):
        f = line.split()
        try:
            if not f or f[0].startswith("#"):
                continue
            if f[0] == "log" and len(f) == 2 and log is None:
                log = parse_vkey(f[1], 0x01)
            elif f[0] == "witness" and len(f) in (2, 3):
                if len(witnesses) == MAX_WITNESSES:
                    raise Refused("policy_malformed", f"line {n}: more than {MAX_WITNESSES} witnesses")
                w = parse_vkey(f[1], 0x04)
                if any(o[0] == w[0] or o[2] == w[2] for o in witnesses):
                    raise Refused("policy_malformed", f"line {n}: repeated witness")
                if len(f) == 3 and not f[2].startswith(("http://", "https://")):
                    raise Refused("policy_malformed", f"line {n}: URL")
                witnesses.append(w)
            elif f[0] == "quorum" and len(f) == 2 and quorum is None and f[1].isdigit():
                quorum = int(f[1])
            else:
                raise Refused("policy_malformed", f"line {n}")
        except Refused as e:
            raise Refused("policy_malformed", f"line {n}: {e}") from None
    if log is None or quorum is None or not 1 <= quorum <= len(witnesses):
        raise Refused("policy_malformed", "a log line and a quorum between 1 and the witnesses")
    if quorum * 2 <= len(witnesses):
        raise Refused("policy_malformed", "the quorum is more than half the witnesses")
    if any(w[2] == log[2] for w in witnesses):
        raise Refused("policy_malformed", "a witness key is the log's key")
    return {"log": log, "witnesses": witnesses, "quorum": quorum}


def parse_body(text: bytes) -> tuple[str, int, bytes]:
    lines = text.decode("utf-8").split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise Refused("checkpoint_malformed", "exactly three lines")
    origin, size, root = lines[:3]
    if not valid_name(origin) or not size.isdigit() or (size != "0" and size.startswith("0")):
        raise Refused("checkpoint_malformed", "origin or size")
    raw = b64(root, "checkpoint_malformed")
    if len(raw) != 32:
        raise Refused("checkpoint_malformed", "root")
    return origin, int(size), raw


def open_note(note: bytes, log: tuple, witnesses: list) -> dict:
    """Verifies the steward's signature and every line of a known witness (each one, a second
    line of a witness too); returns the body and {witness name: its earliest timestamp}."""
    if len(note) > MAX_NOTE:
        raise Refused("note_malformed", "size")
    text_end = note.rfind(b"\n\n")
    if text_end < 0 or not note.endswith(b"\n"):
        raise Refused("note_malformed", "framing")
    text, sig_block = note[: text_end + 1], note[text_end + 2 :]
    if sig_block.count(b"\n") > MAX_NOTE_SIGNATURES:
        raise Refused("note_malformed", f"more than {MAX_NOTE_SIGNATURES} signature lines")
    body = parse_body(text)
    if body[0] != log[0]:
        raise Refused("origin_mismatch", body[0])
    steward_ok, cosigners = False, {}
    for line in sig_block.decode("utf-8").split("\n")[:-1]:
        if not line.startswith("\u2014 "):
            raise Refused("note_malformed", "signature line")
        name, sig64 = line[2:].split(" ", 1)
        raw = b64(sig64, "note_malformed")
        kid, sig = struct.unpack(">I", raw[:4])[0], raw[4:]
        if (name, kid) == (log[0], log[1]):
            try:
                v.ed25519_verify_strict(sig, text, log[2])
            except v.Refusal:
                raise Refused("signature_invalid", name) from None
            steward_ok = True
            continue
        for wname, wkid, wkey in witnesses:
            if (name, kid) == (wname, wkid):
                if len(sig) != 72:
                    raise Refused("signature_invalid", name)
                t = struct.unpack(">Q", sig[:8])[0]
                msg = f"cosignature/v1\ntime {t}\n".encode() + text
                try:
                    if t > 2**63 - 1:
                        raise v.Refusal("signature", "timestamp")
                    v.ed25519_verify_strict(sig[8:], msg, wkey)
                except v.Refusal:
                    raise Refused("signature_invalid", name) from None
                cosigners[name] = min(t, cosigners.get(name, t))
    if not steward_ok:
        raise Refused("steward_signature_missing")
    return {"origin": body[0], "size": body[1], "root": body[2], "cosigners": cosigners}


def leaf_of_seal(seal: dict) -> bytes:
    if seal.get("final") is not True:
        raise Refused("seal_invalid", "not final")
    doc = rfc8785.dumps(seal)
    return rfc8785.dumps({
        "jc_registry": "registry-leaf/1",
        "seal_hash": blake3.blake3(doc).hexdigest(),
        "seal_root": seal["root"],
        "seal_tree_size": seal["tree_size"],
        "steward": seal["steward"],
        "stream_id": seal["stream_id"],
    })


def parse_proof(text: str) -> dict:
    if len(text.encode()) > MAX_PROOF or "\n\n" not in text:
        raise Refused("proof_malformed", "framing")
    head, note = text.split("\n\n", 1)
    lines = head.split("\n")
    if len(lines) < 3 or lines[0] != "c2sp.org/tlog-proof@v1" or not lines[1].startswith("extra ") \
            or not lines[2].startswith("index "):
        raise Refused("proof_malformed", "header, extra and index lines")
    idx = lines[2][6:]
    if not idx.isdigit() or (idx != "0" and idx.startswith("0")):
        raise Refused("proof_malformed", "index")
    path = [b64(h, "proof_malformed") for h in lines[3:]]
    if any(len(h) != 32 for h in path) or len(path) > 63:
        raise Refused("proof_malformed", "hashes")
    return {"seal": b64(lines[1][6:], "proof_malformed"), "index": int(idx), "path": path,
            "note": note.encode()}


def verify_proof(text: str, policy_text: str) -> dict:
    pol = parse_policy(policy_text)
    p = parse_proof(text)
    try:
        seal, _ = v.verify_checkpoint(p["seal"], pol["log"][2])
    except v.Refusal as e:
        raise Refused("seal_invalid", str(e)) from None
    entry = blake3.blake3(leaf_of_seal(seal)).digest()
    cp = open_note(p["note"], pol["log"], pol["witnesses"])
    have = sum(1 for w in pol["witnesses"] if w[0] in cp["cosigners"])
    if have < pol["quorum"]:
        raise Refused("quorum_not_met", f"{have} of {pol['quorum']}")
    try:
        v.verify_inclusion(p["index"], cp["size"], v.leaf_hash(entry), p["path"], cp["root"])
    except v.Refusal:
        raise Refused("inclusion_invalid") from None
    # When the quorum had cosigned: the quorum-th earliest of the policy witnesses' times.
    times = sorted(cp["cosigners"][w[0]] for w in pol["witnesses"] if w[0] in cp["cosigners"])
    return {"seal": seal, "checkpoint": cp, "index": p["index"], "quorum_time": times[pol["quorum"] - 1]}


def outcome(fn) -> str:
    try:
        fn()
    except Refused as e:
        return e.code
    except (ValueError, UnicodeDecodeError, KeyError) as e:
        return f"malformed ({type(e).__name__})"
    return "valid"


def run(directory: Path, rep) -> None:
    doc = json.loads((directory / FILE).read_text(encoding="utf-8"))
    steward = parse_vkey(doc["steward_vkey"], 0x01)

    def check_equal(what, got, want):
        if got != want:
            raise AssertionError(f"{what}: computed {got!r}, file has {want!r}")

    for i, leaf in enumerate(doc["leaves"]):
        def one(leaf=leaf):
            seal, _ = v.verify_checkpoint(bytes.fromhex(leaf["seal_cose_hex"]), steward[2])
            canonical = leaf_of_seal(seal)
            check_equal("canonical leaf", canonical.decode(), leaf["canonical"])
            entry = blake3.blake3(canonical).digest()
            check_equal("entry", entry.hex(), leaf["entry_hex"])
            check_equal("leaf hash", v.leaf_hash(entry).hex(), leaf["leaf_hash_hex"])
        rep.check(f"leaf {i}", one)
    for i, c in enumerate(doc["checkpoints"]):
        def one(c=c):
            cp = open_note(c["note"].encode(), steward, [])
            check_equal("size", cp["size"], c["size"])
            check_equal("root", cp["root"].hex(), c["root_hex"])
        rep.check(f"checkpoint {i}", one)
    for i, p in enumerate(doc["valid_proofs"]):
        def one(p=p):
            got = verify_proof(p["proof"], p["policy"])
            check_equal("stream", got["seal"]["stream_id"], p["stream_id"])
            check_equal("index", got["index"], p["index"])
            check_equal("cosigners", sorted(got["checkpoint"]["cosigners"]), sorted(p["cosigners"]))
            check_equal("earliest", min(got["checkpoint"]["cosigners"].values()), p["earliest_cosignature"])
            if "quorum_time" in p:
                check_equal("quorum time", got["quorum_time"], p["quorum_time"])
        rep.check(f"valid proof {i}", one)
    for i, n in enumerate(doc["negative_proofs"]):
        def one(n=n):
            got = outcome(lambda: verify_proof(n["proof"], n["policy"]))
            if (got == "valid") != (n["expect"] == "valid"):
                raise AssertionError(f"{n['what']}: got {got}, expected {n['expect']}")
        rep.check(f"negative proof {i}: {n['what'][:48]}", one)
    for i, f in enumerate(doc["forks"]):
        def one(f=f):
            a = open_note(f["a"].encode(), steward, [])
            b = open_note(f["b"].encode(), steward, [])
            if a["size"] > b["size"]:
                a, b = b, a
            got = "consistent"
            if a["size"] == b["size"]:
                got = "consistent" if a["root"] == b["root"] else "fork"
            else:
                try:
                    v.verify_consistency(a["size"], b["size"], a["root"], b["root"],
                                         [bytes.fromhex(h) for h in f["consistency_hex"]])
                except v.Refusal:
                    got = "fork"
            check_equal(f["what"], got, f["expect"])
        rep.check(f"fork {i}", one)
    for i, p in enumerate(doc["policies"]):
        def one(p=p):
            got = outcome(lambda: parse_policy(p["policy"]))
            check_equal("policy outcome", got, p["expect"])
        rep.check(f"policy {i}", one)


def main(argv: list[str]) -> int:
    return checker_main(argv, "call-registry", run)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
