"""Check messages against the official ACP JSON schemas, compiled to Python once per version.

Theory of operation
-------------------
The schemas (``acp_proxy/schemas/acp-v{1,2}-schema.json``, package data) use a
small subset of JSON Schema. :class:`Schema` compiles every ``$defs`` entry of
one version into a *checker*, a plain function ``value -> defects`` that returns
``None`` when the value conforms, at first use, and keeps it. Nothing is
interpreted per frame: a message costs a few dictionary look-ups per level.

- **Unions** (``anyOf``/``oneOf``) are compiled by shape, the way the schemas
  write them: branches that each fix one property to a ``const`` (``type``,
  ``sessionUpdate``, ``outcome``...) become a table from that value to the
  branch; a branch guarded by ``not`` is the catch-all for values the version
  does not know; a branch without the property is the untagged one (a v1 stdio
  MCP server, an ``agent`` auth method), for a value without it or naming its
  title; branches that are only ``const`` strings are an enum; any other union
  tries its branches in order and reports the closest one.
- **Known, unknown, broken.** The shipped schemas are a snapshot of a protocol that
  grows, so what they do not define where ACP extends is *unknown* (a warning that
  names the schema's tag: a newer schema may define it), never an error: a
  discriminator value of a tagged union (an update variant, a content block type),
  a value of an enum written as a union of ``const`` strings (a stop reason, a tool
  kind), a property of an object that does not take arbitrary ones
  (``additionalProperties``), null aside. Where the schema has a catch-all branch
  the unknown value is also *reserved*. What is broken stays an error: a missing
  or non-string discriminator, a known variant's required field missing or of the
  wrong type, a value outside an ``enum`` keyword (``"jsonrpc"``). ``_meta`` may be
  any object or null anywhere, and ``_``-prefixed discriminators, values and
  properties are extensions, never flagged.
- **Lenient fields**: a field marked ``x-deserialize-default-on-error`` is one
  the SDKs quietly replace with its default when it is malformed, and
  ``x-deserialize-skip-invalid-items`` arrays lose their bad items: defects under
  either are *lenient* (a warning). ``x-deserialize-default-on-null`` accepts null.
- ``oneOf`` is checked as ``anyOf`` plus "not more than one" for the branches
  that are not discriminated; string ``format`` values (``uri``, ``date-time``,
  ``regex``) are annotations and not checked; integer formats are ranges.

:func:`unhandled_keywords` lists every keyword a schema uses that the compiler
does not know; the tests require it to be empty for both shipped schemas, so an
updated schema can never be half-checked in silence. :func:`schema_sources` reads
which release the schemas come from and their tags (``SOURCES.md``, beside them):
findings, ``--version`` and recordings name them. Pure code: no I/O beyond reading
the package's own schemas and their ``SOURCES.md`` once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from acp_proxy.core.checks import (
    _ANNOTATIONS,
    _EXACT,
    _INTEGER_FORMATS,
    Checker,
    Defect,
    _all,
    _bounds,
    _const,
    _discriminator,
    _enum,
    _enum_union,
    _first_of,
    _lenient,
    _meta_of,
    _null_ok,
    _ok,
    _one,
    _only_ref,
    _show,
    _soften,
    _typed,
    _unknown_fields,
    json_type,
    prop_items,
)
from acp_proxy.core.protocol import SCHEMA_VERSIONS, official_schema

__all__ = [
    "Checker",
    "Defect",
    "Schema",
    "SchemaSources",
    "schema_for",
    "schema_sources",
    "unhandled_keywords",
]


_KEYWORDS = frozenset(
    {
        "$ref",
        "$defs",
        "type",
        "const",
        "enum",
        "format",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
    }
)
#: String formats that are annotations here; integer formats are ranges.
_STRING_FORMATS = frozenset({"uri", "date-time", "regex", "date", "email"})
_NUMBER_FORMATS = frozenset({"double", "float"})


def unhandled_keywords(schema: dict[str, Any]) -> set[str]:
    """Every keyword (or format) in ``schema`` the compiler does not handle."""
    found: set[str] = set()
    for node in _nodes(schema):
        for key, value in node.items():
            if key not in _KEYWORDS and key not in _ANNOTATIONS:
                found.add(key)
            if key == "format" and not (
                value in _INTEGER_FORMATS or value in _STRING_FORMATS or value in _NUMBER_FORMATS
            ):
                found.add(f"format: {value}")
            # additionalProperties may be a schema; unevaluatedProperties only `true`
            if (key == "unevaluatedProperties" and value is not True) or (
                key == "additionalProperties" and not isinstance(value, (bool, dict))
            ):
                found.add(f"{key}: {_show(value)}")
    return found


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema node below ``node`` (property names are not keywords)."""
    if not isinstance(node, dict):
        return
    yield node
    for key, value in node.items():
        if key in ("properties", "$defs"):
            for sub in value.values():
                yield from _nodes(sub)
        elif key in ("allOf", "anyOf", "oneOf"):
            for sub in value:
                yield from _nodes(sub)
        elif key in ("items", "not", "additionalProperties", "unevaluatedProperties"):
            yield from _nodes(value)


