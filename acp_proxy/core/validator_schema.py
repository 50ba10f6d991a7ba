"""The official schema of the negotiated version, checked: :class:`SchemaRules`, the part
of the validator that checks each message's params, result and error against the shipped
schemas (stable, and unstable where a message uses what only it defines), and the rules that
says so, each rule's catalog entry and example (:data:`RULES`) beside the code that flags it.

:class:`~acp_proxy.core.validator_base.ValidatorBase` takes it in as a base class: the same
rule state, the same ``_flag``, the same guarantees (pure, never raises, bounded memory).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from acp_proxy.core import examples as ex
from acp_proxy.core.findings import Flag, Level, Rule, Scope, Violation
from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import SCHEMA_VERSIONS, methods_for
from acp_proxy.core.schema import Checker, Defect, Schema, schema_for, schema_sources
from acp_proxy.core.unstable import feature_message, surface_for
from acp_proxy.core.wire import Kind, Message, WireModel

__all__ = ["RULES", "SchemaRules", "known_to_either"]

E, W, N = Level.ERROR, Level.WARNING, Level.INFO  # N: a note
V1, V2 = Scope.V1, Scope.V2
TRANSPORT = "ACP transport"
UNSTABLE = "ACP unstable schema"

#: The rules of the schemas, in the catalog's order.
RULES: tuple[Rule, ...] = (
    Rule(
        "schema",
        E,
        "ACP schema",
        "A field missing, of the wrong JSON type, outside its closed enum or its bounds, per the "
        "official schema of the negotiated version (params by method, result by the request's "
        "method, error objects, every update variant).",
        example=(
            *ex.INIT,
            ("client", ex.NEW.replace('"/w"', "5")),
        ),
    ),
    Rule(
        "schema-lenient",
        W,
        "ACP schema",
        "A malformed field the SDKs silently replace with its default "
        "(x-deserialize-default-on-error), or a list item they drop; _meta that is not an object.",
        example=(
            *ex.TURN,
            ex.update(
                '{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","_meta":"x"}'
            ),
        ),
    ),
    Rule(
        "schema-reserved",
        W,
        "ACP schema",
        "A value the schema does not know where it has a catch-all variant: reserved for future "
        "versions (_-prefixed values are extensions and never flagged).",
        example=(*ex.TURN, ex.update(ex.TOOL.replace('"pending"', '"queued"'))),
    ),
    Rule(
        "not-in-schema",
        W,
        "ACP schema",
        "A value the shipped schemas (stable and unstable) do not define where ACP extends: an "
        "update variant, a content block type, an enum value (stop reason, tool kind or status, "
        "config category), a field. A newer schema may define it, so a warning, never an error "
        "(validate --strict fails on it), once per place and value per connection; _-prefixed "
        "ones are extensions, never flagged.",
        example=(
            *ex.TURN,
            ex.update(ex.TOOL.replace('"pending"', '"completed","durationMs":120')),
        ),
    ),
    Rule(
        "unknown-method",
        W,
        "ACP v2 schema; v1 Extensibility (Custom requests)",
        "A method the negotiated version does not define (not _-prefixed).",
        example=(
            *ex.INIT,
            ("client", '{"jsonrpc":"2.0","id":1,"method":"session/frob","params":{}}'),
        ),
    ),
    Rule(
        "unstable-feature",
        N,
        UNSTABLE,
        "A method, update variant, capability or field that only the version's unstable schema "
        "defines: the message is checked against that schema, and the session relies on a part "
        "of ACP that may still change. Once per feature per connection.",
        example=(
            *ex.SESSION,
            (
                "client",
                '{"jsonrpc":"2.0","id":2,"method":"session/fork","params":{"sessionId":"s1","cwd":"/w","mcpServers":[]}}',
            ),
        ),
    ),
    Rule(
        "mcp-legacy-method",
        W,
        "ACP unstable schema (MessageMcpRequest)",
        "mcp/connect or mcp/disconnect (with a connectionId): the older MCP-over-ACP draft, "
        "which the shipped unstable schema replaced with mcp/message (serverId, requestId).",
        example=(
            *ex.SESSION,
            (
                "agent",
                '{"jsonrpc":"2.0","id":0,"method":"mcp/connect","params":{"serverId":"srv1"}}',
            ),
        ),
    ),
)

#: initialize's v1 names, and what v2 calls them (NOTES.md: "v1 used clientCapabilities,
#: agentCapabilities, agentInfo"): on a v2 connection they are old, not newer.
_V1_NAMES = {
    "clientCapabilities": "capabilities",
    "agentCapabilities": "capabilities",
    "clientInfo": "info",
    "agentInfo": "info",
}

#: What absent params are checked as (never modified).
_NO_PARAMS: dict[str, Any] = {}

#: How many distinct not-in-schema findings a connection remembers (then forgets them all).
_UNKNOWNS = 1024

_show = preview


def _checker(schema: Schema, method: str, part: str, notification: bool) -> Checker | None:
    """The check of a message's params, result or error."""
    if part == "error":
        return schema.definition("Error")
    if part == "result":
        return schema.result(method)
    return schema.params(method, notification)


