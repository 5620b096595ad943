"""The scripted model server alone, driven by a plain HTTP client over loopback."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from osiris.harness.real_clients.model_script import (
    FinalText,
    ModelRequest,
    ScriptedTurns,
    ToolCall,
    prompt_text,
    prompt_tokens,
    tool_results,
)
from osiris.harness.real_clients.model_server import ModelServer

TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
FUNCTIONS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]


def _post(server: ModelServer, path: str, body: Any, *, raw: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(status, content type, body text) of one POST."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        data = raw if raw is not None else json.dumps(body).encode()
        connection.request("POST", path, body=data,
                           headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read().decode()
    finally:
        connection.close()


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of an SSE body."""
    found = []
    for chunk in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.split("\n"))
        found.append((fields["event"], json.loads(fields["data"])))
    return found


def _messages(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "stream": True, "tools": TOOLS, "max_tokens": 100,
            "system": [{"type": "text", "text": "be brief"}],
            "messages": [{"role": "user", "content": "list the files"}, *turns]}


@pytest.fixture
def bash_then_done() -> Iterator[ModelServer]:
    with ModelServer(ScriptedTurns([ToolCall("Bash", {"command": "ls -1"})])) as server:
        yield server


def test_anthropic_stream_plays_a_tool_call_then_ends_the_turn(
        bash_then_done: ModelServer) -> None:
    server = bash_then_done
    status, kind, text = _post(server, "/v1/messages?beta=true", _messages())
    assert (status, kind.split(";")[0]) == (200, "text/event-stream")
    events = _events(text)
    assert [name for name, _ in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop"]
    block = events[1][1]["content_block"]
    assert (block["type"], block["name"], block["input"]) == ("tool_use", "Bash", {})
    delta = events[2][1]["delta"]
    assert delta["type"] == "input_json_delta"
    assert json.loads(delta["partial_json"]) == {"command": "ls -1"}
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"
    assert events[0][1]["message"]["usage"]["input_tokens"] == prompt_tokens(_messages())

    # The next prompt carries the result: the script is past its one call and ends.
    turn = [{"role": "assistant", "content": [{"type": "tool_use", "id": block["id"],
                                               "name": "Bash", "input": {"command": "ls -1"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block["id"],
                                          "content": "a.txt\nb.txt"}]}]
    status, _, text = _post(server, "/v1/messages?beta=true", _messages(*turn))
    events = _events(text)
    assert events[1][1]["content_block"]["type"] == "text"
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "Done."}
    assert events[4][1]["delta"]["stop_reason"] == "end_turn"
    logged = server.requests()
    assert [(e.path, e.query, e.status) for e in logged] == [
        ("/v1/messages", "beta=true", 200)] * 2
    assert logged[0].action == {"tool": "Bash", "input": {"command": "ls -1"},
                                "call_id": block["id"]}
    assert tool_results(server.prompts()[1]) == ["a.txt\nb.txt"]


def test_anthropic_json_reply_and_count_tokens(bash_then_done: ModelServer) -> None:
    body = {**_messages(), "stream": False}
    status, kind, text = _post(bash_then_done, "/v1/messages", body)
    assert (status, kind) == (200, "application/json")
    message = json.loads(text)
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0]["input"] == {"command": "ls -1"}
    counted = {"model": "m", "messages": [{"role": "user", "content": "x " * 500}]}
    status, _, text = _post(bash_then_done, "/v1/messages/count_tokens?beta=true", counted)
    assert status == 200
    assert json.loads(text) == {"input_tokens": prompt_tokens(counted)}
    assert bash_then_done.requests()[1].action is None
    assert len(bash_then_done.prompts()) == 1  # count_tokens is not a prompt


def test_count_tokens_can_be_switched_off() -> None:
    with ModelServer(ScriptedTurns([]), count_tokens=False) as server:
        status, _, text = _post(server, "/v1/messages/count_tokens", {"messages": []})
    assert status == 404
    assert json.loads(text)["type"] == "error"


def test_a_prompt_over_the_context_window_is_refused_as_the_provider_refuses_it() -> None:
    with ModelServer(ScriptedTurns([FinalText("hi")]), context_window=50) as server:
        small = _messages()
        size = prompt_tokens(small)
        assert size < 50
        status, _, _ = _post(server, "/v1/messages", small)
        assert status == 200
        big = _messages({"role": "assistant", "content": "word " * 200})
        status, _, text = _post(server, "/v1/messages", big)
        assert status == 400
        error = json.loads(text)["error"]
        assert error["type"] == "invalid_request_error"
        assert error["message"] == f"prompt is too long: {prompt_tokens(big)} tokens > 50 maximum"
        status, _, text = _post(server, "/v1/responses", {
            "model": "gpt", "input": [{"type": "message", "role": "user",
                                       "content": [{"type": "input_text",
                                                    "text": "word " * 200}]}]})
        assert status == 400 and "context window" in json.loads(text)["error"]["message"]
        logged = server.requests()
    assert [e.status for e in logged] == [200, 400, 400]
    assert logged[1].error == "over the context window"
    assert logged[0].answered_s >= logged[0].received_s > 0


