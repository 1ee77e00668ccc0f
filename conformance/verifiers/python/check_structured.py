#!/usr/bin/env python3
"""Independent checker for conformance/structured-output-vectors.json (spec/STRUCTURED-OUTPUT.md).

Usage: check_structured.py [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)

It shares no code with the Rust validator. For every grammar it checks the digest (BLAKE3 of the
canonical form) and that the canonical JSON Schema projection is a valid 2020-12 schema. For
every case it validates the *whole* document with `jsonschema` against that projection, after the
rules JSON Schema cannot state, which the spec lists and this script implements itself:

* the document limits (`max_document_bytes`, `max_number_chars`) and I-JSON (RFC 7493): strict
  UTF-8, no NaN/Infinity, no lone surrogate escapes, no duplicate keys;
* `integer` means an integer token (no fraction or exponent), numbers are exact decimals;
* the tag of a `oneOf` is the object's first member;
* an `anyOf` with several branches of the value's JSON type that are not a tagged union is
  read side by side: the value is valid when one branch accepts it.

Agreement (spec, "Conformance"): a document Python accepts must be accepted by the vector; a
document that is JSON but invalid must be refused with class `schema` and a path among the
paths Python reports; a document that is not JSON (or over a limit) must be refused, and a
vector refused with class `syntax` or `limit` must not be JSON for Python. One line per check,
then `structured: N passed, N failed`. Exit status 0 only if every check passed.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import blake3
from jsonschema import Draft202012Validator, validators

FILES = ("structured-output-vectors.json", "structured-output-2020-vectors.json")


def _is_integer(_checker, instance) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


# `integer` is an integer token: 1.0 (a Decimal here) is not one, unlike JSON Schema's default.
StrictValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)


class Obj(dict):
    """A JSON object that remembers its members in order and whether a key repeated."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.pairs = pairs
        self.dup = len(self) != len(pairs)


class NotJson(Exception):
    pass


class OverLimit(Exception):
    pass


def pointer(parts) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def depth(v) -> int:
    if isinstance(v, Obj):
        return 1 + max((depth(x) for _, x in v.pairs), default=0)
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    return 0