def _ok(value: Any) -> None:
    return None


def _spec(schema: Schema) -> str:
    """The schema a finding is against, by tag: ``ACP v1 schema 1.29.1`` (or ``unstable``)."""
    tag = schema_sources().tag(schema.version, schema.unstable)
    return f"ACP v{schema.version}{' unstable' if schema.unstable else ''} schema {tag}"


def known_to_either(
    schema: Schema, defects: list[Defect], check: Callable[[Schema], list[Defect] | None]
) -> tuple[Schema, list[Defect] | None]:
    """What the stable schema does not know is checked against the unstable one (which
    may define it) before it is reported: an unknown finding is unknown to both."""
    if schema.unstable or not any(d.unknown for d in defects):
        return schema, defects
    unstable = schema_for(schema.version, unstable=True)
    found = check(unstable)
    if found and any(d.unknown for d in found):
        return schema, found  # unknown to both: said against the stable schema's tag
    return unstable, found


def _place(defect: Defect, part: str) -> str:
    """Where a defect is: its path under ``part`` (``params.update.stopReason``)."""
    return defect.describe(part).split(":", 1)[0]


def _within(path: str, place: str) -> bool:
    """Whether ``path`` is ``place`` or under it."""
    return path == place or path.startswith((place + ".", place + "["))


def _legacy_mcp_params(params: dict[str, Any]) -> bool:
    """mcp/message params of the older draft: a connectionId, no serverId."""
    return "connectionId" in params and "serverId" not in params


