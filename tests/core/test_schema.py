"""The schema compiler, tested from the shipped schemas themselves: for every method's params
and result and every update variant of both versions, a valid instance passes clean, and each
required field dropped and each field given the wrong JSON type is an error at its path; each
enum given an outside value and each object given a field no schema defines is a warning (a
newer schema may define them) that names the schema's tag."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from acp_proxy.core.protocol import official_schema
from acp_proxy.core.schema import Checker, Defect, Schema, schema_for, unhandled_keywords

VERSIONS = (1, 2)


def test_the_compiler_handles_every_keyword_the_schemas_use() -> None:
    """A schema update that uses a keyword the compiler does not know fails here, so it can
    never be half-checked in silence."""
    for version in VERSIONS:
        for unstable in (False, True):
            assert unhandled_keywords(official_schema(version, unstable)) == set()
    assert unhandled_keywords({"$defs": {"X": {"type": "string", "pattern": "^a"}}}) == {"pattern"}
    assert unhandled_keywords({"type": "integer", "format": "int128"}) == {"format: int128"}


# --- valid instances, built from the schema -----------------------------------------------


class Examples:
    """The smallest valid instance of a schema node, and the places to break it."""

    def __init__(self, version: int, unstable: bool = False) -> None:
        self.defs: dict[str, Any] = official_schema(version, unstable)["$defs"]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """Follow ``$ref`` and single-``allOf`` wrappers to the node that says what a value is."""
        while True:
            if "$ref" in node:
                node = self.defs[node["$ref"].rsplit("/", 1)[1]]
            elif len(node.get("allOf", ())) == 1 and not STRUCTURE & set(node):
                node = node["allOf"][0]
            else:
                return node

    def example(self, node: Any) -> Any:  # noqa: C901, PLR0912 - one case per keyword
        if node is True or node == {}:
            return {}
        node = self.resolve(node)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return node["enum"][0]
        union = node.get("anyOf") or node.get("oneOf")
        base: Any = None
        kind = node.get("type")
        kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
        if kind == "object" or "properties" in node or "required" in node:
            base = {}
            required = node.get("required", ())
            for name, prop in node.get("properties", {}).items():
                # optional fields too, unless the SDKs default them (then breaking them is lenient)
                if name in required or not (lenient(prop) or name == "_meta"):
                    base[name] = self.example(prop)
            for name in required:
                base.setdefault(name, {})
        elif kind == "array":
            count = max(node.get("minItems", 0), 1)
            base = [self.example(node.get("items", {})) for _ in range(count)]
        elif kind == "string":
            base = "x" * max(node.get("minLength", 1), 1)
        elif kind == "integer":
            base = max(node.get("minimum", 1), 1)
        elif kind == "number":
            base = 1.5
        elif kind == "boolean":
            base = True
        elif kind == "null":
            base = None
        for sub in node.get("allOf", ()):
            base = merge(base, self.example(sub))
        if union:
            usable = [b for b in union if "not" not in b and self.resolve(b).get("type") != "null"]
            base = merge(base, self.example(usable[0] if usable else union[0]))
        return base

    def sites(self, node: Any, value: Any, path: Path = ()) -> Iterator[tuple[Path, str, Any]]:
        """(path, what, detail) for each required field, typed field and closed enum, at every
        depth of the instance (through the first item of each list)."""
        node = self.unwrap(node)
        if not isinstance(value, dict):
            return
        props: dict[str, Any] = {}
        required: list[str] = []
        for part in self.parts(node, value):
            props.update(part.get("properties", {}))
            required += part.get("required", ())
        for name, prop_node in props.items():
            if name not in value or name == "_meta":
                continue
            here = (*path, name)
            if name in required:
                yield here, "required", None
            if lenient(prop_node):
                continue  # defects under it are warnings, by design
            prop = self.unwrap(prop_node)
            kind = prop.get("type")
            if isinstance(kind, str) and kind in WRONG and "const" not in prop:
                yield here, "type", kind
            closed = closed_enum(prop)
            if closed:
                yield here, "enum", closed
            item = value[name]
            if isinstance(item, dict):
                yield from self.sites(prop, item, here)
            elif (
                isinstance(item, list)
                and item
                and isinstance(prop.get("items"), dict)
                and not prop.get("x-deserialize-skip-invalid-items")
            ):
                yield from self.sites(prop["items"], item[0], (*here, 0))

    def unwrap(self, node: dict[str, Any]) -> dict[str, Any]:
        """Resolve, and look through a nullable union."""
        node = self.resolve(node)
        union = node.get("anyOf")
        if union and len(union) == 2 and {"type": "null"} in union and "properties" not in node:
            other = union[0] if union[1] == {"type": "null"} else union[1]
            return self.resolve(other)
        return node

    def parts(self, node: dict[str, Any], value: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The node and the sub-schemas that apply to ``value``: allOf, and the union branch
        the instance took (its discriminator, or the first)."""
        yield node
        for sub in node.get("allOf", ()):
            yield from self.parts(self.resolve(sub), value)
        union = node.get("anyOf") or node.get("oneOf")
        if not union:
            return
        for branch in union:
            consts = [
                (k, p["const"]) for k, p in branch.get("properties", {}).items() if "const" in p
            ]
            if consts and all(value.get(k) == c for k, c in consts):
                taken = branch
                if any(not branch_consts(b) for b in union):
                    # another branch takes values without the discriminator: it is optional
                    names = {k for k, _ in consts}
                    required = [r for r in branch["required"] if r not in names]
                    taken = {**branch, "required": required}
                yield from self.parts(taken, value)
                return
        usable = [b for b in union if "not" not in b and self.resolve(b).get("type") != "null"]
        if usable and not any("properties" in b and "const" in str(b) for b in union):
            yield from self.parts(self.resolve(usable[0]), value)