def parse(doc: bytes, limits: dict, profile: str = "subset"):
    """The document's value, or NotJson / OverLimit. In the JSON Schema profile a document
    nesting deeper than `max_depth` is over a limit (the subset's schemas bound it)."""
    if len(doc) > limits["max_document_bytes"]:
        raise OverLimit("document")
    try:
        text = doc.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise NotJson(f"UTF-8: {e}") from e
    too_long = []

    def number(token: str, conv):
        if len(token) > limits["max_number_chars"]:
            too_long.append(token)
        return conv(token)

    def constant(name):
        raise NotJson(f"{name} is not JSON")

    try:
        value = json.loads(
            text,
            parse_int=lambda t: number(t, int),
            parse_float=lambda t: number(t, Decimal),
            parse_constant=constant,
            object_pairs_hook=Obj,
        )
    except (ValueError, RecursionError) as e:
        raise NotJson(str(e)) from e
    if too_long:
        raise OverLimit("number")

    def surrogates(v):
        if isinstance(v, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                raise NotJson("lone surrogate")
        elif isinstance(v, Obj):
            for k, x in v.pairs:
                surrogates(k)
                surrogates(x)
        elif isinstance(v, list):
            for x in v:
                surrogates(x)

    surrogates(value)
    if profile == "json_schema" and depth(value) > limits["max_depth"]:
        raise OverLimit("depth")
    return value


def tag_of(branches) -> str:
    """The smallest property of the first branch that every branch requires as a distinct
    string const."""
    for name in sorted(branches[0].get("properties", {})):
        values = []
        for b in branches:
            p = b.get("properties", {}).get(name, {})
            c = p.get("const", p["enum"][0] if len(p.get("enum", [])) == 1 else None)
            if name not in b.get("required", []) or not isinstance(c, str) or c in values:
                break
            values.append(c)
        else:
            return name
    raise ValueError("oneOf without a tag")


def resolve(root, schema):
    """A projection's `$ref` (only `#/$defs/...` are written) resolved."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    return schema


def json_type(inst) -> str:
    if isinstance(inst, bool):
        return "boolean"
    if inst is None:
        return "null"
    if isinstance(inst, (int, Decimal)):
        return "number"
    if isinstance(inst, str):
        return "string"
    return "array" if isinstance(inst, list) else "object"


def branch_for(root, branches, inst):
    """The branch of an `anyOf` a value's JSON type selects (the first-byte rule), if any."""
    for b in branches:
        b = resolve(root, b)
        t = b.get("type", "object" if "oneOf" in b else None)
        t = "number" if t == "integer" else t
        if t is None or t == json_type(inst):
            return b
    return None


def side_by_side(root, branches, inst):
    """The branches of an `anyOf` a value is read by side by side: several of its JSON type
    that are not a tagged union (objects without a common tag, arrays). None otherwise."""
    def kind(b):
        t = b.get("type", "object" if "oneOf" in b else None)
        return "number" if t == "integer" else t

    same = [b for b in (resolve(root, x) for x in branches) if kind(b) == json_type(inst)]
    if len(same) < 2:
        return None
    if json_type(inst) == "object" and all(b.get("type") == "object" for b in same):
        try:
            tag_of(same)
            return None
        except ValueError:
            pass
    return same


def branch_valid(root, branch, inst) -> bool:
    """Does jsonschema accept `inst` for one branch (under the projection's definitions)?"""
    schema = dict(branch)
    if "$defs" in root:
        schema["$defs"] = root["$defs"]
    return StrictValidator(schema).is_valid(inst)


def extra_errors(schema, inst, path, out: set, root=None) -> None:
    """Paths of the rules jsonschema does not check: duplicate keys and the tag-first rule."""
    root = schema if root is None else root
    schema = resolve(root, schema)
    if isinstance(inst, Obj) and inst.dup:
        out.add(pointer(path))
    if not isinstance(schema, dict):
        return
    if "anyOf" in schema:
        both = side_by_side(root, schema["anyOf"], inst)
        if both is not None:
            # Read side by side: valid when one branch takes it, jsonschema's rules and these.
            found = set()
            for b in both:
                mine = set()
                extra_errors(b, inst, path, mine, root)
                if not mine and branch_valid(root, b, inst):
                    return
                found |= mine
            out.add(pointer(path))
            out |= found
            return
        objects = [resolve(root, b) for b in schema["anyOf"] if resolve(root, b).get("type") == "object"]
        if isinstance(inst, Obj) and len(objects) > 1:
            # Several object branches: a tagged union, as oneOf.
            extra_errors({"oneOf": objects}, inst, path, out, root)
            return
        b = branch_for(root, schema["anyOf"], inst)
        if b is not None:
            extra_errors(b, inst, path, out, root)
        return
    if "oneOf" in schema:
        if isinstance(inst, Obj) and inst.pairs:
            tag = tag_of(schema["oneOf"])
            if inst.pairs[0][0] != tag:
                out.add(pointer(path))
            for b in schema["oneOf"]:
                b = resolve(root, b)
                if b["properties"][tag].get("const") == inst.get(tag):
                    extra_errors(b, inst, path, out, root)
        return
    if schema.get("type") == "object" and isinstance(inst, Obj):
        props = schema.get("properties", {})
        other = schema.get("additionalProperties", {})
        for k, v in inst.pairs:
            extra_errors(props[k] if k in props else other, v, path + [k], out, root)
    elif schema.get("type") == "array" and isinstance(inst, list):
        for i, v in enumerate(inst):
            extra_errors(schema["items"], v, path + [i], out, root)


def schema_errors(validator, schema, value) -> set:
    """The JSON Pointers jsonschema reports, where a `oneOf` contributes only the errors of the
    branch its tag selects (every branch's errors would make almost any path "agree"), or, with
    no branch selected, its tag and type errors."""
    out = set()

    def collect(errors):
        for e in errors:
            if e.validator == "anyOf":
                # The branch the value's first byte selects (a tagged union for objects), or,
                # read side by side, every branch of its type (the refusal names the last one
                # to refuse).
                out.add(pointer(e.absolute_path))
                inst, branches = e.instance, [resolve(schema, b) for b in e.validator_value]
                if side_by_side(schema, branches, inst) is not None:
                    collect(list(e.context))
                    continue
                objects = [b for b in branches if b.get("type") == "object"]
                if isinstance(inst, dict) and len(objects) > 1 and inst:
                    tag = tag_of(objects)
                    chosen = [
                        i for i, b in enumerate(branches)
                        if b.get("type") == "object" and b["properties"][tag].get("const") == inst.get(tag)
                    ]
                    if not chosen:
                        out.add(pointer(list(e.absolute_path) + [tag]))
                else:
                    b = branch_for(schema, branches, inst)
                    chosen = [branches.index(b)] if b is not None else []
                collect([c for c in e.context if chosen and c.relative_schema_path[0] == chosen[0]])
                continue
            if e.validator != "oneOf":
                out.add(pointer(e.absolute_path))
                continue
            inst, branches = e.instance, e.validator_value
            if not isinstance(inst, dict) or not inst:
                out.add(pointer(e.absolute_path))
                continue
            tag = tag_of(branches)
            chosen = [
                i for i, b in enumerate(branches) if b["properties"][tag].get("const") == inst.get(tag)
            ]
            if chosen:
                collect([c for c in e.context if c.relative_schema_path[0] == chosen[0]])
            else:
                out.add(pointer(list(e.absolute_path) + [tag]))

    collect(validator.iter_errors(value))
    extra_errors(schema, value, [], out)
    return out


def check_case(case, grammars) -> str | None:
    """None when the vector agrees with Python, else why not."""
    g = grammars[case["grammar"]]
    doc = b"".join(bytes.fromhex(h) for h in case["chunks_hex"])
    want = case["outcome"]
    try:
        value = parse(doc, g["limits"], g["profile"])
    except (NotJson, OverLimit) as e:
        if want != "refused":
            return f"not JSON for Python ({e}) but the vector says {want}"
        if case["class"] == "schema":
            # The vectors keep schema-class refusals to JSON texts, so the path is checkable.
            return f"not JSON for Python ({e}) but the vector's class is schema"
        return None
    if case.get("class") in ("syntax", "limit"):
        return f"the vector says {case['code']} ({case['class']}) but Python reads JSON"
    errors = schema_errors(g["validator"], g["schema"], value)
    if not errors:
        return None if want == "accepted" else f"Python accepts; the vector says {case.get('code')}"
    if want != "refused":
        return f"Python refuses at {sorted(errors)}; the vector says accepted"
    if case["class"] != "schema":
        return f"Python refuses by schema; the vector's class is {case['class']}"
    if case["path"] not in errors:
        return f"path {case['path']!r} not among Python's {sorted(errors)}"
    return None


def main(argv) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    passed = failed = 0

    def report(name, why):
        nonlocal passed, failed
        if why is None:
            passed += 1
            print(f"ok    {name}")
        else:
            failed += 1
            print(f"FAIL  {name}: {why}")

    for FILE in FILES:
        path = root / FILE
        print(f"structured checker: {path}")
        if not path.is_file():
            # Like the other verifiers' families: an absent file is said, not failed (`check` on
            # a directory without structured-output vectors).
            print(f"skip  {FILE}: absent")
            continue
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as e:
            report(FILE, f"unreadable: {e}")
            continue
        check_file(FILE, data, report)
    print(f"structured: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def check_file(FILE, data, report) -> None:
    grammars = {}
    for g in data["grammars"]:
        name = f"grammar {g['name']}"
        canonical = g["canonical_form"]
        digest = blake3.blake3(canonical.encode("utf-8")).hexdigest()
        form = json.loads(canonical, parse_float=Decimal)
        schema = form["schema"]
        why = None
        if digest != g["digest"]:
            why = f"digest {digest} != {g['digest']}"
        elif form["grammar"] != "jouleclaw-structured/1":
            why = f"grammar tag {form['grammar']!r}"
        elif form["limits"] != g["limits"]:
            why = "limits in the canonical form differ from the vector's"
        elif g["oracle_name"] != "structured:" + digest[:16]:
            why = f"oracle name {g['oracle_name']!r}"
        else:
            try:
                Draft202012Validator.check_schema(schema)
            except Exception as e:  # jsonschema.SchemaError
                why = f"projection is not a 2020-12 schema: {e}"
        report(name, why)
        grammars[g["name"]] = {
            "schema": schema,
            "limits": form["limits"],
            "validator": StrictValidator(schema),
            "profile": g.get("profile", "subset"),
        }
    for case in data["cases"]:
        report(f"case {case['grammar']}: {case['name']}", check_case(case, grammars))
    if not data["cases"]:
        report(FILE, "no cases")



if __name__ == "__main__":
    sys.exit(main(sys.argv))
