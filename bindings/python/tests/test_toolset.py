"""Toolsets from Python (spec/STRUCTURED-OUTPUT.md, "Toolsets"): a whole toolset compiled into
one grammar, a call routed by its name as its bytes arrive, its arguments judged by the named
tool's schema, every chunking agreeing with the whole call; refused tools named with their code;
typed exceptions for bad input; a Pipeline that judges the tool channel with it.

The toolsets are hand-written files in tests/toolsets: an OpenAI ``tools`` array
(openai_tools.json, one tool whose schema the compiler refuses) and an MCP ``tools/list``
JSON-RPC response in the shape MCP SDKs write (mcp_tools_list.json, draft-07 ``$schema`` lines
as zod-to-json-schema writes them)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import jouleclaw
from jouleclaw import (
    LLM,
    CallVerdict,
    ConfigError,
    Pipeline,
    RefusedTool,
    SigningKey,
    ToolCallValidator,
    Toolset,
    ToolsetError,
)
from conftest import MCP_TOOLS as MCP
from conftest import OPENAI_TOOLS as OPENAI

MS = 1_000_000


def fields(v: CallVerdict):
    return (v.kind, v.code, v.offset, v.path)


def streamed(toolset: Toolset, call: bytes, cuts) -> CallVerdict:
    """`call` pushed in the chunks `cuts` gives, then finished; a fail stops the feed."""
    v = toolset.validator()
    start = 0
    for end in [*cuts, len(call)]:
        got = v.push(call[start:end])
        if got.kind == "fail":
            return got
        assert got.kind == "need_more"
        start = end
    return v.finish()


def every_chunking(toolset: Toolset, call: bytes):
    """The verdicts of the whole call, each split into two chunks, a few splits into three,
    and byte at a time."""
    out = [toolset.validate(call), streamed(toolset, call, [])]
    out += [streamed(toolset, call, [i]) for i in range(1, len(call))]
    out += [streamed(toolset, call, [i, j]) for i in range(1, len(call), 7)
            for j in range(i + 1, len(call), 5)]
    out.append(streamed(toolset, call, list(range(1, len(call)))))
    return out


def judged(toolset: Toolset, call: bytes):
    """The one verdict every chunking of `call` gives (asserting they agree)."""
    verdicts = {fields(v) for v in every_chunking(toolset, call)}
    assert len(verdicts) == 1, verdicts
    return verdicts.pop()


@pytest.fixture(scope="module")
def openai() -> Toolset:
    return Toolset(OPENAI)


@pytest.fixture(scope="module")
def mcp() -> Toolset:
    return Toolset(MCP)


# ------------------------------------------------------------------------------------------
# Compiling
# ------------------------------------------------------------------------------------------

def test_both_shapes_compile_to_one_grammar_naming_the_tools(openai, mcp):
    assert openai.tools == ["get_weather", "get_time", "set_timer", "order"]
    assert mcp.tools == ["create_entities", "read_graph", "search_nodes"]
    assert mcp.refused == []
    for t in (openai, mcp):
        assert len(t.grammar_digest) == 64 and int(t.grammar_digest, 16) >= 0
        assert t.digest_prefix == t.grammar_digest[:16]
        assert t.oracle_name == "structured:" + t.digest_prefix
    assert openai.grammar_digest != mcp.grammar_digest
    # The projection handed to a provider is the call's tagged union.
    projection = json.loads(openai.projection)
    assert [b["properties"]["name"]["const"] for b in projection["oneOf"]] == openai.tools


def test_a_tool_the_compiler_refuses_is_named_with_its_code_and_left_out(openai):
    [refused] = openai.refused
    assert isinstance(refused, RefusedTool)
    assert (refused.name, refused.code) == ("lookahead", "schema_unsupported_keyword")
    assert "pattern" in refused.message
    assert "lookahead" not in openai.tools
    # A call to it is a call to an unknown tool.
    call = b'{"name":"lookahead","arguments":{}}'
    assert judged(openai, call) == ("fail", "unknown_tag", call.index(b"lookahead"), "/name")
    # Its neighbour: without the refused tool, nothing is refused and the digest is the same
    # (the refused tool is not in the grammar).
    kept = [t for t in json.loads(OPENAI) if t["function"]["name"] != "lookahead"]
    alone = Toolset(json.dumps(kept))
    assert alone.refused == [] and alone.tools == openai.tools
    assert alone.grammar_digest == openai.grammar_digest


def test_strict_refuses_the_toolset_naming_the_tool_and_its_code():
    with pytest.raises(ToolsetError) as e:
        Toolset(OPENAI, strict=True)
    assert e.value.code == "toolset_tool_refused"
    assert (e.value.tool, e.value.tool_code) == ("lookahead", "schema_unsupported_keyword")
    assert isinstance(e.value, jouleclaw.JouleclawError)
    # A toolset every tool of which compiles is the same strict or not.
    assert Toolset(MCP, strict=True).grammar_digest == Toolset(MCP).grammar_digest


def test_the_digest_covers_every_tool_and_not_the_envelope_or_whitespace(mcp):
    doc = json.loads(MCP)
    bare = json.dumps(doc["result"], indent=None, separators=(",", ":"))
    assert Toolset(bare).grammar_digest == mcp.grammar_digest
    assert Toolset(bare.encode()).grammar_digest == mcp.grammar_digest
    changed = json.loads(bare)
    changed["tools"][2]["inputSchema"]["properties"]["query"]["maxLength"] = 100
    assert Toolset(json.dumps(changed)).grammar_digest != mcp.grammar_digest
    fewer = json.loads(bare)
    del fewer["tools"][1]
    assert Toolset(json.dumps(fewer)).grammar_digest != mcp.grammar_digest


@pytest.mark.parametrize(
    "text, code",
    [
        ("not json", "schema_not_json"),
        (b'{"tools": [', "schema_not_json"),
        ("{}", "toolset_invalid"),
        ("42", "toolset_invalid"),
        ("[]", "toolset_invalid"),
        ('[{"type": "function", "function": {"description": "no name"}}]', "toolset_invalid"),
        ('{"tools": [{"name": "a"}, {"name": "a"}]}', "toolset_invalid"),
        ('[{"type": "function", "function": {"name": "x", "parameters": {"type": "object", '
         '"properties": {"q": {"type": "string", "pattern": "(?=a)"}}}}}]', "toolset_invalid"),
        (json.dumps({"tools": [{"name": f"t{i}"} for i in range(257)]}), "schema_over_limit"),
    ],
)
def test_a_bad_toolset_raises_toolset_error_with_its_code(text, code):
    with pytest.raises(ToolsetError) as e:
        Toolset(text)
    assert e.value.code == code
    assert str(e.value).startswith(code + ":")


def test_a_toolset_at_the_limit_of_tools_compiles():
    # The neighbour of the 257-tool refusal above.
    t = Toolset(json.dumps({"tools": [{"name": f"t{i}"} for i in range(256)]}))
    assert len(t.tools) == 256


@pytest.mark.parametrize("bad", [5, None, ["tools"], {"tools": []}])
def test_a_toolset_that_is_not_text_is_a_type_error(bad):
    with pytest.raises(TypeError):
        Toolset(bad)


def test_a_call_that_is_not_bytes_or_str_is_a_type_error(openai):
    with pytest.raises(TypeError):
        openai.validate(5)
    with pytest.raises(TypeError):
        openai.validator().push([1, 2])


# ------------------------------------------------------------------------------------------
# Judging calls
# ------------------------------------------------------------------------------------------

VALID_OPENAI = [
    b'{"name":"get_weather","arguments":{"city":"Lisbon"}}',
    b'{"name": "get_weather", "arguments": {"unit": "celsius", "city": "Porto"}}',
    b'{"name":"get_time","arguments":{"zone":"Europe/Lisbon"}}',
    b'{"name":"set_timer","arguments":{"seconds":86400,"label":"bread"}}',
    b'{"name":"order","arguments":{"items":[{"sku":"a-1","qty":2},{"qty":99,"sku":"b"}]}}',
    '{"name":"get_weather","arguments":{"city":"S\u00e3o Paulo"}}'.encode(),
]

VALID_MCP = [
    b'{"name":"read_graph","arguments":{}}',
    b'{"name":"search_nodes","arguments":{"query":"lighthouse"}}',
    b'{"name":"create_entities","arguments":{"entities":[{"name":"Ada","entityType":"person",'
    b'"observations":["wrote the first program"]}]}}',
]


@pytest.mark.parametrize("call", VALID_OPENAI)
def test_a_valid_openai_call_passes_in_every_chunking(openai, call):
    assert judged(openai, call) == ("pass", None, None, None)


@pytest.mark.parametrize("call", VALID_MCP)
def test_a_valid_mcp_call_passes_in_every_chunking(mcp, call):
    assert judged(mcp, call) == ("pass", None, None, None)


@pytest.mark.parametrize(
    "call, offset",
    [
        # "get_w" still leads to get_weather; its "x" leaves every name.
        (b'{"name":"get_wx","arguments":{}}', 14),
        # "get_" is shared by two tools; "z" leaves both.
        (b'{"name":"get_z","arguments":{}}', 13),
        # The first byte of the name already leaves every tool.
        (b'{"name":"weather","arguments":{}}', 9),
        # "get_time" is whole; no name continues it with "_".
        (b'{"name":"get_time_","arguments":{}}', 17),
        # A prefix of names is refused at its closing quote.
        (b'{"name":"get","arguments":{}}', 12),
    ],
)
def test_an_unknown_tool_name_fails_at_the_byte_that_leaves_every_name(openai, call, offset):
    assert judged(openai, call) == ("fail", "unknown_tag", offset, "/name")


def test_a_name_that_a_valid_one_continues_is_not_refused_early(openai):
    # The neighbour of the unknown-name rule: every prefix of a real name is need_more.
    v = openai.validator()
    call = b'{"name":"get_weather","arguments":{"city":"x"}}'
    for i in range(len(call)):
        assert v.push(call[i : i + 1]).kind == "need_more", i
    assert v.finish().kind == "pass"


@pytest.mark.parametrize(
    "call, at, code, path",
    [
        (b'{"name":"set_timer","arguments":{"seconds":90000}}', b'0}', "above_maximum",
         "/arguments/seconds"),
        (b'{"name":"set_timer","arguments":{"seconds":0}}', b"0}", "below_minimum",
         "/arguments/seconds"),
        (b'{"name":"set_timer","arguments":{"seconds":1.5}}', b".", "wrong_type",
         "/arguments/seconds"),
        (b'{"name":"get_weather","arguments":{"city":"Lisbon","zone":"x"}}', b'zone', "unknown_property",
         "/arguments"),
        (b'{"name":"get_weather","arguments":{"unit":"kelvin","city":"x"}}', b"k", "value_not_allowed",
         "/arguments/unit"),
        (b'{"name":"get_weather","arguments":{"unit":"celsius"}}', b"}}", "missing_property",
         "/arguments"),
        (b'{"name":"order","arguments":{"items":[{"sku":"a","qty":1},{"sku":"b","qty":100}]}}',
         b"100", "above_maximum", "/arguments/items/1/qty"),
        (b'{"name":"get_time","arguments":{"zone":7}}', b"7", "wrong_type", "/arguments/zone"),
        (b'{"arguments":{},"name":"get_time"}', b"a", "tag_not_first", ""),
        (b'{"name":"get_time"}', b"}", "missing_property", ""),
        (b'{"name":"get_time","arguments":{"zone":"x"},"id":1}', b"id", "unknown_property", ""),
    ],
)
def test_off_schema_arguments_fail_with_the_path_in_every_chunking(openai, call, at, code, path):
    offset = call.index(at)
    if code == "above_maximum" and at == b"0}":
        offset = call.index(at)  # the last 0 of 90000: no integer with these digits fits
    if code == "above_maximum" and at == b"100":
        offset = call.index(at) + 2  # "10" may still be 10; "100" is not
    if code == "unknown_property" and at == b"zone":
        offset = call.index(at)  # "z" starts no declared key left
    if code == "unknown_property" and at == b"id":
        offset = call.index(b',"id"')  # the "," once every member is present
    if code == "missing_property" and at == b"}}":
        offset = call.index(at)
    assert judged(openai, call) == ("fail", code, offset, path)


def test_an_off_schema_mcp_call_fails_with_its_path(mcp):
    call = (b'{"name":"create_entities","arguments":{"entities":[{"name":"Ada",'
            b'"entityType":"person","observations":[1]}]}}')
    assert judged(mcp, call) == (
        "fail", "wrong_type", call.index(b"[1]") + 1, "/arguments/entities/0/observations/0"
    )
    call = b'{"name":"read_graph","arguments":{"x":1}}'
    assert judged(mcp, call) == ("fail", "unknown_property", call.index(b'"x"') , "/arguments")


def test_the_validator_is_sticky_finishes_once_and_reports_where_it_stands(openai):
    v = openai.validator()
    assert isinstance(v, ToolCallValidator)
    assert fields(v.status) == ("need_more", None, None, None)
    assert v.push(b'{"name":"get_time","arguments":{"zone":"UTC"}').kind == "need_more"
    assert v.bytes_consumed == 45
    # Truncated: finish refuses at the bytes consumed, where the machine stood (inside
    # the arguments).
    assert fields(v.finish()) == ("fail", "truncated", 45, "/arguments")
    # Sticky: the same refusal from push, finish and status.
    assert fields(v.push(b"}")) == ("fail", "truncated", 45, "/arguments")
    assert fields(v.status) == ("fail", "truncated", 45, "/arguments")
    assert v.status.refusal_class == "syntax"

    ok = openai.validator()
    assert ok.push(b'{"name":"get_time","arguments":{"zone":"UTC"}}').kind == "need_more"
    allowed, can_finish = ok.expected_next()
    assert can_finish and b"}" not in allowed and b" " in allowed
    assert ok.finish().kind == "pass" and ok.finish().kind == "pass"
    # A push after acceptance is refused with after_finish; the acceptance stands.
    late = ok.push(b" ")
    assert (late.kind, late.code, late.refusal_class) == ("fail", "after_finish", "control")
    assert ok.status.kind == "pass"

    c = openai.validator()
    c.push(b'{"name":"get')
    c.cancel("the user hung up")
    assert fields(c.status)[:2] == ("fail", "cancelled")
    assert fields(openai.validator().finish()) == ("fail", "empty_document", 0, "")


def test_verdicts_compare_by_value(openai):
    a = openai.validate(b'{"name":"get_wx","arguments":{}}')
    b = openai.validate(b'{"name":"get_wx","arguments":{}}')
    c = openai.validate(b'{"name":"get_z","arguments":{}}')
    assert a == b and hash(a) == hash(b) and a != c
    assert a.refusal_class == "schema"
    assert repr(a) == 'CallVerdict(fail, code="unknown_tag", offset=14, path="/name")'
    assert str(openai.validate(VALID_OPENAI[0])) == "pass"


# ------------------------------------------------------------------------------------------
# A pipeline judging a tool channel
# ------------------------------------------------------------------------------------------

def call_ticks(p: Pipeline, t_ms: int, call: bytes, chunk: int = 7):
    for i in range(0, len(call), chunk):
        p.push(t_ms * MS + i, LLM, "text", payload=call[i : i + chunk])
    return p.push(t_ms * MS + len(call), LLM, "marker", marker="end")


def test_a_pipeline_with_a_toolset_judges_the_llm_channels_calls(openai, tmp_path, verify_outputs):
    out = tmp_path / "run"
    key = SigningKey.rfc8032_test_key()
    p = Pipeline("did:example:s", "call-1", signing_key=key, toolset=openai, out_dir=str(out))
    call_ticks(p, 10, VALID_OPENAI[0])
    bad = b'{"name":"set_timer","arguments":{"seconds":90000}}'
    outcomes = [p.push(210 * MS + i, LLM, "text", payload=bad[i : i + 7])
                for i in range(0, len(bad), 7)]
    outcomes.append(p.push(210 * MS + 100, LLM, "marker", marker="end"))
    windows = [o.closed for o in outcomes if o.closed is not None]
    windows.append(p.close_window())
    p.finish()
    assert [w.window_id for w in windows] == [0, 1]
    assert [w.verdict.kind for w in windows] == ["pass", "fail"]
    assert openai.oracle_name in windows[0].verdict.chain
    assert windows[1].verdict.oracle == openai.oracle_name
    off = bad.index(b"0}")
    assert windows[1].verdict.reason == (
        f'turn 2: above_maximum at byte {off}, path "/arguments/seconds"'
    )
    # The early verdict on the tick that made the call impossible (the one holding byte off).
    early = [(i, o.early.kind) for i, o in enumerate(outcomes) if o.early is not None]
    assert early == [(off // 7, "fail")]
    receipts = verify_outputs(out, windows)
    assert [r["verdict"]["kind"] for r in receipts] == ["pass", "fail"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm_schema"] == {"file": "python", "grammar_digest": openai.grammar_digest}
    assert openai.oracle_name in summary["oracle"]


def test_a_pipeline_without_a_toolset_does_not_judge_calls(tmp_path):
    # The neighbour: the same off-schema call passes where no toolset judges it.
    out = tmp_path / "run"
    p = Pipeline("did:example:s", "call-1", out_dir=str(out))
    call_ticks(p, 10, b'{"name":"set_timer","arguments":{"seconds":90000}}')
    w = p.close_window()
    p.finish()
    assert w.verdict.kind == "pass"
    assert not any(c.startswith("structured:") for c in w.verdict.chain)
    assert json.loads((out / "summary.json").read_text())["llm_schema"] is None


def test_a_tool_channel_must_be_a_text_channel_and_needs_a_toolset(openai):
    with pytest.raises(ConfigError) as e:
        Pipeline("s", "c", tool_channel=LLM)
    assert e.value.code == "bad_tool_channel"
    for channel in (1, 3, 0, 99):  # audio, audio, markers, absent
        with pytest.raises(ConfigError) as e:
            Pipeline("s", "c", toolset=openai, tool_channel=channel)
        assert e.value.code == "bad_tool_channel"
    # Text channels are accepted.
    Pipeline("s", "c", toolset=openai, tool_channel=LLM)
    Pipeline("s", "c", toolset=openai, tool_channel=jouleclaw.SUBSTRATE)


# ------------------------------------------------------------------------------------------
# A real MCP server's tool list
# ------------------------------------------------------------------------------------------

MEMORY = "@modelcontextprotocol/server-memory"


@pytest.fixture(scope="module")
def memory_server() -> Toolset:
    """The tools/list result of the real @modelcontextprotocol/server-memory, as
    crates/jouleclaw-structured/tests/corpus/mcp_tools.mjs wrote it (started over stdio
    without network, asked only tools/list) to the file $JOULECLAW_MCP_TOOLS names
    (.ci/suites/11-python.sh provisions it)."""
    path = os.environ.get("JOULECLAW_MCP_TOOLS")
    if not path:
        pytest.fail(
            "a real MCP server's tool list is needed: npm install --ignore-scripts "
            f"{MEMORY} into DIR, then node crates/jouleclaw-structured/tests/corpus/"
            f"mcp_tools.mjs DIR/node_modules {MEMORY} OUT.json and set JOULECLAW_MCP_TOOLS=OUT.json"
        )
    listed = json.loads(Path(path).read_text())[MEMORY]
    return Toolset(json.dumps(listed))


def test_a_real_mcp_servers_tools_all_compile_into_one_grammar(memory_server):
    assert memory_server.refused == []
    assert {"create_entities", "read_graph", "search_nodes", "open_nodes",
            "delete_entities", "delete_observations", "delete_relations"} <= set(memory_server.tools)


@pytest.mark.parametrize("call", [
    b'{"name":"read_graph","arguments":{}}',
    b'{"name":"search_nodes","arguments":{"query":"lighthouse keeper"}}',
    b'{"name":"open_nodes","arguments":{"names":["Ada","Grace"]}}',
    b'{"name":"delete_entities","arguments":{"entityNames":[]}}',
    b'{"name":"create_entities","arguments":{"entities":[{"name":"Ada","entityType":"person",'
    b'"observations":["wrote the first program"]}]}}',
])
def test_valid_calls_to_a_real_mcp_server_pass_in_every_chunking(memory_server, call):
    assert judged(memory_server, call) == ("pass", None, None, None)


@pytest.mark.parametrize("call, offset, code, path", [
    # "delete_" leads to three tools; "x" leaves them all.
    (b'{"name":"delete_x","arguments":{}}', 16, "unknown_tag", "/name"),
    (b'{"name":"write_graph","arguments":{}}', 9, "unknown_tag", "/name"),
    (b'{"name":"search_nodes","arguments":{"query":5}}', 44, "wrong_type", "/arguments/query"),
    (b'{"name":"open_nodes","arguments":{"names":["a",2]}}', 47, "wrong_type",
     "/arguments/names/1"),
    (b'{"name":"create_entities","arguments":{"entities":[{"name":"Ada","entityType":"p"}]}}',
     81, "missing_property", "/arguments/entities/0"),
    (b'{"name":"search_nodes","arguments":{}}', 36, "missing_property", "/arguments"),
])
def test_unknown_names_and_off_schema_calls_to_a_real_mcp_server_fail_in_every_chunking(
    memory_server, call, offset, code, path
):
    assert judged(memory_server, call) == ("fail", code, offset, path)