#: Objects with at most this many known fields are checked field by field (a look-up
#: per known field) rather than key by key (several look-ups per key present).
_BY_SCHEMA = 10


def _by_schema(  # long: it writes out the generated function's source, line by line
    props: dict[str, Checker],
    plain: dict[str, type],
    tagged: dict[str, tuple[str, dict[Any, Checker], Checker]],
    required: tuple[str, ...],
    where: str | None,
    strict: bool,
    known: frozenset[str] | None = None,
    unknown: Checker | None = None,
) -> Checker:
    """An object check that walks the schema's fields, generated as straight-line Python:
    a look-up and a type test per known field, no loop, no tuple unpacking; the value's
    other keys cost one subset test against ``known`` (then ``unknown`` says which are not
    in the schema)."""
    namespace: dict[str, Any] = {
        "_ABSENT": _ABSENT,
        "_one": _one,
        "Defect": Defect,
        "json_type": json_type,
        "where": where,
        "strict": strict,
        "known_all": known.issuperset if known is not None else None,
        "unknown": unknown,
    }
    lines = [
        "def check(value):",
        " if type(value) is not dict:",
        "  if strict:",
        "   return _one(Defect('', 'expected object, got ' + json_type(value), where))",
        "  return None",
        " found = None",
        " get = value.get",
    ]
    for index, (key, checker) in enumerate(props.items()):
        name = repr(key)
        namespace[f"c{index}"] = checker
        lines += [f" item = get({name}, _ABSENT)", " if item is _ABSENT:"]
        if key in required:
            lines += [
                "  found = found or []",
                f"  found.append(Defect({name}, 'required field missing', where))",
            ]
        else:
            lines.append("  pass")
        kind = plain.get(key)
        if kind is not None:
            namespace[f"t{index}"] = kind
            lines.append(f" elif type(item) is not t{index}:")
        else:
            lines.append(" else:")
        dispatch = tagged.get(key)
        if dispatch is not None:
            namespace[f"g{index}"], namespace[f"b{index}"] = dispatch[0], dispatch[1]
            lines += [
                "  if type(item) is dict:",
                f"   tag = item.get(g{index})",
                f"   defects = (b{index}.get(tag) if type(tag) is str else None) or c{index}",
                "   defects = defects(item)",
                "  else:",
                f"   defects = c{index}(item)",
            ]
        else:
            lines.append(f"  defects = c{index}(item)")
        lines += [
            "  if defects:",
            "   found = found or []",
            f"   found.extend(d.under({name}) for d in defects)",
        ]
    for key in required:
        if key not in props:
            lines += [
                f" if {key!r} not in value:",
                "  found = found or []",
                f"  found.append(Defect({key!r}, 'required field missing', where))",
            ]
    if unknown is not None:
        lines += [
            " if not known_all(value):",
            "  extra = unknown(value)",
            "  if extra:",
            "   found = found or []",
            "   found.extend(extra)",
        ]
    lines.append(" return found")
    # Built inside a factory, so every name the check reads is a closure cell (as fast
    # as a local), not a global or builtin looked up by name on each call.
    namespace.update(type=type, dict=dict, str=str)
    names = sorted(namespace)
    source = "\n".join(
        [f"def make({', '.join(names)}):", *(" " + line for line in lines), " return check"]
    )
    scope: dict[str, Any] = {}
    exec(_code(source), scope)
    check: Checker = scope["make"](**namespace)
    return check


