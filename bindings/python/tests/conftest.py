"""Shared checks: every receipt a test produces is verified by the `jouleclaw` CLI and by the
independent Python verifier in conformance/verifiers/python."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: The toolsets the toolset tests compile (toolsets/): an OpenAI ``tools`` array and an MCP
#: ``tools/list`` response.
OPENAI_TOOLS = (Path(__file__).resolve().parent / "toolsets/openai_tools.json").read_text()
MCP_TOOLS = (Path(__file__).resolve().parent / "toolsets/mcp_tools_list.json").read_text()


def jouleclaw_cli() -> Path:
    """The `jouleclaw` binary: $JOULECLAW_BIN, else target/{debug,release}/jouleclaw, else PATH."""
    candidates = []
    if os.environ.get("JOULECLAW_BIN"):
        candidates.append(Path(os.environ["JOULECLAW_BIN"]))
    candidates += [REPO / "target/debug/jouleclaw", REPO / "target/release/jouleclaw"]
    found = shutil.which("jouleclaw")
    if found:
        candidates.append(Path(found))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    pytest.fail(
        "the jouleclaw CLI is needed to verify receipts: run `cargo build --bin jouleclaw` "
        "at the repository root or set JOULECLAW_BIN"
    )


def python_verifier():
    """conformance/verifiers/python/verify.py as a module (needs its requirements.txt)."""
    path = REPO / "conformance/verifiers/python/verify.py"
    spec = importlib.util.spec_from_file_location("conformance_verify", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        pytest.fail(
            f"the Python verifier needs its dependencies ({e}): "
            "pip install -r conformance/verifiers/python/requirements.txt"
        )
    return module


def cli_verify(out_dir: Path) -> subprocess.CompletedProcess:
    """`jouleclaw receipts verify --pub signer.pub receipts.cbor` in `out_dir`."""
    return subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", "signer.pub", "receipts.cbor"],
        cwd=out_dir,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def verify_outputs():
    """Checks a receipts directory with both verifiers; returns the receipts the Python verifier
    decoded, in order."""

    def check(out_dir: Path, windows) -> list[dict]:
        done = cli_verify(out_dir)
        assert done.returncode == 0, done.stdout + done.stderr
        pv = python_verifier()
        public_key = pv.read_public_key_text((out_dir / "signer.pub").read_text(encoding="ascii"))
        cbor = (out_dir / "receipts.cbor").read_bytes()
        lines = (out_dir / "receipts.jsonl").read_bytes().splitlines()
        import jouleclaw

        items = jouleclaw.split_cbor_sequence(cbor)
        assert len(items) == len(lines) == len(windows) > 0
        decoded = []
        for item, line, w in zip(items, lines, windows):
            receipt = pv.verify_cose(item, public_key)
            assert pv.check_receipt_bytes(line) == receipt
            assert line == w.receipt_json and item == w.cose_sign1
            assert receipt["window_id"] == w.window_id
            decoded.append(receipt)
        return decoded

    return check


def stream_verifier():
    """conformance/verifiers/python/verify_stream.py as a module (it imports its siblings by
    name)."""
    sys.path.insert(0, str(REPO / "conformance/verifiers/python"))
    try:
        import verify_stream
    except ImportError as e:
        pytest.fail(
            f"the Python stream verifier needs its dependencies ({e}): "
            "pip install -r conformance/verifiers/python/requirements.txt"
        )
    return verify_stream


def verify_dir_everywhere(out_dir: Path, *, sealed: bool) -> dict:
    """A run directory checked three ways, each with its exit status or outcome and the problem
    text it printed: `jouleclaw receipts verify --pub signer.pub DIR` (the CLI),
    conformance/verifiers/python/verify_stream.py (no Rust) and the binding's
    `verify_stream_dir`."""
    import jouleclaw

    allow = [] if sealed else ["--allow-unsealed"]
    pub = out_dir / "signer.pub"
    cli = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", *allow, "--pub", str(pub), str(out_dir)],
        capture_output=True, text=True, timeout=60,
    )
    vs = stream_verifier()
    chk, _info = vs.check_dir(out_dir, vs.v.read_public_key_text(pub.read_text(encoding="ascii")))
    ok = "complete" if sealed else "unsealed"
    binding = jouleclaw.verify_stream_dir(str(out_dir), pub.read_text())
    return {
        "cli": (cli.returncode, cli.stdout + cli.stderr),
        "python": (1 if chk.count else 0, "\n".join(chk.problems)),
        "binding": (0 if binding["outcome"] == ok else 1,
                    "\n".join(f"{p['file']}: {p['code']}: {p['message']}" for p in binding["problems"])),
    }


def mic_call(p, *, barge_in_ns=None):
    """Pushes 600 ms of silent microphone audio (20 ms chunks) into `p`, then, with
    `barge_in_ns`, a barge-in marker at that time, and finishes the call: returns the
    ``Finished`` and the receipt line of every window in order (``receipts.jsonl``'s lines)."""
    import jouleclaw

    lines = []
    for t in range(0, 600_000_000, 20_000_000):
        o = p.push(t, jouleclaw.MIC, "audio", bytes(640))
        if o.closed:
            lines.append(o.closed.receipt_json)
    if barge_in_ns is not None:
        o = p.push(barge_in_ns, jouleclaw.CONTROL, "marker", marker="barge_in")
        lines.append(o.closed.receipt_json)
    fin = p.finish()
    lines.append(fin.last.receipt_json)
    return fin, lines


def check_bound_to_receipts(verify, document: bytes, public_key: bytes, lines, windows: int):
    """`verify` (``jouleclaw.verify_stop_latency`` or ``verify_interaction_metrics``) accepts the
    signed `document` beside the ``receipts.jsonl`` of `lines`, counting `windows` windows, and
    refuses it (``window_count_mismatch``) beside that file without its first or its last line."""
    import jouleclaw

    def jsonl(some) -> bytes:
        return b"".join(line + b"\n" for line in some)

    assert verify(document, public_key, jsonl(lines)).window_count == windows
    for fewer in (lines[1:], lines[:-1]):
        with pytest.raises(jouleclaw.VerifyError) as e:
            verify(document, public_key, jsonl(fewer))
        assert e.value.code == "window_count_mismatch"


def flip_digit(signed: bytes, field: str) -> bytes:
    """`signed` with the first digit of the number after ``"FIELD":`` changed (to 9, or to 8 when
    it is 9): a signed document whose payload no longer matches its signature."""
    out = bytearray(signed)
    i = out.index(f'"{field}":'.encode()) + len(field) + 3
    out[i] = ord("9") if out[i] != ord("9") else ord("8")
    return bytes(out)
