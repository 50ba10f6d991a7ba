"""The tools of ``acp-proxy mcp``: names, descriptions, schemas, and their arguments checked."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.readers.mcp.directory import Recordings
from acp_proxy.readers.mcp.paging import NAME_CHARS, Answer, ToolError, cut
from acp_proxy.readers.mcp.views import (
    diff_sessions,
    explain_validation_rule,
    list_recorded_sessions,
    list_session_findings,
    list_validation_rules,
    search_recorded_frames,
    session_stats,
    show_frame,
    show_session_conversation,
    show_session_timeline,
)

__all__ = ["BY_NAME", "TOOLS", "Tool", "check"]

_FILE = {
    "type": "string",
    "description": "A recording's file name relative to the recordings directory, as "
    "list_recorded_sessions gives it (e.g. 2026-01-02T10-00-00Z-1234.jsonl).",
}
_PAGE = {"type": "integer", "minimum": 1, "description": "Which page of a long answer (1: first)."}
_CONNECTION = {
    "type": "integer",
    "minimum": 1,
    "description": "Which recorded session of a file holding several (1: the first).",
}
_SIDE = {"type": "string", "enum": ["client", "agent"], "description": "Only frames sent by it."}


def check(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """``arguments`` checked against a tool's input schema (the little JSON Schema ours use)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolError("arguments must be an object")
    properties = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ToolError(
            f"unknown argument {cut(unknown[0], NAME_CHARS)!r}; "
            f"this tool takes {sorted(properties)}"
        )
    for name in schema.get("required", []):
        if arguments.get(name) is None:
            raise ToolError(f"missing argument {name!r}")
    for name, value in arguments.items():
        if value is None:
            continue
        kind = properties[name]["type"]
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
        }[kind]
        if not ok:
            article = "an" if kind[0] in "aeiou" else "a"
            raise ToolError(f"{name} must be {article} {kind}")
        low = properties[name].get("minimum")
        if low is not None and value < low:
            raise ToolError(f"{name} must be at least {low}")
        choices = properties[name].get("enum")
        if choices is not None and value not in choices:
            raise ToolError(f"{name} must be one of {', '.join(choices)}")
    return {k: v for k, v in arguments.items() if v is not None}


@dataclass
class Tool:
    name: str
    title: str
    description: str
    inputs: dict[str, Any]
    run: Callable[[Recordings, dict[str, Any]], Answer]
    required: list[str] = field(default_factory=list)
    #: The answer's data, described (None: the answer is text).
    output: dict[str, Any] | None = None

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.inputs,
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = self.required
        return schema

    def as_json(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }
        if self.output is not None:
            described["outputSchema"] = self.output
        return described