_ABSENT = object()


@functools.cache
def _code(source: str) -> Any:
    """The generated source compiled, once per distinct text (many objects share one)."""
    return compile(source, "<schema object check>", "exec")


def _forward(cell: list[Checker]) -> Checker:
    """A reference to a definition still being compiled (the schema is recursive there)."""

    def check(value: Any) -> list[Defect] | None:
        return cell[0](value)

    return check


class Schema:
    """One version's schema, compiled. Build with :func:`schema_for`."""

    def __init__(self, document: dict[str, Any], version: int, tag: str = "?") -> None:
        self.version = version
        #: The stable schema's tag (``1.29.1``): what an unknown value is said not to be in.
        self.tag = tag
        #: What follows an unknown value's name in its defect. The validator checks a value
        #: the stable schema does not know against the unstable one before it reports it,
        #: so "either" holds.
        self.note = (
            f"is not in ACP v{version} schema {tag} (the unstable schema does not define it "
            "either; a newer schema may)"
        )
        #: Compiled from the unstable schema.
        self.unstable = False
        self._known_keys: dict[str, frozenset[str] | None] = {}
        self._defs: dict[str, Any] = document.get("$defs", {})
        self._checkers: dict[str, Checker] = {}
        self._compiling: dict[str, list[Checker]] = {}
        #: Tagged unions: checker -> (tag, branch by tag value), for inline dispatch.
        self._dispatch: dict[Checker, tuple[str, dict[Any, Checker]]] = {}
        self._requests: dict[str, Checker | None] = {}
        self._notifications: dict[str, Checker | None] = {}
        #: (method, "Request" | "Notification" | "Response") -> definition name.
        self.methods: dict[tuple[str, str], str] = {}
        for name, node in self._defs.items():
            method = node.get("x-method")
            if not isinstance(method, str):
                continue
            for part in ("Request", "Notification", "Response"):
                if name.endswith(part):
                    self.methods[(method, part)] = name
        for name in self._defs:
            self.ref(name)
        #: The params checker of session/update notifications: the most frequent frame.
        self.update: Checker = self.params("session/update", True) or _ok
        update_union = self._checkers.get("SessionUpdate")
        self._variants = self._dispatch.get(update_union, ("", {}))[1] if update_union else {}
        self._meta = _meta_of(self.methods.get(("session/update", "Notification")))

    def update_params(
        self, params: dict[str, Any], update: dict[str, Any], variant: str | None
    ) -> list[Defect] | None:
        """:attr:`update` for params already known to hold a string ``sessionId`` and an
        ``update`` object whose ``sessionUpdate`` is ``variant`` (as the wire model read it):
        the same verdict, without walking the envelope again."""
        branch = self._variants.get(variant)
        if branch is None:
            return self.update(params)
        found = branch(update)
        if found:
            found = [d.under("update") for d in found]
        meta = params.get("_meta", _ABSENT)
        if meta is not _ABSENT:
            bad = self._meta(meta)
            if bad:
                found = [*(found or ()), *(d.under("_meta") for d in bad)]
        return found

    # --- checking -------------------------------------------------------------

    def defines(self, name: str, value: Any) -> bool:
        """Whether definition ``name`` knows ``value`` (an enum's value; for a tagged union,
        an object holding just the tag): False only when it is unknown, so what a hand-written
        rule calls unknown is what the schema calls unknown (a schema without the definition
        cannot say it is)."""
        checker = self._checkers.get(name)
        return checker is None or not any(d.unknown for d in checker(value) or ())

    def definition(self, name: str) -> Checker:
        """The checker of one ``$defs`` entry."""
        return self._checkers[name]

    def params(self, method: str, notification: bool) -> Checker | None:
        """The checker of a request's or notification's params (None: not an ACP method)."""
        table = self._notifications if notification else self._requests
        if method in table:
            return table[method]
        name = self.methods.get((method, "Notification" if notification else "Request"))
        if name is None:
            # A method sent with the other kind: check the params it has.
            name = self.methods.get((method, "Request" if notification else "Notification"))
        checker = table[method] = self._checkers.get(name) if name else None
        if len(table) > 1024:  # methods are peer-chosen strings: keep the cache bounded
            table.clear()
        return checker

    def result(self, method: str) -> Checker | None:
        """The checker of a successful response's result to ``method``."""
        name = self.methods.get((method, "Response"))
        return self._checkers.get(name) if name else None

    # --- compiling ---------------------------------------------------------------

    def ref(self, name: str, open_: bool = False, tag: str | None = None) -> Checker:
        """The checker of ``#/$defs/name``, compiled once (recursion allowed). ``open_``:
        the variant that leaves the properties it does not know to its user (an ``allOf``
        that adds some), which are not checked twice; ``tag``: the variant that also knows
        its union's discriminator (a tagged union's branch that is just this definition)."""
        key = f"{name} (open)" if open_ else f"{name} +{tag}" if tag else name
        checker = self._checkers.get(key)
        if checker is not None:
            return checker
        pending = self._compiling.get(key)
        if pending is not None:  # a recursive reference: resolved once compiled
            return _forward(pending)
        if name not in self._defs:
            raise ValueError(f"ACP v{self.version} schema: no definition {name!r}")
        cell: list[Checker] = []
        self._compiling[key] = cell
        checker = self.compile(self._defs[name], name, open_, tag)
        cell.append(checker)
        self._checkers[key] = checker
        del self._compiling[key]
        return checker

    def known_keys(self, node: dict[str, Any], tag: str | None = None) -> frozenset[str] | None:
        """Every property an object of ``node`` may have (its own, its ``allOf`` parts' and
        its branches', through references; ``tag``: its union's discriminator), or None
        when it takes any (``additionalProperties``): the properties outside are unknown."""
        found = self._keys(node, set())
        if found is None:
            return None
        return frozenset(found | {tag} if tag else found)

    def _keys(self, node: Any, seen: set[str]) -> set[str] | None:
        if not isinstance(node, dict):
            return set()
        if node.get("additionalProperties") not in (None, False) or "unevaluatedProperties" in node:
            return None
        keys = set(node.get("properties", ()))
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[1]
            if name not in seen:
                if name not in self._known_keys:  # once per definition
                    found = self._keys(self._defs.get(name), {*seen, name})
                    self._known_keys[name] = None if found is None else frozenset(found)
                more = self._known_keys[name]
                if more is None:
                    return None
                keys |= more
        for part in ("allOf", "anyOf", "oneOf"):
            for sub in node.get(part, ()):
                found = self._keys(sub, seen)
                if found is None:
                    return None
                keys |= found
        return keys

    def compile(  # noqa: C901, PLR0912 - a branch per keyword
        self,
        node: dict[str, Any] | bool,
        where: str | None = None,
        open_: bool = False,
        tag: str | None = None,
    ) -> Checker:
        """Compile one schema node; ``where`` names the definition it belongs to. A node
        with properties says which others are unknown, unless ``open_`` (a part of a node
        that says it); ``tag``: the node is a tagged union's branch, its tag taken out."""
        if node is True or node == {}:
            return _ok
        if not isinstance(node, dict):
            raise ValueError(f"ACP v{self.version} schema: unsupported node {_show(node)}")
        only = _only_ref(node) if tag is not None and not open_ else None
        if only is not None:  # a branch that is its definition: one check, as fast as it
            return self.ref(only, tag=tag)
        ref = node.get("$ref")
        types = node.get("type")
        type_names = (types,) if isinstance(types, str) else tuple(types or ())
        # The node that lists properties judges the unknown ones; its parts leave them.
        owner = not open_ and ("properties" in node or tag is not None)
        known = self.known_keys(node, tag) if owner else None
        inner = open_ or owner
        parts: list[Checker] = []
        if isinstance(ref, str):
            parts.append(self.ref(ref.rsplit("/", 1)[1], inner))
        if "const" in node:
            parts.append(_const(node["const"], where))
        if "enum" in node:
            parts.append(_enum(tuple(node["enum"]), False, where))
        bounds = _bounds(node, where)
        if bounds is not None:
            parts.append(bounds)
        is_object = type_names in (("object",), ("object", "null"))
        if (
            node.get("properties")
            or node.get("required")
            or isinstance(node.get("additionalProperties"), dict)
            or known is not None
        ):
            parts.append(self._object(node, where, strict=is_object, known=known))
        elif is_object:
            parts.append(_typed(("object",), None, where))
        if "items" in node:
            parts.append(self._items(node))
        for sub in node.get("allOf", ()):
            parts.append(self.compile(sub, where, inner))
        for key in ("anyOf", "oneOf"):
            if key in node:
                parts.append(self._union(node[key], key == "oneOf", where, inner))
        if "not" in node:
            parts.append(self._not(node["not"], where))
        body = _all(parts) if parts else _ok
        if is_object:  # the object check tests the type itself
            return _null_ok(body) if "null" in type_names else body
        if not type_names:
            return body
        return _typed(type_names, body if parts else None, where)

    def _object(  # noqa: C901, PLR0915 - the hot path, in one piece
        self,
        node: dict[str, Any],
        where: str | None,
        strict: bool,
        known: frozenset[str] | None = None,
    ) -> Checker:
        props: dict[str, Checker] = {}
        for key, sub in node.get("properties", {}).items():
            if key == "_meta":
                props[key] = _meta_of(where)
                continue
            checker = self.compile(sub, where)
            if sub.get("x-deserialize-default-on-error"):
                checker = _lenient(checker)
            if sub.get("x-deserialize-default-on-null"):
                checker = _null_ok(checker)
            props[key] = checker
        required = tuple(node.get("required", ()))
        extra = node.get("additionalProperties")
        other = self.compile(extra, where) if isinstance(extra, dict) and extra else None
        props_get = props.get
        # Fields that are just a JSON type (most ids and texts) are tested inline: a
        # call saved per field per frame. A mismatch still goes to the checker to report.
        plain = {
            key: kind
            for key, sub in node.get("properties", {}).items()
            if key != "_meta" and (kind := self._plain_type(sub)) is not None
        }
        plain_get = plain.get
        # Fields that are a tagged union (update variants, content blocks) pick their
        # branch inline: the union's own check runs only for what is not a known tag.
        tagged = {
            key: (*self._dispatch[checker], checker)
            for key, checker in props.items()
            if checker in self._dispatch
        }
        tagged_get = tagged.get

        unknown = _unknown_fields(known, where, self.note) if known is not None else None

        if other is None and len(props) <= _BY_SCHEMA:
            return _by_schema(props, plain, tagged, required, where, strict, known, unknown)

        def check(value: Any) -> list[Defect] | None:  # noqa: C901, PLR0912 - the hot path
            if type(value) is not dict:
                if strict:
                    return _one(Defect("", f"expected object, got {json_type(value)}", where))
                return None  # another keyword (the type, the union) says what it must be
            found: list[Defect] | None = None
            for key in required:
                if key not in value:
                    found = found or []
                    found.append(Defect(key, "required field missing", where))
            for key, item in value.items():
                if type(item) is plain_get(key):
                    continue
                dispatch = tagged_get(key)
                if dispatch is not None and type(item) is dict:
                    kind = item.get(dispatch[0])
                    branch = dispatch[1].get(kind) if type(kind) is str else None
                    defects = (branch or dispatch[2])(item)
                    if defects:
                        found = found or []
                        found.extend(d.under(key) for d in defects)
                    continue
                checker = props_get(key)
                if checker is None:
                    if other is None or key == "_meta":
                        continue
                    checker = other
                defects = checker(item)
                if defects:
                    found = found or []
                    found.extend(d.under(key) for d in defects)
            if unknown is not None and known is not None and not known.issuperset(value):
                extra = unknown(value)
                if extra:
                    found = [*(found or ()), *extra]
            return found

        return check

    def _plain_type(self, node: dict[str, Any]) -> type | None:
        """The Python type of a node that says nothing but one JSON type (str, bool...)."""
        while True:
            keys = set(node) - _ANNOTATIONS
            if keys == {"$ref"}:
                node = self._defs.get(node["$ref"].rsplit("/", 1)[1], {})
            elif keys == {"allOf"} and len(node["allOf"]) == 1:
                node = node["allOf"][0]
            elif keys == {"type"} and isinstance(node["type"], str) and node["type"] in _EXACT:
                return _EXACT[node["type"]]
            else:
                return None

    def _items(self, node: dict[str, Any]) -> Checker:
        item = self.compile(node["items"])
        skip = bool(node.get("x-deserialize-skip-invalid-items"))

        def check(value: Any) -> list[Defect] | None:
            if type(value) is not list:
                return None
            found: list[Defect] | None = None
            for index, element in enumerate(value):
                defects = item(element)
                if defects:
                    found = found or []
                    key = f"[{index}]"
                    found.extend(d.under(key) for d in (_soften(defects) if skip else defects))
            return found

        return check

    def _not(self, node: dict[str, Any], where: str | None) -> Checker:
        inner = self.compile(node, where, open_=True)

        def check(value: Any) -> list[Defect] | None:
            if inner(value):
                return None
            return _one(Defect("", "matches a shape this field must not have", where))

        return check

    @staticmethod
    def _is_catch_all(node: dict[str, Any]) -> bool:
        """A union branch for values the version does not know (guarded by ``not``)."""
        return "not" in node and isinstance(node.get("properties"), dict)

    def _union(
        self, branches: list[dict[str, Any]], one: bool, where: str | None, open_: bool = False
    ) -> Checker:
        enum = _enum_union(branches, where, self.note)
        if enum is not None:
            return enum
        nulls = [b for b in branches if b.get("type") == "null" and len(b) <= 2]
        if len(nulls) == 1 and len(branches) == 2:
            other = self.compile(next(b for b in branches if b is not nulls[0]), where, open_)
            return _null_ok(other)
        tag = _discriminator(branches)
        if tag is not None:
            return self._tagged(branches, tag, one, where, open_)
        return _first_of([self.compile(b, where, open_) for b in branches], one, where)

    def _tagged(  # noqa: C901 - the hot path (every update variant), in one piece
        self,
        branches: list[dict[str, Any]],
        tag: str,
        one: bool,
        where: str | None,
        open_: bool = False,
    ) -> Checker:
        table: dict[Any, Checker] = {}
        catch_all: Checker | None = None
        rest: list[Checker] = []
        #: The untagged branches' titles: the tag values they are (``stdio``, ``agent``).
        untagged: set[str] = set()
        for branch in branches:
            prop = branch.get("properties", {}).get(tag, {})
            if "const" in prop:
                # the union has checked the value is an object and read the tag
                stripped = {k: v for k, v in branch.items() if k != "type"}
                stripped["properties"] = {k: v for k, v in prop_items(branch) if k != tag}
                stripped["required"] = [k for k in branch.get("required", ()) if k != tag]
                table[prop["const"]] = self.compile(stripped, where, open_, None if open_ else tag)
            elif self._is_catch_all(branch):
                # a variant this schema does not know: its properties are its own
                plain = {k: v for k, v in branch.items() if k != "not"}
                catch_all = self.compile(plain, where, open_=True)
            else:
                rest.append(self.compile(branch, where, open_))
                if isinstance(branch.get("title"), str):
                    untagged.add(branch["title"])
        note = self.note
        fallback = _first_of(rest, one, where) if rest else None

        def check(value: Any) -> list[Defect] | None:
            if type(value) is not dict:
                return _one(Defect("", f"expected object, got {json_type(value)}", where))
            if tag not in value:
                if fallback is not None:
                    return fallback(value)
                return _one(Defect(tag, "required field missing", where))
            kind = value[tag]
            branch = table.get(kind) if isinstance(kind, str) else None
            if branch is not None:
                return branch(value)
            if not isinstance(kind, str):
                if fallback is not None:
                    return fallback(value)
                return _one(Defect(tag, f"expected string, got {json_type(kind)}", where))
            if catch_all is not None:
                found = catch_all(value)
                if kind.startswith("_"):
                    return found
                unknown = Defect(tag, f"{_show(kind)} {note}", where, reserved=True, unknown=True)
                return [unknown, *(found or ())]
            if fallback is not None and kind in untagged:
                # an untagged branch, named by its title (the SDKs' untagged variant reads
                # ``{"type": "stdio", ...}`` as stdio): its fields, the tag aside
                return fallback({k: v for k, v in value.items() if k != tag})
            if kind.startswith("_"):
                return None
            # a variant of a later schema (an untagged branch would not take it: an MCP
            # transport "ws" is no stdio server lacking a command): its properties are its own
            return _one(Defect(tag, f"{_show(kind)} {note}", where, unknown=True))

        self._dispatch[check] = (tag, table)
        return check


