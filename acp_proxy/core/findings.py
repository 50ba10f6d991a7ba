"""A finding, as data: :class:`Violation`, what the validator returns and the readers
show. Its own module, so that what only shows findings (the conversation model, the
one-line summaries) needs none of the validator, its rules or the schema compiler."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Violation"]


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
