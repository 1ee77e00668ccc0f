#!/usr/bin/env python3
"""Check a sealed stream directory as `jouleclaw run --seal-every K --out DIR` writes it, without Rust.

    verify_stream.py --pub SIGNER.pub DIR

DIR holds receipts.jsonl (one canonical stream-window/1 receipt per line, each ending in a
newline), receipts.cbor (a CBOR sequence of window COSE_Sign1; every window, the non-pass ones
or none, per --window-signatures), seals.cbor (the stream-seal/1 checkpoints in order) and
inclusion.cbor (one RFC 9942 inclusion receipt per receipts.jsonl line, in the same order).
SIGNER.pub is the public key as 64 lowercase hex digits and a newline. The checks are those of
`jouleclaw receipts verify --pub SIGNER.pub DIR` (spec/STREAM-SEAL.md sections 5 and 6), made
with the functions of verify.py. Prints one line per problem and a summary; exit status 0 when
the stream is complete and every signature verifies, 1 when not, 2 on a usage or I/O error.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import blake3
import cbor2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verify as v  # noqa: E402  (the vector verifier's functions; its main() does not run on import)


def cbor_sequence(path: Path) -> list[bytes]:
    """Split an RFC 8742 CBOR sequence into the exact bytes of its items."""
    data = path.read_bytes()
    fp = io.BytesIO(data)
    items = []
    while fp.tell() < len(data):
        start = fp.tell()
        try:
            cbor2.CBORDecoder(fp).decode()
        except Exception as e:  # cbor2 raises several types
            raise v.Refusal("cbor", f"{path.name}: item {len(items)} is not well-formed CBOR: {e}") from None
        items.append(data[start:fp.tell()])
    return items


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] != "--pub":
        print(__doc__, file=sys.stderr)
        return 2
    d = Path(argv[3])
    try:
        pub = bytes.fromhex(Path(argv[2]).read_text(encoding="ascii").strip())
        lines = (d / "receipts.jsonl").read_bytes().split(b"\n")
        seals = cbor_sequence(d / "seals.cbor")
        inclusion = cbor_sequence(d / "inclusion.cbor")
        windows = cbor_sequence(d / "receipts.cbor") if (d / "receipts.cbor").exists() else []
    except (OSError, ValueError, v.Refusal) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if len(pub) != 32:
        print("error: the public key is not 32 bytes", file=sys.stderr)
        return 2
    problems: list[str] = []
    if lines[-1] != b"":
        problems.append("receipts.jsonl: the last line has no newline")
    receipts = []
    for i, line in enumerate(lines[:-1]):
        try:
            r = v.check_receipt_bytes(line)
        except v.Refusal as e:
            problems.append(f"receipts.jsonl line {i + 1}: {e}")
            continue
        receipts.append({"window_id": r["window_id"], "content_hash": blake3.blake3(line).digest(),
                         "stream_id": r["stream_id"], "steward": r["steward"], "id": r["id"]})
    # Window signatures: each valid, over a later line of receipts.jsonl.
    nxt = 0
    for i, item in enumerate(windows):
        try:
            r = v.verify_cose(item, pub)
        except v.Refusal as e:
            problems.append(f"receipts.cbor item {i}: {e}")
            continue
        h = blake3.blake3(v.rfc8785.dumps(r)).digest()
        k = next((k for k in range(nxt, len(receipts)) if receipts[k]["content_hash"] == h), None)
        if k is None:
            problems.append(f"receipts.cbor item {i}: signs {r['id']}, not a later line of receipts.jsonl")
        else:
            nxt = k + 1
    checkpoints = []
    for i, item in enumerate(seals):
        try:
            checkpoints.append(v.verify_checkpoint(item, pub))
        except v.Refusal as e:
            problems.append(f"seals.cbor item {i}: {e}")
    if len(inclusion) != len(receipts):
        problems.append(f"inclusion.cbor holds {len(inclusion)} inclusion receipts for {len(receipts)} receipt lines")
    else:
        for i, (item, r) in enumerate(zip(inclusion, receipts)):
            try:
                _, index = v.verify_inclusion_receipt(item, r["content_hash"], pub)
            except v.Refusal as e:
                problems.append(f"inclusion.cbor item {i}: does not prove {r['id']}: {e}")
                continue
            if index != i:
                problems.append(f"inclusion.cbor item {i}: proves {r['id']} at leaf {index}, not {i}")
    for p in v.check_stream(receipts, checkpoints):
        problems.append(f"{p['code']}: {p}")
    for p in problems:
        print(p)
    if problems:
        print(f"stream NOT complete or not verified: {len(problems)} problems")
        return 1
    print(f"stream complete: {len(receipts)} receipts, {len(checkpoints)} checkpoints, final seal over "
          f"{checkpoints[-1][0]['tree_size']} receipts; {len(windows)} window signatures and "
          f"{len(inclusion)} inclusion receipts verified")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
