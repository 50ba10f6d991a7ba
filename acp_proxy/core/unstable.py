"""What only the unstable ACP schemas define, found in a message.

Theory of operation
-------------------
Each protocol version ships two official schemas (``schemas/acp-vN-schema.json`` and
``schemas/acp-vN-schema.unstable.json``, from ``@agentclientprotocol/sdk`` 2.4.0). The
unstable one is the stable one plus what is still being designed: methods
(``session/fork``, ``proxy/successor``, ``mcp/message``...), update variants, capabilities
and fields (``PromptResponse.usage``, an MCP server of type ``acp``). Agents shipping today
use parts of it, so a validator that knows only the stable schema cries wolf on them.

:class:`Surface` compiles, per definition, a *finder*: a function ``value -> features``
that names every unstable-only thing a value uses, or returns None when it uses none:

- a property the unstable definition has and the stable one does not (``Def.prop``),
  when present and not null ("omitted and null are equivalent");
- a discriminator value only the unstable union has (``Def type "acp"``);
- an enum value only the unstable enum has (``Def "value"``).

A finder walks only the parts of the schema that can reach such a difference: most of
the wire is stable, and there the finder is None (nothing to do per frame). The
validator checks a message that uses a feature against the unstable schema, and a
message that uses none against the stable one, so everything flagged before is still
flagged. Pure code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from acp_proxy.core.jsontext import preview
from acp_proxy.core.protocol import official_schema

__all__ = ["Finder", "Surface", "feature_message", "feature_named", "surface_for"]

#: The rule whose findings name the unstable features a connection uses.
RULE = "unstable-feature"
_SUFFIX = " is only in the unstable ACP v"


def feature_message(feature: str, version: int) -> str:
    """The message of an ``unstable-feature`` finding."""
    return f"{feature}{_SUFFIX}{version} schema (checked against it)"


def feature_named(message: str) -> str:
    """The feature an ``unstable-feature`` finding's message names."""
    return message.split(_SUFFIX, 1)[0]


#: Names the unstable-only features a value uses; None when it uses none.
Finder = Callable[[Any], "list[str] | None"]

#: Keywords that only describe: two nodes that differ only in these are the same.
_PROSE = frozenset({"description", "title", "examples", "x-docs-ignore"})


def _plain(node: Any) -> Any:
    """``node`` without its prose, to compare what it allows."""
    if isinstance(node, dict):
        return {k: _plain(v) for k, v in node.items() if k not in _PROSE}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _refs(node: Any) -> set[str]:
    """The definitions a node refers to, directly."""
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref.rsplit("/", 1)[1])
        for key, value in node.items():
            if key not in _PROSE:
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _tag_of(branches: list[Any]) -> str | None:
    """The property every ``const`` branch of a union fixes (``type``, ``sessionUpdate``)."""
    tags: set[str] = set()
    for branch in branches:
        props = branch.get("properties", {}) if isinstance(branch, dict) else {}
        for key, prop in props.items():
            if isinstance(prop, dict) and "const" in prop and key in branch.get("required", ()):
                tags.add(key)
    return tags.pop() if len(tags) == 1 else None


def _by_tag(branches: list[Any], tag: str) -> dict[Any, Any]:
    table: dict[Any, Any] = {}
    for branch in branches:
        prop = branch.get("properties", {}).get(tag) if isinstance(branch, dict) else None
        if isinstance(prop, dict) and "const" in prop:
            table[prop["const"]] = branch
    return table


def _consts(branches: list[Any]) -> set[Any] | None:
    """The values of a union of ``const`` branches (an enum written as a union)."""
    values: set[Any] = set()
    for branch in branches:
        if not isinstance(branch, dict) or "const" in branch.get("properties", {}):
            return None
        if "const" in branch:
            values.add(branch["const"])
        elif set(branch) - _PROSE != {"type"}:
            return None
    return values


