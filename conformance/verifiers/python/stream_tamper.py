#!/usr/bin/env python3
"""Run the shared table of tampered stream directories (conformance/stream-at-rest-tamper.json,
spec/STREAM-AT-REST.md section 6) against verify_stream.py and, when the `jouleclaw` package is
importable, its `verify_stream_dir`. Every row's expected exit status (with and without
--allow-unsealed) and outcome must hold.

    stream_tamper.py [TABLE]

Prints one line per failing row and `stream-tamper: N passed, N failed`; exit status 0 when
every row holds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verify_stream  # noqa: E402

try:
    import jouleclaw  # the Python binding, if installed
except ImportError:
    jouleclaw = None


def materialize(table: dict, row: dict, d: Path) -> None:
    d.mkdir(parents=True)
    for name, h in table["bases"][row["base"]].items():
        (d / name).write_bytes(bytes.fromhex(h))
    for op in row["ops"]:
        p = d / op["file"]
        kind = op["op"]
        if kind == "write":
            p.write_bytes(bytes.fromhex(op["hex"]))
        elif kind == "delete":
            p.unlink()
        elif kind == "replace":
            text = p.read_text()
            assert op["from"] in text
            p.write_text(text.replace(op["from"], op["to"], 1))
        elif kind == "flip":
            b = bytearray(p.read_bytes())
            b[op["offset"]] ^= 1
            p.write_bytes(bytes(b))
        elif kind == "fill":
            p.write_bytes(bytes([op["byte"]]) * op["len"])
        elif kind == "symlink":
            os.symlink(op["target"], p)
        elif kind == "fifo":
            os.mkfifo(p)
        else:
            raise ValueError(f"unknown op {kind}")


def extra_rows(table: dict) -> list[dict]:
    """Rows of this checker's own, made from the table's sealed base: summary.json as serde_json
    reads it into the typed summary (`jouleclaw receipts verify` refuses a byte-order mark and a
    field given twice; a key given twice inside `outputs`, a map, keeps its last value)."""
    base = table["bases"].get("sealed")
    if base is None or "summary.json" not in base:
        return []
    text = bytes.fromhex(base["summary.json"]).decode("utf-8")
    refused = {"exit": 1, "exit_allow_unsealed": 1, "outcome": "failed"}
    rows = [
        ("summary_byte_order_mark", ("\ufeff" + text).encode("utf-8"), refused),
        ("summary_field_twice", text.replace('"receipts":', '"receipts": 0, "receipts":', 1).encode("utf-8"), refused),
        ("summary_nested_field_twice", text.replace('"conforming":', '"conforming": 0, "conforming":', 1).encode("utf-8"), refused),
        ("summary_outputs_key_twice_last_kept",
         text.replace('"outputs": {', '"outputs": {"receipts.cbor": "0", ', 1).encode("utf-8"),
         {"exit": 0, "exit_allow_unsealed": 0, "outcome": "complete"}),
    ]
    return [{"name": n, "base": "sealed", "ops": [{"op": "write", "file": "summary.json", "hex": b.hex()}],
             "expect": e, "local": True} for n, b, e in rows if b != text.encode("utf-8")]


def run_checker(args: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return verify_stream.main(["verify_stream.py", *args])


def main(argv: list[str]) -> int:
    verify_stream.v.require_supported_dependencies("stream_tamper.py")
    root = Path(__file__).resolve().parents[2]
    table_path = Path(argv[1]) if len(argv) > 1 else root / "stream-at-rest-tamper.json"
    table = json.loads(table_path.read_text())
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        pub = Path(tmp) / "signer.pub"
        pub.write_text(verify_stream.v.PUBLIC_KEY_PREFIX + table["public_key_hex"] + "\n")
        key = bytes.fromhex(table["public_key_hex"])
        local = extra_rows(table)
        if len(local) != 4:
            failed += 1
            print("FAIL local summary rows: the sealed base's summary.json is not as expected")
        for row in table["rows"] + local:
            d = Path(tmp) / row["name"]
            materialize(table, row, d)
            want = row["expect"]
            got = {
                "exit": run_checker(["--pub", str(pub), str(d)]),
                "exit_allow_unsealed": run_checker(["--allow-unsealed", "--pub", str(pub), str(d)]),
            }
            wrong = [f"{k}: {got[k]} != {want[k]}" for k in got if got[k] != want[k]]
            if jouleclaw is not None and not row.get("local"):
                outcome = jouleclaw.verify_stream_dir(str(d), key)["outcome"]
                if outcome != want["outcome"]:
                    wrong.append(f"binding outcome: {outcome} != {want['outcome']}")
            if wrong:
                failed += 1
                print(f"FAIL {row['name']}: {'; '.join(wrong)}")
            else:
                passed += 1
    print(f"stream-tamper: {passed} passed, {failed} failed"
          + ("" if jouleclaw is not None else " (the jouleclaw binding is not installed: verify_stream.py only)"))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
