#!/usr/bin/env python3
"""Tool-call corpus from real generators, written at test time (never checked in).

Usage: tool_models.py OUT.json [--zod ZOD.json]

With --zod, the models `zod_models.mjs` wrote (Zod 4's `z.toJSONSchema()` and its parsed calls)
join the corpus too (source "zod"), through the same mutations and jsonschema.

Each tool model is a Pydantic v2 model; its schema is what `model_json_schema()` emits, and, for
every model OpenAI's SDK accepts, also what `openai.lib._pydantic.to_strict_json_schema` emits
(OpenAI strict function calling). Valid calls are `model_dump_json()` of real instances (and an
indented `json.dumps` of the same value). Mutated calls change one thing; for each, this script
computes independently where the first impossible byte is (`offset`) and the JSON Pointer a
refusal names (`path`), and `jsonschema` (Draft 2020-12, formats not asserted) gives the
whole-document outcome for the schema as generated. crates/jouleclaw-structured/tests/it/tool_corpus.rs
checks the grammar against all three.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import sys
import uuid
from typing import Annotated, Any, Literal, Optional, Union

import jsonschema
import pydantic
from pydantic import BaseModel, ConfigDict, Field
from jsonschema import Draft202012Validator

try:
    from openai.lib._pydantic import to_strict_json_schema
except Exception:  # the SDK is optional: without it only Pydantic's schemas are written
    to_strict_json_schema = None


class Unit(str, enum.Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Priority(int, enum.Enum):
    low = 1
    mid = 2
    high = 3


class GetWeather(BaseModel):
    city: str = Field(description="City name", max_length=64)
    unit: Unit = Unit.celsius
    days: int = Field(default=1, ge=1, le=14)


class GetTime(BaseModel):
    timezone: str
    format24: bool = True


class SetTimer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: int = Field(gt=0, le=86400)
    label: Optional[str] = None


class Say(BaseModel):
    text: str = Field(min_length=1, max_length=500)
    interruptible: bool = True
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)


class Address(BaseModel):
    street: str
    city: str
    postcode: Optional[str] = None
    country: str = "PT"


class CreateContact(BaseModel):
    name: str
    email: str = Field(json_schema_extra={"format": "email"})
    phone: Optional[str] = None
    address: Optional[Address] = None
    tags: list[str] = Field(default_factory=list, max_length=10)


class BookFlight(BaseModel):
    origin: str = Field(min_length=3, max_length=3)
    destination: str = Field(min_length=3, max_length=3)
    date: dt.date
    passengers: int = Field(default=1, ge=1, le=9)
    cabin: Literal["economy", "premium", "business", "first"] = "economy"


class SearchWeb(BaseModel):
    query: str = Field(max_length=200)
    max_results: int = Field(default=5, ge=1, le=50)
    safe: bool = True
    site: Optional[str] = None


class SendEmail(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: list[str] = Field(min_length=1)
    subject: str
    body: str
    cc: list[str] = []


class LineItem(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    unit_price: float = Field(ge=0)


class CreateOrder(BaseModel):
    customer_id: int = Field(ge=1)
    items: list[LineItem] = Field(min_length=1, max_length=20)
    note: Optional[str] = None


class TreeNode(BaseModel):
    label: str
    children: list["TreeNode"] = []


class MakeOutline(BaseModel):
    title: str
    root: TreeNode


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(default=9, ge=0, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


class AdoptPet(BaseModel):
    pet: Annotated[Union[Cat, Dog], Field(discriminator="kind")]
    owner: str


class CardPayment(BaseModel):
    card_number: str = Field(max_length=19)
    expiry: str


class BankPayment(BaseModel):
    iban: str = Field(max_length=34)
    holder: Optional[str] = None


class Pay(BaseModel):
    """`Union[A, B]` without a discriminator: an untagged anyOf of two object models."""
    amount: int = Field(gt=0)
    method: Union[CardPayment, BankPayment]


class SetThermostat(BaseModel):
    target: float = Field(ge=5, le=35, description="Degrees")
    mode: Literal["heat", "cool", "auto", "off"] = "auto"
    hold_minutes: Optional[int] = Field(default=None, ge=0, le=1440)


class PlayMusic(BaseModel):
    query: str
    shuffle: bool = False
    volume: int = Field(default=50, ge=0, le=100)
    device: Optional[Literal["kitchen", "bedroom", "living_room"]] = None


class Translate(BaseModel):
    text: str = Field(max_length=2000)
    source: Optional[str] = Field(default=None, min_length=2, max_length=5)
    target: str = Field(min_length=2, max_length=5)


class Reminder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    what: str
    when: dt.datetime
    priority: Priority = Priority.mid


class Coordinates(BaseModel):
    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class Navigate(BaseModel):
    destination: Union[str, Coordinates]
    avoid_tolls: bool = False
    mode: Literal["driving", "walking", "cycling", "transit"] = "driving"


class QueryDatabase(BaseModel):
    table: str
    columns: list[str] = Field(min_length=1)
    filters: dict[str, Union[str, int, float, bool, None]] = {}
    limit: int = Field(default=100, ge=1, le=10000)


class Transfer(BaseModel):
    from_account: str
    to_account: str
    amount_cents: int = Field(gt=0, le=2**64)
    memo: Optional[str] = Field(default=None, max_length=140)


class Ticket(BaseModel):
    id: uuid.UUID
    status: Literal["open", "pending", "closed"]


class UpdateTickets(BaseModel):
    tickets: list[Ticket] = Field(max_length=50)
    notify: bool = False


class Metadata(BaseModel):
    pass


class Annotate(BaseModel):
    document_id: str
    labels: dict[str, Any] = {}
    extra: Any = None


class ScheduleMeeting(BaseModel):
    title: str
    attendees: list[str] = Field(min_length=1, max_length=30)
    start: dt.datetime
    duration_minutes: int = Field(default=30, ge=5, le=480)
    location: Optional[Union[Literal["online"], Address]] = None


class Calculate(BaseModel):
    expression: str = Field(max_length=256)
    precision: int = Field(default=6, ge=0, le=20)


class ControlLights(BaseModel):
    room: Literal["kitchen", "bedroom", "living_room", "office"]
    on: bool
    brightness: Optional[int] = Field(default=None, ge=0, le=100)
    color: Optional[str] = None


class StockQuote(BaseModel):
    symbols: list[str] = Field(min_length=1, max_length=5)
    currency: str = "USD"


class RateLimit(BaseModel):
    per_second: float = Field(gt=0, lt=1000)
    burst: int = Field(ge=1)


class ConfigureService(BaseModel):
    name: str
    replicas: int = Field(ge=0, le=100)
    env: dict[str, str] = {}
    rate: Optional[RateLimit] = None
    ports: list[int] = []


class Feedback(BaseModel):
    rating: Literal[1, 2, 3, 4, 5]
    comment: Optional[str] = None


class Cancel(BaseModel):
    reason: Optional[str] = None


class FileOp(BaseModel):
    op: Literal["read", "write", "delete"]
    path: str
    content: Optional[str] = None
    overwrite: bool = False


class Step(BaseModel):
    action: str
    params: dict[str, Any] = {}


class RunPlan(BaseModel):
    steps: list[Step] = Field(min_length=1)
    dry_run: bool = True


class PatternTool(BaseModel):
    code: str = Field(pattern=r"^[A-Z]{3}$")


class SetTool(BaseModel):
    tags: set[str]


class TupleTool(BaseModel):
    point: tuple[int, int]


MODELS: list[tuple[type[BaseModel], list[dict]]] = [
    (GetWeather, [{"city": "Lisbon", "unit": "celsius", "days": 3}, {"city": "Zürich"}]),
    (GetTime, [{"timezone": "Europe/Lisbon"}]),
    (SetTimer, [{"seconds": 300, "label": "tea"}, {"seconds": 86400}]),
    (Say, [{"text": "Hello there", "confidence": 0.875}, {"text": "\u00e9t\u00e9 \u2603 \U0001f600"}]),
    (CreateContact, [{"name": "Ana", "email": "ana@example.com", "address": {"street": "Rua A", "city": "Porto"}, "tags": ["x", "y"]}]),
    (BookFlight, [{"origin": "LIS", "destination": "OPO", "date": "2026-12-24", "passengers": 2, "cabin": "business"}]),
    (SearchWeb, [{"query": "weather lisbon", "max_results": 3}]),
    (SendEmail, [{"to": ["a@b.c"], "subject": "Hi", "body": "Line 1\nLine \"2\""}]),
    (CreateOrder, [{"customer_id": 7, "items": [{"sku": "A1", "quantity": 2, "unit_price": 9.99}, {"sku": "B2", "quantity": 1, "unit_price": 0}]}]),
    (MakeOutline, [{"title": "Plan", "root": {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}}]),
    (AdoptPet, [{"pet": {"kind": "cat", "lives": 7}, "owner": "Rui"}, {"pet": {"kind": "dog"}, "owner": "Eva"}]),
    (Pay, [{"amount": 12, "method": {"card_number": "4111111111111111", "expiry": "12/29"}},
           {"amount": 3, "method": {"iban": "PT50000201231234567890154", "holder": "Ana"}}]),
    (SetThermostat, [{"target": 21.5, "mode": "heat", "hold_minutes": 60}]),
    (PlayMusic, [{"query": "fado", "volume": 30, "device": "kitchen"}]),
    (Translate, [{"text": "bom dia", "source": "pt", "target": "en"}]),
    (Reminder, [{"what": "call mum", "when": "2026-12-01T18:00:00Z", "priority": 3}]),
    (Navigate, [{"destination": "Porto"}, {"destination": {"lat": 38.7, "lon": -9.14}, "mode": "walking"}]),
    (QueryDatabase, [{"table": "users", "columns": ["id", "name"], "filters": {"active": True, "age": 30, "name": None}}]),
    (Transfer, [{"from_account": "A", "to_account": "B", "amount_cents": 18446744073709551615}]),
    (UpdateTickets, [{"tickets": [{"id": "12345678-1234-5678-1234-567812345678", "status": "closed"}]}]),
    (Annotate, [{"document_id": "d1", "labels": {"a": [1, {"b": None}]}, "extra": {"free": "form"}}]),
    (ScheduleMeeting, [{"title": "Sync", "attendees": ["a", "b"], "start": "2026-12-02T10:00:00Z", "location": "online"}, {"title": "Visit", "attendees": ["c"], "start": "2026-12-02T10:00:00Z", "location": {"street": "Rua B", "city": "Braga"}}]),
    (Calculate, [{"expression": "2*(3+4)", "precision": 2}]),
    (ControlLights, [{"room": "office", "on": True, "brightness": 80}]),
    (StockQuote, [{"symbols": ["AAPL", "MSFT"]}]),
    (ConfigureService, [{"name": "api", "replicas": 3, "env": {"MODE": "prod"}, "rate": {"per_second": 12.5, "burst": 20}, "ports": [80, 443]}]),
    (Feedback, [{"rating": 5, "comment": "great"}]),
    (Cancel, [{}, {"reason": "changed my mind"}]),
    (FileOp, [{"op": "write", "path": "/tmp/x", "content": "data", "overwrite": True}]),
    (RunPlan, [{"steps": [{"action": "open", "params": {"url": "https://example.com"}}, {"action": "click"}]}]),
    (Metadata, [{}]),
    (PatternTool, [{"code": "ABC"}]),
    (SetTool, [{"tags": ["a"]}]),
    (TupleTool, [{"point": [1, 2]}]),
]


def compact(v) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def ptr(parts) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(schema, s):
    while "$ref" in s:
        target = schema
        for seg in s["$ref"].lstrip("#/").split("/"):
            if seg:
                target = target[seg]
        s = target
    if "allOf" in s and len(s["allOf"]) == 1:
        return resolve(schema, s["allOf"][0])
    return s


def branches(schema, s):
    """The schemas a value may match (anyOf/oneOf/type lists flattened), resolved."""
    s = resolve(schema, s)
    for k in ("anyOf", "oneOf"):
        if k in s:
            out = []
            for b in s[k]:
                out.extend(branches(schema, b))
            return out
    t = s.get("type")
    if isinstance(t, list):
        return [dict(s, type=x) for x in t]
    return [s]


def json_type_ok(s, first: str) -> bool:
    """Can a value of schema s start with the byte class of `first`?"""
    if s == {} or s is True:
        return True
    t = s.get("type")
    if t is None:
        if "const" in s or "enum" in s:
            vals = s.get("enum", [s.get("const")])
            return any(json_class(v) == first for v in vals)
        return True
    return {"object": "o", "array": "a", "string": "s", "integer": "n", "number": "n",
            "boolean": "b", "null": "z"}[t] == first


def json_class(v) -> str:
    if isinstance(v, bool):
        return "b"
    if v is None:
        return "z"
    if isinstance(v, (int, float)):
        return "n"
    if isinstance(v, str):
        return "s"
    if isinstance(v, list):
        return "a"
    return "o"


MARK = "\u0001MARK\u0001"


def place(obj, path, new):
    """obj with the value at path replaced; `new` may be MARK."""
    obj = json.loads(json.dumps(obj))
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = new
    return obj


def offset_of_value(obj, path):
    """Byte offset (UTF-8) of the value at path in compact(obj)."""
    marked = compact(place(obj, path, MARK))
    i = marked.index(json.dumps(MARK, ensure_ascii=False))
    return len(marked[:i].encode("utf-8"))


def substitute(obj, path, raw: str) -> str:
    marked = compact(place(obj, path, MARK))
    return marked.replace(json.dumps(MARK, ensure_ascii=False), raw)


def int_reject_offset(raw: str, lo, hi) -> int:
    """Index in `raw` (an integer token) of the first byte after which no integer in [lo, hi]
    has these leading characters."""
    neg = raw.startswith("-")
    digits = raw[1:] if neg else raw
    lo = -(2**53 - 1) if lo is None else lo
    hi = (2**53 - 1) if hi is None else hi

    def possible(k):
        p = digits[:k]
        if k == 0:
            return (lo <= 0) if neg else True
        if p == "0":
            return lo <= 0 <= hi
        m = int(p)
        span = 1
        while True:
            a, b = m * span, m * span + span - 1
            if neg:
                a, b = -b, -a
            if neg and a > hi:
                # more digits only go lower
                pass
            if b >= lo and a <= hi:
                return True
            if (not neg and a > hi) or (neg and b < lo):
                return False
            span *= 10

    if neg and not possible(0):
        return 0
    for k in range(1, len(digits) + 1):
        if not possible(k):
            return k + (1 if neg else 0) - 1
    return len(raw)  # decided at the byte after the token


def int_bounds(s):
    lo = s.get("minimum")
    if "exclusiveMinimum" in s:
        x = s["exclusiveMinimum"]
        lo = x + 1 if lo is None else max(lo, x + 1)
    hi = s.get("maximum")
    if "exclusiveMaximum" in s:
        x = s["exclusiveMaximum"]
        hi = x - 1 if hi is None else min(hi, x - 1)
    return lo, hi


def mutations(schema, value, closed_root: bool):
    """(name, doc, offset, path) of mutated calls with their first impossible byte."""
    out = []
    props = resolve(schema, schema).get("properties", {})
    required = resolve(schema, schema).get("required", [])
    doc = compact(value)
    # A truncated call.
    if len(doc) > 2:
        cut = doc.encode("utf-8")[: len(doc.encode("utf-8")) // 2]
        try:
            cut.decode("utf-8")
            out.append(("truncated", cut.decode("utf-8"), len(cut), ""))
        except UnicodeDecodeError:
            pass
    # An undeclared property.
    extra = json.loads(doc)
    extra["~extra"] = 1
    if closed_root:
        # The document gains `,"~extra":1` before its `}`: with every declared property
        # present the `,` (or, in `{}`, the key's `"`) is impossible already; else the `~`.
        n = len(doc.encode("utf-8"))
        full = all(k in value for k in props)
        at = (1 if full else 2) if len(value) == 0 else (n - 1 if full else n + 1)
        out.append(("undeclared property", compact(extra), at, ""))
    else:
        out.append(("undeclared property", compact(extra), None, None))
    # A required property left out: impossible at the object's `}`.
    for name in required:
        if name in value:
            v = {k: x for k, x in value.items() if k != name}
            d = compact(v)
            out.append((f"without {name}", d, len(d.encode("utf-8")) - 1, ""))
            break
    for name, v in value.items():
        if name not in props:
            continue
        bs = branches(schema, props[name])
        path = [name]
        at = offset_of_value(value, path)
        # A value of a JSON type no branch starts with: refused at its first byte.
        for raw, cls in (("12345", "n"), ('"text"', "s"), ("true", "b"), ("null", "z"), ("[1]", "a"), ('{"a":1}', "o")):
            if not any(json_type_ok(b, cls) for b in bs):
                out.append((f"{name}: {raw} of another type", substitute(value, path, raw), at, ptr(path)))
                break
        if len(bs) > 1 and all(b.get("type") == "object" and b.get("required") for b in bs):
            # Objects read side by side (or a tagged union): `{}` misses every branch's
            # required members; all refuse at its `}`.
            out.append((f"{name}: an empty object", substitute(value, path, "{}"), at + 1, ptr(path)))
        if len(bs) == 1 and bs[0].get("type") == "string" and "pattern" in bs[0]:
            # Where a pattern makes a string impossible depends on the expression: only the
            # outcome is compared (jsonschema's).
            out.append((f"{name}: not matching its pattern", substitute(value, path, '"~"'), None, None))
        if len(bs) == 1:
            b = bs[0]
            if b.get("type") == "string" and "enum" in b or "const" in b and isinstance(b.get("const"), str):
                out.append((f"{name}: not a member", substitute(value, path, '"~nope"'), at + 1, ptr(path)))
            elif b.get("type") == "string" and "maxLength" in b and "pattern" not in b:
                n = b["maxLength"]
                out.append((f"{name}: too long", substitute(value, path, json.dumps("x" * (n + 1))), at + 1 + n, ptr(path)))
            elif b.get("type") == "integer" and ("maximum" in b or "exclusiveMaximum" in b):
                lo, hi = int_bounds(b)
                raw = str(hi + 1)
                out.append((f"{name}: above maximum", substitute(value, path, raw), at + int_reject_offset(raw, lo, hi), ptr(path)))
            elif b.get("type") == "integer" and ("minimum" in b or "exclusiveMinimum" in b):
                lo, hi = int_bounds(b)
                raw = str(lo - 1)
                out.append((f"{name}: below minimum", substitute(value, path, raw), at + int_reject_offset(raw, lo, hi), ptr(path)))
            elif b.get("type") == "number" and "maximum" in b:
                raw = repr(float(b["maximum"]) + 0.5)
                out.append((f"{name}: above maximum", substitute(value, path, raw), at + len(raw), ptr(path)))
    return out


def add_model(models, name, source, schema, values):
    """One schema and its valid call values: compact and indented calls, their mutations, and
    jsonschema's outcome for each."""
    validator = Draft202012Validator(schema)
    cases = []
    closed = resolve(schema, schema).get("additionalProperties") is False
    for i, value in enumerate(values):
        dumped = compact(value)
        for cname, doc in ((f"call {i}", dumped), (f"call {i} indented", json.dumps(value, indent=2, ensure_ascii=False))):
            cases.append({"name": cname, "doc": doc, "valid": True, "offset": None, "path": None})
        for cname, doc, offset, path in mutations(schema, value, closed):
            cases.append({"name": f"call {i}: {cname}", "doc": doc, "valid": None, "offset": offset, "path": path})
    for c in cases:
        try:
            ok = validator.is_valid(json.loads(c["doc"]))
        except ValueError:
            ok = False
        if c["valid"] is True and not ok:
            raise SystemExit(f"{name}/{source}: {c['name']} is not valid for jsonschema")
        c["jsonschema_valid"] = ok
    models.append({
        "name": f"{name}/{source}",
        "source": source,
        "schema": schema,
        "schema_text": json.dumps(schema, ensure_ascii=False),
        "cases": cases,
    })


