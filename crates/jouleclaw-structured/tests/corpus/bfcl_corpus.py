#!/usr/bin/env python3
"""Third-party function schemas with ground-truth calls: the Berkeley Function Calling
Leaderboard (BFCL) as the PyPI package `bfcl-eval` ships it, written at test time (never checked in).

Usage: bfcl_corpus.py BFCL_EVAL.whl OUT.json

The wheel is read as a zip file; nothing of it is installed (its dependencies include torch).
Every function document of its question files (`bfcl_eval/data/BFCL_v4_*.json`, the format-
sensitivity set excluded: it repeats the others' functions) and of `multi_turn_func_doc/` is put
in OpenAI's function-calling form by BFCL's own `convert_to_tool` (with `_cast_to_openai_type`
and `GORILLA_TO_OPENAPI`): the two functions are taken from the wheel's
`bfcl_eval/model_handler/utils.py` by their syntax tree and executed as written, because that
module's other imports need the whole package's dependencies. The schema is the tool's
`parameters`, as the model provider receives it: no `additionalProperties` is added.

Distinct schemas (by canonical JSON) are the corpus. Calls come from the ground truth
(`possible_answer/`): each parameter takes its first listed value that is not "" ("" means the
parameter may be left out; a parameter with only "" is left out), nested objects likewise; the
multi-turn answers (`"cd(folder='document')"`) are read with `ast` (keyword arguments only).
At most `MAX_CALLS` distinct calls per schema. A ground-truth call is labelled valid only when
`jsonschema` (Draft 2020-12, formats not asserted) accepts it; its mutations (the same ones as
`tool_models.py`, with their first impossible byte) are made only from valid calls. Every case
carries jsonschema's whole-document outcome; `tests/it/tool_corpus.rs` checks the grammar against it.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import sys
import zipfile
from importlib import metadata

from jsonschema import Draft202012Validator

from tool_models import compact, mutations

MAX_CALLS = 2
DATA = "bfcl_eval/data/"


def load_converter(whl: zipfile.ZipFile):
    """BFCL's convert_to_tool, executed from the wheel's own source."""
    ns: dict = {}
    exec(whl.read("bfcl_eval/constants/type_mappings.py").decode(), ns)
    exec(whl.read("bfcl_eval/constants/enums.py").decode(), ns)
    path = "bfcl_eval/model_handler/utils.py"
    tree = ast.parse(whl.read(path).decode())
    wanted = {"_cast_to_openai_type", "convert_to_tool"}
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    if {f.name for f in fns} != wanted:
        raise SystemExit(f"{path}: {sorted(wanted)} not found")
    env = {"copy": copy, "re": re, "GORILLA_TO_OPENAPI": ns["GORILLA_TO_OPENAPI"],
           "ModelStyle": ns["ModelStyle"]}
    exec(compile(ast.Module(body=fns, type_ignores=[]), path, "exec"), env)
    mapping, style = ns["GORILLA_TO_OPENAPI"], ns["ModelStyle"].OPENAI_COMPLETIONS

    def convert(doc):
        tool = env["convert_to_tool"]([doc], mapping, style)[0]
        return tool["function"]["parameters"] if "function" in tool else tool["parameters"]

    return convert


def lines(whl, name):
    for line in whl.read(name).decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def choose(v):
    """One concrete value from BFCL's lists of acceptable values ("" = may be left out)."""
    if isinstance(v, dict):
        out = {}
        for k, alts in v.items():
            x = first(alts) if isinstance(alts, list) else choose(alts)
            if x is not OMIT:
                out[k] = x
        return out
    if isinstance(v, list):
        return [choose(x) for x in v]
    return v


OMIT = object()


def first(alts):
    for a in alts:
        if a != "":
            return choose(a)
    return OMIT


def multi_turn_call(text):
    """(name, args) of `"f(a=1, b='x')"`, or None when it is not keyword-only literals."""
    try:
        call = ast.parse(text, mode="eval").body
        if not isinstance(call, ast.Call) or call.args or not isinstance(call.func, ast.Name):
            return None
        return call.func.id, {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError):
        return None