def _object(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


_PAGING = {
    "total": {"type": "integer"},
    "page": {"type": "integer"},
    "pages": {"type": "integer"},
    "note": {"type": "string"},
}
_FINDING = _object(
    {
        "rule": {"type": "string"},
        "level": {"type": "string"},
        "seq": {"type": ["integer", "null"]},
        "message": {"type": "string"},
        "spec": {"type": "string"},
        "sentence": {"type": "string"},
    },
    ["rule", "level", "message"],
)


_SESSION_ROW = _object(
    {
        "file": {"type": "string"},
        "connection": {"type": "integer"},
        "start": {"type": ["string", "null"]},
        "agent": {"type": "string"},
        "protocol": {"type": ["integer", "null"]},
        "duration_seconds": {"type": ["number", "null"]},
        "turns": {"type": "integer"},
        "errors": {"type": "integer"},
        "warnings": {"type": "integer"},
        "state": {"type": "string"},
    },
    ["file", "connection", "turns", "errors", "warnings"],
)

TOOLS = [
    Tool(
        "list_recorded_sessions",
        "List recorded ACP sessions",
        "The ACP sessions recorded in the directory, newest first: file, connection number, "
        "agent, protocol version, start time, duration, prompt turns, error and warning "
        "counts. Start here: the other tools take a file name from this list.",
        {
            "agent": {"type": "string", "description": "Only sessions whose agent contains it."},
            "since": {
                "type": "string",
                "description": "Only sessions started in this age: 2d, 12h.",
            },
            "with_findings": {
                "type": "boolean",
                "description": "Only sessions with errors or warnings.",
            },
            "page": _PAGE,
        },
        list_recorded_sessions,
        output=_object(
            {"sessions": {"type": "array", "items": _SESSION_ROW}, **_PAGING}, ["sessions"]
        ),
    ),
    Tool(
        "search_recorded_frames",
        "Search frames across recordings",
        "Find the JSON-RPC frames, across every recording (or one file), whose method, "
        "update kind, rule or text matches a regular expression; each match with its file, "
        "connection, seq and the matched text.",
        {
            "pattern": {"type": "string", "description": "A regular expression."},
            "file": _FILE,
            "method": {
                "type": "string",
                "description": "Only frames whose method matches this glob.",
            },
            "rule": {
                "type": "string",
                "description": "Only frames with a finding of a rule matching this glob.",
            },
            "side": _SIDE,
            "ignore_case": {"type": "boolean"},
            "page": _PAGE,
        },
        search_recorded_frames,
        ["pattern"],
        _object(
            {
                "matches": {
                    "type": "array",
                    "items": _object(
                        {
                            "file": {"type": "string"},
                            "line": {"type": "integer"},
                            "connection": {"type": "integer"},
                            "session": {"type": ["string", "null"]},
                            "seq": {"type": ["integer", "null"]},
                            "matched": {"type": "string"},
                        },
                        ["file", "seq", "matched"],
                    ),
                },
                **_PAGING,
            },
            ["matches"],
        ),
    ),
    Tool(
        "show_session_conversation",
        "Show a session's conversation",
        "One recording as the user saw it: turn by turn, the prompts, the agent's replies, "
        "tool calls, plans, permission requests and how each turn ended (stop reason). Paged.",
        {
            "file": _FILE,
            "session": {"type": "string", "description": "Only this ACP session id."},
            "connection": _CONNECTION,
            "page": _PAGE,
        },
        show_session_conversation,
        ["file"],
    ),
    Tool(
        "show_session_timeline",
        "Show a session's frame timeline",
        "One recording frame by frame: time, seq, direction, request/response/notification, "
        "method and a summary, the findings under their frame. Paged; narrow with a seq "
        "range, a side, a method glob or only frames with findings.",
        {
            "file": _FILE,
            "from_seq": {"type": "integer", "minimum": 1},
            "to_seq": {"type": "integer", "minimum": 1},
            "side": _SIDE,
            "method": {
                "type": "string",
                "description": "Only frames of methods matching this glob.",
            },
            "violations_only": {"type": "boolean"},
            "page": _PAGE,
        },
        show_session_timeline,
        ["file"],
    ),
    Tool(
        "list_session_findings",
        "List a session's protocol findings",
        "What the validator finds in one recording: each violation of the ACP protocol with "
        "its rule id, level, seq, message and the spec section and sentence it breaks.",
        {
            "file": _FILE,
            "level": {"type": "string", "enum": ["error", "warning", "info"]},
            "rule": {"type": "string", "description": "Only rules matching this glob."},
            "page": _PAGE,
        },
        list_session_findings,
        ["file"],
        _object({"findings": {"type": "array", "items": _FINDING}, **_PAGING}, ["findings"]),
    ),
    Tool(
        "show_frame",
        "Show one frame",
        "One JSON-RPC frame of a recording by its seq, whole (pretty-printed JSON, paged if "
        "long), with where it is, its direction, time and its findings.",
        {
            "file": _FILE,
            "seq": {"type": "integer", "minimum": 1},
            "connection": _CONNECTION,
            "page": _PAGE,
        },
        show_frame,
        ["file", "seq"],
        _object(
            {
                "file": {"type": "string"},
                "frames": {
                    "type": "array",
                    "items": _object(
                        {
                            "seq": {"type": "integer"},
                            "side": {"type": "string"},
                            "frame": {"type": "string"},
                            "findings": {"type": "array", "items": _FINDING},
                        },
                        ["seq", "frame", "findings"],
                    ),
                },
            },
            ["frames"],
        ),
    ),
    Tool(
        "session_stats",
        "Session statistics",
        "Figures of one recording: frames and bytes by side, methods, latency per method "
        "(p50, p95, max), prompt turns with their duration and stop reason, findings by rule, "
        "token usage when the agent reported it.",
        {"file": _FILE},
        session_stats,
        ["file"],
        _object({"file": {"type": "string"}, "turns": {"type": "array"}}, ["file"]),
    ),
    Tool(
        "diff_sessions",
        "Diff two sessions",
        "What changed between two recorded sessions, layer by layer: handshake, conversation, "
        "wire, findings, timing (ids and times normalized first).",
        {
            "a": _FILE,
            "b": _FILE,
            "only": {
                "type": "string",
                "description": "Comma-separated layers: handshake, conversation, wire, "
                "findings, timing.",
            },
            "connection": _CONNECTION,
            "page": _PAGE,
        },
        diff_sessions,
        ["a", "b"],
        _object(
            {
                "identical": {"type": "boolean"},
                "differences": {"type": "array", "items": {"type": "object"}},
                **_PAGING,
            },
            ["identical", "differences"],
        ),
    ),
    Tool(
        "list_validation_rules",
        "List the validation rules",
        "The catalog of ACP protocol rules the validator checks: id, level, versions, spec "
        "section and what each flags.",
        {},
        list_validation_rules,
        output=_object(
            {
                "schemas": {"type": "string"},
                "rules": {
                    "type": "array",
                    "items": _object(
                        {
                            "rule": {"type": "string"},
                            "level": {"type": "string"},
                            "description": {"type": "string"},
                        },
                        ["rule", "level"],
                    ),
                },
            },
            ["rules"],
        ),
    ),
    Tool(
        "explain_validation_rule",
        "Explain one validation rule",
        "One rule explained: its level, versions, the spec section and sentence, and an "
        "example of frames that break it.",
        {"rule": {"type": "string", "description": "A rule id, as findings name it."}},
        explain_validation_rule,
        ["rule"],
        _object(
            {
                "rule": {"type": "string"},
                "level": {"type": "string"},
                "description": {"type": "string"},
            },
            ["rule", "level", "description"],
        ),
    ),
]

BY_NAME = {tool.name: tool for tool in TOOLS}
