"""test-agent's catalog: each check of the client one :class:`Spec`, registered by
:func:`check` (as probe's are) beside its code in :mod:`.checks`; the report's order and the
``--format json`` catalog are the registrations' order.

A check carries its name, its **basis** (the sentence it answers to, with its MUST or
SHOULD, or what acp-proxy's own scenario asks), its **level** (a broken ``MUST`` fails, a
broken ``SHOULD`` warns) and its code (a judge of what the client sent back). What a check
found is a :class:`Check`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import orjson

from acp_proxy.core.version import VERSION

#: How a check ends.
PASS, FAIL, WARN, SKIP = "pass", "fail", "warn", "skip"
STATUSES = (FAIL, WARN, PASS, SKIP)
#: A check's level: a broken MUST fails; a broken SHOULD warns.
MUST, SHOULD = "MUST", "SHOULD"

#: The agent's name and version, as ``initialize`` answers them.
AGENT_INFO = {"name": "acp-proxy test-agent", "version": VERSION}
#: Bytes of text in the large chunk.
LARGE_CHUNK = 1024 * 1024
#: The file test-agent writes (with ``--allow-write``), in the session's cwd.
WRITTEN_NAME = "acp-proxy-test-agent.txt"
#: The file it asks for that must not exist (an error answer is right), in the session's cwd.
MISSING_NAME = "acp-proxy-test-agent-no-such-file.txt"
#: The custom request it sends (an extension: the client answers, a result or an error).
CUSTOM_METHOD = "_acp_proxy/ping"
#: The unknown ``sessionUpdate`` variant it sends (a client must survive it).
UNKNOWN_VARIANT = "acp_proxy_test_unknown"
#: What the terminal runs: ``echo`` and a word of this stem and a unique token, nothing else.
ECHO_WORDS = "acp-proxy-test-agent"

#: JSON-RPC error codes it answers with.
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

#: What a check's code is: a judge of what the client sent (its arguments are the check's).
Body = Callable[..., Any]
_B = TypeVar("_B", bound=Body)


@dataclass(frozen=True, slots=True)
class Spec:
    """One check of test-agent: its name, what it checks (``what``), its basis (the
    sentence, with its MUST or SHOULD), its level, and its code."""

    name: str
    what: str
    basis: str
    level: str = MUST
    body: Body | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.what,
            "basis": self.basis,
            "level": self.level,
        }


#: The checks, in the order they were registered: the report's order.
REGISTRY: dict[str, Spec] = {}


def check(name: str, *, what: str, basis: str, level: str = MUST) -> Callable[[_B], _B]:
    """Register the decorated function as check ``name``'s code (see :class:`Spec`); a
    name twice, or a level not MUST or SHOULD, is a bug said at import."""

    def register(body: _B) -> _B:
        if name in REGISTRY:
            raise ValueError(f"test-agent check {name!r} registered twice")
        if level not in (MUST, SHOULD):
            raise ValueError(f"test-agent check {name!r}: level {level!r} is not MUST or SHOULD")
        REGISTRY[name] = Spec(name, what, basis, level, body)
        return body

    return register


def spec(name: str) -> Spec:
    return REGISTRY[name]


@dataclass(frozen=True, slots=True)
class Check:
    """What one check found: ``pass``, ``fail``, ``warn`` or ``skip``, and why."""

    name: str
    status: str
    why: str
    #: The frame of the client's it is about (its seq in the recording), when there is one.
    seq: int | None = None
    #: The turn it belongs to (None: the connection's).
    turn: int | None = None
    #: The validator's rule, for a finding on the client's frames.
    rule: str | None = None

    @property
    def level(self) -> str:
        return REGISTRY[self.name].level if self.name in REGISTRY else MUST

    @property
    def basis(self) -> str:
        return REGISTRY[self.name].basis if self.name in REGISTRY else ""

    def as_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "status": self.status,
            "why": self.why,
            "level": self.level,
            "rule": self.rule or self.basis,
            "seq": self.seq,
            "turn": self.turn,
        }


def broken(
    name: str, why: str, seq: int | None = None, turn: int | None = None, rule: str | None = None
) -> Check:
    """An expectation of check ``name`` broken: a failure for a MUST, a warning else."""
    status = FAIL if REGISTRY[name].level == MUST else WARN
    return Check(name, status, why, seq, turn, rule)


@dataclass(frozen=True, slots=True)
class Options:
    """How test-agent behaves."""

    #: Whether it asks the client to write a file (in the session's cwd).
    allow_write: bool = False
    #: Seconds each wait on the client may take (an answer, or stdout being read).
    timeout: float = 30.0
    #: Warnings fail (exit 1), as ``validate --strict``.
    strict: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """The client's response to one of the agent's requests (None fields: it never came,
    ``missing`` says why)."""

    value: dict[str, Any] | None
    seq: int | None
    missing: str = ""

    @property
    def came(self) -> bool:
        return self.value is not None

    @property
    def result(self) -> Any:
        return (self.value or {}).get("result")

    @property
    def error(self) -> dict[str, Any] | None:
        error = (self.value or {}).get("error")
        return error if isinstance(error, dict) else None

    def error_words(self) -> str:
        error = self.error or {}
        return f"error {error.get('code')}: {str(error.get('message'))[:120]!r}"


def inside(path: str, cwd: str) -> str | None:
    """``path`` normalised, if it is absolute and inside ``cwd`` (never a path outside)."""
    if not path.startswith("/") or not cwd.startswith("/"):
        return None
    path, root = posixpath.normpath(path), posixpath.normpath(cwd)
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return path
    return None


#: An absolute path in a prompt's text: from a slash to the next blank or quote.
_PATH = re.compile(r"(?<![\w/.])(/[^\s\"'`<>()\[\]]+)")


def named_file(prompt: Any) -> str | None:
    """The file a prompt names: a ``resource_link`` block's ``file://`` URI, else the first
    absolute path in its text (a trailing full stop or comma left out)."""
    if not isinstance(prompt, list):
        return None
    for block in prompt:
        if isinstance(block, dict) and block.get("type") == "resource_link":
            uri = block.get("uri")
            if isinstance(uri, str) and uri.startswith("file://"):
                return unquote(urlsplit(uri).path)
    for block in prompt:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            found = _PATH.search(text) if isinstance(text, str) else None
            if found:
                return found.group(1).rstrip(".,;:!?")
    return None


def line(message: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **message})