class Surface:
    """The unstable-only surface of one version: its methods, and a finder per definition."""

    def __init__(self, stable: dict[str, Any], unstable: dict[str, Any]) -> None:
        self._stable: dict[str, Any] = stable.get("$defs", {})
        self._unstable: dict[str, Any] = unstable.get("$defs", {})
        known = {node.get("x-method") for node in self._stable.values()}
        #: Methods only the unstable schema defines.
        self.methods = frozenset(
            method
            for node in self._unstable.values()
            if isinstance(method := node.get("x-method"), str) and method not in known
        )
        #: (method, "Request" | "Notification" | "Response") -> definition name.
        self._methods: dict[tuple[str, str], str] = {}
        for name, node in self._unstable.items():
            method = node.get("x-method")
            for part in ("Request", "Notification", "Response"):
                if isinstance(method, str) and name.endswith(part):
                    self._methods[(method, part)] = name
        self._reach = self._reaching()
        self._finders: dict[str, Finder | None] = {}
        self._compiling: dict[str, list[Finder]] = {}

    def _reaching(self) -> frozenset[str]:
        """The definitions (in both schemas) that differ, or refer to one that does."""
        both = [name for name in self._unstable if name in self._stable]
        reach = {n for n in both if _plain(self._unstable[n]) != _plain(self._stable[n])}
        refs = {name: _refs(self._unstable[name]) for name in both}
        grown = True
        while grown:
            more = {n for n in both if n not in reach and refs[n] & reach}
            reach |= more
            grown = bool(more)
        return frozenset(reach)

    def params(self, method: str, notification: bool) -> Finder | None:
        """The finder of a request's or notification's params."""
        part = "Notification" if notification else "Request"
        name = self._methods.get((method, part))
        return self.definition(name) if name is not None else None

    def result(self, method: str) -> Finder | None:
        """The finder of a successful response's result to ``method``."""
        name = self._methods.get((method, "Response"))
        return self.definition(name) if name is not None else None

    def definition(self, name: str) -> Finder | None:
        """The finder of one definition (None: it uses nothing unstable, or is unknown)."""
        if name in self._finders:
            return self._finders[name]
        if name not in self._reach:
            return None
        pending = self._compiling.get(name)
        if pending is not None:  # a recursive reference: resolved once compiled
            return lambda value: pending[0](value) if pending else None
        cell: list[Finder] = []
        self._compiling[name] = cell
        finder = self._node(self._unstable[name], self._stable[name], name)
        del self._compiling[name]
        self._finders[name] = finder
        cell.append(finder or _nothing)
        return finder

    def _node(self, new: Any, old: Any, where: str) -> Finder | None:  # noqa: C901, PLR0912 - one branch per keyword
        """The finder of an unstable node, against its stable twin."""
        if not isinstance(new, dict) or not isinstance(old, dict):
            return None
        parts: list[Finder] = []
        ref = new.get("$ref")
        if isinstance(ref, str):
            found = self.definition(ref.rsplit("/", 1)[1])
            if found is not None:
                parts.append(found)
        props = self._properties(new, old, where)
        if props is not None:
            parts.append(props)
        if "items" in new:
            items = self._node(new["items"], old.get("items"), where)
            if items is not None:
                parts.append(_each(items))
        extra = new.get("additionalProperties")
        if isinstance(extra, dict):
            other = self._node(extra, old.get("additionalProperties"), where)
            if other is not None:
                parts.append(_values(other))
        enum = set(new.get("enum", ())) - set(old.get("enum", ()))
        if enum:
            parts.append(_values_in(enum, where))
        for key in ("allOf", "anyOf", "oneOf"):
            branches = new.get(key)
            twins = old.get(key) if key == "allOf" else old.get("anyOf") or old.get("oneOf")
            if isinstance(branches, list):
                union = self._union(branches, twins if isinstance(twins, list) else [], where)
                if union is not None:
                    parts.append(union)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else _all(parts)

    def _properties(self, new: dict[str, Any], old: dict[str, Any], where: str) -> Finder | None:
        props, known = new.get("properties"), old.get("properties") or {}
        if not isinstance(props, dict):
            return None
        added = tuple(key for key in props if key not in known)
        nested: dict[str, Finder] = {}
        for key, sub in props.items():
            if key in known:
                found = self._node(sub, known[key], where)
                if found is not None:
                    nested[key] = found
        if not added and not nested:
            return None
        return _object({key: f"{where}.{key}" for key in added}, nested)

    def _union(self, branches: list[Any], twins: list[Any], where: str) -> Finder | None:
        tag = _tag_of(branches)
        if tag is not None:
            return self._tagged(branches, twins, tag, where)
        values, old_values = _consts(branches), _consts(twins)
        if values is not None:
            added = values - (old_values or set())
            return _values_in(added, where) if added else None
        paired = [self._node(b, t, where) for b, t in zip(branches, twins, strict=False)]
        finders = [f for f in paired if f is not None]
        if not finders:
            return None
        return finders[0] if len(finders) == 1 else _all(finders)

    def _tagged(self, branches: list[Any], twins: list[Any], tag: str, where: str) -> Finder | None:
        new, old = _by_tag(branches, tag), _by_tag(twins, tag)
        added = {value: f"{where} {tag} {preview(value, 40)}" for value in new if value not in old}
        table = {
            value: finder
            for value, branch in new.items()
            if value in old and (finder := self._node(branch, old[value], where)) is not None
        }
        untagged = [b for b in branches if b not in new.values()]
        twin_untagged = [b for b in twins if b not in old.values()]
        rest = self._union(untagged, twin_untagged, where) if untagged else None
        if not added and not table and rest is None:
            return None

        def find(value: Any) -> list[str] | None:
            if type(value) is not dict:
                return None
            kind = value.get(tag)
            if type(kind) is not str:
                return rest(value) if rest is not None else None
            name = added.get(kind)
            if name is not None:
                return [name]
            branch = table.get(kind)
            if branch is not None:
                return branch(value)
            if kind not in new and rest is not None:
                return rest(value)
            return None

        return find


