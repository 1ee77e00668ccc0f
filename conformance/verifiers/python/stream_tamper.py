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


def run_checker(args: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return verify_stream.main(["verify_stream.py", *args])


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[2]
    table_path = Path(argv[1]) if len(argv) > 1 else root / "stream-at-rest-tamper.json"
    table = json.loads(table_path.read_text())
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        pub = Path(tmp) / "signer.pub"
        pub.write_text(verify_stream.v.PUBLIC_KEY_PREFIX + table["public_key_hex"] + "\n")
        key = bytes.fromhex(table["public_key_hex"])
        for row in table["rows"]:
            d = Path(tmp) / row["name"]
            materialize(table, row, d)
            want = row["expect"]
            got = {
                "exit": run_checker(["--pub", str(pub), str(d)]),
                "exit_allow_unsealed": run_checker(["--allow-unsealed", "--pub", str(pub), str(d)]),
            }
            wrong = [f"{k}: {got[k]} != {want[k]}" for k in got if got[k] != want[k]]
            if jouleclaw is not None:
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