def main(argv) -> int:
    whl_path, out_path = argv[1], argv[2]
    whl = zipfile.ZipFile(whl_path)
    convert = load_converter(whl)
    names = whl.namelist()
    schemas: dict[str, dict] = {}  # canonical text -> {"schema", "calls", "functions"}

    def add(doc, args=None):
        schema = convert(doc)
        key = json.dumps(schema, sort_keys=True, ensure_ascii=False)
        entry = schemas.setdefault(key, {"schema": schema, "calls": [], "functions": set()})
        entry["functions"].add(doc["name"])
        if args is not None and len(entry["calls"]) < MAX_CALLS and args not in entry["calls"]:
            entry["calls"].append(args)

    answers = {}
    for n in names:
        if n.startswith(DATA + "possible_answer/") and n.endswith(".json"):
            for o in lines(whl, n):
                answers[o["id"]] = o["ground_truth"]
    multi_docs: dict[str, list] = {}
    for n in sorted(names):
        if n.startswith(DATA + "multi_turn_func_doc/") and n.endswith(".json"):
            for doc in lines(whl, n):
                multi_docs.setdefault(doc["name"], []).append(doc)
                add(doc)
    questions = sorted(n for n in names if re.fullmatch(re.escape(DATA) + r"BFCL_v4_[a-z_]+\.json", n)
                       and "format_sensitivity" not in n)
    for n in questions:
        for o in lines(whl, n):
            docs = {d["name"]: d for d in o.get("function") or []}
            for d in docs.values():
                add(d)
            gt = answers.get(o["id"])
            if not isinstance(gt, list):
                continue
            for item in gt:
                if isinstance(item, dict):
                    for fname, params in item.items():
                        if fname in docs and isinstance(params, dict):
                            add(docs[fname], choose(params))
                elif isinstance(item, list):  # multi-turn: one list of call strings per turn
                    for text in item:
                        parsed = multi_turn_call(text) if isinstance(text, str) else None
                        if parsed and len(multi_docs.get(parsed[0], [])) == 1:
                            add(multi_docs[parsed[0]][0], parsed[1])

    models = []
    with_calls = 0
    for i, (key, e) in enumerate(sorted(schemas.items())):
        schema = e["schema"]
        validator = Draft202012Validator(schema)
        cases = []
        for j, value in enumerate(e["calls"]):
            ok = validator.is_valid(value)
            dumped = compact(value)
            if not ok:
                cases.append({"name": f"ground truth {j} (jsonschema refuses it)", "doc": dumped,
                              "valid": None, "offset": None, "path": None})
                continue
            cases.append({"name": f"ground truth {j}", "doc": dumped, "valid": True,
                          "offset": None, "path": None})
            cases.append({"name": f"ground truth {j} indented",
                          "doc": json.dumps(value, indent=2, ensure_ascii=False),
                          "valid": True, "offset": None, "path": None})
            for cname, doc, offset, path in mutations(schema, value, False):
                cases.append({"name": f"ground truth {j}: {cname}", "doc": doc, "valid": None,
                              "offset": offset, "path": path})
        for c in cases:
            try:
                c["jsonschema_valid"] = validator.is_valid(json.loads(c["doc"]))
            except ValueError:
                c["jsonschema_valid"] = False
        with_calls += bool(e["calls"])
        models.append({
            "name": f"{'+'.join(sorted(e['functions']))[:120]}#{i}",
            "source": "bfcl",
            "schema": schema,
            "schema_text": json.dumps(schema, ensure_ascii=False),
            "cases": cases,
        })
    doc = {
        "generators": {
            "bfcl-eval": whl_path.rsplit("/", 1)[-1],
            "jsonschema": metadata.version("jsonschema"),
        },
        "models": models,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    ncases = sum(len(m["cases"]) for m in models)
    print(f"bfcl corpus: {len(models)} distinct schemas ({with_calls} with ground-truth calls), "
          f"{ncases} calls -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