@dataclass(frozen=True, slots=True)
class SchemaSources:
    """Where the shipped schemas come from, as their ``SOURCES.md`` says."""

    #: The package and release they are copied from (``@agentclientprotocol/sdk 2.4.0``).
    release: str
    #: (protocol version, unstable) -> the schema's tag (``1.29.1``).
    tags: dict[tuple[int, bool], str]

    def tag(self, version: int, unstable: bool = False) -> str:
        """The tag of one shipped schema (``?`` if its SOURCES.md row is missing)."""
        return self.tags.get((version, unstable), "?")

    def as_dict(self) -> dict[str, str]:
        """The stored form (a recording's start record): ``v1``, ``v1-unstable``..., ``from``."""
        found = {
            f"v{version}{'-unstable' if unstable else ''}": self.tag(version, unstable)
            for version in SCHEMA_VERSIONS
            for unstable in (False, True)
        }
        return {**found, "from": self.release}

    def summary(self) -> str:
        """One line: ``ACP v1 schema 1.29.1 (unstable 1.29.1), ..., from <release>``."""
        parts = [
            f"ACP v{v} schema {self.tag(v)} (unstable {self.tag(v, True)})" for v in SCHEMA_VERSIONS
        ]
        return f"{', '.join(parts)}, from {self.release}"


