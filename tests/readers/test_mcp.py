"""``acp-proxy mcp``: the recordings as an MCP server, driven by real MCP clients, not ours: the
official MCP Python SDK's stdio client (every tool, every refusal) and the MCP Inspector's CLI
(npm, pinned; skipped without npm). What each answer holds is checked against what the other
commands say of the same recordings (``ls``, ``validate``, ``show``, ``rules``)."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import PROXY, RECORDINGS, clean_env

#: Every tool, by name.
TOOLS = {
    "list_recorded_sessions",
    "search_recorded_frames",
    "show_session_conversation",
    "show_session_timeline",
    "list_session_findings",
    "show_frame",
    "session_stats",
    "diff_sessions",
    "list_validation_rules",
    "explain_validation_rule",
}
#: The tools that read one recording, and the other arguments each needs.
FILE_TOOLS: dict[str, dict[str, Any]] = {
    "show_session_conversation": {},
    "show_session_timeline": {},
    "list_session_findings": {},
    "show_frame": {"seq": 1},
    "session_stats": {},
    "search_recorded_frames": {"pattern": "session"},
}
#: Characters no answer may carry (terminal escapes, C0/C1 controls, bidi and invisible
#: format characters): a line feed and a tab are text.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
)


def run_client(
    directory: Path,
    body: Callable[[ClientSession], Awaitable[Any]],
    cache: Path,
    handler: Any = None,
) -> Any:
    """``body`` with an SDK client session to ``acp-proxy mcp DIRECTORY``, initialized."""

    async def main() -> Any:
        params = StdioServerParameters(
            command=sys.executable,
            args=[*PROXY[1:], "mcp", str(directory)],
            env=clean_env(XDG_CACHE_HOME=str(cache)),
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, message_handler=handler) as session,
        ):
            await session.initialize()
            return await body(session)

    return anyio.run(main)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def call(directory: Path, cache: Path, name: str, **arguments: Any) -> Any:
    """One tool called, its result."""

    async def body(session: ClientSession) -> Any:
        return await session.call_tool(name, arguments)

    return run_client(directory, body, cache)


def calls(directory: Path, cache: Path, todo: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Several tools called in one session, their results in order."""

    async def body(session: ClientSession) -> list[Any]:
        return [await session.call_tool(name, arguments) for name, arguments in todo]

    return run_client(directory, body, cache)


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def acp_json(*args: str) -> Any:
    """An acp-proxy command's JSON output (a document, or a line each)."""
    proc = subprocess.run([*PROXY, *args], capture_output=True, env=clean_env(), check=False)
    lines = proc.stdout.decode().splitlines()
    try:
        return orjson.loads(proc.stdout)
    except orjson.JSONDecodeError:
        return [orjson.loads(line) for line in lines if line]