@functools.cache
def surface_for(version: int) -> Surface:
    """The unstable-only surface of a protocol version that ships with acp-proxy."""
    return Surface(official_schema(version), official_schema(version, unstable=True))


def _object(names: dict[str, str], nested: dict[str, Finder]) -> Finder:
    """Properties only the unstable schema has (``names``: key -> feature), and the
    finders of those both have."""

    def find(value: Any) -> list[str] | None:
        if type(value) is not dict:
            return None
        found = [name for key, name in names.items() if value.get(key) is not None] or None
        for key, finder in nested.items():
            item = value.get(key)
            if item is not None:
                more = finder(item)
                if more:
                    found = [*(found or ()), *more]
        return found

    return find


def _nothing(value: Any) -> None:
    return None


def _all(finders: list[Finder]) -> Finder:
    def find(value: Any) -> list[str] | None:
        found: list[str] | None = None
        for finder in finders:
            more = finder(value)
            if more:
                found = [*(found or ()), *more]
        return found

    return find


def _each(finder: Finder) -> Finder:
    def find(value: Any) -> list[str] | None:
        if type(value) is not list:
            return None
        found: list[str] | None = None
        for item in value:
            more = finder(item)
            if more:
                found = [*(found or ()), *more]
        return found

    return find


def _values(finder: Finder) -> Finder:
    def find(value: Any) -> list[str] | None:
        return _each(finder)(list(value.values())) if type(value) is dict else None

    return find


def _values_in(values: set[Any], where: str) -> Finder:
    names = {(type(v), v): f"{where} {preview(v, 40)}" for v in values}

    def find(value: Any) -> list[str] | None:
        if isinstance(value, (dict, list)):
            return None
        name = names.get((type(value), value))
        return [name] if name is not None else None

    return find
