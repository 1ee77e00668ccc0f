#!/usr/bin/env python3
"""Check a stream directory as `jouleclaw run --out DIR` or `jouleclaw live --sink file:` writes
it, without Rust, by the rules of spec/STREAM-AT-REST.md (section 5).

    verify_stream.py [--allow-unsealed] --pub SIGNER.pub DIR

DIR holds receipts.jsonl (one canonical stream-window/1 receipt per line, each ending in a
newline; required), receipts.cbor (a CBOR sequence of window COSE_Sign1, every window, some or
none; required, may be empty), and when sealed seals.cbor (the stream-seal/1 checkpoints) and
inclusion.cbor (one RFC 9942 inclusion receipt per line): the stream is sealed when either of
those two signed files is there. seals.cbor is then required; inclusion.cbor is optional (layout
stream-at-rest/2): when present every item is checked, when absent each line's inclusion proof is
derived from the lines and checked against the first verified checkpoint that seals it (a
directory of layout stream-at-rest/1 has both). summary.json and signer.pub are
optional; when present they must agree with the files and the key. Every input is opened
without following a symbolic link and refused unless it is a regular file.

stop-latency.cbor (spec/STOP-LATENCY-V1.md) is checked as `jouleclaw receipts verify DIR` checks
it, with python/check_stop_latency.py's functions: the COSE_Sign1 verified (section 6, the payload
by the section 4 decoder) and bound to the decodable lines of receipts.jsonl (section 7, the
value rules finding_unlisted and finding_contradicted included); without it the stream is refused
(stop_latency_missing) when a receipt records a barge-in (a yield, or a barge_in_ignored finding
whatever the verdict) or summary.json lists it. With a stream-seal/2 final seal
(spec/STREAM-SEAL.md section 3.2) each listed kind's file (stop-latency/1: stop-latency.cbor)
must be there with the listed SHA-256 (document_missing,
document_digest_mismatch; larger than 16 MiB is a mismatch too), stop-latency.cbor there when the
seal does not list it is document_not_sealed, and a listed kind without a known file is
document_kind_unknown (spec/STREAM-AT-REST.md section 5.1 step 8); under a stream-seal/1 final
seal it is reported as not sealed.

interaction-metrics.cbor (spec/INTERACTION-METRICS-V1.md) is checked as `jouleclaw receipts verify
DIR` checks it, with python/check_interaction_metrics.py's functions: the COSE_Sign1 verified
(section 5, the payload by the section 4 decoder) and bound to the decodable lines of
receipts.jsonl (section 6: stream_mismatch, window_count_mismatch, root_mismatch,
event_window_missing); without it the stream is refused (interaction_metrics_missing) when
summary.json lists it, and, sealed, by the final seal's document rules above.

Prints one line per problem (the first 100; the rest are counted) and a summary. Exit status:
0 when every receipt verifies and the stream is complete; 1 on any problem, and for a stream
that is not sealed (completeness unknown) unless --allow-unsealed; 2 on a usage or I/O error.
SIGNER.pub is a public key file: `jouleclaw-ed25519-public-key `, 64 lowercase hex digits and a
newline (a secret key file or an untyped one is refused).
"""

from __future__ import annotations

import errno
import io
import os
import stat
import sys
from pathlib import Path

import blake3
import cbor2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verify as v  # noqa: E402  (the vector verifier's functions; its main() does not run on import)
import check_stop_latency as sl  # noqa: E402  (stop-latency/1: signature, decoder, binding)
import check_interaction_metrics as im  # noqa: E402  (interaction-metrics/1: signature, decoder, binding)

MAX_NAMED_PROBLEMS = 100
MAX_RECEIPTS = 1 << 20
MAX_LINE_BYTES = 65_536
MAX_SUMMARY_BYTES = 1 << 20
MAX_KEY_FILE_BYTES = 95  # the typed public key line and a newline, plus one
STOP_LATENCY_CBOR = "stop-latency.cbor"
# The signed documents a stream directory may hold, by kind (spec/STREAM-SEAL.md section 3.2).
INTERACTION_CBOR = "interaction-metrics.cbor"
# Each signed document file of a call and the kinds it may hold (spec/STREAM-SEAL.md 3.2).
DOCUMENT_FILES = {
    STOP_LATENCY_CBOR: ("stop-latency/1", "stop-latency/2"),
    INTERACTION_CBOR: ("interaction-metrics/1",),
}
KNOWN_KINDS = {k for kinds in DOCUMENT_FILES.values() for k in kinds}
MAX_DOCUMENT_BYTES = 16 << 20  # read whole to hash it against the seal
VERDICTS = ("pass", "need_more", "yield", "fail")
FINDINGS = ("conforming", "hallucination", "barge_in_ignored")