def _responses(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt", "stream": True, "tools": FUNCTIONS,
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "hi"}]}, *items]}


def test_responses_stream_plays_a_function_call_a_custom_call_then_a_message() -> None:
    script = ScriptedTurns([ToolCall("exec_command", {"cmd": "echo hi"}),
                            ToolCall("exec", "text(1)")], final="All done.")
    with ModelServer(script) as server:
        status, kind, text = _post(server, "/v1/responses", _responses())
        assert (status, kind.split(";")[0]) == (200, "text/event-stream")
        events = _events(text)
        assert [n for n, _ in events] == ["response.created", "response.output_item.added",
                                          "response.output_item.done", "response.completed"]
        item = events[2][1]["item"]
        assert (item["type"], item["name"]) == ("function_call", "exec_command")
        assert json.loads(item["arguments"]) == {"cmd": "echo hi"}
        usage = events[3][1]["response"]["usage"]
        assert usage["input_tokens"] == prompt_tokens(_responses())
        first = [item, {"type": "function_call_output", "call_id": item["call_id"],
                        "output": "hi\n"}]
        events = _events(_post(server, "/v1/responses", _responses(*first))[2])
        custom = events[2][1]["item"]
        assert (custom["type"], custom["name"], custom["input"]) == (
            "custom_tool_call", "exec", "text(1)")
        second = [custom, {"type": "custom_tool_call_output", "call_id": custom["call_id"],
                           "output": [{"type": "input_text", "text": "1"}]}]
        events = _events(_post(server, "/v1/responses", _responses(*first, *second))[2])
        assert "response.output_text.delta" in [n for n, _ in events]
        message = events[-1][1]["response"]["output"][0]
        assert message["content"][0]["text"] == "All done."
        assert tool_results(server.prompts()[2]) == ["hi\n", "1"]


def _chat(*turns: dict[str, Any], stream: bool = False) -> dict[str, Any]:
    bash = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    return {"model": "m", "stream": stream, "tools": [bash],
            "messages": [{"role": "system", "content": "be brief"},
                         {"role": "user", "content": "list the files"}, *turns]}