class SchemaRules:
    """The shapes: the official schema of the negotiated version. A base class of
    :class:`~acp_proxy.core.validator_base.ValidatorBase`, which holds the state named here."""

    wire: WireModel
    _rules: ClassVar[dict[str, Rule]]
    _found: list[Violation]
    _schema: Schema | None
    _schema_key: int | None
    _unstable: set[str]
    _unknowns: set[str]
    _flag: Flag

    if TYPE_CHECKING:

        @property
        def version(self) -> int | None: ...

    def _schema_version(self) -> int:
        """The schema to check against: negotiated, else asked for; a version no schema is
        shipped for, the one the client asked for if there is one (an agent answering 99 to
        a v1 client is checked as the v1 it must speak), else the latest (v1 when unknown)."""
        wire = self.wire
        version = wire.version
        if version in SCHEMA_VERSIONS:
            return version
        if wire.requested in SCHEMA_VERSIONS:
            return wire.requested
        return 2 if version is not None and version >= 2 else 1

    def _current_schema(self) -> Schema:
        wire = self.wire
        key = wire.negotiated if wire.negotiated is not None else wire.requested
        schema = self._schema
        if schema is None or key != self._schema_key:
            schema = self._schema = schema_for(self._schema_version())
            self._schema_key = key
        return schema

    def _shape(self, message: Message, value: dict[str, Any], first: int) -> None:
        """Check params, result or error against the schema; one finding per defect."""
        method = message.method
        if method is None or method[:1] == "_":
            return
        notification = message.kind is Kind.NOTIFICATION
        if message.kind is Kind.RESPONSE:
            if message.request is None:
                return
            part = "error" if "error" in value else "result"
            target = value[part] if part == "error" else value.get("result")
        else:
            part, target = "params", value.get("params", _NO_PARAMS)
        if method == "mcp/message" and _legacy_mcp_params(message.params):
            if part == "params":
                self._legacy_mcp(method)
            return  # the older draft's shapes are in neither schema
        schema = self._current_schema()
        if self._uses_unstable(schema.version, method, part, notification, target):
            schema = schema_for(schema.version, unstable=True)
        checker = _checker(schema, method, part, notification)
        if checker is None:
            return
        if part == "result" and target is None and not checker({}):
            return  # v1 docs show `"result": null` for empty results; SDKs accept it
        defects = checker(target)
        if defects:
            schema, defects = known_to_either(
                schema, defects, lambda s: (_checker(s, method, part, notification) or _ok)(target)
            )
        if defects:
            self._report(defects, f"{method} ", part, first, schema)

    def _uses_unstable(
        self, version: int, method: str, part: str, notification: bool, target: Any
    ) -> bool:
        """Whether the message uses what only the unstable schema defines; each such
        feature gets one ``unstable-feature`` finding per connection."""
        if part == "error":
            return False
        surface = surface_for(version)
        if part == "result":
            finder = surface.result(method)
        else:
            finder = surface.params(method, notification)
        features = finder(target) if finder is not None else None
        if method in surface.methods:
            features = [method, *(features or ())]
        if not features:
            return False
        for feature in features:
            if feature not in self._unstable:
                self._unstable.add(feature)
                self._flag("unstable-feature", feature_message(feature, version))
        return True

    def _unknown_method(self, method: str) -> None:
        if methods_for(None).get(method):
            other = 1 if self.version == 2 else 2
            said = f"is not an ACP v{self.version} method (it is an ACP v{other} method)"
        else:
            note = self._current_schema().note
            said = f"{note[:-1]}; a custom method's name starts with _)"
        if self._first_unknown(f"method {method}"):  # once per method per connection
            self._flag("unknown-method", f"{method} {said}")

    def _unknown(self, name: str, value: Any) -> bool:
        """Whether neither schema of the connection's version defines ``value`` of definition
        ``name`` (the tables here hold the known values: a newer schema's are asked of it),
        and this connection was not told so yet (once per place and value, as not-in-schema)."""
        version = self._current_schema().version
        return not any(
            schema_for(version, unstable).defines(name, value) for unstable in (False, True)
        ) and self._first_unknown(f"{name} {_show(value)}")

    def _schema_defines(self, method: str) -> bool:
        """A method the tables here do not list but the schema does (a newer schema's):
        known, its shapes checked (the tables say who sends it, for wrong-direction)."""
        version = self._current_schema().version
        return any(
            (method, part) in schema_for(version, unstable).methods
            for unstable in (False, True)
            for part in ("Request", "Notification")
        )

    def _legacy_mcp(self, method: str) -> None:
        """Once per method per connection, as unstable features are."""
        if f"legacy {method}" in self._unstable:
            return
        self._unstable.add(f"legacy {method}")
        self._flag(
            "mcp-legacy-method",
            f"{method} with a connectionId is the older MCP-over-ACP draft: the shipped unstable "
            "schema has no mcp/connect or mcp/disconnect, and its mcp/message names serverId "
            "and requestId instead",
        )

    def _report(
        self, defects: list[Defect], method: str, part: str, first: int, schema: Schema
    ) -> None:
        """Flag schema defects, except those a hand-written rule reported on this frame; but
        where the schema says all that is wrong there is lenient (the SDKs replace the field
        with its default: x-deserialize-default-on-error), the hand-written finding gives
        way to the schema-lenient warning."""
        covered: list[str] = []
        for finding in self._found[first:]:
            entry = self._rules[finding.rule]
            places = entry.covers
            under = [d for d in defects if any(_within(_place(d, part), c) for c in places)]
            if under and all(d.lenient for d in under) and entry.gives_way:
                self._found.remove(finding)
            else:
                covered += places
        # a malformed lenient field is replaced by its default: whatever else a union's
        # branch says of that same value is the same defect (one finding, the lenient one)
        lenient = {_place(d, part) for d in defects if d.lenient}
        for defect in defects:
            path = defect.describe(part)
            where = _place(defect, part)
            if not defect.lenient and any(_within(where, p) for p in lenient):
                continue
            # an unknown value is said once per place and value per connection (reserved
            # where there is a catch-all, or not), also when a hand-written rule said it
            told = defect.unknown and not self._first_unknown(method + path)
            if told or any(_within(where, c) for c in covered):
                continue
            if defect.hard:
                rule = "schema"
            elif defect.unknown:
                rule = "schema-reserved" if defect.reserved else "not-in-schema"
            elif defect.reserved:
                rule = "schema-reserved"
            else:
                rule = "schema-lenient"
            if defect.unknown and schema.version == 2 and method.startswith("initialize"):
                old = [
                    f"{n} is v1's name for {v2}" for n, v2 in _V1_NAMES.items() if f'"{n}"' in path
                ]
                if old:
                    path += f" ({'; '.join(old)})"
            self._flag(rule, method + path, spec=_spec(schema))

    def _first_unknown(self, said: str) -> bool:
        """Whether this connection has not been told ``said`` (a not-in-schema finding is
        made once per connection: a stream of a newer variant is one warning, not one per
        chunk). Bounded: the values are the peer's."""
        if said in self._unknowns:
            return False
        if len(self._unknowns) >= _UNKNOWNS:
            self._unknowns.clear()
        self._unknowns.add(said)
        return True
