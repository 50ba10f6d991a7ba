"""What ``probe`` and ``chat`` share: ``--protocol`` (:func:`protocol_option`), the recording
options (:func:`recording_options`), ``-- AGENT`` (:func:`agent_argument`) and their usage errors
(:func:`check_agent_options`), and an agent that cannot start said in one line
(:func:`agent_starting`, which keeps why in :data:`WHY_NOT_STARTED` for probe's document)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import click

from acp_proxy.clihelp import (
    NOT_A_RECORDING_PLACE,
    Seconds,
    complete_path,
    envvar,
    exit_with,
    not_found,
    not_stdout,
    overruled,
    say,
    was_given,
)
from acp_proxy.core.visible import visible


def protocol_option(func: Any) -> Any:
    """``--protocol 1|2``: what the client asks for (probe and chat alike)."""
    return click.option(
        "--protocol",
        type=click.Choice(["1", "2"]),
        default="1",
        show_default=True,
        help="The ACP version to ask for (1: what shipping agents speak).",
    )(func)


def recording_options(func: Any) -> Any:
    """``--record PATH``, ``--no-record``, ``--redact``, ``--addon``, ``--grace``: the
    session recorded, handed to the user's addons and ended as by run (probe and chat
    alike)."""
    for option in reversed(
        (
            click.option(
                "--record",
                metavar="PATH",
                shell_complete=complete_path,
                envvar=envvar("RECORD"),
                callback=not_stdout(NOT_A_RECORDING_PLACE),
                help="Where the session is recorded, as for run. Default: the recordings "
                "directory.",
            ),
            click.option("--no-record", is_flag=True, help="Do not record the session."),
            click.option(
                "--redact",
                is_flag=True,
                help="Record with secrets replaced by tags, as `run --redact` does.",
            ),
            click.option(
                "--addon",
                "addon_files",
                multiple=True,
                metavar="FILE[:NAME]",
                help="Also hand the session to addons of your own, as `run --addon` does. "
                "Repeatable.",
            ),
            click.option(
                "--grace",
                type=Seconds(high=60.0),
                default=2.0,
                show_default=True,
                help="Seconds the agent gets to exit at the end, before SIGTERM, then SIGKILL.",
            ),
        )
    ):
        func = option(func)
    return func


def addons_of(files: tuple[str, ...]) -> list[Any]:
    """``--addon``'s addons, loaded (a file that gives none: exit 2) before the agent's
    session starts; the relay's module imported only when asked for."""
    if not files:
        return []
    from acp_proxy.live.session import user_addons

    return user_addons(files, stdout_is_ours=True)


#: ``-- AGENT [ARGS]...``: the agent to start (probe and chat alike).
agent_argument = click.argument(
    "command", nargs=-1, type=click.UNPROCESSED, metavar="-- AGENT [ARGS]..."
)


def check_agent_options(command: tuple[str, ...], record: str | None, no_record: bool) -> bool:
    """The usage errors probe and chat share: no AGENT (said as ``run`` says it, and not
    ending in a full stop, which the one-line form drops), or contradicting recording
    options; and whether the session goes unrecorded (a typed ``--record`` wins over
    ``$ACP_PROXY_NO_RECORD``)."""
    if not command:
        raise click.UsageError("missing argument '-- AGENT [ARGS]...'")
    no_record = no_record and not overruled("no_record", "record")
    if no_record and record is not None and was_given("record"):  # ($ACP_PROXY_RECORD: run's too)
        raise click.UsageError("--record and --no-record contradict each other")
    return no_record


@contextlib.contextmanager
def agent_starting(name: str, command: tuple[str, ...]) -> Iterator[None]:
    """An agent that cannot start: one line, exit 2 (probe and chat alike)."""
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound

    try:
        yield
    except AgentNotFound:
        WHY_NOT_STARTED["why"] = f"agent command not found: {visible(command[0])}"
        say(f"acp-proxy {name}: {not_found(command[0])}")
        exit_with(2)
    except AgentNotExecutable as exc:
        WHY_NOT_STARTED["why"] = f"agent command cannot be executed: {visible(str(exc))}"
        say(f"acp-proxy {name}: agent command cannot be executed: {exc}")
        exit_with(2)


#: Why the agent could not start, as ``agent_starting`` said it (for the document).
WHY_NOT_STARTED: dict[str, str] = {}
