"""``replay``: a recording played as the agent (:mod:`acp_proxy.readers.replay`), or as the
client against an agent (:mod:`acp_proxy.drive.replay`, over the client core)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from acp_proxy.clihelp import (
    NOT_A_RECORDING_PLACE,
    Seconds,
    Unreadable,
    command,
    complete_path,
    logging_options,
    no_effect,
    not_stdout,
    say,
    use_color,
)
from acp_proxy.core.visible import visible
from acp_proxy.log import configure, get_logger, open_log
from acp_proxy.readers.commands.shared import connection_number, connection_options


class _Speed(click.ParamType):  # type: ignore[type-arg]
    """A replay speed: 0 (as fast as possible), or a finite factor from 0.001 to 1,000,000."""

    name = "factor"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        number = Seconds(0.0, 1e6).convert(value, param, ctx)
        if 0 < number < 1e-3:
            self.fail(f"{value!r} is out of range: 0, or from 0.001 to 1000000", param, ctx)
        return number


@command(
    short="Play a recording as the agent, or as the client.",
    examples=[
        "acp-proxy replay session.jsonl",
        "acp-proxy replay --as client session.jsonl -- my-agent --acp",
        "acp-proxy replay --connection 2 --speed 0 sessions.jsonl",
    ],
)  # options after RECORDING too; after `--`, the agent's command is its own
@click.option(
    "--as",
    "role",
    type=click.Choice(["agent", "client"]),
    default="agent",
    show_default=True,
    help="agent: the recording plays the agent, on our stdio. client: the recording plays the "
    "client against AGENT.",
)
@click.option(
    "--speed",
    type=_Speed(),
    default=1.0,
    show_default=True,
    help="As the agent: 2 plays twice as fast as recorded; 0 as fast as possible.",
)
@click.option(
    "--match",
    type=click.Choice(["exact", "method"]),
    default="exact",
    show_default=True,
    help="As the agent: how a client message must match the recorded one. exact: same method "
    "and params (without _meta; of initialize, the protocol version only: another client's "
    "capabilities and info are its own); method: the method only.",
)
@connection_options("")
@click.option(
    "--allow-client-actions",
    "allow_actions",
    is_flag=True,
    help="As the agent: send the editor the recording's requests that act (write or read a "
    "file, run a command...). Without it they are listed and withheld: the replay answers "
    "them as recorded.",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="PATH",
    help="As the client: a field to leave out when comparing the agent's frames, e.g. "
    "params.update.content.text (repeatable).",
)
@click.option(
    "--ignore-update",
    "ignore_updates",
    multiple=True,
    metavar="VARIANT",
    help="As the client: leave session/update notifications of this kind out, recorded and "
    "live, e.g. available_commands_update, which agents send whenever they like (repeatable).",
)
@click.option(
    "--timeout",
    type=Seconds(open_low=True),
    default=30.0,
    show_default=True,
    help="As the client: seconds to wait for an expected agent frame.",
)
@click.option(
    "--record",
    metavar="PATH",
    shell_complete=complete_path,
    callback=not_stdout(NOT_A_RECORDING_PLACE),
    help="Record the session played there (as `run --record` does). Default: the "
    "recordings directory, as for run, probe and chat.",
)
@click.option("--no-record", is_flag=True, help="Do not record the session.")
@click.option(
    "--redact",
    is_flag=True,
    help="Record with secrets replaced by tags, as `run --redact` does.",
)
@click.option(
    "--addon",
    "addon_files",
    multiple=True,
    metavar="FILE[:NAME]",
    help="Also hand the session to addons of your own, as `run --addon` does. Repeatable.",
)
@click.option(
    "--junit",
    metavar="FILE",
    help="As the client: also write the divergences as JUnit XML (a failure each) to FILE "
    "(-: stdout).",
)
@logging_options
@click.argument("recording", metavar="RECORDING", shell_complete=complete_path)
@click.argument("agent", nargs=-1, type=click.UNPROCESSED, metavar="[-- AGENT [ARGS]...]")
def replay(
    role: str,
    speed: float,
    match: str,
    connection: int | None,
    session_id: str | None,
    allow_actions: bool,
    ignore: tuple[str, ...],
    ignore_updates: tuple[str, ...],
    timeout: float,
    record: str | None,
    no_record: bool,
    redact: bool,
    addon_files: tuple[str, ...],
    junit: str | None,
    log_file: str | None,
    log_level: str,
    log_format: str,
    color: str,
    recording: str,
    agent: tuple[str, ...],
) -> None:
    """Play a recorded session: as the agent (a fake agent for editors and clients), or with
    --as client as the client, against AGENT (a regression test for agents).

    \b
    As the agent, RECORDING answers on stdin/stdout like any agent; put
    `acp-proxy replay REC` in the editor's agent command. The session it plays is
    recorded and validated as by run. What it would have the
    editor do (write a file, run a command) is listed and withheld unless
    --allow-client-actions. Exit status: 0 every
    recorded client frame matched, 1 the client diverged or stopped early.
    As the client: 0 the agent answered as recorded, 1 it diverged.
    2: the recording cannot be read.
    """
    from acp_proxy.drive.replay import (
        EXIT_NOT_EXECUTABLE,
        EXIT_NOT_FOUND,
        drive_agent,
        serve_agent,
    )
    from acp_proxy.live.session import Recording, user_addons
    from acp_proxy.readers.replay import AgentReplay, load_script

    stream = open_log(log_file)
    configure(log_level.lower(), log_format, stream, use_color(color, stream))
    log = get_logger()
    agent = _replay_usage(role, agent, allow_actions, recording)
    if no_record:
        no_effect("with --no-record", "record", "redact")
    session = connection_number(recording, connection, session_id)
    try:
        script = load_script(recording, session)
    except ValueError as exc:
        raise Unreadable(str(exc)) from None
    if script.sessions > 1:
        log.info("recording has several sessions", sessions=script.sessions, playing=session)
    if role == "agent":
        fake = AgentReplay(script, match=match, speed=speed, allow_actions=allow_actions)
        _list_actions(fake.actions, allow_actions)
        played = Recording(record, no_record, redact, addons=user_addons(addon_files))
        argv = ["acp-proxy", "replay", recording]
        sys.exit(serve_agent(fake, log, argv, played, stdin=sys.stdin.fileno()))
    result = drive_agent(
        script, list(agent), ignore=ignore, timeout=timeout, record=record,
        no_record=no_record, skip_updates=ignore_updates, redact=redact,
        addons=user_addons(addon_files),
    )  # fmt: skip
    if result.proxy_status in (EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE):
        say(f"acp-proxy: {visible(result.divergences[-1])}")  # (as run says it)
        sys.exit(result.proxy_status)
    for line in result.divergences:
        say(f"acp-proxy replay: divergence: {line}")
    if junit is not None:
        from acp_proxy.files import open_output
        from acp_proxy.readers.ci import junit_divergences

        try:
            # (- is stdout: as the client, nothing else is written there)
            with os.fdopen(open_output(junit, dash=True), "w", encoding="utf-8") as out:
                out.write(junit_divergences(recording, result.divergences) + "\n")
        except OSError as exc:
            raise click.ClickException(visible(f"cannot write {junit}: {exc.strerror}")) from None
    frames = sum(1 for step in script.steps)
    if result.ok:
        log.info("the agent answered as recorded", frames=frames)
    sys.exit(0 if result.ok else 1)


def _replay_usage(
    role: str, agent: tuple[str, ...], allow_actions: bool, recording: str
) -> tuple[str, ...]:
    """The agent command of ``replay``, once the options fit the role (a usage error if
    not)."""
    if agent[:1] == ("--",):  # `--` after RECORDING separates the agent's own arguments
        agent = agent[1:]
    if role == "agent" and recording == "-":  # (as the client, stdin is free: - is fine)
        raise click.UsageError(
            "RECORDING - would be standard input, which the client speaks on to the agent "
            "the replay plays: name a file"
        )
    if role == "agent" and agent:
        raise click.UsageError("an AGENT command is only for --as client")
    if role == "agent":
        no_effect("without --as client", "ignore", "ignore_updates", "timeout", "junit")
    else:
        no_effect("with --as client", "speed", "match")
    if role == "client" and not agent:
        raise click.UsageError("--as client needs the agent to run: -- AGENT [ARGS]...")
    if role == "client" and allow_actions:
        raise click.UsageError("--allow-client-actions is only for the recording as the agent")
    return agent


def _list_actions(actions: list[Any], allowed: bool) -> None:
    """Say, before a replay as the agent starts, what the recording would have the editor do."""
    from acp_proxy.readers.replay import action_summary

    if not actions:
        return
    what = (
        "sent to the editor (--allow-client-actions)"
        if allowed
        else "withheld: the replay answers them as recorded (--allow-client-actions sends them)"
    )
    times = "once" if len(actions) == 1 else f"{len(actions)} times"
    say(f"acp-proxy replay: the recording asks the editor to act {times}, {what}:")
    for step in actions:
        say(f"  {action_summary(step)}")
