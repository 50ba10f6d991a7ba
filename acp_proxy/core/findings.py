"""A finding and the rule it breaks, as data: :class:`Violation`, what the validator returns
and the readers show; :class:`Rule`, one entry of the catalog; :class:`Flag`, how a rule is
flagged. Their own module, so that
what only shows findings (the conversation model, the one-line summaries) needs none of the
validator, its rules or the schema compiler; and so that each module of the validator
defines its rules beside their checks (:mod:`acp_proxy.core.rules` gathers them)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

__all__ = ["Example", "Flag", "Level", "Rule", "Scope", "Violation"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One finding: a rule broken at a frame (or at the end of the connection)."""

    #: Stable kebab-case rule id (see :mod:`acp_proxy.core.rules`).
    rule: str
    #: ``error`` or ``warning``.
    level: str
    #: One sentence naming the offending ids or values.
    message: str
    #: Where the rule comes from.
    spec: str
    #: The frame that caused it, or the related frame for end-of-connection findings.
    seq: int | None = None
    #: The session it concerns, when known.
    session: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The stored form: rule, level, message, spec."""
        return {"rule": self.rule, "level": self.level, "message": self.message, "spec": self.spec}


class Level(StrEnum):
    """How bad a finding is."""

    #: A MUST, a MUST NOT, or a required field.
    ERROR = "error"
    #: A SHOULD, a reserved value, or a likely-but-not-certain breach.
    WARNING = "warning"
    #: Worth knowing, not wrong (a part of ACP that may still change); never changes an
    #: exit status.
    INFO = "info"


class Scope(StrEnum):
    """Which negotiated protocol versions a rule applies to."""

    #: Every version: JSON-RPC, transport, initialization and sessions.
    ALL = "all"
    #: ACP v1 only (and connections whose version is not known yet).
    V1 = "v1"
    #: ACP v2 only: the prompt lifecycle.
    V2 = "v2"


#: A rule's example: the frames of a connection whose last breaks it, each as the side that
#: sends it and its line on the wire (those before the last are what it needs: a handshake,
#: a session, a turn).
Example = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """One check: its catalog entry, defined beside the code that makes it, with the frames
    that break it (``acp-proxy rules RULE`` shows them; the tests feed them to a validator)."""

    #: Stable kebab-case id.
    id: str
    level: Level
    #: Where the rule comes from: a section of the Prompt Lifecycle page, or
    #: "JSON-RPC 2.0", "ACP v2 schema", "ACP transport".
    spec: str
    #: One line: what is flagged.
    description: str
    #: Which negotiated versions the rule applies to.
    scope: Scope = Scope.ALL
    #: Frames whose last breaks the rule; None when no frame of a recording can.
    example: Example | None = None
    #: Without an example: why not (``rules RULE`` says it).
    no_example: str = ""
    #: The paths of a defect the schema check would also find (``params.prompt``): when the
    #: rule fires on a frame, the schema's findings at or under them are left out (one
    #: finding per defect, the more specific rule).
    covers: tuple[str, ...] = ()
    #: Where the schema calls all that is wrong at those paths lenient
    #: (x-deserialize-default-on-error), the finding gives way to the schema-lenient
    #: warning; False: it stays (usage_update cost, for now: the example agent's
    #: --misbehave and the shipped recordings show this rule).
    gives_way: bool = True


class Flag(Protocol):
    """How a rule is flagged: the validator's, which knows the frame being checked (or,
    with ``where``, the seq and session a finding at the connection's end points at) and
    drops a rule whose scope is not the negotiated version's."""

    def __call__(
        self,
        rule_id: str,
        message: str,
        spec: str | None = None,
        where: tuple[int | None, str | None] | None = None,
    ) -> None: ...