def branch_consts(branch: dict[str, Any]) -> bool:
    return any("const" in p for p in branch.get("properties", {}).values())


#: A path into an instance: keys and list indexes.
Path = tuple[str | int, ...]


def show(path: Path) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def lenient(node: dict[str, Any]) -> bool:
    return bool(
        node.get("x-deserialize-default-on-error") or node.get("x-deserialize-default-on-null")
    )


def closed_enum(node: dict[str, Any]) -> list[Any] | None:
    """The values of a union of string consts with no catch-all."""
    union = node.get("oneOf") or node.get("anyOf")
    if not union or not all("const" in b and isinstance(b["const"], str) for b in union):
        return None
    return [b["const"] for b in union]


#: Keywords that make a node more than a wrapper around its one ``allOf``.
STRUCTURE = {"type", "properties", "required", "anyOf", "oneOf", "const", "enum"}

#: A value of another JSON type, per expected type.
WRONG = {"string": 7, "integer": "7", "number": "7", "boolean": "yes", "object": [1], "array": {}}


def merge(base: Any, extra: Any) -> Any:
    if isinstance(base, dict) and isinstance(extra, dict):
        return {**base, **extra}
    return extra if base is None else base


def delete(value: dict[str, Any], path: Path) -> dict[str, Any]:
    broken = copy.deepcopy(value)
    target: Any = broken
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return broken


def put(value: dict[str, Any], path: Path, new: Any) -> dict[str, Any]:
    broken = copy.deepcopy(value)
    target: Any = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return broken


#: A shipped schema: (version, unstable).
Key = tuple[int, bool]
KEYS: tuple[Key, ...] = ((1, False), (2, False), (1, True), (2, True))


def cases() -> Iterator[tuple[Key, str, str]]:
    """(schema, definition, label) for every method's params and result, and every update,
    of the stable schemas and of the unstable ones."""
    for key in KEYS:
        version, unstable = key
        schema = schema_for(version, unstable)
        prefix = f"v{version}{' unstable' if unstable else ''}"
        for (method, part), name in sorted(schema.methods.items()):
            yield key, name, f"{prefix} {method} {part}"
        update = official_schema(version, unstable)["$defs"]["SessionUpdate"]
        for branch in update.get("anyOf") or update["oneOf"]:
            tag = branch.get("properties", {}).get("sessionUpdate", {}).get("const")
            if tag:
                yield key, f"SessionUpdate:{tag}", f"{prefix} update {tag}"


CASES = list(cases())


def instance(key: Key, name: str) -> tuple[Checker, dict[str, Any], dict[str, Any]]:
    """The checker, a valid instance and the node it came from."""
    examples = Examples(*key)
    schema: Schema = schema_for(*key)
    if name.startswith("SessionUpdate:"):
        tag = name.split(":", 1)[1]
        union = examples.defs["SessionUpdate"]
        node = next(
            b
            for b in union.get("anyOf") or union["oneOf"]
            if b.get("properties", {}).get("sessionUpdate", {}).get("const") == tag
        )
        return schema.definition("SessionUpdate"), examples.example(node), node
    node = examples.defs[name]
    return schema.definition(name), examples.example(node), node


@pytest.mark.parametrize(("key", "name"), [c[:2] for c in CASES], ids=[c[2] for c in CASES])
def test_valid_instances_pass_and_broken_ones_are_flagged_at_their_path(key, name):
    """A valid instance passes clean; each required field dropped and each of the wrong JSON
    type is an error at that field; an enum's outside value and an unknown field, a warning."""
    checker, value, node = instance(key, name)
    assert checker(value) is None, (value, checker(value))
    examples = Examples(*key)
    sites = list(examples.sites(node, value))
    for path, what, detail in sites:
        if what == "required":
            found = checker(delete(value, path)) or []
            expected = "required field missing"
        elif what == "type":
            found = checker(put(value, path, WRONG[detail])) or []
            expected = f"expected {detail}"
        else:  # an enum ACP extends: a value a newer schema may define, a warning
            found = checker(put(value, path, "not-a-value")) or []
            hits = [d for d in found if d.path == show(path)]
            assert hits and all(d.unknown and not d.hard for d in hits), (path, what, found)
            assert hits[0].problem == f'"not-a-value" {schema_for(*key).note}'
            continue
        hits = [d for d in found if d.path == show(path) and d.problem.startswith(expected)]
        assert hits and all(d.hard for d in hits), (path, what, found)
    # a field no schema defines, on the checked object itself: unknown, a warning
    if isinstance(value, dict) and schema_for(*key).known_keys(node) is not None:
        found = checker({**value, "notInSchema": 1}) or []
        assert [(d.path, d.unknown, d.hard) for d in found] == [("", True, False)], found
        assert found[0].problem == f'field "notInSchema" {schema_for(*key).note}'


