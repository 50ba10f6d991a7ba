"""``demo``: the example agent behind the proxy, one session driven
(:mod:`acp_proxy.devtools.demo`; only ``cli`` imports it)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from acp_proxy.clihelp import (
    NOT_A_RECORDING_PLACE,
    Seconds,
    color_option,
    command,
    not_stdout,
    say,
    stdout_lines,
)
from acp_proxy.core.visible import visible


@command(
    short="Try the proxy on the example agent.",
    examples=[
        "acp-proxy demo",
        "acp-proxy demo --scenario misbehaving --record /tmp/demo.jsonl",
    ],
)
@click.option(
    "--record",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    callback=not_stdout(NOT_A_RECORDING_PLACE),
    help="Where to write the demo's transcript. Default: a new file in the recordings directory.",
)
@click.option(
    "--delay",
    type=Seconds(high=60.0),
    default=0.02,
    show_default=True,
    help="Seconds between the example agent's streamed chunks.",
)
@click.option(
    "--scenario",
    type=click.Choice(["tour", "clean", "cancelled", "misbehaving", "v1", "v1-tour"]),
    default="tour",
    show_default=True,
    help="tour: a prompt, then a cancelled prompt. clean: one prompt. cancelled: one "
    "cancelled prompt. misbehaving: the example agent breaks the protocol on purpose. "
    "v1: one prompt over ACP v1, as most shipping agents speak it. v1-tour: v1 with a mode "
    "switch, a file read, a terminal, and a second prompt that is cancelled.",
)
@color_option("Colour the conversation")
def demo(record: str | None, delay: float, scenario: str, color: str) -> None:
    """Try the proxy: run the example agent behind it and drive one session.

    Nothing else needs to be installed: the agent and the client are both
    part of acp-proxy.

    Exit status: the example agent's (0), 1 the session failed or was not recorded.
    """
    from acp_proxy.devtools.demo import run_demo
    from acp_proxy.transcript.names import default_record_dir, recording_name

    path = Path(record) if record is not None else default_record_dir() / recording_name("demo")
    click.echo(
        visible(
            f"acp-proxy demo: the example agent runs behind `acp-proxy run`; recording to {path}"
        )
    )
    if record is not None and not path.parent.is_dir():
        click.echo(visible(f"acp-proxy demo: creating the directory {path.parent} (mode 0700)"))
    click.echo()
    try:
        status = run_demo(path, delay=delay, scenario=scenario)
    except (OSError, EOFError, ValueError, KeyError) as exc:
        say(f"acp-proxy demo: the session failed: {exc}")
        sys.exit(1)
    from acp_proxy.devtools.demo import report_lines

    with stdout_lines(color) as emit:
        for line in report_lines(path, status):
            emit(line)
    if not path.exists():
        sys.exit(1)
    sys.exit(status)
