"""The probe's catalog: each check one :class:`Check`, registered by :func:`check` (as
pytest's and click's decorators do) beside its code in :mod:`.checks`; the catalog
(``--list``) and the run order are the registrations' order.

A check carries its name, its **basis** (the sentence it answers to, with its MUST, SHOULD
or MAY, or the peer suite whose stricter rule it follows), its **level** (what a broken
expectation is: ``MUST`` fails, ``SHOULD`` warns), what it **needs** (checks run first,
unreported unless they fail, and whose failure skips it), whether it sends a prompt
(``turn``: skipped once the first prompt turn failed), and its body.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_proxy.transcript.items import Addon

#: How a check ends.
PASS, FAIL, WARN, SKIP = "pass", "fail", "warn", "skip"
#: A check's level: a broken MUST fails; a SHOULD (JSON-RPC's suggested codes, a peer
#: suite's stricter rule) warns.
MUST, SHOULD = "MUST", "SHOULD"

#: Where the protocol's pages are (``/v1/initialization``, ...).
SPEC_SITE = "https://agentclientprotocol.com/protocol"

#: What a check's code is: handed the run (:class:`~.runner.Probe`), it returns what it found
#: (a pass), or raises to end otherwise.
Body = Callable[[Any], str]


@dataclass(frozen=True, slots=True)
class Check:
    """One check of the probe: its name (for ``--only``/``--skip``), the spec page it comes
    from (``spec``: the page and section; ``page``: the page's address under the protocol
    version's docs, ``page2`` where v2's differs), what it checks, its basis and level, what
    it needs, and its code."""

    name: str
    spec: str
    what: str
    page: str = "overview"
    page2: str | None = None
    basis: str = ""
    level: str = MUST
    needs: tuple[str, ...] = ()
    #: It sends a prompt: skipped when the first prompt turn failed.
    turn: bool = False
    #: It runs after the agent's end (its output whole), even when the agent is gone.
    at_end: bool = False
    body: Body | None = None

    def link(self, protocol: int) -> str:
        """The spec page, on agentclientprotocol.com, for the version spoken."""
        page = self.page2 if protocol != 1 and self.page2 else self.page
        return f"{SPEC_SITE}/v{protocol if protocol in (1, 2) else 1}/{page}"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec,
            "description": self.what,
            "link": self.link(1),
            "basis": self.basis,
            "level": self.level,
            "needs": list(self.needs),
            "turn": self.turn,
        }


#: The checks, in the order they were registered: the order they run.
REGISTRY: list[Check] = []


def check(
    name: str,
    *,
    spec: str,
    what: str,
    basis: str,
    page: str = "overview",
    page2: str | None = None,
    level: str = MUST,
    needs: Iterable[str] = (),
    turn: bool = False,
    at_end: bool = False,
) -> Callable[[Body], Body]:
    """Register the decorated function as check ``name`` (see :class:`Check`); a name
    twice, or a need not registered before it, is a bug said at import."""

    def register(body: Body) -> Body:
        known = {c.name for c in REGISTRY}
        if name in known:
            raise ValueError(f"probe check {name!r} registered twice")
        missing = [n for n in needs if n not in known]
        if missing:
            raise ValueError(f"probe check {name!r} needs {missing}, not registered before it")
        if level not in (MUST, SHOULD):
            raise ValueError(f"probe check {name!r}: level {level!r} is not MUST or SHOULD")
        REGISTRY.append(Check(name, spec, what, page, page2, basis, level, tuple(needs), turn,
                              at_end, body))  # fmt: skip
        return body

    return register


def by_name() -> dict[str, Check]:
    return {c.name: c for c in REGISTRY}


def needed(wanted: Iterable[str]) -> set[str]:
    """The checks ``wanted`` need, directly or through others (not ``wanted`` themselves
    unless one needs another)."""
    checks, found = by_name(), set()
    stack = list(wanted)
    while stack:
        for need in checks[stack.pop()].needs:
            if need not in found:
                found.add(need)
                stack.append(need)
    return found


#: The file in the scratch directory the default prompt asks the agent to read (an agent
#: with tools uses one: fs, permissions and tool calls at work), and what it holds.
READ_ME = "hello.txt"
READ_ME_TEXT = "Hello from the acp-proxy probe.\n"
#: The prompts sent: harmless; the default asks for a file of the scratch directory.
DEFAULT_PROMPT = (
    f"Read the file {READ_ME} in the current directory and reply with its first line, nothing else."
)
#: The prompt after a cancel: no tool needed.
AFTER_CANCEL_PROMPT = "Reply with one short sentence saying hello. Do not use any tools."
#: The session the unknown-session check prompts: none has this id.
NO_SUCH_SESSION = "acp-proxy-probe-no-such-session"
CANCEL_PROMPT = (
    "Count slowly from 1 to 200, one number per line, with no other text. Do not use any tools."
)

#: What the common editors (Zed's ACP client among them) send under
#: ``clientCapabilities._meta``: opt-ins to terminal authentication and terminal output.
EDITOR_META = {"terminal-auth": True, "terminal_output": True}


@dataclass(frozen=True, slots=True)
class Options:
    """What the user asked for (``acp-proxy probe``'s options)."""

    protocol: int = 1
    prompt: str = DEFAULT_PROMPT
    timeout: float = 30.0
    permissions: str = "reject"
    allow_terminal: bool = False
    auth: str | None = None
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    record: str | None = None
    no_record: bool = False
    grace: float = 2.0
    #: ``--redact``: recorded with secrets replaced by tags, as ``run --redact``.
    redact: bool = False
    #: ``--addon``: the user's addons, handed the session as by ``run --addon``.
    addons: tuple[Addon, ...] = ()
    #: ``editor``: initialize as the common editors do (the ``_meta`` opt-ins of
    #: :data:`EDITOR_META`); ``plain``: the capabilities alone.
    initialize: str = "editor"
    #: Warnings fail (exit 1), as ``validate --strict``.
    strict: bool = False

    def wanted(self, name: str) -> bool:
        return (not self.only or name in self.only) and name not in self.skip

    def chosen(self) -> list[str]:
        """The checks asked for, in their order."""
        return [c.name for c in REGISTRY if self.wanted(c.name)]

    def prompts(self) -> bool:
        """Whether the prompt turn (``--prompt``'s) runs: wanted, or needed by a check
        wanted."""
        chosen = self.chosen()
        return "prompt" in chosen or "prompt" in needed(chosen)
