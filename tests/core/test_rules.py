"""The catalog, from the core alone: each rule is defined once, beside its check, with an
example; the example breaks its rule at its last frame when fed to a validator (what
``acp-proxy rules RULE`` shows is so), and nothing earlier in it is that rule's."""

from __future__ import annotations

import pytest

from acp_proxy.core import validator_base, validator_schema, validator_v1, validator_v2
from acp_proxy.core.framing import parse_frame
from acp_proxy.core.rules import CATALOG, EXAMPLES, NO_EXAMPLE, RULES, Rule, explain_lines
from acp_proxy.core.validator import Validator


@pytest.mark.parametrize("rule", [r for r in CATALOG if r.example is not None], ids=str)
def test_each_rules_example_breaks_it_at_its_last_frame(rule: Rule) -> None:
    assert rule.example is not None
    validator = Validator()
    found = []
    for seq, (side, line) in enumerate(rule.example, 1):
        found += validator.feed(side, parse_frame(line.encode()), seq)
    found += validator.end()
    at = {(f.rule, f.seq) for f in found}
    assert (rule.id, len(rule.example)) in at, (rule.id, at)


def test_each_rule_is_shown_by_example_or_says_why_not() -> None:
    for rule in CATALOG:
        assert (rule.example is None) == bool(rule.no_example), rule.id
    assert set(EXAMPLES) | set(NO_EXAMPLE) == set(RULES) and not set(EXAMPLES) & set(NO_EXAMPLE)
    lines = explain_lines("validator-error")
    assert lines is not None and lines[-1] == f"example: {RULES['validator-error'].no_example}"
    assert explain_lines("no-such-rule") is None


def test_the_catalog_is_the_three_modules_rules_in_order_each_once() -> None:
    """The catalog is what the validator's modules define (the shared rules, the schemas', the prompt
    lifecycle's, v1's, the validator's own failure last), with no id twice; the validator
    gates findings by the same entries."""
    assert (
        *validator_base.RULES,
        *validator_schema.RULES,
        *validator_v2.RULES,
        *validator_v1.RULES,
        *validator_base.SELF_RULES,
    ) == CATALOG
    assert len(RULES) == len(CATALOG)
    assert Validator._rules == RULES
    assert CATALOG[-1].id == "validator-error"


def test_a_rule_links_the_page_its_source_is_on_as_probe_links_a_check():
    """`rules RULE` says `see: URL` (and the JSON of rules and validate carry it): a v1 page
    by its title, v2's Prompt Lifecycle for its sections, JSON-RPC's specification; none
    for a schema or acp-proxy's own, where no page says more."""
    from acp_proxy.core.rules import SPEC_SITE, spec_link

    assert spec_link(RULES["message-id-missing"]) == f"{SPEC_SITE}/v2/prompt-lifecycle"
    links = {rule.id: spec_link(rule) for rule in CATALOG}
    v1 = [r for r in CATALOG if r.spec.startswith("v1 Session Setup")]
    assert v1 and all(links[r.id] == f"{SPEC_SITE}/v1/session-setup" for r in v1)
    assert {links[r.id] for r in CATALOG if r.spec == "JSON-RPC 2.0"} == {
        "https://www.jsonrpc.org/specification"
    }
    assert all(links[r.id] is None for r in CATALOG if r.spec in ("ACP schema", "acp-proxy"))
    lines = explain_lines("message-id-missing") or []
    assert lines[1:3] == ["source: Message IDs", f"see: {SPEC_SITE}/v2/prompt-lifecycle"]