class NotRegular(Exception):
    """An input that is not a regular file (named by its kind)."""


def open_input(path: Path):
    """Open without following a symlink (O_NOFOLLOW) or blocking on a FIFO (O_NONBLOCK); None
    when missing; NotRegular unless the open file is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        try:
            st = os.lstat(path)
        except OSError:
            raise e from None
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(kind(st.st_mode)) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(kind(st.st_mode))
    return os.fdopen(fd, "rb")


def kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        return "device"
    return "not a regular file"


def exists(path: Path) -> bool:
    try:
        os.lstat(path)
        return True
    except FileNotFoundError:
        return False


class Check:
    def __init__(self):
        self.problems: list[str] = []
        self.count = 0

    def add(self, code: str, where: str, message: str) -> None:
        self.count += 1
        if len(self.problems) < MAX_NAMED_PROBLEMS:
            self.problems.append(f"{where}: {code}: {message}")


def open_or_note(chk: Check, d: Path, name: str, required: bool):
    try:
        f = open_input(d / name)
    except NotRegular as e:
        chk.add("not_regular_file", name, f"{name} is a {e}, not a regular file; it is not read")
        return None
    if f is None and required:
        chk.add("missing_file", name, f"{name} is missing")
    return f


def cbor_items(data: bytes):
    """Yield the exact bytes of each item of an RFC 8742 CBOR sequence; raise v.Refusal at the
    first item that is not well-formed (nothing after it can be delimited)."""
    fp = io.BytesIO(data)
    while fp.tell() < len(data):
        start = fp.tell()
        try:
            cbor2.CBORDecoder(fp).decode()
        except Exception as e:  # cbor2 raises several types
            raise v.Refusal("cbor", f"not well-formed CBOR: {e}") from None
        yield data[start:fp.tell()]


def is_u64(x) -> bool:
    return type(x) is int and 0 <= x < 1 << 64


def summary_shape_ok(s) -> bool:
    """The typed summary of spec/STREAM-AT-REST.md section 3: required fields and their types."""
    if type(s) is not dict:
        return False
    u = ("early_verdicts", "empty_windows", "inbound_bytes", "outbound_bytes", "receipts", "substrate_bytes", "ticks")
    t = ("spec", "steward", "stream_id", "trace")
    if not all(is_u64(s.get(k)) for k in u) or not all(type(s.get(k)) is str for k in t):
        return False
    for k in ("oracle", "stages"):
        if type(s.get(k)) is not list or not all(type(x) is str for x in s[k]):
            return False
    outputs = s.get("outputs")
    if type(outputs) is not dict or not all(type(x) is str for x in outputs.values()):
        return False
    c, vd = s.get("conservation"), s.get("verdicts")
    if type(c) is not dict or not all(is_u64(c.get(k)) for k in FINDINGS):
        return False
    if type(vd) is not dict or not all(is_u64(vd.get(k)) for k in VERDICTS):
        return False
    sg, sn = s.get("signer"), s.get("signing")
    if type(sg) is not dict or type(sg.get("kid")) is not str or type(sg.get("public_key")) is not str \
            or type(sg.get("test_key")) is not bool:
        return False
    if type(sn) is not dict or type(sn.get("policy")) is not str:
        return False
    for k in ("epoch", "layout"):
        if s.get(k) is not None and type(s[k]) is not str:
            return False
    for k in ("first_window", "last_window"):
        if s.get(k) is not None and not is_u64(s[k]):
            return False
    return True


class _Obj(dict):
    """A JSON object as parsed, remembering whether a key was repeated in it."""
    repeated = False


def _pairs(pairs):
    o = _Obj(pairs)
    o.repeated = len(o) != len(pairs)
    return o


def parse_summary(data: bytes):
    """summary.json as `jouleclaw` reads it (serde_json into the typed summary): UTF-8 without a
    byte-order mark, and no key repeated in the summary or its nested records (a repeated key in
    `outputs`, a map, keeps the last value as serde_json does). None when refused."""
    try:
        text = data.decode("utf-8")
        s = v.json.loads(text, object_pairs_hook=_pairs)  # a leading U+FEFF is a JSON syntax error
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if type(s) is not _Obj or s.repeated:
        return None
    for k, x in s.items():
        if k != "outputs" and _repeats(x):
            return None
    return v.json.loads(text)  # plain dicts for the shape check (the last of repeated outputs keys)


def _repeats(x) -> bool:
    if isinstance(x, _Obj):
        return x.repeated or any(_repeats(y) for y in x.values())
    if isinstance(x, list):
        return any(_repeats(y) for y in x)
    return False


def read_document(chk: Check, d: Path, name: str):
    """A signed document's bytes (at most sl.MAX_SIGNED + 1, so an oversized one is refused by
    its verifier); None when missing or not a regular file (then named)."""
    f = open_or_note(chk, d, name, False)
    if f is None:
        return None
    with f:
        return f.read(sl.MAX_SIGNED + 1)


def ms(ns: int) -> str:
    whole, frac = divmod(ns, 1_000_000)
    return f"{whole} ms" if frac == 0 else f"{whole}.{f'{frac:06}'.rstrip('0')} ms"


def describe_stop_latency(doc: dict) -> str:
    s = sl.summary(doc)
    if s is None:
        return "stop latency: no barge-in"
    late = sum(1 for b in doc["barge_ins"] if b["stop_latency_ns"] > sl.DEADLINE_NS)
    return (f"stop latency over {len(doc['barge_ins'])} barge-ins: p50 {ms(s['p50_ns'])}, p95 {ms(s['p95_ns'])}, "
            f"max {ms(s['max_ns'])}; {late} past the {sl.DEADLINE_NS // 1_000_000} ms deadline")


def summary_lists(d: Path, name: str) -> bool:
    """Whether summary.json (read leniently, as `receipts verify` does here) names `name` in outputs."""
    try:
        f = open_input(d / "summary.json")
    except (NotRegular, OSError):
        return False
    if f is None:
        return False
    with f:
        data = f.read(MAX_SUMMARY_BYTES)
    try:
        s = v.json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return type(s) is dict and type(s.get("outputs")) is dict and name in s["outputs"]


def read_document(chk: Check, d: Path, name: str, limit: int):
    """The bytes of the signed document `d/name` (at most `limit` + 1 of them: more is refused by
    its verifier), None when it is missing, False when it is not a regular file (reported)."""
    try:
        f = open_input(d / name)
    except NotRegular as e:
        chk.add("not_regular_file", name, f"{name} is a {e}, not a regular file; not read")
        return False
    if f is None:
        return None
    with f:
        return f.read(limit + 1)


def decodable(records: list) -> tuple[list, list]:
    """The decoded receipts of the decodable lines of receipts.jsonl, and their hashes."""
    kept = [(h, r) for h, r, _ in records if r is not None]
    return [r for _, r in kept], [h for h, _ in kept]


def note_missing(chk: Check, info: dict, d: Path, name: str, code: str, absent: str) -> None:
    """A signed document that is not in the directory: refused (`code`) when summary.json lists
    it, else noted as `absent`."""
    if summary_lists(d, name):
        chk.add(code, name, "summary.json lists it and it is gone")
    else:
        info["notes"].append(f"{name}: {absent}")


def verify_and_bind(chk: Check, info: dict, name: str, checker, data: bytes, pub: bytes, receipts: list,
                    hashes: list, what: str, section: str, describe) -> None:
    """The signed document `name` (bytes `data`, as read_document gives them; False: not a
    regular file, already reported) verified by `checker` (check_stop_latency or
    check_interaction_metrics) and bound to the receipts, as `section` says; each refusal added
    to `chk`, else a note on `info` with `describe(doc)`."""
    if data is False:
        return
    try:
        doc = checker.verify_signed(data, pub)
    except sl.Refused as e:
        chk.add(e.code, name, f"{what} does not verify")
        return
    problems = checker.bind(doc, receipts, hashes)
    for code in problems:
        chk.add(code, name, f"the document is not bound to the receipts ({section})")
    if not problems:
        info["notes"].append(f"{name}: verified and bound to the receipts; {describe(doc)}")


def check_stop_latency(chk: Check, d: Path, pub: bytes, records: list, info: dict) -> None:
    """stop-latency.cbor as `jouleclaw receipts verify DIR` checks it: the COSE_Sign1 verified
    (spec/STOP-LATENCY-V1.md section 6, its payload by the section 4 decoder) and bound to every
    decodable line of receipts.jsonl (section 7); without it, refused when a receipt records a
    barge-in or summary.json lists it (stop_latency_missing)."""
    receipts, hashes = decodable(records)
    data = read_document(chk, d, STOP_LATENCY_CBOR, sl.MAX_SIGNED)
    if data is None:
        r = sl.first_barge_in(receipts)
        if r is not None:
            what = "a barge-in (yield)" if r["verdict"]["kind"] == "yield" else "an ignored barge-in (barge_in_ignored)"
            chk.add("stop_latency_missing", STOP_LATENCY_CBOR,
                    f"window {r['window_id']} records {what} and there is no stop-latency document")
        else:
            note_missing(chk, info, d, STOP_LATENCY_CBOR, "stop_latency_missing",
                         "absent (no receipt records a barge-in)")
        return
    verify_and_bind(chk, info, STOP_LATENCY_CBOR, sl, data, pub, receipts, hashes, "the stop-latency document",
                    "spec/STOP-LATENCY-V1.md section 7", describe_stop_latency)


def describe_interaction(doc: dict) -> str:
    p = im.panel(doc)

    def num(x):
        return "-" if x is None else f"{x:.3f}"
    return (f"interaction: {len(doc['events'])} events; L_R {num(p['response_latency_mean'])} s, "
            f"L_Y {num(p['yield_latency_mean'])} s, R_R {num(p['response_rate'])}, R_Y {num(p['yield_rate'])}, "
            f"I_A {num(p['agent_interruption_rate'])}, S_BC {num(p['selectivity_backchannel'])}, "
            f"S_VT {num(p['selectivity_vocal_tic'])}, S_ND {num(p['selectivity_non_directed'])}")


def check_interaction(chk: Check, d: Path, pub: bytes, records: list, info: dict) -> None:
    """interaction-metrics.cbor as `jouleclaw receipts verify DIR` checks it: the COSE_Sign1
    verified (spec/INTERACTION-METRICS-V1.md section 5, its payload by the section 4 decoder)
    and bound to every decodable line of receipts.jsonl (section 6); without it, refused when
    summary.json lists it (interaction_metrics_missing)."""
    receipts, hashes = decodable(records)
    data = read_document(chk, d, INTERACTION_CBOR, im.MAX_SIGNED)
    if data is None:
        note_missing(chk, info, d, INTERACTION_CBOR, "interaction_metrics_missing", "absent")
        return
    verify_and_bind(chk, info, INTERACTION_CBOR, im, data, pub, receipts, hashes, "the interaction document",
                    "spec/INTERACTION-METRICS-V1.md section 6", describe_interaction)


def check_documents(chk: Check, d: Path, final: dict, info: dict) -> None:
    """spec/STREAM-SEAL.md section 3.2 against the directory: with a stream-seal/2 final seal,
    each listed kind's file is present and its SHA-256 is the digest, and a document file present
    whose kind the seal does not list is refused; a stream-seal/1 final seal covers no document."""
    docs = final.get("documents")
    if docs is None:
        if exists(d / STOP_LATENCY_CBOR):
            info["notes"].append(f"{STOP_LATENCY_CBOR}: stop latency not sealed (stream-seal/1 final seal)")
        return
    before = chk.count
    for kind in docs:
        if kind not in KNOWN_KINDS:
            chk.add("document_kind_unknown", "seals.cbor",
                    f"the final seal commits to a {kind!r} document, a kind this verifier cannot check")
    for name, kinds in DOCUMENT_FILES.items():
        if sum(k in docs for k in kinds) > 1:
            chk.add("document_kind_mismatch", "seals.cbor",
                    f"the final seal commits to {name} under more than one kind")
            continue
        kind = next((k for k in kinds if k in docs), kinds[0])
        listed = docs.get(kind)
        try:
            f = open_input(d / name)
        except NotRegular as e:
            chk.add("not_regular_file", name, f"{name} is a {e}, not a regular file")
            continue
        data = None
        if f is not None:
            with f:
                data = f.read(MAX_DOCUMENT_BYTES + 1)
            if len(data) > MAX_DOCUMENT_BYTES:
                chk.add("document_digest_mismatch", name, f"{name} holds more than {MAX_DOCUMENT_BYTES} bytes")
                continue
        if listed is not None and data is None:
            chk.add("document_missing", name, f"the final seal commits to a {kind} document and {name} is not there")
        elif listed is None and data is not None:
            chk.add("document_not_sealed", name,
                    f"{name} is there and the final seal (stream-seal/2) does not commit to a {kind} document")
        elif listed is not None:
            found = v.hashlib.sha256(data).hexdigest()
            if found != listed:
                chk.add("document_digest_mismatch", name,
                        f"{name} has SHA-256 {found}, the final seal commits to {listed}: it changed after sealing")
    if chk.count == before and any(k in docs for k in DOCUMENT_FILES[STOP_LATENCY_CBOR]):
        info["notes"].append(f"{STOP_LATENCY_CBOR}: sealed (stream-seal/2 final seal)")


class MerkleLog:
    """The RFC 9162 tree over the lines' leaves, every perfect subtree kept (as the Rust
    MerkleLog), so PATH(m, D[n]) costs O(log n) node hashes."""

    def __init__(self, entries: list[bytes]):
        self.levels = [[v.leaf_hash(e) for e in entries]]
        while len(self.levels[-1]) > 1:
            row = self.levels[-1]
            self.levels.append([v.node_hash(row[i], row[i + 1]) for i in range(0, len(row) - 1, 2)])

    def subtree(self, start: int, n: int) -> bytes:
        if n & (n - 1) == 0 and start % n == 0:
            h = n.bit_length() - 1
            if h < len(self.levels) and start // n < len(self.levels[h]):
                return self.levels[h][start // n]
        k = v.split(n)
        return v.node_hash(self.subtree(start, k), self.subtree(start + k, n - k))

    def path(self, m: int, n: int) -> list[bytes]:
        out, start = [], 0
        while n > 1:
            k = v.split(n)
            if m < k:
                out.append(self.subtree(start + k, n - k))
                n = k
            else:
                out.append(self.subtree(start, k))
                m, start, n = m - k, start + k, n - k
        return out[::-1]


def derive_inclusion(chk: Check, records: list, seals: list, info: dict) -> None:
    """A sealed directory without inclusion.cbor: line i is included when the proof
    PATH(i, D[n]) derived from the lines leads to the root of the first verified checkpoint
    (tree size n > i), whose signature over that root is already verified."""
    lines = len(records)
    log = MerkleLog([rec[0] for rec in records])
    covered = 0
    for seal in seals:
        n = seal["tree_size"]
        if n <= covered:
            continue
        for i in range(covered, min(n, lines)):
            where = f"receipts.jsonl line {i + 1}"
            if n > lines:
                chk.add("derived_inclusion_failed", where,
                        f"the checkpoint that seals it covers {n} receipts and receipts.jsonl has {lines} lines")
                continue
            try:
                root = v.root_from_inclusion(i, n, v.leaf_hash(records[i][0]), log.path(i, n))
            except v.Refusal as e:
                chk.add("derived_inclusion_failed", where, str(e))
                continue
            if root.hex() != seal["root"]:
                chk.add("derived_inclusion_failed", where,
                        f"the lines do not lead to the root of the checkpoint over {n} receipts")
                continue
            info["inclusion"] += 1
            if records[i][2] == "unproven":
                records[i][2] = "included"
        covered = n
    for i in range(covered, lines):
        chk.add("receipt_not_sealed", f"receipts.jsonl line {i + 1}",
                f"no verified checkpoint seals leaf {i} (the last seals {covered} receipts)")


def check_dir(d: Path, pub: bytes) -> tuple[Check, dict]:
    chk = Check()
    info = {"sealed": False, "lines": 0, "signed": 0, "checkpoints": 0, "inclusion": 0, "tree_size": 0, "notes": [],
            "derived": False}
    hashes: dict[str, str] = {}

    # receipts.jsonl
    records = []  # per line: [content_hash, decoded receipt or None, status]
    first = None
    last_w = None
    totals = {"receipts": 0, "ticks": 0, "inbound_bytes": 0, "outbound_bytes": 0,
              "verdicts": dict.fromkeys(VERDICTS, 0), "conservation": dict.fromkeys(FINDINGS, 0),
              "first": None, "last": None}
    f = open_or_note(chk, d, "receipts.jsonl", True)
    if f is not None:
        with f:
            data = f.read()
        hashes["receipts.jsonl"] = blake3.blake3(data).hexdigest()
        pos = 0
        while pos < len(data):
            index = len(records)
            if index >= MAX_RECEIPTS:
                chk.add("too_many_receipts", f"receipts.jsonl line {index + 1}", "more lines than a stream holds")
                break
            nl = data.find(b"\n", pos, pos + MAX_LINE_BYTES + 1)
            where = f"receipts.jsonl line {index + 1}"
            if nl < 0:
                line = data[pos:pos + MAX_LINE_BYTES + 1]
                if len(line) > MAX_LINE_BYTES:
                    chk.add("line_too_long", where, "longer than a receipt; the rest is not read")
                    break
                chk.add("unterminated_line", where, "the last line has no line end")
                pos = len(data)
            else:
                line = data[pos:nl]
                pos = nl + 1
            h = blake3.blake3(line).digest()
            try:
                r = v.check_receipt_bytes(line)
            except v.Refusal as e:
                chk.add("malformed_line", where, f"not a receipt: {e}")
                records.append([h, None, "malformed"])
                continue
            w = r["window_id"]
            totals["receipts"] += 1
            for k in ("ticks", "inbound_bytes", "outbound_bytes"):
                totals[k] += r["tick_count" if k == "ticks" else k]
            totals["verdicts"][r["verdict"]["kind"]] += 1
            totals["conservation"][r["conservation"]["kind"]] += 1
            if totals["first"] is None:
                totals["first"] = w
            totals["last"] = w
            if first is None:
                first = (r["stream_id"], r["steward"])
            elif (r["stream_id"], r["steward"]) != first:
                chk.add("mixed_stream", f"{where} (window {w})", "another stream or steward than line 1's")
            if last_w is not None and w <= last_w:
                chk.add("window_not_ascending", f"{where} (window {w})", f"follows window {last_w}")
            last_w = w
            records.append([h, r, "unproven"])
    info["lines"] = len(records)

    # receipts.cbor: each item verified and matched to a later line.
    f = open_or_note(chk, d, "receipts.cbor", True)
    if f is not None:
        with f:
            data = f.read()
        at: dict[bytes, list[int]] = {}
        for i, rec in enumerate(records):
            if rec[1] is not None:
                at.setdefault(rec[0], []).append(i)
        nxt = 0
        try:
            for i, item in enumerate(cbor_items(data)):
                if i >= MAX_RECEIPTS:
                    chk.add("too_many_items", f"receipts.cbor item {i}", "more items than a stream holds")
                    break
                try:
                    r = v.verify_cose(item, pub)
                except v.Refusal as e:
                    chk.add("refused_signature", f"receipts.cbor item {i}", str(e))
                    continue
                h = blake3.blake3(v.rfc8785.dumps(r)).digest()
                k = next((k for k in at.get(h, []) if k >= nxt), None)
                if k is None:
                    chk.add("unmatched_signature", f"receipts.cbor item {i} (window {r['window_id']})",
                            "signs a receipt that is not a later line of receipts.jsonl")
                else:
                    nxt = k + 1
                    records[k][2] = "signed"
                    info["signed"] += 1
        except v.Refusal as e:
            chk.add("refused_signature", "receipts.cbor", f"{e}; the sequence cannot be read past it")

    # Sealed when either signed seal file is there.
    seals_there, inclusion_there = exists(d / "seals.cbor"), exists(d / "inclusion.cbor")
    info["sealed"] = seals_there or inclusion_there
    if info["sealed"]:
        if not seals_there:
            chk.add("missing_file", "seals.cbor", "seals.cbor is missing beside inclusion.cbor: the stream was sealed")
        checkpoints = []
        seal_roots = []  # the verified checkpoints' seals, in order (for derived inclusion)
        f = open_or_note(chk, d, "seals.cbor", False)
        if f is not None:
            with f:
                data = f.read()
            try:
                for i, item in enumerate(cbor_items(data)):
                    if i >= min(len(records) + 1, MAX_RECEIPTS):
                        chk.add("too_many_checkpoints", f"seals.cbor item {i}", "more checkpoints than receipts")
                        break
                    try:
                        checkpoints.append(v.verify_checkpoint(item, pub))
                        seal_roots.append(checkpoints[-1][0])
                    except v.Refusal as e:
                        chk.add("refused_seal", f"seals.cbor item {i}", str(e))
            except v.Refusal as e:
                chk.add("refused_seal", "seals.cbor", f"{e}; the sequence cannot be read past it")
        # Layout stream-at-rest/2: inclusion.cbor is optional; without it each line's inclusion
        # proof is derived from the lines and checked against the first verified checkpoint that
        # seals its leaf (spec/STREAM-AT-REST.md section 5.1 step 3).
        f = open_or_note(chk, d, "inclusion.cbor", True) if inclusion_there else None
        if not inclusion_there:
            info["derived"] = True
            derive_inclusion(chk, records, seal_roots, info)
        if f is not None:
            with f:
                data = f.read()
            count = 0
            try:
                for i, item in enumerate(cbor_items(data)):
                    count = i + 1
                    if i >= len(records):
                        chk.add("inclusion_count", f"inclusion.cbor item {i}", "more inclusion receipts than lines")
                        break
                    try:
                        _, index = v.verify_inclusion_receipt(item, records[i][0], pub)
                    except v.Refusal as e:
                        chk.add("refused_inclusion", f"inclusion.cbor item {i}", f"does not prove line {i + 1}: {e}")
                        continue
                    if index != i:
                        chk.add("inclusion_wrong_leaf", f"inclusion.cbor item {i}", f"proves leaf {index}, not {i}")
                        continue
                    info["inclusion"] += 1
                    if records[i][2] == "unproven":
                        records[i][2] = "included"
            except v.Refusal as e:
                chk.add("refused_inclusion", "inclusion.cbor", f"{e}; the sequence cannot be read past it")
            if count < len(records):
                chk.add("inclusion_count", "inclusion.cbor", f"{count} inclusion receipts for {len(records)} lines")
        entries = [{"window_id": r["window_id"], "content_hash": h, "stream_id": r["stream_id"],
                    "steward": r["steward"], "id": r["id"]} for h, r, _ in records if r is not None]
        for p in v.check_stream(entries, checkpoints):
            chk.add(p["code"], "seals.cbor", str(p))
        info["checkpoints"] = len(checkpoints)
        info["tree_size"] = checkpoints[-1][0]["tree_size"] if checkpoints else 0
        if checkpoints and checkpoints[-1][0]["final"]:
            check_documents(chk, d, checkpoints[-1][0], info)
    for i, (_, r, status) in enumerate(records):
        if status == "unproven":
            chk.add("unproven_receipt", f"receipts.jsonl line {i + 1} (window {r['window_id']})",
                    "nothing signed covers it")
    if not records and chk.count == 0:
        chk.add("no_receipts", "receipts.jsonl", "no receipts in receipts.jsonl")

    check_stop_latency(chk, d, pub, records, info)
    check_interaction(chk, d, pub, records, info)

    # signer.pub (optional): the verifying key.
    f = open_or_note(chk, d, "signer.pub", False)
    if f is not None:
        with f:
            data = f.read(MAX_KEY_FILE_BYTES + 1)
        try:
            key = v.read_public_key_text(data.decode("ascii")) if len(data) <= MAX_KEY_FILE_BYTES else None
        except (UnicodeDecodeError, ValueError):
            key = None
        if key is None:
            chk.add("signer_malformed", "signer.pub", "signer.pub is not a public key file")
        elif key != pub:
            chk.add("signer_mismatch", "signer.pub", "signer.pub is not the verifying key")
        else:
            hashes["signer.pub"] = blake3.blake3(data).hexdigest()

    # summary.json (optional): agrees with the files.
    f = open_or_note(chk, d, "summary.json", False)
    if f is not None:
        with f:
            data = f.read(MAX_SUMMARY_BYTES + 1)
        s = None if len(data) > MAX_SUMMARY_BYTES else parse_summary(data)
        if not summary_shape_ok(s):
            chk.add("summary_malformed", "summary.json", "not a run summary")
        else:
            differ = []
            empty = 0 if totals["first"] is None else totals["last"] - totals["first"] + 1 - totals["receipts"]
            for k, found in (("receipts", totals["receipts"]), ("ticks", totals["ticks"]),
                             ("inbound_bytes", totals["inbound_bytes"]), ("outbound_bytes", totals["outbound_bytes"]),
                             ("empty_windows", max(empty, 0))):
                if s[k] != found:
                    differ.append(f"{k} is {s[k]}, the receipts give {found}")
            for k in VERDICTS:
                if s["verdicts"][k] != totals["verdicts"][k]:
                    differ.append(f"verdicts.{k} differs")
            for k in FINDINGS:
                if s["conservation"][k] != totals["conservation"][k]:
                    differ.append(f"conservation.{k} differs")
            if totals["receipts"] and (s["stream_id"], s["steward"]) != first:
                differ.append("stream_id or steward is not the receipts'")
            if s["signer"]["kid"] != v.thumbprint(pub).hex():
                differ.append("signer.kid is not the verifying key's kid")
            for name in ("receipts.jsonl", "signer.pub", "receipts.cbor", "seals.cbor", "inclusion.cbor"):
                found = hashes.get(name)
                if found is None and name not in ("receipts.jsonl", "signer.pub"):
                    try:
                        g = open_input(d / name)
                    except NotRegular:
                        g = None
                    if g is not None:
                        with g:
                            found = blake3.blake3(g.read()).hexdigest()
                says = s["outputs"].get(name)
                if says is None and found is None:
                    continue
                if name == "signer.pub" and found is None:
                    continue
                if says != found:
                    differ.append(f"outputs.{name} is not the file's BLAKE3")
            for dd in differ:
                chk.add("summary_mismatch", "summary.json", dd)
    return chk, info


def main(argv: list[str]) -> int:
    args = argv[1:]
    allow_unsealed = "--allow-unsealed" in args
    args = [a for a in args if a != "--allow-unsealed"]
    if len(args) != 3 or args[0] != "--pub":
        print(__doc__, file=sys.stderr)
        return 2
    d = Path(args[2])
    why = v.dependencies_unsupported()
    if why is not None:
        print(f"verify_stream.py: unsupported dependency: {why}; install the pinned versions "
              f"(pip install -r {Path(__file__).resolve().parent / 'requirements.txt'})", file=sys.stderr)
        return 2
    try:
        pub = v.read_public_key_text(Path(args[1]).read_text(encoding="ascii"))
        if not d.is_dir():
            raise OSError(errno.ENOTDIR, "not a directory", str(d))
        chk, info = check_dir(d, pub)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for p in chk.problems:
        print(p)
    for n in info["notes"]:
        print(n)
    if chk.count > len(chk.problems):
        print(f"... and {chk.count - len(chk.problems)} more problems (only the first {MAX_NAMED_PROBLEMS} are named)")
    if chk.count:
        print(f"stream NOT verified{' or NOT complete' if info['sealed'] else ''}: {chk.count} problems")
        return 1
    if not info["sealed"]:
        print(f"{info['lines']} receipts, {info['signed']} window signatures verified; NOT SEALED: COMPLETENESS UNKNOWN")
        return 0 if allow_unsealed else 1
    print(f"stream complete: {info['lines']} receipts, {info['checkpoints']} checkpoints, final seal over "
          f"{info['tree_size']} receipts; {info['signed']} window signatures and {info['inclusion']} inclusion "
          f"receipts verified" + (" (derived from seals.cbor: no inclusion.cbor, layout stream-at-rest/2)"
                                  if info["derived"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
