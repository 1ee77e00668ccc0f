"""examples/python/pipecat_receipts.py runs offline and prints a table whose barge-in windows
say yield; its receipts verify with the CLI."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO, cli_verify, jouleclaw_cli


def test_the_example_prints_yield_on_the_barge_in_windows_and_its_receipts_verify(tmp_path):
    out = tmp_path / "receipts"
    done = subprocess.run(
        [sys.executable, str(REPO / "examples/python/pipecat_receipts.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = {
        int(line.split()[0]): line.split()
        for line in done.stdout.splitlines()
        if line.split() and line.split()[0].isdigit()
    }
    assert sorted(rows) == list(range(9))
    assert rows[4][4] == "yield@4" and rows[4][5] == "yield@0.84s"
    assert rows[7][4] == "yield@7" and rows[7][5] == "yield@1.44s"
    assert rows[8][6] == "barge_in_ignored(1.44s->1.74s)"
    assert all(rows[w][4] == "pass" for w in rows if w not in (4, 7))
    assert "9/9 receipts verify" in done.stdout
    checked = cli_verify(out)
    assert checked.returncode == 0, checked.stderr
    assert "9 verified, 0 refused" in checked.stdout
    # The stop latency of both barge-ins: the last audio sent 60 ms and 300 ms after them.
    assert "stop latency: barge-in at 0.84s, last audio sent 60 ms after it" in done.stdout
    assert "stop latency: barge-in at 1.44s, last audio sent 300 ms after it" in done.stdout
    run = subprocess.run(
        [str(jouleclaw_cli()), "receipts", "verify", "--pub", str(out / "signer.pub"), str(out)],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 past the 150 ms deadline" in run.stdout
