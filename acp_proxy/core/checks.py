"""The checks a schema compiles to: :class:`Defect` (what is wrong, and where), and the
combinators :class:`~acp_proxy.core.schema.Schema` builds each definition's checker from (a
plain function ``value -> defects``, ``None`` when the value conforms): types, bounds,
consts and enums, unions by discriminator or closest branch, unknown fields, ``_meta``,
lenient and nullable fields. Pure code, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from acp_proxy.core.jsontext import preview

__all__ = ["Checker", "Defect", "json_type", "prop_items"]


#: Keywords that only describe (or that the compiler reads where it needs them).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "title",
        "description",
        "default",
        "examples",
        "discriminator",
        "contentEncoding",
        "x-side",
        "x-method",
        "x-docs-ignore",
        "x-deserialize-default-on-error",
        "x-deserialize-default-on-null",
        "x-deserialize-skip-invalid-items",
    }
)

_INTEGER_FORMATS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}


@dataclass(frozen=True, slots=True)
class Defect:
    """One place where a value does not match its schema."""

    #: Dotted path from the checked value (``update.content``; ``prompt[0].type``).
    path: str
    #: What is wrong, e.g. ``required field missing``.
    problem: str
    #: The schema definition that expects it (``ToolCallContentChunk``), if known.
    where: str | None = None
    #: Under a field the SDKs replace with its default when malformed.
    lenient: bool = False
    #: An unknown value where the schema has a catch-all: reserved for future versions.
    reserved: bool = False
    #: A value or property the schema does not define where ACP extends (a newer schema may).
    unknown: bool = False

    @property
    def hard(self) -> bool:
        """An error, as opposed to a lenient, reserved or unknown warning."""
        return not (self.lenient or self.reserved or self.unknown)

    def under(self, key: str) -> Defect:
        """The same defect seen from the parent, through ``key`` (a name or ``[i]``)."""
        return replace(self, path=_join(key, self.path))

    def describe(self, prefix: str = "") -> str:
        """``prefix.path: problem (Where)``."""
        path = _join(prefix, self.path) if prefix else self.path
        where = f" ({self.where})" if self.where else ""
        return f"{path or '(value)'}: {self.problem}{where}"


#: A compiled check: None when the value conforms, else its defects.
Checker = Callable[[Any], "list[Defect] | None"]


def _join(key: str, path: str) -> str:
    if not path:
        return key
    return key + path if path.startswith("[") else f"{key}.{path}"


def _show(value: Any) -> str:
    return preview(value, 60)


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


#: Python types that settle a JSON type at once (int and float need more care).
_EXACT = {"object": dict, "array": list, "string": str, "boolean": bool}


def _one(defect: Defect) -> list[Defect]:
    return [defect]


def _soften(defects: list[Defect]) -> list[Defect]:
    return [d if d.lenient else replace(d, lenient=True) for d in defects]


def _all(checkers: list[Checker]) -> Checker:
    if len(checkers) == 1:
        return checkers[0]

    def check(value: Any) -> list[Defect] | None:
        found: list[Defect] | None = None
        for checker in checkers:
            defects = checker(value)
            if defects:
                found = defects if found is None else found + defects
        return found

    return check


def _ok(value: Any) -> None:
    return None


def _only_ref(node: dict[str, Any]) -> str | None:
    """The definition a (stripped) union branch is, when it says nothing else."""
    parts = node.get("allOf", ())
    rest = {k: v for k, v in node.items() if k not in _ANNOTATIONS and v not in ({}, [])}
    if set(rest) == {"allOf"} and len(parts) == 1 and set(parts[0]) - _ANNOTATIONS == {"$ref"}:
        ref = parts[0]["$ref"]
        return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None
    return None


def prop_items(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A node's properties, in order."""
    yield from node.get("properties", {}).items()