def main(argv) -> int:
    out_path = argv[1]
    models = []
    if len(argv) > 3 and argv[2] == "--zod":
        with open(argv[3], encoding="utf-8") as f:
            for m in json.load(f)["models"]:
                add_model(models, m["name"], "zod", m["schema"], m["calls"])
    for model, calls in MODELS:
        variants = [("pydantic", model.model_json_schema())]
        if to_strict_json_schema is not None:
            try:
                variants.append(("openai-strict", to_strict_json_schema(model)))
            except Exception as e:  # the SDK refuses some models (e.g. dict fields)
                print(f"openai strict: {model.__name__} not accepted: {e}", file=sys.stderr)
        for source, schema in variants:
            validator = Draft202012Validator(schema)
            cases = []
            closed = resolve(schema, schema).get("additionalProperties") is False
            for i, data in enumerate(calls):
                inst = model.model_validate(data)
                dumped = inst.model_dump_json()
                value = json.loads(dumped)
                if source == "openai-strict":
                    # Strict mode: every property is present (null where optional).
                    props = resolve(schema, schema).get("properties", {})
                    value = {k: value.get(k) for k in props}
                    dumped = compact(value)
                for name, doc in ((f"call {i}", dumped), (f"call {i} indented", json.dumps(value, indent=2, ensure_ascii=False))):
                    cases.append({"name": name, "doc": doc, "valid": True, "offset": None, "path": None})
                for name, doc, offset, path in mutations(schema, value, closed):
                    cases.append({"name": f"call {i}: {name}", "doc": doc, "valid": None, "offset": offset, "path": path})
            for c in cases:
                try:
                    v = json.loads(c["doc"])
                    ok = validator.is_valid(v)
                except ValueError:
                    ok = False
                if c["valid"] is True and not ok:
                    raise SystemExit(f"{model.__name__}/{source}: {c['name']} is not valid for jsonschema")
                c["jsonschema_valid"] = ok
            models.append({
                "name": f"{model.__name__}/{source}",
                "source": source,
                "schema": schema,
                # The exact text (json.dumps keeps integers of any size, which a JSON reader
                # without arbitrary precision would round).
                "schema_text": json.dumps(schema, ensure_ascii=False),
                "cases": cases,
            })
    doc = {
        "generators": {
            "pydantic": pydantic.VERSION,
            "jsonschema": __import__("importlib.metadata").metadata.version("jsonschema"),
            "openai": (__import__("importlib.metadata").metadata.version("openai") if to_strict_json_schema else None),
        },
        "models": models,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
    doc["generators"]["zod"] = "4" if len(argv) > 3 else None
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
    print(f"tool corpus: {len(models)} schemas, {sum(len(m['cases']) for m in models)} calls -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
