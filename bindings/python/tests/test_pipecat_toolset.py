"""ReceiptObserver with a toolset, on a real Pipecat pipeline (scripted_call.py): the tool calls
the LLM service announces (``FunctionCallsStartedFrame``) are judged by the pipeline's
structured-output oracle on their own channel, as ``jouleclaw run --llm-tools`` judges the LLM
channel; the LLM's spoken text is not a call."""

from __future__ import annotations

import asyncio
import json

import pytest
from pipecat.frames.frames import FunctionCallFromLLM, FunctionCallsStartedFrame

from conftest import OPENAI_TOOLS, verify_dir_everywhere
from scripted_call import mic, question, run_call, said, tool_result
from jouleclaw import LLM, ConfigError, StreamSpec, Toolset
from jouleclaw.pipecat import (
    TOOL_CALLS,
    ReceiptObserver,
    ToolCallEvent,
    tool_call_bytes,
    tool_call_spec,
)

STEWARD = "did:example:voice-agent"


def calls(*specs) -> FunctionCallsStartedFrame:
    return FunctionCallsStartedFrame(function_calls=[
        FunctionCallFromLLM(function_name=name, tool_call_id=f"call-{name}", arguments=args,
                            context=None)
        for name, args in specs
    ])


def agent():
    """Windows 0-1 the user asks; window 2 the LLM calls get_weather and speaks its answer;
    window 3 it calls set_timer off-schema and a tool no one declared; window 4 the user
    speaks again."""
    return [
        *question(),
        (400, "llm", calls(("get_weather", {"city": "Lisbon"}))),
        (402, "llm", tool_result({"city": "Lisbon", "sky": "clear"})),
        (410, "llm", said("It's clear in Lisbon right now.")),
        (600, "user", mic()),
        (650, "llm", calls(("set_timer", {"seconds": 90000}), ("get_wx", {}))),
        (800, "user", mic()),
    ]


def observe(script, out_dir=None, **kwargs) -> ReceiptObserver:
    observer = ReceiptObserver(steward=STEWARD, stream_id="call-1", out_dir=out_dir, **kwargs)
    asyncio.run(run_call(script, observer))
    return observer


@pytest.fixture(scope="module")
def toolset() -> Toolset:
    return Toolset(OPENAI_TOOLS)


def verdicts(observer):
    return [(w.window_id, w.verdict.kind) for w in observer.receipts]


def test_the_llms_tool_calls_are_judged_by_the_toolset_and_its_speech_is_not(
    toolset, tmp_path, verify_outputs
):
    events: list[ToolCallEvent] = []
    out = tmp_path / "run"
    observer = observe(agent(), out, toolset=toolset, on_tool_call=events.append)
    assert verdicts(observer) == [(0, "pass"), (1, "pass"), (2, "pass"), (3, "fail"), (4, "pass")]
    w2, w3 = observer.receipts[2], observer.receipts[3]
    assert toolset.oracle_name in w2.verdict.chain
    bad = tool_call_bytes("set_timer", {"seconds": 90000})
    assert bad == b'{"name":"set_timer","arguments":{"seconds":90000}}'
    assert w3.verdict.oracle == toolset.oracle_name
    assert w3.verdict.reason == (
        f'turn 2: above_maximum at byte {bad.index(b"0}")}, path "/arguments/seconds"'
    )
    # The early verdict on the tick that made the call impossible.
    assert [e.verdict.kind for e in w3.early] == ["fail", "fail"]
    # Every call judged on its own too.
    assert [(e.name, e.tool_call_id, e.window_id, e.verdict.kind, e.verdict.code,
             e.verdict.offset, e.verdict.path) for e in observer.tool_calls] == [
        ("get_weather", "call-get_weather", 2, "pass", None, None, None),
        ("set_timer", "call-set_timer", 3, "fail", "above_maximum", bad.index(b"0}"),
         "/arguments/seconds"),
        ("get_wx", "call-get_wx", 3, "fail", "unknown_tag", 14, "/name"),
    ]
    assert events == list(observer.tool_calls)
    # Each call is two ticks on the tool channel (its text and its end marker); the speech
    # stays on the llm channel.
    assert observer.ticks[TOOL_CALLS] == 6 and observer.ticks[LLM] == 1
    # The run directory: verified, with the toolset's digest in its summary.
    verify_outputs(out, list(observer.receipts))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm_schema"] == {"file": "python", "grammar_digest": toolset.grammar_digest}
    checks = verify_dir_everywhere(out, sealed=False)
    assert {k: v[0] for k, v in checks.items()} == {"cli": 0, "python": 0, "binding": 0}, checks


