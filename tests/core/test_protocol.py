"""The tables in ``acp_proxy.core.protocol`` against the official schemas that ship with it."""

from __future__ import annotations

from typing import Any

import pytest

from acp_proxy.core.protocol import (
    AGENT,
    ANY,
    CLIENT,
    FINAL_TOOL_STATUSES,
    METHODS_V1,
    METHODS_V2,
    NOTIFICATION,
    REQUEST,
    STOP_REASONS,
    TOOL_CALL_STATUSES,
    TOOL_UPDATES,
    UNFINISHED_TOOL_STATUSES,
    UPDATE_VARIANTS_V1,
    UPDATE_VARIANTS_V2,
    official_schema,
)
from acp_proxy.core.wire import State, StopReason

_SENDER = {"client": AGENT, "agent": CLIENT, "protocol": ANY}


def schema_methods(version: int) -> dict[str, tuple[str, str]]:
    """(sender, kind) per method, from the schema's x-side / x-method annotations."""
    methods: dict[str, tuple[str, str]] = {}
    for name, definition in official_schema(version)["$defs"].items():
        method = definition.get("x-method")
        if method is None or name.endswith("Response"):
            continue
        kind = NOTIFICATION if name.endswith("Notification") else REQUEST
        methods[method] = (_SENDER[definition["x-side"]], kind)
    return methods


def variants(version: int) -> set[str]:
    update = official_schema(version)["$defs"]["SessionUpdate"]
    consts = set()
    for option in update.get("anyOf", update.get("oneOf", [])):
        value = option.get("properties", {}).get("sessionUpdate", {}).get("const")
        if value is not None:
            consts.add(value)
    return consts


def enum_values(version: int, name: str) -> list[Any]:
    definition = official_schema(version)["$defs"][name]
    options = definition.get("oneOf", definition.get("anyOf", []))
    return [o["const"] for o in options if "const" in o] or list(definition.get("enum", []))


@pytest.mark.parametrize(("version", "table"), [(1, METHODS_V1), (2, METHODS_V2)])
def test_method_tables_match_the_schema(version, table):
    assert table == schema_methods(version)


@pytest.mark.parametrize(("version", "table"), [(1, UPDATE_VARIANTS_V1), (2, UPDATE_VARIANTS_V2)])
def test_update_variants_match_the_schema(version, table):
    assert set(table) == variants(version)


def test_v1_stop_reasons_are_the_v2_ones_but_error():
    assert enum_values(1, "StopReason") == [r for r in STOP_REASONS if r != "error"]
    assert [str(r) for r in StopReason] == list(STOP_REASONS)


def test_tool_call_statuses_extend_v1():
    assert set(enum_values(1, "ToolCallStatus")) <= set(TOOL_CALL_STATUSES)


def test_tool_statuses_are_final_unfinished_or_paused():
    """Each status of the schemas is final or not, once; each tool update is a variant."""
    assert FINAL_TOOL_STATUSES | UNFINISHED_TOOL_STATUSES | {"paused"} == set(TOOL_CALL_STATUSES)
    assert not FINAL_TOOL_STATUSES & UNFINISHED_TOOL_STATUSES
    assert set(enum_values(2, "ToolCallStatus")) == set(TOOL_CALL_STATUSES)
    assert {
        v for v in UPDATE_VARIANTS_V1 | UPDATE_VARIANTS_V2 if v.startswith("tool_call")
    } == TOOL_UPDATES


def test_states_are_the_state_update_variants():
    names = {"RunningStateUpdate": "running", "IdleStateUpdate": "idle"}
    names["RequiresActionStateUpdate"] = "requires_action"
    defs = official_schema(2)["$defs"]
    for name, state in names.items():
        assert name in defs and state in {str(s) for s in State}


def test_only_shipped_versions_have_a_schema():
    with pytest.raises(ValueError):
        official_schema(3)
