"""``python -m acp_proxy`` and the ``acp-proxy`` command: the agent started in a blink.

``run``, ``probe`` and ``chat`` start an agent, and an editor or a CI waits for it: here,
before anything else is imported (click, structlog, the command modules, the validator),
their command line is read far enough to find the agent's (:func:`agent_argv`), and the
agent is started (:func:`~acp_proxy.live.spawn.start_agent`, which imports only the standard
library's process handling). Everything else loads while the agent starts; the command
takes the agent over once click has read its options (:class:`~acp_proxy.live.spawn.Early`).

This reading is only a shortcut: it knows each of the three commands' options (a test holds
the table to the commands' own), and anything it does not know (an unknown option,
``--help``, ``probe --list``, no agent) leaves the agent to the command, which starts it
itself, or says what is wrong. If click then finds the command line wrong after all (a bad
value), the early agent is stopped before it was sent a byte, and the error said as ever.
"""

from __future__ import annotations

import sys

__all__ = ["OPTIONS", "agent_argv", "main"]

#: Each command that starts an agent: its options that take a value, and its flags.
_LOGGING = ("--log-file", "--log-level", "--log-format")
_RECORDING = ("--record", "--grace")
_RUN_VALUED = ("--keep-days", "--keep-size", "--color", "--addon", "--otlp", *_RECORDING,
               *_LOGGING)  # fmt: skip
_RUN_FLAGS = ("--no-record", "--no-stderr", "--redact", "--notify-client", "--inspect",
              "--otlp-content")  # fmt: skip
_PROBE_VALUED = (
    "--protocol",
    "--prompt",
    "--timeout",
    "--permissions",
    "--auth",
    "--only",
    "--initialize",
)
_CHAT_VALUED = (
    "--protocol",
    "--cwd",
    "--session",
    "--timeout",
    "--permissions",
    "--prompt",
    "-p",
    "--format",
)
_FRONT_VALUED = ("--color", "--addon", *_RECORDING)
_FRONT_FLAGS = ("--allow-terminal", "--no-record", "--redact", "--no-color")
OPTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "run": (frozenset(_RUN_VALUED), frozenset((*_RUN_FLAGS, "--no-color"))),
    "probe": (
        frozenset((*_PROBE_VALUED, "--skip", "--format", *_FRONT_VALUED)),
        frozenset((*_FRONT_FLAGS, "--strict")),
    ),
    "chat": (
        frozenset((*_CHAT_VALUED, *_FRONT_VALUED)),
        frozenset((*_FRONT_FLAGS, "--continue", "-c")),
    ),
}


def agent_argv(args: list[str]) -> list[str] | None:
    """The agent's command in an ``acp-proxy`` command line (without the program), read as
    click will (options before it, ``--`` optional); None when it is not plainly there: not
    ``run``, ``probe`` or ``chat``, an option this does not know, or no agent."""
    if not args or args[0] not in OPTIONS:
        return None
    valued, flags = OPTIONS[args[0]]
    i = 1
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        name = arg.split("=", 1)[0]
        if name in valued:
            i += 1 if "=" in arg else 2
        elif arg in flags:
            i += 1
        else:
            return None  # --help, probe --list, a typo: the command's to say
    command = args[i:]
    return command or None


def main() -> None:
    """Start the agent first if the command line has one, then the command (``cli.main``).
    Ctrl-C while loading: quiet, 130 (the agent, if started, is stopped with us)."""
    try:
        early = None
        argv = agent_argv(sys.argv[1:])
        if argv is not None:
            from acp_proxy.live.spawn import Early

            early = Early.start(argv)
        from acp_proxy.cli import main as cli_main
    except KeyboardInterrupt:
        if early is not None:
            early.discard()
        sys.exit(130)
    cli_main(early)


if __name__ == "__main__":
    main()