def test_without_a_toolset_the_calls_are_not_judged():
    # The neighbour: the same call, no toolset: every window passes, the frames are ignored.
    observer = observe(agent())
    assert [v for _, v in verdicts(observer)] == ["pass"] * 5
    assert observer.ignored["FunctionCallsStartedFrame"] == 2
    assert TOOL_CALLS not in observer.ticks and not observer.tool_calls
    assert observer.toolset is None


def test_the_llm_channel_as_tool_channel_judges_the_speech_as_a_call_too(toolset):
    # As `jouleclaw run --llm-tools` judges the LLM channel: the speech after the valid call
    # is a second turn on the channel, and "I" is no call's first byte.
    observer = observe(agent(), toolset=toolset, tool_channel=LLM)
    assert verdicts(observer)[2] == (2, "fail")
    assert observer.receipts[2].verdict.reason == 'turn 2: syntax at byte 0, path ""'
    assert observer.pipeline.spec.channels == StreamSpec.duplex_voice_default().channels


def test_a_valid_call_passes_whatever_its_arguments_order(toolset):
    script = [*question(), (400, "llm", calls(("get_weather", {"unit": "celsius", "city": "Porto"})))]
    observer = observe(script, toolset=toolset)
    assert [v for _, v in verdicts(observer)] == ["pass"] * 3
    [event] = observer.tool_calls
    assert event.call == b'{"name":"get_weather","arguments":{"unit":"celsius","city":"Porto"}}'
    assert event.verdict.kind == "pass"


def test_arguments_given_as_text_are_judged_as_the_models_own_bytes(toolset):
    assert tool_call_bytes("get_time", '{"zone" : "UTC"}') == (
        b'{"name":"get_time","arguments":{"zone" : "UTC"}}'
    )
    assert tool_call_bytes("t\u00e9", {"q": "\u00e3"}) == '{"name":"t\u00e9","arguments":{"q":"\u00e3"}}'.encode()
    script = [*question(), (400, "llm", calls(("get_time", '{"zone": 7}')))]
    observer = observe(script, toolset=toolset)
    [event] = observer.tool_calls
    assert (event.verdict.code, event.verdict.path) == ("wrong_type", "/arguments/zone")
    assert verdicts(observer)[2] == (2, "fail")


def test_the_tool_channel_must_be_in_the_spec(toolset):
    with pytest.raises(ConfigError) as e:
        ReceiptObserver(steward=STEWARD, stream_id="c", toolset=toolset,
                        spec=StreamSpec.duplex_voice_default())
    assert e.value.code == "bad_tool_channel"
    with pytest.raises(ConfigError) as e:
        ReceiptObserver(steward=STEWARD, stream_id="c", tool_channel=TOOL_CALLS)
    assert e.value.code == "bad_tool_channel"
    # The neighbour: a spec the tool channel was added to.
    spec = tool_call_spec(StreamSpec.duplex_voice_default())
    assert (TOOL_CALLS, "outbound", "text", "application/json") in spec.channels
    observer = ReceiptObserver(steward=STEWARD, stream_id="c", toolset=toolset, spec=spec)
    assert observer.toolset is toolset