def strings(value: Any) -> list[str]:
    """Every string of a JSON-like value (keys too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


# --- the tools, listed -----------------------------------------------------------------------


def test_the_tools_are_listed_with_their_schemas_and_read_only(cache: Path) -> None:
    async def body(session: ClientSession) -> Any:
        return session.initialize_result, await session.list_tools()

    initialized, listed = run_client(RECORDINGS, body, cache)
    assert initialized.protocol_version in ("2025-11-25", "2025-06-18")
    assert initialized.capabilities.tools is not None
    assert initialized.capabilities.resources.list_changed is True
    assert {tool.name for tool in listed.tools} == TOOLS
    for tool in listed.tools:
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.destructive_hint is False, tool.name
    with_data = {t.name for t in listed.tools if t.output_schema is not None}
    assert with_data == TOOLS - {"show_session_conversation", "show_session_timeline"}
    for tool in listed.tools:
        if tool.output_schema is not None:
            assert tool.output_schema["type"] == "object"


# --- what the tools say, against what the commands say ---------------------------------------


def test_every_session_of_the_recordings_is_listed_newest_first(cache: Path) -> None:
    result = call(RECORDINGS, cache, "list_recorded_sessions")
    assert not result.is_error
    listed = result.structured_content["sessions"]
    by_ls = acp_json("ls", "--format", "json", str(RECORDINGS))
    assert len(by_ls) >= 5
    assert [(s["file"], s["connection"]) for s in listed] == [
        (Path(s["path"]).name, s["session"]) for s in by_ls
    ]
    for mine, theirs in zip(listed, by_ls, strict=True):
        assert (mine["errors"], mine["warnings"], mine["turns"]) == (
            theirs["errors"],
            theirs["warnings"],
            theirs["turns"],
        )
        assert mine["agent"] == theirs["agent"]
        assert "/" not in mine["file"]  # named relative to the directory
    starts = [s["start"] for s in listed]
    assert starts == sorted(starts, reverse=True)
    assert str(RECORDINGS) not in text(result)
    # the filters: with findings, by agent, since
    found = call(RECORDINGS, cache, "list_recorded_sessions", with_findings=True)
    flagged = {(Path(s["path"]).name) for s in by_ls if s["errors"] or s["warnings"]}
    assert {s["file"] for s in found.structured_content["sessions"]} == flagged
    assert call(RECORDINGS, cache, "list_recorded_sessions", agent="no-such-agent-xyz")
    none = call(RECORDINGS, cache, "list_recorded_sessions", since="1s")
    assert none.structured_content["sessions"] == []


def test_a_word_of_a_reply_is_found_with_its_session(cache: Path) -> None:
    chunks = [
        orjson.loads(line)["msg"]["params"]["update"]["content"]["text"]
        for line in _lines_with(RECORDINGS / "clean.jsonl", "agent_message_chunk")
    ]
    words = sorted({w for c in chunks for w in re.findall(r"[A-Za-z]{6,}", c)})
    assert words, chunks
    word = words[-1]
    result = call(RECORDINGS, cache, "search_recorded_frames", pattern=word)
    assert not result.is_error
    matches = result.structured_content["matches"]
    assert matches
    files = {m["file"] for m in matches}
    assert "clean.jsonl" in files
    seqs = {orjson.loads(line)["seq"] for line in _lines_with(RECORDINGS / "clean.jsonl", word)}
    mine = {m["seq"] for m in matches if m["file"] == "clean.jsonl"}
    assert mine == seqs
    assert all(word in m["matched"] for m in matches)
    assert {m["session"] for m in matches if m["file"] == "clean.jsonl"} == {"sess_0001"}
    assert "session sess_0001" in text(result)
    # narrowed: by side, by method
    by_client = call(RECORDINGS, cache, "search_recorded_frames", pattern=word, side="client")
    assert all(
        m["file"] != "clean.jsonl" or m["seq"] not in seqs
        for m in by_client.structured_content["matches"]
    )


def _lines_with(path: Path, word: str) -> list[bytes]:
    return [
        line
        for line in path.read_bytes().splitlines()
        if word.encode() in line and line.startswith(b'{"kind":"frame"')
    ]


def test_the_findings_are_the_rules_validate_gives(cache: Path) -> None:
    by_validate = acp_json("validate", "--format", "json", str(RECORDINGS / "misbehaving.jsonl"))
    expected = sorted((f["rule"], f["seq"] or 0, f["level"]) for f in by_validate)
    assert len(expected) > 10
    mine: list[tuple[str, int, str]] = []
    page = 1
    while True:
        result = call(
            RECORDINGS, cache, "list_session_findings", file="misbehaving.jsonl", page=page
        )
        assert not result.is_error, text(result)
        data = result.structured_content
        mine += [(f["rule"], f["seq"] or 0, f["level"]) for f in data["findings"]]
        for finding in data["findings"]:
            assert finding["message"] and finding["spec"] and finding["sentence"]
        if page >= data["pages"]:
            break
        page += 1
    assert sorted(mine) == expected
    only = call(
        RECORDINGS, cache, "list_session_findings", file="misbehaving.jsonl", level="warning"
    )
    assert {f["level"] for f in only.structured_content["findings"]} == {"warning"}


def test_the_conversation_holds_the_prompt_and_the_reply(cache: Path) -> None:
    prompt = "Summarize the project README."
    assert prompt in (RECORDINGS / "clean.jsonl").read_text()
    chunks = [
        orjson.loads(line)["msg"]["params"]["update"]["content"]["text"]
        for line in _lines_with(RECORDINGS / "clean.jsonl", "agent_message_chunk")
    ]
    reply = "".join(chunks).strip()
    assert len(reply) > 20
    result = call(RECORDINGS, cache, "show_session_conversation", file="clean.jsonl")
    assert not result.is_error
    assert prompt in text(result)
    assert reply in text(result)
    cancelled = call(RECORDINGS, cache, "show_session_conversation", file="cancelled.jsonl")
    assert "ended: cancelled" in text(cancelled)  # the README's question has its answer
    timeline = call(
        RECORDINGS, cache, "show_session_timeline", file="clean.jsonl", from_seq=5, to_seq=6
    )
    assert "session/prompt" in text(timeline)
    assert "initialize" not in text(timeline)


def test_a_frame_a_diff_stats_and_a_rule_come_back(cache: Path) -> None:
    first = orjson.loads((RECORDINGS / "clean.jsonl").read_bytes().splitlines()[1])
    frame, same, differ, stats, catalog, rule = calls(
        RECORDINGS,
        cache,
        [
            ("show_frame", {"file": "clean.jsonl", "seq": 1}),
            ("diff_sessions", {"a": "clean.jsonl", "b": "clean.jsonl"}),
            ("diff_sessions", {"a": "clean.jsonl", "b": "misbehaving.jsonl"}),
            ("session_stats", {"file": "clean.jsonl"}),
            ("list_validation_rules", {}),
            ("explain_validation_rule", {"rule": "prompt-result-message-id"}),
        ],
    )
    shown = frame.structured_content["frames"][0]
    assert orjson.loads(shown["frame"]) == first["msg"]
    assert shown["side"] == "client" and shown["seq"] == 1
    assert same.structured_content["identical"] is True
    assert differ.structured_content["identical"] is False
    assert differ.structured_content["differences"]
    by_stats = acp_json("stats", "--format", "json", str(RECORDINGS / "clean.jsonl"))
    assert stats.structured_content["methods"] == by_stats["methods"]
    reported = [
        orjson.loads(line)["msg"]["params"]["update"]
        for line in _lines_with(RECORDINGS / "clean.jsonl", '"usage_update"')
    ]
    assert reported and stats.structured_content["usage"][0]["used"] == reported[-1]["used"]
    by_rules = acp_json("rules", "--format", "json")
    assert [r["rule"] for r in catalog.structured_content["rules"]] == [r["rule"] for r in by_rules]
    explained = rule.structured_content
    theirs = next(r for r in by_rules if r["rule"] == "prompt-result-message-id")
    assert explained["description"] == theirs["description"]
    assert explained["example"], explained
    assert "example" in text(rule)
    # the frame of a finding carries it
    flagged = call(RECORDINGS, cache, "show_frame", file="misbehaving.jsonl", seq=8)
    assert "prompt-result-message-id" in {
        f["rule"] for f in flagged.structured_content["frames"][0]["findings"]
    }


# --- refusals --------------------------------------------------------------------------------


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """A recordings directory, a recording outside it, and symlinks that lead out."""
    inside = tmp_path / "recordings"
    inside.mkdir()
    shutil.copy(RECORDINGS / "clean.jsonl", inside / "clean.jsonl")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(RECORDINGS / "misbehaving.jsonl", outside / "secret.jsonl")
    (inside / "link.jsonl").symlink_to(outside / "secret.jsonl")
    (inside / "sub").symlink_to(outside)
    return inside


def test_paths_that_leave_the_directory_are_refused(directory: Path, cache: Path) -> None:
    outside = str(directory.parent / "outside" / "secret.jsonl")
    names = [
        "../outside/secret.jsonl",
        outside,
        "link.jsonl",
        "sub/secret.jsonl",
        "./../outside/secret.jsonl",
    ]
    todo = [(tool, {"file": name, **extra}) for tool, extra in FILE_TOOLS.items() for name in names]
    todo += [("diff_sessions", {"a": "clean.jsonl", "b": name}) for name in names]
    results = calls(directory, cache, todo)
    for (tool, arguments), result in zip(todo, results, strict=True):
        said = text(result)
        assert result.is_error, (tool, arguments, said)
        assert "refused" in said, (tool, arguments, said)
        assert "Summarize" not in said and "sess_" not in said
    listed = call(directory, cache, "list_recorded_sessions").structured_content["sessions"]
    assert [s["file"] for s in listed] == ["clean.jsonl"]  # the symlink is no recording of it
    # the same tools on the file inside answer
    inside = call(directory, cache, "show_frame", file="clean.jsonl", seq=1)
    assert not inside.is_error


def test_bad_arguments_are_tool_errors(directory: Path, cache: Path) -> None:
    todo: list[tuple[str, dict[str, Any]]] = [
        ("show_frame", {"file": "clean.jsonl"}),  # no seq
        ("show_frame", {"file": "clean.jsonl", "seq": "one"}),
        ("show_frame", {"file": "clean.jsonl", "seq": 0}),
        ("show_frame", {"file": "clean.jsonl", "seq": 99999}),
        ("show_session_timeline", {"file": "clean.jsonl", "page": 999}),
        ("show_session_timeline", {"file": "clean.jsonl", "bogus": 1}),
        ("show_session_timeline", {"file": "no-such.jsonl"}),
        ("show_session_timeline", {"file": ""}),
        ("search_recorded_frames", {"pattern": "("}),
        ("search_recorded_frames", {"pattern": "x", "rule": "no-such-rule-xyz"}),
        ("search_recorded_frames", {"pattern": "x", "side": "editor"}),
        ("list_recorded_sessions", {"since": "yesterday"}),
        ("explain_validation_rule", {"rule": "prompt-result-mesage-id"}),
        ("diff_sessions", {"a": "clean.jsonl", "b": "clean.jsonl", "only": "vibes"}),
        ("list_session_findings", {"file": "clean.jsonl", "level": "fatal"}),
    ]
    (directory / "notes.jsonl").write_text("not a recording\n")
    todo.append(("session_stats", {"file": "notes.jsonl"}))
    todo.append(("list_recorded_sessions", {"since": "99999999999"}))  # past any date
    todo.append(("search_recorded_frames", {"pattern": "(.*.*)*QQQ"}))  # never ends
    results = calls(directory, cache, todo)
    for (tool, arguments), result in zip(todo, results, strict=True):
        assert result.is_error, (tool, arguments, text(result))
        assert text(result), (tool, arguments)
        assert "could not answer" not in text(result), (tool, arguments, text(result))
    assert "too large an age" in text(results[-2])
    assert "budget" in text(results[-1])
    assert "did you mean prompt-result-message-id" in text(results[12])

    async def unknown(session: ClientSession) -> Any:
        with pytest.raises(MCPError):
            await session.call_tool("rm_rf", {})
        return await session.call_tool("list_validation_rules", {})  # and it goes on

    assert not run_client(directory, unknown, cache).is_error


def test_an_error_that_repeats_an_argument_is_bounded(directory: Path, cache: Path) -> None:
    """An error that names a huge argument (a file, a rule, a pattern, a method, a tool) says
    a cut of it: every answer stays small."""
    huge_name = "a/" * 300_000 + "x.jsonl"
    escapes = "\x1b]0;x\x07" * 10_000
    todo: list[tuple[str, dict[str, Any]]] = [
        ("show_frame", {"file": huge_name, "seq": 1}),
        ("show_frame", {"file": "b" * 600_000 + ".jsonl", "seq": 1}),
        ("explain_validation_rule", {"rule": escapes}),
        ("search_recorded_frames", {"pattern": "(" * 100_000}),
        ("search_recorded_frames", {"pattern": "x", "rule": escapes}),
        ("diff_sessions", {"a": "clean.jsonl", "b": "clean.jsonl", "only": "z" * 300_000}),
    ]

    async def body(session: ClientSession) -> Any:
        answers: list[Any] = [await session.call_tool(n, arguments) for n, arguments in todo]
        with pytest.raises(MCPError) as refused:
            await session.call_tool("t" * 300_000, {})
        answers.append(refused.value)
        with pytest.raises(MCPError) as missing:
            await session.read_resource("acp-proxy://recordings/" + "r" * 300_000)
        answers.append(missing.value)
        return answers

    answers = run_client(directory, body, cache)
    for (tool, _), result in zip(todo, answers, strict=False):
        assert result.is_error, tool
        assert len(orjson.dumps(result.model_dump(mode="json"))) < 5_000, tool
    for refused in answers[len(todo) :]:
        assert len(str(refused)) < 5_000
    # and a method nobody knows, on the wire
    method = {"jsonrpc": "2.0", "id": 1, "method": "no/" * 100_000}
    proc = subprocess.run(
        [*PROXY, "mcp", str(directory)],
        input=orjson.dumps(method) + b"\n",
        capture_output=True,
        env=clean_env(XDG_CACHE_HOME=str(cache)),
        timeout=60,
        check=False,
    )
    assert orjson.loads(proc.stdout)["error"]["code"] == -32601
    assert len(proc.stdout) < 5_000


def test_refusals_say_what_is_wrong_in_words_a_model_can_act_on(
    directory: Path, cache: Path
) -> None:
    """A file listed under its escaped name is found by that name; no such connection, no
    such session, ``~`` (not expanded) and a wrong type are said as what they are; an
    invalid cursor is an invalid-params error, not the first page again."""
    from mcp_types import PaginatedRequestParams

    shutil.copy(RECORDINGS / "clean.jsonl", directory / "odd\x1bname.jsonl")
    todo: list[tuple[str, dict[str, Any]]] = [
        ("list_recorded_sessions", {}),
        ("show_frame", {"file": "odd\\x1bname.jsonl", "seq": 1}),
        ("show_frame", {"file": "clean.jsonl", "seq": 3, "connection": 7}),
        ("show_session_conversation", {"file": "clean.jsonl", "session": "nope"}),
        ("show_session_timeline", {"file": "~/clean.jsonl"}),
        ("show_frame", {"file": "clean.jsonl", "seq": "3"}),
        ("show_session_conversation", {"file": "clean.jsonl", "session": "sess_0001"}),
    ]

    async def body(session: ClientSession) -> Any:
        answers = [await session.call_tool(name, arguments) for name, arguments in todo]
        with pytest.raises(MCPError) as refused:
            await session.list_resources(params=PaginatedRequestParams(cursor="bogus"))
        return answers, refused.value

    answers, refused = run_client(directory, body, cache)
    listed, odd, connection, nope, tilde, typed, known = answers
    names = {s["file"] for s in listed.structured_content["sessions"]}
    assert "odd\\x1bname.jsonl" in names  # escaped, as listed
    assert not odd.is_error, text(odd)
    assert odd.structured_content["frames"][0]["seq"] == 1
    assert connection.is_error and "no connection 7" in text(connection), text(connection)
    assert nope.is_error and "no session nope" in text(nope), text(nope)
    assert "sess_0001" in text(nope)  # and which there are
    assert tilde.is_error and "not expanded" in text(tilde), text(tilde)
    assert "absolute" not in text(tilde)
    assert typed.is_error and "seq must be an integer" in text(typed), text(typed)
    assert not known.is_error
    assert refused.error.code == -32602, refused


# --- hostile and big recordings --------------------------------------------------------------

#: What a hostile agent puts in its text: a clipboard write, colours, a CSI, a bidi override.
HOSTILE = "\\u001b]52;c;SGk=\\u0007\\u001b[31mred\\u009b2J\\u202eevil\\u0000\\r"


def test_a_recording_full_of_escapes_answers_with_none(directory: Path, cache: Path) -> None:
    source = (RECORDINGS / "clean.jsonl").read_bytes()
    hostile = source.replace(b'"text":"', b'"text":"' + HOSTILE.encode())
    hostile = hostile.replace(b'"sess_0001"', b'"sess_\\u001b[2J"')
    assert hostile != source
    (directory / "hostile.jsonl").write_bytes(hostile)
    todo = [(tool, {"file": "hostile.jsonl", **extra}) for tool, extra in FILE_TOOLS.items()]
    todo += [
        ("show_frame", {"file": "hostile.jsonl", "seq": 5}),
        ("search_recorded_frames", {"pattern": "red"}),
        ("list_recorded_sessions", {}),
        ("diff_sessions", {"a": "clean.jsonl", "b": "hostile.jsonl"}),
    ]

    async def body(session: ClientSession) -> Any:
        answers = [await session.call_tool(name, arguments) for name, arguments in todo]
        resources = await session.list_resources()
        uri = next(r.uri for r in resources.resources if "hostile" in str(r.uri))
        return answers, await session.read_resource(uri)

    answers, resource = run_client(directory, body, cache)
    shown = 0
    for (tool, _), result in zip(todo, answers, strict=True):
        assert not result.is_error, (tool, text(result))
        said = strings(result.model_dump(mode="json"))
        assert [s for s in said if UNSAFE.search(s)] == [], tool
        shown += sum("\\x1b" in s for s in said)
    assert shown > 0  # the escapes were there, shown as text
    said = strings(resource.model_dump(mode="json"))
    assert [s for s in said if UNSAFE.search(s)] == []


def big_recording(path: Path, size: int = 50 << 20) -> None:
    """A recording of ``size`` bytes or more: clean.jsonl's session, its reply streamed in many
    chunks of 1 KB and one of 4 MB."""
    lines = (RECORDINGS / "clean.jsonl").read_bytes().splitlines()
    chunk = next(line for line in lines if b"agent_message_chunk" in line)
    where = lines.index(chunk)
    record = orjson.loads(chunk)
    seq = record["seq"]
    out = [*lines[:where]]
    written = sum(len(line) + 1 for line in out)
    words = ("lorem ipsum dolor sit amet " * 40)[:1000]
    count = 0
    while written < size:
        record["seq"] = seq + count
        record["msg"]["params"]["update"]["content"]["text"] = (
            words if count != 10 else "X" * (4 << 20)
        )
        line = orjson.dumps(record)
        out.append(line)
        written += len(line) + 1
        count += 1
    for line in lines[where:]:
        value = orjson.loads(line)
        if "seq" in value:
            value["seq"] += count
        out.append(orjson.dumps(value))
    path.write_bytes(b"\n".join(out) + b"\n")


#: The most bytes one answer of the server may take (a page and what says where it is).
ANSWER_BOUND = 200_000


def test_a_50_mb_recording_answers_in_bounded_size(tmp_path: Path, cache: Path) -> None:
    directory = tmp_path / "big"
    directory.mkdir()
    big_recording(directory / "big.jsonl")
    assert (directory / "big.jsonl").stat().st_size >= 50 << 20
    todo: list[tuple[str, dict[str, Any]]] = [
        ("list_recorded_sessions", {}),
        ("show_session_timeline", {"file": "big.jsonl"}),
        ("show_session_timeline", {"file": "big.jsonl", "page": 3}),
        ("show_session_conversation", {"file": "big.jsonl"}),
        ("list_session_findings", {"file": "big.jsonl"}),
        ("show_frame", {"file": "big.jsonl", "seq": 30}),
        ("session_stats", {"file": "big.jsonl"}),
        ("search_recorded_frames", {"pattern": "lorem"}),
    ]
    timed: list[float] = []

    async def body(session: ClientSession) -> list[Any]:
        answers = []
        for name, arguments in todo:
            began = time.perf_counter()
            answers.append(await session.call_tool(name, arguments))
            timed.append(time.perf_counter() - began)
        return answers

    answers = run_client(directory, body, cache)
    for (tool, arguments), result, took in zip(todo, answers, timed, strict=True):
        assert not result.is_error, (tool, text(result)[:300])
        size = len(orjson.dumps(result.model_dump(mode="json")))
        print(f"{tool} {arguments}: {size:,} bytes in {took:.2f}s")  # a figure, not an assert
        assert size < ANSWER_BOUND, tool
    timeline = text(answers[1])
    assert "[page 1 of " in timeline and "page=2" in timeline
    conversation = text(answers[3])  # (the view previews a long reply: show_frame has it all)
    assert "user: Summarize the project README." in conversation
    assert "ended: end_turn" in conversation
    big_frame = answers[5].structured_content["frames"][0]
    assert big_frame["pages"] > 100 and "page=2" in big_frame["note"]
    assert answers[7].structured_content.get("note")  # cut, and says how to get more


# --- resources, notifications, the wire ------------------------------------------------------


def test_each_recording_is_a_resource_and_a_new_one_is_announced(
    directory: Path, cache: Path
) -> None:
    from mcp_types import ServerNotification

    heard = anyio.Event()

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(message, ServerNotification | object) and getattr(root, "method", "") == (
            "notifications/resources/list_changed"
        ):
            heard.set()

    async def body(session: ClientSession) -> Any:
        before = await session.list_resources()
        text_of = await session.read_resource(before.resources[0].uri)
        with pytest.raises(MCPError):
            await session.read_resource("acp-proxy://recordings/..%2Foutside%2Fsecret.jsonl")
        shutil.copy(RECORDINGS / "v1.jsonl", directory / "new.jsonl")
        with anyio.fail_after(30):  # a bound on the wait, not a measure
            await heard.wait()
        after = await session.list_resources()
        return before, text_of, after

    before, text_of, after = run_client(directory, body, cache, handler)
    assert [r.name for r in before.resources] == ["clean.jsonl"]
    assert "session/prompt" in text_of.contents[0].text
    assert sorted(r.name for r in after.resources) == ["clean.jsonl", "new.jsonl"]


def test_the_wire_malformed_json_then_a_request_then_the_end(tmp_path: Path) -> None:
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
        b"{not json",
        b'[{"jsonrpc":"2.0","id":2,"method":"ping"}]',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":3,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":4,"method":"no/such"}',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"show_frame","arguments":[]}}',
    ]
    proc = subprocess.run(
        [*PROXY, "mcp", str(RECORDINGS)],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        env=clean_env(XDG_CACHE_HOME=str(tmp_path)),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    answers = [orjson.loads(line) for line in proc.stdout.splitlines()]  # only JSON-RPC
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"  # the newest it speaks
    assert answers[1]["error"]["code"] == -32700 and answers[1]["id"] is None
    assert answers[2]["error"]["code"] == -32600
    assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert answers[4]["error"]["code"] == -32601
    assert answers[5]["result"]["isError"] is True
    assert len(answers) == 6


def _slow_recording(path: Path, frames: int = 100) -> None:
    """clean.jsonl, its reply in ``frames`` chunks of twenty x's each: ``(x+x+)+y`` takes a
    good part of a second on each (less than its budget), many seconds on them all."""
    lines = (RECORDINGS / "clean.jsonl").read_bytes().splitlines()
    chunk = next(line for line in lines if b"agent_message_chunk" in line)
    record = orjson.loads(chunk)
    out = list(lines)
    for number in range(frames):
        record["seq"] = 1000 + number
        record["msg"]["params"]["update"]["content"]["text"] = "x" * 20
        out.append(orjson.dumps(record))
    path.write_bytes(b"\n".join(out) + b"\n")


def test_a_long_call_keeps_ping_answered_and_stdin_closed_ends_it(tmp_path: Path) -> None:
    """A search that would never end is a tool error naming its budget, and the server goes
    on; a long call leaves ping answered; stdin closed during a long call ends the server
    (exit 0) within its grace, the call given up."""
    _slow_recording(tmp_path / "slow.jsonl")
    proc = subprocess.Popen(
        [*PROXY, "mcp", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(XDG_CACHE_HOME=str(tmp_path / "cache")),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def send(*messages: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(orjson.dumps(m) + b"\n" for m in messages))
        proc.stdin.flush()

    def search(ident: int, pattern: str) -> dict[str, Any]:
        arguments = {"pattern": pattern}
        params = {"name": "search_recorded_frames", "arguments": arguments}
        return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}

    def ping(ident: int) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": ident, "method": "ping"}

    heard: queue.Queue[bytes] = queue.Queue()

    def hear(stream: Any) -> None:
        for line in stream:
            heard.put(line)

    threading.Thread(target=hear, args=(proc.stdout,), daemon=True).start()

    def answer() -> Any:
        return orjson.loads(heard.get(timeout=30))  # a bound on the wait, not a measure

    try:
        send(search(1, "(.*.*)*QQQ"), ping(2))
        answers = [answer() for _ in range(2)]
        by_id = {a["id"]: a for a in answers}
        assert by_id[2]["result"] == {}
        assert by_id[1]["result"]["isError"] is True
        assert "budget" in by_id[1]["result"]["content"][0]["text"]
        send(search(3, "(x+x+)+y"), ping(4))
        assert answer() == {"jsonrpc": "2.0", "id": 4, "result": {}}
        proc.stdin.close()  # while the search runs
        assert proc.wait(timeout=20) == 0  # a bound on the wait, not a measure
        time.sleep(0.2)  # (the reader thread takes the end of stdout)
        assert heard.empty()  # the search was given up
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


# --- the MCP Inspector's CLI -----------------------------------------------------------------

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The Inspector's executable, installed once (cached, keyed by its pin) as
    tests/test_production_agents.py installs the agents."""
    import tests.test_production_agents as agents

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    key = re.sub(r"[^a-z0-9.]+", "-", INSPECTOR.lower()).strip("-")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "acp-proxy-tests" / f"npm-{key}"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"npm-{key}.lock", "w") as lock:
        import fcntl

        fcntl.flock(lock, fcntl.LOCK_EX)
        if not agents._whole(prefix):
            shutil.rmtree(prefix, ignore_errors=True)
            agents._install(npm, prefix, [INSPECTOR])
    return prefix / "node_modules" / ".bin" / "mcp-inspector"


@pytest.mark.agents
def test_the_inspector_cli_lists_the_tools_and_calls_one(inspector: Path, tmp_path: Path) -> None:
    server = [sys.executable, *PROXY[1:], "mcp", str(RECORDINGS)]
    env = clean_env(XDG_CACHE_HOME=str(tmp_path))

    def inspect(*args: str) -> Any:
        proc = subprocess.run(
            [str(inspector), "--cli", *server, *args],
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return orjson.loads(proc.stdout)

    listed = inspect("--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == TOOLS
    called = inspect(
        "--method", "tools/call", "--tool-name", "list_session_findings",
        "--tool-arg", "file=misbehaving.jsonl",
    )  # fmt: skip
    assert not called.get("isError")
    rules = {f["rule"] for f in called["structuredContent"]["findings"]}
    assert "prompt-result-message-id" in rules