def test_chat_completions_play_a_tool_call_then_a_text_as_json_and_as_a_stream() -> None:
    script = ScriptedTurns([ToolCall("bash", {"command": "ls -1"})], final="All done.")
    with ModelServer(script) as server:
        status, kind, text = _post(server, "/v1/chat/completions", _chat())
        assert (status, kind) == (200, "application/json")
        answer = json.loads(text)
        message, usage = answer["choices"][0]["message"], answer["usage"]
        assert answer["choices"][0]["finish_reason"] == "tool_calls"
        call = message["tool_calls"][0]
        assert (call["type"], call["function"]["name"]) == ("function", "bash")
        assert json.loads(call["function"]["arguments"]) == {"command": "ls -1"}
        assert usage["prompt_tokens"] == prompt_tokens(_chat())
        turn = [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": "a.py\nb.py\n"}]
        status, kind, text = _post(server, "/v1/chat/completions", _chat(*turn, stream=True))
        assert (status, kind.split(";")[0]) == (200, "text/event-stream")
        data = [line.removeprefix("data: ") for line in text.strip().split("\n\n")]
        assert data[-1] == "[DONE]" and all(not d.startswith("event:") for d in data)
        chunks = [json.loads(d) for d in data[:-1]]
        assert chunks[0]["choices"][0]["delta"]["content"] == "All done."
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["usage"]
        # The script saw the tool's result and the call's arguments as the model's text.
        seen = server.prompts()[1]
        assert tool_results(seen) == ["a.py\nb.py\n"]
        assert '"command": "ls -1"' in prompt_text(seen.body)
        status, _, text = _post(server, "/v1/chat/completions", [1, 2])
        assert status == 400 and json.loads(text)["error"]["type"] == "invalid_request_error"


def test_malformed_and_unknown_requests_get_json_errors() -> None:
    with ModelServer(ScriptedTurns([]), max_body_bytes=2_000) as server:
        assert _post(server, "/v1/messages", None, raw=b"{not json")[0] == 400
        assert _post(server, "/v1/responses", [1, 2])[0] == 400
        status, _, text = _post(server, "/v1/messages", {"messages": ["x" * 3_000]})
        assert status == 413
        assert json.loads(text)["type"] == "error"
        status, _, text = _post(server, "/v1/completions", {"prompt": "hi"})
        assert status == 404
        assert "no such endpoint" in json.loads(text)["error"]["message"]
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("GET", "/v1/models")
        assert connection.getresponse().status == 404
        connection.close()
        # A gzip body is read; one that only claims to be gzip is refused.
        packed = gzip.compress(json.dumps(_messages()).encode())
        assert _post(server, "/v1/messages", None, raw=packed,
                     headers={"Content-Encoding": "gzip"})[0] == 200
        assert _post(server, "/v1/messages", None, raw=b"plain",
                     headers={"Content-Encoding": "gzip"})[0] == 400
        logged = server.requests()
    assert [e.status for e in logged] == [400, 400, 413, 404, 404, 200, 400]
    assert [e.error for e in logged[:4]] == ["the body is not JSON", "not a JSON object",
                                             "the body is over 2000 bytes", "unknown path"]
    assert [e.api for e in logged] == ["anthropic", "openai", "anthropic", None, None,
                                       "anthropic", "anthropic"]


class _Failing:
    def reply(self, request: ModelRequest) -> ToolCall:
        raise ValueError("no plan for this")


def test_what_the_script_does_not_expect_gets_a_final_text() -> None:
    with ModelServer(_Failing()) as server:
        message = json.loads(_post(server, "/v1/messages", {**_messages(), "stream": False})[2])
        assert message["stop_reason"] == "end_turn"
        assert "script failed" in message["content"][0]["text"]
        assert server.requests()[0].error == "ValueError('no plan for this')"
    script = ScriptedTurns([ToolCall("Bash", {"command": "ls"})], side_text="a title")
    with ModelServer(script) as server:
        side = {**_messages(), "stream": False, "tools": []}  # a side query: no tools
        assert json.loads(_post(server, "/v1/messages", side)[2])["content"][0]["text"] == (
            "a title")
        # Past the end of the script: the final text, however far the client goes on.
        turns = [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}] * 3
        late = {**_messages(*turns), "stream": False}
        assert json.loads(_post(server, "/v1/messages", late)[2])["content"][0]["text"] == (
            "Done.")
    # A string input is for the Responses API's custom tools only.
    with ModelServer(ScriptedTurns([ToolCall("exec", "text(1)")])) as server:
        reply = json.loads(_post(server, "/v1/messages", {**_messages(), "stream": False})[2])
        assert reply["stop_reason"] == "end_turn"
        assert server.requests()[0].error == "custom tool call on the Messages API"


class _Rendezvous:
    """The first prompt waits until a second one has been answered: a server that
    handled one request at a time would leave the first waiting out its timeout."""

    def __init__(self) -> None:
        self.second_answered = threading.Event()
        self.first_saw_it = False

    def reply(self, request: ModelRequest) -> FinalText:
        if request.body.get("metadata", {}).get("who") == "first":
            self.first_saw_it = self.second_answered.wait(timeout=30)
            return FinalText("first")
        self.second_answered.set()
        return FinalText("second")


def test_requests_are_served_concurrently_and_all_logged() -> None:
    script = _Rendezvous()
    with ModelServer(script) as server:
        first = {**_messages(), "stream": False, "metadata": {"who": "first"}}
        with ThreadPoolExecutor(max_workers=1) as pool:
            waiting = pool.submit(_post, server, "/v1/messages", first)
            _post(server, "/v1/messages", {**_messages(), "stream": False})
            assert waiting.result()[0] == 200
        assert script.first_saw_it
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(lambda _: _post(server, "/v1/responses", _responses())[0],
                                     range(24)))
        assert statuses == [200] * 24
        logged = server.requests()
    assert len(logged) == 26
    assert sorted(e.index for e in logged) == list(range(26))
    assert [e.action for e in logged[2:]] == [{"text": "second"}] * 24


def test_jsonl_log_and_clean_shutdown(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    server = ModelServer(ScriptedTurns([ToolCall("Bash", {"command": "pwd"})]), log_path=log)
    with server:
        _post(server, "/v1/messages", {**_messages(), "stream": False})
        _post(server, "/nope", {})
        # An idle keep-alive connection left open must not hold up the shutdown.
        idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        idle.request("POST", "/v1/messages", body=json.dumps(_messages()).encode())
        idle.getresponse().read()
        port = server.port
        entries = [e.as_json() for e in server.requests()]
    server.stop()  # twice is fine
    idle.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == entries
    assert [line["status"] for line in lines] == [200, 404, 200]
    assert lines[0]["body"]["messages"][0]["content"] == "list the files"
    with pytest.raises(ConnectionRefusedError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=5).connect()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
