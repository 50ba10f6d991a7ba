"""``inspect``: the sessions' pages served on 127.0.0.1, live (:mod:`acp_proxy.readers.inspect`)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from acp_proxy.clihelp import Seconds, Unreadable, command, complete_path, envvar, say


@command(
    short="Serve the sessions' pages on 127.0.0.1, live.",
    examples=[
        "acp-proxy inspect",
        "acp-proxy inspect --open session.jsonl",
    ],
)
@click.argument("path", required=False, metavar="[DIR|FILE]", shell_complete=complete_path)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Default: a free one.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.option(
    "--request-timeout",
    type=Seconds(high=3600.0, open_low=True),
    default=10.0,
    show_default=True,
    envvar=envvar("REQUEST_TIMEOUT"),
    help="Seconds a connection has to send its request before it is closed.",
)
@click.option("--parent", type=int, hidden=True, help="Stop when this process is gone.")
def inspect(
    path: str | None, port: int, open_browser: bool, request_timeout: float, parent: int | None
) -> None:
    """Serve the report page on 127.0.0.1, live: the sessions of DIR (default: the recordings
    directory), newest first, each growing as it is recorded. Every URL carries a token; the
    URL is printed on stderr (--open gives the browser a private file that leads to it, never
    the token itself).

    Exit status: 130 stopped by Ctrl-C (its files removed), 2 an unreadable DIR or FILE."""
    import signal
    import threading

    from acp_proxy.readers.inspect import Inspector, redirect_file, serve
    from acp_proxy.transcript.names import default_record_dir

    if path == "-":  # (a page is served from files, read again as they grow)
        raise click.UsageError("inspect reads a directory or a file, not standard input")
    target = Path(path) if path else default_record_dir()
    if not target.exists():
        raise Unreadable(f"{target}: no such file or directory")
    if not target.is_dir():
        _inspectable(target)
    inspector = Inspector(target)
    ready = threading.Event()
    server = threading.Thread(
        target=serve,
        args=(target, port, parent, ready, inspector, request_timeout),
        daemon=True,
    )
    server.start()
    ready.wait(10)
    url = inspector.url("/session/" + target.name) if target.is_file() else inspector.url()
    say(f"acp-proxy inspect: {url}")
    if parent is None:  # (a person's: what is served, and how it stops, as http.server says)
        what = target if target.is_file() else _sessions(target)
        say(f"acp-proxy inspect: serving {what} on 127.0.0.1 until Ctrl-C")
    # (stopped as by Ctrl-C, so that what it made is removed: run --inspect terminates it)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.ExitStack() as cleanup:
        if open_browser:
            import webbrowser

            try:
                page = cleanup.enter_context(redirect_file(url))
            except OSError as exc:
                say(f"acp-proxy inspect: cannot make the page to open: {exc.strerror or exc}")
            else:
                if not webbrowser.open(page.as_uri()):
                    say("acp-proxy inspect: cannot open a browser here; the URL above opens it")
        while server.is_alive():  # (Ctrl-C: exit 130, as every command; the stack cleans up)
            server.join(0.5)


def _sessions(directory: Path) -> str:
    """``DIR (N recordings)``: what the index lists when it opens."""
    with contextlib.suppress(OSError):
        count = sum(1 for path in directory.glob("*.jsonl") if path.is_file())
        return f"{directory} ({count} recording{'' if count == 1 else 's'})"
    return str(directory)


def _inspectable(target: Path) -> None:
    """A file to inspect is refused before anything is served unless it is a recording (one
    line, exit 2); an empty one the recorder holds is one about to be written (served: it
    grows as it is recorded)."""
    from acp_proxy.transcript.names import being_written
    from acp_proxy.transcript.reading import RecordingError, open_recording

    try:
        with contextlib.suppress(OSError):
            if target.stat().st_size == 0 and being_written(target):
                return
        next(iter(open_recording(str(target))), None)
    except RecordingError as exc:
        raise Unreadable(str(exc)) from None
