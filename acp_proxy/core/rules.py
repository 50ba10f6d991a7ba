"""The rule catalog: every check the validator makes, with its level and source, gathered
from where each rule is defined, beside its check and with its example
(:mod:`acp_proxy.core.validator_base`, :mod:`~acp_proxy.core.validator_v2`,
:mod:`~acp_proxy.core.validator_v1`); and what ``acp-proxy rules`` prints of it.

Each rule comes from a sentence of the ACP v2 Prompt Lifecycle page (``spec``
names its section), from JSON-RPC 2.0, from the ACP v2 schema (for shapes), or
from the ACP transport (UTF-8 JSON-RPC, one message per ``\\n``-terminated line).

``error`` is a MUST, MUST NOT or a required field; ``warning`` a SHOULD, a
reserved value, what the shipped schemas do not know yet, or a likely-but-not-certain
breach; ``info`` what is worth knowing but not wrong (the use of ACP's unstable surface).

A new rule is one :class:`Rule` in the module whose code flags it (its id, level, source,
sentence, versions and example together): the catalog, ``acp-proxy rules``, the validator's
gate and the tests that feed every example to a validator all read it from there.
"""

from __future__ import annotations

import orjson

from acp_proxy.core.findings import Example, Level, Rule, Scope
from acp_proxy.core.schema import schema_sources
from acp_proxy.core.validator_v2 import CATALOG

__all__ = [
    "CATALOG",
    "EXAMPLES",
    "NOT_LENIENT",
    "NO_EXAMPLE",
    "RULES",
    "SCHEMA_OVERLAP",
    "Example",
    "Level",
    "Rule",
    "Scope",
    "catalog_lines",
    "explain_lines",
]

#: The catalog by rule id.
RULES: dict[str, Rule] = {rule.id: rule for rule in CATALOG}

#: For a rule, frames of a connection whose last breaks it.
EXAMPLES: dict[str, Example] = {r.id: r.example for r in CATALOG if r.example is not None}

#: For a rule that has no example, why not.
NO_EXAMPLE: dict[str, str] = {r.id: r.no_example for r in CATALOG if r.no_example}

#: Hand-written rules that report a defect the schema check would also find, and the paths
#: they cover (:attr:`Rule.covers`).
SCHEMA_OVERLAP: dict[str, tuple[str, ...]] = {r.id: r.covers for r in CATALOG if r.covers}

#: Rules of SCHEMA_OVERLAP that stay where the schema calls the field lenient
#: (:attr:`Rule.gives_way` false).
NOT_LENIENT: frozenset[str] = frozenset(r.id for r in CATALOG if r.covers and not r.gives_way)


def catalog_lines(fmt: str = "text") -> list[str]:
    """The catalog as ``acp-proxy rules`` prints it: text, json (a line per rule) or markdown;
    text and markdown open with the schemas it checks against, json lines carry them."""
    sources = schema_sources()
    if fmt == "json":
        tags = sources.as_dict()
        return [
            orjson.dumps(
                {
                    "rule": rule.id,
                    "level": str(rule.level),
                    "spec": rule.spec,
                    "link": spec_link(rule),
                    "versions": str(rule.scope),
                    "description": rule.description,
                    "schemas": tags,
                }
            ).decode()
            for rule in CATALOG
        ]
    schemas = f"Schemas: {sources.summary()}."
    if fmt == "markdown":
        lines = [
            schemas,
            "",
            "| rule | level | versions | spec | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for rule in CATALOG:
            description = rule.description.replace("|", "\\|")
            lines.append(
                f"| `{rule.id}` | {rule.level} | {rule.scope} | {rule.spec} | {description} |"
            )
        return lines
    width = max(len(rule.id) for rule in CATALOG)
    return [
        schemas,
        *(
            f"{rule.id:<{width}}  {rule.level:<7}  {rule.scope:<3}  {rule.description} "
            f"({rule.spec})"
            for rule in CATALOG
        ),
    ]


#: Where the protocol's pages are, as probe links them.
SPEC_SITE = "https://agentclientprotocol.com/protocol"
#: The v1 pages a rule's source may name (its title, the page's address under v1/).
_V1_PAGES = {
    title: title.lower().replace(" ", "-")
    for title in (
        "Overview", "Initialization", "Session Setup", "Prompt Turn", "Content", "Tool Calls",
        "File System", "Terminals", "Session Modes", "Session Config Options", "Session List",
        "Extensibility", "Transports",
    )
}  # fmt: skip


def spec_link(rule: Rule) -> str | None:
    """The page a rule's source is on (the first of its sources that has one), as probe
    links a check's: a v1 page by its title, a section of v2's Prompt Lifecycle, JSON-RPC's
    specification; None for a schema or acp-proxy's own (no page says more)."""
    for part in rule.spec.split(";"):
        source = part.strip().removeprefix("derived: ")
        title = source.split("(")[0].split(",")[0].strip()
        if title.startswith("v1 "):
            if title[3:] in _V1_PAGES:
                return f"{SPEC_SITE}/v1/{_V1_PAGES[title[3:]]}"
        elif title.startswith("JSON-RPC 2.0"):
            return "https://www.jsonrpc.org/specification"
        elif title.startswith("ACP transport"):
            return f"{SPEC_SITE}/v1/transports"
        elif not ("schema" in source or title.startswith(("acp-proxy", "Transports", "Tool"))):
            return f"{SPEC_SITE}/v2/prompt-lifecycle"  # (a section of it)
    return None


def explain_lines(rule_id: str) -> list[str] | None:
    """``acp-proxy rules RULE``: the rule's id, level, versions, source and sentence, and
    an example of a frame that breaks it; None for an unknown rule."""
    rule = RULES.get(rule_id)
    if rule is None:
        return None
    lines = [
        f"{rule.id}: {rule.level}, ACP versions: {rule.scope}",
        f"source: {rule.spec}",
        *([f"see: {link}"] if (link := spec_link(rule)) else []),
        rule.description,
    ]
    example = rule.example
    if example is None:
        why = rule.no_example or "none in the catalog yet (see the tests of the validator)"
        return [*lines, f"example: {why}"]
    side, frame = example[-1]
    arrow = "client → agent" if side == "client" else "agent → client"
    before = [_method(line) for _, line in example[:-1]]
    methods = dict.fromkeys(m for m in before if m)
    after = f", after {', '.join(methods)}" if methods else ""
    return [*lines, f"example ({arrow}{after}):", f"  {frame}"]


def _method(line: str) -> str | None:
    """The method of a request or notification, else None (a response)."""
    value = orjson.loads(line)
    return value.get("method") if isinstance(value, dict) else None