def _discriminator(branches: list[dict[str, Any]]) -> str | None:
    """The property every const branch of a union fixes, if they share one."""
    tags: set[str] = set()
    for branch in branches:
        for key, prop in prop_items(branch):
            if isinstance(prop, dict) and "const" in prop and key in branch.get("required", ()):
                tags.add(key)
    return tags.pop() if len(tags) == 1 else None


def _enum_union(branches: list[dict[str, Any]], where: str | None, note: str) -> Checker | None:
    """A union of ``const`` values, with at most one bare catch-all of the same type: an
    enum ACP extends (a string outside it is unknown; reserved where there is a catch-all)."""
    values: list[Any] = []
    catch_all: str | None = None
    for branch in branches:
        keys = set(branch) - _ANNOTATIONS - {"format"}
        if "const" in branch and keys <= {"const", "type"}:
            values.append(branch["const"])
        elif keys == {"type"} and isinstance(branch["type"], str) and catch_all is None:
            catch_all = branch["type"]
        else:
            return None
    if not values:
        return None
    if catch_all is None:
        return _enum(tuple(values), False, where, note)
    if catch_all == "string":
        return _enum(tuple(values), True, where, note)
    # An open integer set (error codes): any integer is allowed.
    return _typed((catch_all,), None, where)


def _enum(
    values: tuple[Any, ...], reserved: bool, where: str | None, note: str | None = None
) -> Checker:
    """A set of values. Outside it: with ``note`` (an enum ACP extends), a string is
    unknown (and ``reserved`` when the schema has a catch-all), a warning; else an error."""
    allowed = frozenset((type(v), v) for v in values)
    listed = ", ".join(v if isinstance(v, str) else _show(v) for v in values)
    strings = all(isinstance(v, str) for v in values)
    open_ = note is not None and strings

    def check(value: Any) -> list[Defect] | None:
        if not isinstance(value, (dict, list)) and (type(value), value) in allowed:
            return None
        if isinstance(value, str) and value.startswith("_"):
            return None  # an extension value
        if strings and not isinstance(value, str):
            return _one(Defect("", f"expected string, got {json_type(value)}", where))
        if open_:
            defect = Defect("", f"{_show(value)} {note}", where, reserved=reserved, unknown=True)
            return _one(defect)
        return _one(Defect("", f"{_show(value)} is not one of {listed}", where, reserved=reserved))

    return check


def _const(expected: Any, where: str | None) -> Checker:
    def check(value: Any) -> list[Defect] | None:
        if type(value) is type(expected) and value == expected:
            return None
        return _one(Defect("", f"expected {_show(expected)}, got {_show(value)}", where))

    return check


def _bounds(node: dict[str, Any], where: str | None) -> Checker | None:  # noqa: C901 - one test per keyword
    low, high = node.get("minimum"), node.get("maximum")
    fmt = node.get("format")
    if fmt in _INTEGER_FORMATS:
        f_low, f_high = _INTEGER_FORMATS[fmt]
        low = f_low if low is None else max(low, f_low)
        high = f_high if high is None else min(high, f_high)
    lengths = (node.get("minLength"), node.get("maxLength"))
    counts = (node.get("minItems"), node.get("maxItems"))
    if low is None and high is None and lengths == (None, None) and counts == (None, None):
        return None

    def check(value: Any) -> list[Defect] | None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if low is not None and value < low:
                return _one(Defect("", f"{_show(value)} is below the minimum {low}", where))
            if high is not None and value > high:
                return _one(Defect("", f"{_show(value)} is above the maximum {high}", where))
        elif isinstance(value, str):
            if lengths[0] is not None and len(value) < lengths[0]:
                return _one(Defect("", f"shorter than {lengths[0]} characters", where))
            if lengths[1] is not None and len(value) > lengths[1]:
                return _one(Defect("", f"longer than {lengths[1]} characters", where))
        elif isinstance(value, list):
            if counts[0] is not None and len(value) < counts[0]:
                return _one(Defect("", f"fewer than {counts[0]} items", where))
            if counts[1] is not None and len(value) > counts[1]:
                return _one(Defect("", f"more than {counts[1]} items", where))
        return None

    return check


