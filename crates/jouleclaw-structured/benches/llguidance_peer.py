#!/usr/bin/env python3
"""llguidance (PyPI `llguidance`) on the tool corpus, measured once (benches/README.md).

Usage: llguidance_peer.py CORPUS.json   (a corpus written by tests/corpus/tool_models.py)

For every schema of the corpus llguidance accepts (its valid calls all pass), with a
byte-level tokenizer (256 one-byte tokens and an end token, so a token is a byte):
  * compile: `grammar_from_json_schema` + `LLMatcher(...)` (mean per schema);
  * check: each valid compact call consumed token by token (`consume_token`), then
    `is_accepting()`; per byte;
  * mask: the same with `compute_bitmask()` before every token (what a constrained decoder does);
    per byte.
Times are `time.perf_counter_ns` over the whole set, the best of 5 runs. Prints one table.
"""

from __future__ import annotations

import json
import sys
import time

import llguidance
from llguidance import LLMatcher, LLTokenizer, TokenizerWrapper


class ByteTokenizer:
    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids = [256]

    def __call__(self, s):
        return list(s if isinstance(s, bytes) else s.encode("utf-8"))


def main(argv) -> int:
    corpus = json.load(open(argv[1], encoding="utf-8"))
    tok = LLTokenizer(TokenizerWrapper(ByteTokenizer()))
    items = []
    skipped = 0
    for m in corpus["models"]:
        text = m["schema_text"]
        docs = [c["doc"].encode() for c in m["cases"] if c["valid"] and not c["name"].endswith("indented")]
        grammar = LLMatcher.grammar_from_json_schema(text)
        probe = LLMatcher(tok, grammar, log_level=0)
        if probe.is_error():
            skipped += 1
            continue
        good = True
        for d in docs:
            mt = LLMatcher(tok, grammar, log_level=0)
            if not all(mt.consume_token(b) for b in d) or not mt.is_accepting():
                good = False
        if not good:
            skipped += 1
            continue
        items.append((text, docs))
    nbytes = sum(len(d) for _, ds in items for d in ds)

    def best(fn):
        return min(fn() for _ in range(5))

    def compile_all():
        t = time.perf_counter_ns()
        for text, _ in items:
            LLMatcher(tok, LLMatcher.grammar_from_json_schema(text), log_level=0)
        return time.perf_counter_ns() - t

    def check_all(mask: bool):
        grammars = [LLMatcher.grammar_from_json_schema(text) for text, _ in items]

        def run():
            total = 0
            for g, (_, docs) in zip(grammars, items):
                for d in docs:
                    mt = LLMatcher(tok, g, log_level=0)
                    t = time.perf_counter_ns()
                    for b in d:
                        if mask:
                            mt.compute_bitmask()
                        mt.consume_token(b)
                    mt.is_accepting()
                    total += time.perf_counter_ns() - t
            return total

        return run

    c = best(compile_all)
    k = best(check_all(False))
    m = best(check_all(True))
    print(f"llguidance {llguidance.get_version() if hasattr(llguidance, 'get_version') else ''}: "
          f"{len(items)} schemas ({skipped} skipped), {nbytes} bytes of valid calls")
    print(f"| compile per schema | {c / len(items) / 1000:.1f} us |")
    print(f"| check per byte (consume_token) | {k / nbytes:.0f} ns |")
    print(f"| check + mask per byte (compute_bitmask, consume_token) | {m / nbytes:.0f} ns |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