def test_the_cases_cover_every_method_and_update_of_both_versions():
    """Every method's params and result and every update variant is generated above."""
    labels = {c[2] for c in CASES}
    assert "v1 session/prompt Response" in labels and "v2 session/prompt Response" in labels
    assert "v1 update tool_call" in labels and "v2 update tool_call_content_chunk" in labels
    assert len([c for c in CASES if c[0] == (1, False)]) == len(schema_for(1).methods) + 14
    assert len([c for c in CASES if c[0] == (2, False)]) == len(schema_for(2).methods) + 19
    # the unstable schemas: 13 methods more each, and more update variants
    assert (
        "v1 unstable session/fork Request" in labels
        and "v2 unstable mcp/message Response" in labels
    )
    assert len(schema_for(1, True).methods) > len(schema_for(1).methods)
    assert len([c for c in CASES if c[0] == (1, True)]) == len(schema_for(1, True).methods) + 19
    assert len([c for c in CASES if c[0] == (2, True)]) == len(schema_for(2, True).methods) + 23


def test_nested_defects_name_the_innermost_definition_and_path():
    """Defects deep in a message name the path from the checked value and the definition."""
    checker = schema_for(2).params("session/prompt", notification=False)
    assert checker is not None
    found = checker({"sessionId": "s", "prompt": [{"type": "image", "data": "x"}]})
    assert found == [Defect("prompt[0].mimeType", "required field missing", "ImageContent")]
    assert found[0].describe("params") == (
        "params.prompt[0].mimeType: required field missing (ImageContent)"
    )


def test_extension_values_are_never_flagged():
    """_-prefixed discriminators, enum values and fields are extensions; _meta is any object or
    null; an unknown field is a warning."""
    v1 = schema_for(1).definition("SessionNotification")
    assert v1({"sessionId": "s", "update": {"sessionUpdate": "_custom", "x": 1}}) is None
    block = schema_for(2).definition("ContentBlock")
    assert block({"type": "_widget"}) is None
    reserved = block({"type": "widget"})
    assert reserved is not None and [d.reserved for d in reserved] == [True]
    text = {"type": "text", "text": "x", "_meta": None, "_extra": 1, "later": None}
    assert block(text) is None  # a _-prefixed field is an extension; a null one, absent
    unknown = block({**text, "extra": 1})
    assert unknown is not None and [(d.path, d.unknown) for d in unknown] == [("", True)]
    # v1's ContentBlock has no catch-all: an unknown type is unknown all the same, not broken
    v1_block = schema_for(1).definition("ContentBlock")({"type": "widget"})
    assert v1_block is not None and [(d.unknown, d.hard) for d in v1_block] == [(True, False)]


def test_a_union_with_an_untagged_branch_knows_its_name_and_not_a_later_variant():
    """v1's MCP servers and auth methods: tagged branches, and one untagged (stdio, agent). A
    value naming the untagged one (``"type": "stdio"``, as clients send) is that branch; a
    later variant (a transport ``ws``) is one warning on its tag, never the untagged branch's
    missing fields as errors."""
    server = schema_for(1).definition("McpServer")
    stdio = {"name": "m", "command": "/bin/m", "args": [], "env": []}
    assert server(stdio) is None and server({**stdio, "type": "stdio"}) is None
    broken = server({"type": "stdio", "name": "m"})  # still a stdio server: its fields missing
    assert broken is not None and {(d.path, d.hard) for d in broken} == {
        ("command", True),
        ("args", True),
        ("env", True),
    }
    later = server({"type": "ws", "name": "m", "url": "ws://x", "headers": []})
    assert later is not None and [(d.path, d.unknown, d.hard) for d in later] == [
        ("type", True, False)
    ]
    assert later[0].problem.startswith('"ws" is not in ACP v1 schema')
    assert server({"type": "_ws", "name": "m"}) is None  # an extension's fields are its own
    method = schema_for(1).definition("AuthMethod")
    assert (
        method({"id": "a", "name": "A"}) is None
        and method({"id": "a", "name": "A", "type": "agent"}) is None
    )
    oauth = method({"id": "a", "name": "A", "type": "oauth", "url": "https://x"})
    assert oauth is not None and [(d.path, d.unknown) for d in oauth] == [("type", True)]


def test_integer_formats_are_ranges():
    """uint16 protocol versions and int64 ids are range-checked; fractional is not an integer."""
    version = schema_for(1).definition("ProtocolVersion")
    assert version(1) is None and version(65535) is None
    assert version(65536) is not None and version(-1) is not None and version(1.5) is not None
    assert version(True) is not None