def _typed(types: tuple[str, ...], body: Checker | None, where: str | None) -> Checker:
    """Check the JSON type first; the rest of the node only for a value of that type."""
    nullable = "null" in types
    names = tuple(t for t in types if t != "null")
    exact = tuple(_EXACT[t] for t in names if t in _EXACT)
    loose = tuple(_TYPE_TESTS[t] for t in names if t not in _EXACT)
    expected = " or ".join(types)
    if len(exact) == 1 and not loose and body is None:
        only = exact[0]

        def simple(value: Any) -> list[Defect] | None:  # the common case: a string field
            if type(value) is only or (value is None and nullable):
                return None
            return _one(Defect("", f"expected {expected}, got {json_type(value)}", where))

        return simple

    def check(value: Any) -> list[Defect] | None:
        if value is None and nullable:
            return None
        kind = type(value)
        if kind in exact or any(test(value) for test in loose):
            return body(value) if body is not None else None
        return _one(Defect("", f"expected {expected}, got {json_type(value)}", where))

    return check


#: How many unknown property names one defect lists.
_NAMES = 3


def _unknown_fields(known: frozenset[str], where: str | None, note: str) -> Checker:
    """The properties of an object outside ``known`` (null and ``_``-prefixed ones aside):
    one defect for the object, naming a few (names are the peer's: quoted, bounded)."""

    def check(value: Any) -> list[Defect] | None:
        names = [
            key
            for key, item in value.items()
            if key not in known and item is not None and key[:1] != "_"
        ]
        if not names:
            return None
        shown = ", ".join(_show(name) for name in names[:_NAMES])
        more = f" and {len(names) - _NAMES} more" if len(names) > _NAMES else ""
        if len(names) == 1:
            return _one(Defect("", f"field {shown} {note}", where, unknown=True))
        verb = note.replace("is not in", "are not in", 1).replace(" it ", " them ", 1)
        return _one(Defect("", f"fields {shown}{more} {verb}", where, unknown=True))

    return check


def _meta_of(where: str | None) -> Checker:
    """``_meta`` is any object, or null, anywhere."""

    def check(value: Any) -> list[Defect] | None:
        if value is None or type(value) is dict:
            return None
        problem = f"expected object or null, got {json_type(value)}"
        return _one(Defect("", problem, where, lenient=True))

    return check


def _lenient(checker: Checker) -> Checker:
    def check(value: Any) -> list[Defect] | None:
        found = checker(value)
        return _soften(found) if found else None

    return check


def _null_ok(checker: Checker) -> Checker:
    def check(value: Any) -> list[Defect] | None:
        return None if value is None else checker(value)

    return check


def _first_of(checkers: list[Checker], one: bool, where: str | None) -> Checker:
    """A union with no discriminator: the value must match one branch."""

    def check(value: Any) -> list[Defect] | None:
        best: list[Defect] | None = None
        passed: list[Defect] | None = None
        matches = 0
        for checker in checkers:
            found = checker(value)
            if not found or not any(d.hard for d in found):
                matches += 1
                if passed is None or (passed and not found):  # a clean branch is better
                    passed = found or []
                if not one and not passed:
                    break
                continue
            if best is None or _closer(found, best):
                best = found
        if one and matches > 1:
            return _one(Defect("", "matches more than one of the alternatives", where))
        if passed is not None:
            return passed or None
        return best

    return check


def _closer(found: list[Defect], best: list[Defect]) -> bool:
    """Prefer the branch that failed deeper, then the one with fewer defects."""
    depth = max(d.path.count(".") + d.path.count("[") + bool(d.path) for d in found)
    best_depth = max(d.path.count(".") + d.path.count("[") + bool(d.path) for d in best)
    if depth != best_depth:
        return depth > best_depth
    return len(found) < len(best)