_ROW = re.compile(
    r"^\|\s*`acp-v(\d+)-schema(\.unstable)?\.json`\s*\|[^|]*\|\s*([^|\s]+)\s*\|", re.M
)
_RELEASE = re.compile(r"\[`([^`]+)`\]\([^)]*\)\s*\*\*([^*\s]+)\*\*")


@functools.cache
def schema_sources() -> SchemaSources:
    """The release and tags of the shipped schemas, read from their ``SOURCES.md`` (the one
    place they are written: updating the schemas stays copying files and editing that page)."""
    text = resources.files("acp_proxy.core").joinpath("schemas/SOURCES.md").read_text("utf-8")
    release = _RELEASE.search(text)
    tags = {(int(m[1]), bool(m[2])): m[3] for m in _ROW.finditer(text)}
    return SchemaSources(f"{release[1]} {release[2]}" if release else "?", tags)


@functools.cache
def schema_for(version: int, unstable: bool = False) -> Schema:
    """The compiled schema of a protocol version that ships with acp-proxy (the stable
    one, or the unstable one: see :mod:`acp_proxy.core.unstable`)."""
    if version not in SCHEMA_VERSIONS:
        raise ValueError(f"no schema for ACP v{version}")
    schema = Schema(official_schema(version, unstable), version, schema_sources().tag(version))
    schema.unstable = unstable
    return schema
