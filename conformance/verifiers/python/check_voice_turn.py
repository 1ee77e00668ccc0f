#!/usr/bin/env python3
"""Independent checker for the voice-turn/1 vectors (spec/VOICE-TURN-V1.md).

Usage: check_voice_turn.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

Reads CONFORMANCE_DIR/voice-turn-vectors.json and checks, from the spec alone:
  * levels:   the measurement of each PCM (sample count, duration, exact sum of squares, peak,
              peak and RMS dBFS hundredths decided with exact integer arithmetic);
  * turns:    each canonical document is exactly the JCR-1 encoding of a valid voice-turn/1
              value, hashes to content_hash, and carries the measurement of its PCM;
  * negative: each input is refused; where the expected code is a voice-turn/1 schema code, the
              same code (the spec fixes the order in which schema rules are checked).
Prints one line per check and closes with `voice-turn: N passed, N failed`. Exit status is 0
only if every check passed. verify.py runs the same checks (`run`) inside its own report, so
they count in the `python:` line of `check`.

Libraries: rfc8785 (canonical JSON), blake3; the rest is the standard library. When jsonschema
is installed and CONFORMANCE_DIR/voice-turn-1.schema.json exists, every turn vector is also
validated against that schema (which expresses only part of the rules).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import blake3
import rfc8785

FILE = "voice-turn-vectors.json"
SCHEMA_FILE = "voice-turn-1.schema.json"
SCHEMA_ID = "voice-turn/1"
MAX_SAFE = 2**53 - 1
NS_PER_SAMPLE = 62_500
FULL_SCALE_POWER = 32_768**2
PEAK_FLOOR = -9031
LIMITS = {"document_bytes": 262_144, "depth": 2, "string_bytes": 32_768, "array_len": 64}
TOP_FIELDS = ("error", "jc_voice_turn", "measurement", "text")
MEASUREMENT_FIELDS = ("duration_ns", "peak_dbfs_hundredths", "rms_dbfs_hundredths", "samples")
ERROR_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
SCHEMA_CODES = frozenset((
    "wrong_type", "null", "unknown_field", "missing_field", "wrong_schema", "negative_unsigned",
    "text_and_error", "bad_error_code", "duration_mismatch", "silence_mismatch",
    "level_out_of_range", "rms_above_peak",
))


class Refused(Exception):
    def __init__(self, code: str, detail: str = ""):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


# ------------------------------------------------------------------------------------------
# Levels: the integer nearest to 1000 * log10(power / reference), decided exactly.
# ------------------------------------------------------------------------------------------

def above(a2000: int, b2000: int, k: int) -> bool:
    """1000*log10(a/b) > k - 1/2, i.e. a^2000 * 10^(1-2k) > b^2000 (integers only)."""
    e = 1 - 2 * k
    if e >= 0:
        return a2000 * 10**e > b2000
    return a2000 > b2000 * 10**(-e)


def hundredths(power: int, reference: int):
    """None for silence; otherwise the exact nearest integer (there are no ties)."""
    if power == 0:
        return None
    a2000, b2000 = power**2000, reference**2000
    # A starting point only; the loops below decide with integers.
    k = round(1000 * (math.log10(power) - math.log10(reference)))
    while not above(a2000, b2000, k):
        k -= 1
    while above(a2000, b2000, k + 1):
        k += 1
    return k


def expand(pcm) -> list[int]:
    out: list[int] = []
    for seg in pcm:
        samples = seg["samples"]
        if any(type(s) is not int or not -32768 <= s <= 32767 for s in samples):
            raise ValueError("a sample outside 16 bits")
        out.extend(samples * seg["repeat"])
    return out


def measure(samples: list[int]):
    n = len(samples)
    sum_squares = sum(s * s for s in samples)
    peak_abs = max((abs(s) for s in samples), default=0)
    return {
        "samples": n,
        "duration_ns": n * NS_PER_SAMPLE,
        "peak_dbfs_hundredths": hundredths(peak_abs * peak_abs, FULL_SCALE_POWER),
        "rms_dbfs_hundredths": hundredths(sum_squares, n * FULL_SCALE_POWER) if n else None,
    }, sum_squares, peak_abs


# ------------------------------------------------------------------------------------------
# JCR-1 canonical JSON under the voice-turn/1 limits
# ------------------------------------------------------------------------------------------

def _pairs(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise Refused("duplicate_key", k)
        obj[k] = v
    return obj


def _no_float(tok):
    raise Refused("number", f"{tok!r} has a fraction or exponent")


def _no_constant(tok):
    raise Refused("syntax", f"{tok} is not JSON")


def read_json(data: bytes, document_bytes: int):
    """The JSON value of `data` read strictly (JCR-1's first rules, in order: not empty, at most
    `document_bytes`, UTF-8 without a byte-order mark, no duplicate key, fraction, exponent or
    constant), before its limits and canonical form are checked."""
    if not data:
        raise Refused("empty_input")
    if len(data) > document_bytes:
        raise Refused("document_too_large")
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise Refused("invalid_utf8") from None
    if text.startswith("\ufeff"):
        raise Refused("bom")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_float=_no_float, parse_constant=_no_constant)
    except Refused:
        raise
    except (ValueError, RecursionError) as e:
        raise Refused("syntax", str(e)) from None


def schema_check(validator, canonical: str) -> None:
    """Fails the check with the JSON Schema's first error on a vector's canonical text, if it has
    one (nothing without a validator)."""
    if validator is not None:
        errors = list(validator.iter_errors(json.loads(canonical)))
        if errors:
            raise AssertionError(f"schema: {errors[0].message}")


def check_limits(v, depth: int = 0) -> None:
    if isinstance(v, str):
        if len(v.encode("utf-8", "surrogatepass")) > LIMITS["string_bytes"]:
            raise Refused("string_too_long")
    elif isinstance(v, (list, dict)):
        if depth + 1 > LIMITS["depth"]:
            raise Refused("depth_exceeded")
        if isinstance(v, list):
            if len(v) > LIMITS["array_len"]:
                raise Refused("array_too_long")
            for x in v:
                check_limits(x, depth + 1)
        else:
            for k, x in v.items():
                check_limits(k, depth + 1)
                check_limits(x, depth + 1)


def parse_canonical(data: bytes):
    """The value, if data is exactly its JCR-1 canonical encoding within the limits."""
    value = read_json(data, LIMITS["document_bytes"])
    check_limits(value)

    def ints_in_range(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return
        if isinstance(v, int):
            if abs(v) > MAX_SAFE:
                raise Refused("integer_out_of_range")
        elif isinstance(v, list):
            for x in v:
                ints_in_range(x)
        elif isinstance(v, dict):
            for x in v.values():
                ints_in_range(x)

    ints_in_range(value)
    try:
        again = rfc8785.dumps(value)
    except Exception as e:  # noqa: BLE001 - any refusal of the canonicalizer is a refusal
        raise Refused("non_canonical", str(e)) from None
    if again != data:
        raise Refused("non_canonical", "not the canonical encoding")
    return value


# ------------------------------------------------------------------------------------------
# The voice-turn/1 schema, in the order of spec section 5.
# ------------------------------------------------------------------------------------------

def null_or_wrong(v) -> Refused:
    return Refused("null" if v is None else "wrong_type")


def is_int(v) -> bool:
    return type(v) is int  # bool is a subclass of int in Python: not an integer here


def uint(v) -> int:
    if not is_int(v):
        raise null_or_wrong(v)
    if v < 0:
        raise Refused("negative_unsigned")
    return v


def level(v):
    if v is None or is_int(v):
        return v
    raise Refused("wrong_type")


def string(v) -> str:
    if not isinstance(v, str):
        raise null_or_wrong(v)
    return v


def fields(obj: dict, known, required) -> None:
    if any(k not in known for k in obj):
        raise Refused("unknown_field")
    if any(k not in obj for k in required):
        raise Refused("missing_field")


def check_schema(root):
    """The turn as (measurement dict, heard, text-or-error), or Refused."""
    if not isinstance(root, dict):
        raise null_or_wrong(root)
    fields(root, TOP_FIELDS, ("jc_voice_turn", "measurement"))
    if string(root["jc_voice_turn"]) != SCHEMA_ID:
        raise Refused("wrong_schema")
    m = root["measurement"]
    if not isinstance(m, dict):
        raise null_or_wrong(m)
    fields(m, MEASUREMENT_FIELDS, MEASUREMENT_FIELDS)
    duration = uint(m["duration_ns"])
    peak = level(m["peak_dbfs_hundredths"])
    rms = level(m["rms_dbfs_hundredths"])
    samples = uint(m["samples"])
    text = string(root["text"]) if "text" in root else None
    error = string(root["error"]) if "error" in root else None
    if text is not None and error is not None:
        raise Refused("text_and_error")
    if error is not None and not ERROR_CODE.fullmatch(error):
        raise Refused("bad_error_code")
    if samples * NS_PER_SAMPLE != duration:
        raise Refused("duration_mismatch")
    if (peak is None) != (rms is None) or (peak is not None and samples == 0):
        raise Refused("silence_mismatch")
    if peak is not None:
        rms_floor = hundredths(1, samples * FULL_SCALE_POWER)
        if not PEAK_FLOOR <= peak <= 0 or rms > 0 or rms < rms_floor:
            raise Refused("level_out_of_range")
        if rms > peak:
            raise Refused("rms_above_peak")
    heard = "said" if text is not None else "failed" if error is not None else "unasked"
    return m, heard, text if text is not None else error


def decode(data: bytes):
    return check_schema(parse_canonical(data))


# ------------------------------------------------------------------------------------------

class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, fn) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            self.failed += 1
            print(f"FAIL  {name}: {type(e).__name__}: {e}")
        else:
            self.passed += 1
            print(f"ok    {name}")


def expect(what: str, got, want) -> None:
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def run(directory: Path, rep) -> None:
    """Every check of the voice-turn vectors in `directory`, each reported with
    `rep.check(name, fn)` (this module's Report, or verify.py's)."""
    doc = {}

    def load():
        nonlocal doc
        doc = json.loads((directory / FILE).read_text(encoding="utf-8"))
        expect("schema", doc["schema"], SCHEMA_ID)
        for part in ("levels", "turns", "negative"):
            if not doc[part]:
                raise AssertionError(f"no {part} vectors")

    rep.check(f"load {FILE}", load)
    # The level rule itself, on values the spec states.
    rep.check("level: full scale is 0, one quantum of peak is the floor, silence is none", lambda: (
        expect("full", hundredths(FULL_SCALE_POWER, FULL_SCALE_POWER), 0),
        expect("floor", hundredths(1, FULL_SCALE_POWER), PEAK_FLOOR),
        expect("silence", hundredths(0, FULL_SCALE_POWER), None),
    ))

    for v in doc.get("levels", []):
        def one(v=v):
            m, sum_squares, peak_abs = measure(expand(v["pcm"]))
            expect("sum_squares", str(sum_squares), v["sum_squares"])
            expect("peak_abs", peak_abs, v["peak_abs"])
            expect("measurement", m, v["expect"])
        rep.check(f"levels #{v['n']}: {v['description']}", one)

    validator = None
    schema_path = directory / SCHEMA_FILE
    try:
        import jsonschema  # optional
    except ImportError:
        jsonschema = None
    if jsonschema is not None and schema_path.exists():
        def load_schema():
            nonlocal validator
            schema = json.loads(schema_path.read_text(encoding="utf-8"))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
        rep.check(f"load {SCHEMA_FILE}", load_schema)

    for v in doc.get("turns", []):
        def one(v=v):
            schema_check(validator, v["canonical"])
            data = v["canonical"].encode("utf-8")
            expect("content_hash", blake3.blake3(data).hexdigest(), v["content_hash"])
            m, heard, words = decode(data)
            expect("heard", heard, v["heard"])
            want, _, _ = measure(expand(v["pcm"]))
            expect("measurement", m, want)
            root = json.loads(data)
            if heard == "unasked":
                expect("text absent", "text" in root, False)
            if heard == "failed":
                expect("no text beside a failure", "text" in root, False)
                expect("error code", ERROR_CODE.fullmatch(words) is not None, True)
        rep.check(f"turns #{v['n']}: {v['description']}", one)

    for v in doc.get("negative", []):
        def one(v=v):
            data = bytes.fromhex(v["input_hex"])
            try:
                decode(data)
            except Refused as r:
                if v["expect_refusal"] in SCHEMA_CODES:
                    expect("code", r.code, v["expect_refusal"])
                return
            raise AssertionError("accepted a must-refuse input")
        rep.check(f"negative #{v['n']}: {v['description']} ({v['expect_refusal']})", one)



def checker_main(argv: list[str], name: str, run_checks) -> int:
    """A checker's command line: `run_checks(CONFORMANCE_DIR, report)` (default: the conformance/
    directory two levels up), the closing line `NAME: N passed, N failed`, exit 0 only when at
    least one check ran and none failed."""
    here = Path(__file__).resolve().parent
    directory = Path(argv[1]) if len(argv) > 1 else here.parent.parent
    rep = Report()
    run_checks(directory, rep)
    print(f"{name}: {rep.passed} passed, {rep.failed} failed")
    return 0 if rep.failed == 0 and rep.passed > 0 else 1


def main(argv: list[str]) -> int:
    return checker_main(argv, "voice-turn", run)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
