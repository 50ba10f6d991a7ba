"""What a session cost, as the agent reported it: the context window (``usage_update``'s
``used``/``size``), the cost (its cumulative ``cost``), and the tokens of the unstable
``Usage`` (a v1 prompt response's or a turn's idle ``state_update``'s: cumulative for the
session in v1, for the work just completed in v2, so added up there). Pure: messages in,
figures out; what an agent does not report is left out, never guessed."""

from __future__ import annotations

from typing import Any

from acp_proxy.core.wire import Message, ResponseMessage

__all__ = ["TOKEN_FIELDS", "Usage"]

#: The token counts of ``Usage``, in the order they are said.
TOKEN_FIELDS = (
    "inputTokens",
    "outputTokens",
    "thoughtTokens",
    "cachedReadTokens",
    "cachedWriteTokens",
    "totalTokens",
)


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


class Usage:
    """The usage one or more sessions reported (feed it every message, :meth:`take`)."""

    def __init__(self) -> None:
        #: The negotiated version of the connection being read (v1: Usage is cumulative).
        self._version: int | None = None
        #: The connection being read (session ids repeat across recordings).
        self._connection = 0
        #: Per session: the last context window (used, size), cost (amount, currency),
        #: and tokens (v1: the last reported; v2: the sum).
        self._context: dict[Any, tuple[int | None, int | None]] = {}
        self._cost: dict[Any, tuple[float, str | None]] = {}
        self._tokens: dict[Any, dict[str, int]] = {}

    def begin(self) -> None:
        """A connection opens: what follows is another connection's (its own version, its
        own sessions, even if their ids are the last one's)."""
        self._connection += 1
        self._version = None

    def take(self, message: Message) -> None:
        """One message (of a batch: each)."""
        session = (self._connection, message.session)
        if isinstance(message, ResponseMessage):
            result = message.frame.value.get("result") if not message.is_error else None
            if not isinstance(result, dict):
                return
            if message.method == "initialize":
                version = result.get("protocolVersion")
                self._version = version if type(version) is int else self._version
            elif message.method == "session/prompt" and isinstance(result.get("usage"), dict):
                self._add_tokens(session, result["usage"])
            return
        update = message.update
        if update is None:
            return
        variant = update.get("sessionUpdate")
        if variant == "usage_update":
            used, size = _count(update.get("used")), _count(update.get("size"))
            if used is not None or size is not None:
                self._context[session] = (used, size)
            cost = update.get("cost")
            if isinstance(cost, dict) and type(cost.get("amount")) in (int, float):
                currency = cost.get("currency")
                self._cost[session] = (
                    float(cost["amount"]),
                    currency if isinstance(currency, str) else None,
                )
            elif "cost" in update and cost is None:  # v2: null clears it
                self._cost.pop(session, None)
        elif variant == "state_update" and isinstance(update.get("usage"), dict):
            self._add_tokens(session, update["usage"])

    def _add_tokens(self, session: Any, usage: dict[str, Any]) -> None:
        counts = {k: c for k in TOKEN_FIELDS if (c := _count(usage.get(k))) is not None}
        if not counts:
            return
        if self._version == 1:  # cumulative for the session: the last one says it all
            self._tokens[session] = counts
            return
        kept = self._tokens.setdefault(session, {})
        for key, count in counts.items():
            kept[key] = kept.get(key, 0) + count

    @property
    def reported(self) -> bool:
        """Whether the agent reported any usage."""
        return bool(self._context or self._cost or self._tokens)

    def tokens(self) -> dict[str, int]:
        """Token counts over every session."""
        total: dict[str, int] = {}
        for counts in self._tokens.values():
            for key, count in counts.items():
                total[key] = total.get(key, 0) + count
        return {key: total[key] for key in TOKEN_FIELDS if key in total}

    def cost(self) -> dict[str, float]:
        """The cost over every session, per currency (``""``: none said)."""
        total: dict[str, float] = {}
        for amount, currency in self._cost.values():
            total[currency or ""] = total.get(currency or "", 0.0) + amount
        return total

    def context(self) -> tuple[int | None, int | None] | None:
        """The context window last reported (of any session): used, size."""
        return next(reversed(self._context.values()), None)

    def as_json(self) -> dict[str, Any]:
        """What was reported, for machines: ``tokens``, ``cost`` (per currency) and
        ``context`` ({used, size}); each only if reported."""
        document: dict[str, Any] = {}
        if self.tokens():
            document["tokens"] = self.tokens()
        if self.cost():
            document["cost"] = {k: round(v, 6) for k, v in self.cost().items()}
        context = self.context()
        if context is not None:
            document["context"] = {"used": context[0], "size": context[1]}
        return document

    def words(self) -> str:
        """What was reported, in a few words: ``1,200 in + 340 out tokens, cost 0.002 USD,
        context 2,400/200,000``; empty if nothing was."""
        said = []
        tokens = self.tokens()
        if tokens:
            parts = [
                f"{tokens[key]:,} {name}"
                for key, name in (("inputTokens", "in"), ("outputTokens", "out"))
                if key in tokens
            ]
            if not parts and "totalTokens" in tokens:
                parts = [f"{tokens['totalTokens']:,}"]
            said.append(f"{' + '.join(parts)} tokens" if parts else "tokens")
        for currency, amount in self.cost().items():
            said.append(f"cost {amount:g}{' ' + currency if currency else ''}")
        context = self.context()
        if context is not None:
            used, size = ("?" if n is None else f"{n:,}" for n in context)
            said.append(f"context {used}/{size}")
        return ", ".join(said)
