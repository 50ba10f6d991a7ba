"""``rules``: the rules the validator checks (:mod:`acp_proxy.core.rules`), or one explained
(:mod:`acp_proxy.core.examples`)."""

from __future__ import annotations

import click

from acp_proxy.clihelp import command, complete_rule, pager_option, stdout_lines, was_given
from acp_proxy.core.visible import visible


@command(
    short="The rules the validator checks, or one explained.",
    examples=[
        "acp-proxy rules",
        "acp-proxy rules message-id-missing",
        "acp-proxy rules --format markdown",
    ],
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="How to print the catalog.",
)
@click.argument("rule", required=False, metavar="[RULE]", shell_complete=complete_rule)
@pager_option
def rules(fmt: str, rule: str | None) -> None:
    """Print the catalog of rules the validator checks, and the schemas it checks against
    (text and markdown: a first line; json: each line's "schemas"); with RULE, that rule
    explained: its level, versions, source, what it flags, and an example of a frame that
    breaks it.

    Exit status: 0, 2 no such rule."""
    from acp_proxy.core.rules import RULES, catalog_lines, explain_lines

    if rule is None:
        lines = catalog_lines(fmt)
    else:
        if was_given("fmt"):
            raise click.UsageError("--format is for the catalog, not one RULE")
        explained = explain_lines(rule)
        if explained is None:
            import difflib

            close = difflib.get_close_matches(rule, list(RULES), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise click.BadParameter(
                visible(f"{rule!r} is no rule{hint}; `acp-proxy rules` lists them"),
                param_hint="RULE",
            )
        lines = explained
    with stdout_lines("never") as emit:
        for line in lines:
            emit(line)
