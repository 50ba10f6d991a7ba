"""structlog set-up. Logs go to stderr or a file, never to stdout.

stdout belongs to the protocol: structlog's default logger prints there, so
the project's logger (:func:`get_logger`, the only way to one) is configured before
it is handed out: as a command says (:func:`configure`), else at info to stderr.

structlog is loaded on first use, not on import: ``acp-proxy run`` starts the agent
before it loads it (and asyncio, which it brings), and the commands that never log
(the readers) never load it.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import shlex
import sys
from typing import Any, Protocol, TextIO, cast

import orjson

from acp_proxy.core.visible import visible, visible_json

__all__ = ["LEVELS", "LogStream", "Logger", "configure", "get_logger", "open_log"]

#: Accepted values of ``--log-level``.
LEVELS = ("debug", "info", "warning", "error")


class Logger(Protocol):
    """What the project logs through: structlog's bound logger, filtered at the level
    :func:`configure` set. An event is a short sentence; its values are keywords."""

    def debug(self, event: str, **values: Any) -> Any: ...

    def info(self, event: str, **values: Any) -> Any: ...

    def warning(self, event: str, **values: Any) -> Any: ...

    def error(self, event: str, **values: Any) -> Any: ...

    def exception(self, event: str, **values: Any) -> Any: ...

    def is_enabled_for(self, level: int) -> bool: ...


class LogStream:
    """Where log lines go: a file descriptor written so that logging never raises and never
    blocks. A line that cannot be written now (the reader went away: EPIPE; the disk is
    full; a pipe nobody drains) is dropped and counted (:attr:`dropped`); the first drop is
    said once on ``fallback`` where there is one (stderr, for a log file). The session goes
    on, signals are passed on, the transcript gets its end record."""

    #: Written at most this much at a time, once the descriptor can take it without blocking.
    _PIECE = 4096

    def __init__(self, fd: int, name: str, fallback: LogStream | None = None) -> None:
        self.fd = fd
        self.name = name
        self.fallback = fallback
        #: Log lines dropped because they could not be written.
        self.dropped = 0
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        try:
            while data:
                if not self._poll.poll(0):
                    raise BlockingIOError(errno.EAGAIN, "nobody is reading it")
                data = data[os.write(self.fd, data[: self._PIECE]) :]
        except OSError as exc:
            self.dropped += 1
            if self.dropped == 1 and self.fallback is not None:
                why = exc.strerror or type(exc).__name__
                self.fallback.write(
                    visible(f"acp-proxy: cannot write the log to {self.name} ({why}); its lines "
                            "are dropped from now on") + "\n"
                )  # fmt: skip
        return len(text)

    def flush(self) -> None:
        """Every line is written as it comes: nothing to flush."""

    def isatty(self) -> bool:
        try:
            return os.isatty(self.fd)
        except OSError:
            return False


def open_log(path: str | None) -> LogStream:
    """The log's stream: ``path`` opened as a recording is (see :mod:`acp_proxy.files`:
    no symlink followed, never a FIFO waited on, created 0600), appended to; stderr when
    there is none, or when it cannot be opened (said on stderr)."""
    stderr = LogStream(2, "stderr")
    if not path:
        return stderr
    from acp_proxy.files import open_output  # noqa: PLC0415 - only when there is a log file

    try:
        fd = open_output(path, append=True)
    except OSError as exc:
        stderr.write(
            visible(f"acp-proxy: cannot open log file {path}: {exc.strerror}; logging to stderr")
            + "\n"
        )
        return stderr
    return LogStream(fd, path, fallback=stderr)


def _dumps(obj: Any, **_: Any) -> str:
    return visible_json(orjson.dumps(obj, default=str)).decode()


def _escape(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    """Every string in a console log line shown with its controls escaped: the event and
    the values come from the wire (a method, a session id, an agent's stderr)."""
    return {
        key: visible(value) if isinstance(value, str) else _visible_repr(value)
        for key, value in event.items()
    }


def _visible_repr(value: Any) -> Any:
    """A value that is not a string, as the console line shows it: a number as it is; a
    list of strings (an argv) as a shell would read it, and another list or a mapping as
    JSON, not Python's repr; anything else its repr; each escaped."""
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return visible(shlex.join(value))
    if isinstance(value, (list, tuple, dict)):
        return _dumps(value)
    return visible(repr(value))


def configure(
    level: str = "info",
    fmt: str = "console",
    stream: TextIO | LogStream | None = None,
    color: bool | None = None,
) -> None:
    """Send structured logs at ``level`` and above to ``stream`` (stderr by default),
    coloured as ``color`` says (None: on a terminal, unless ``NO_COLOR`` is set)."""
    import structlog  # noqa: PLC0415 - loaded on first use (see above)

    global _configured  # noqa: PLW0603 - once per process
    _configured = True
    stream = stream or sys.stderr
    renderer: Any
    escape: list[Any] = []
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_dumps)
    else:
        colors = color if color is not None else _terminal(stream)
        renderer = structlog.dev.ConsoleRenderer(colors=colors)
        escape = [_escape]
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *escape,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        # (it only writes and flushes: a LogStream does both, never raising)
        logger_factory=structlog.WriteLoggerFactory(file=cast(TextIO, stream)),
        cache_logger_on_first_use=False,
    )


def _terminal(stream: object) -> bool:
    """Whether colour fits ``stream``: a terminal, and no ``NO_COLOR`` (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


#: Whether :func:`configure` has run.
_configured = False


def get_logger() -> Logger:
    """The project's logger; never structlog's default, which prints to stdout."""
    if not _configured:
        configure("info", "console")
    import structlog  # noqa: PLC0415 - loaded on first use (see above)

    return cast(Logger, structlog.get_logger("acp-proxy"))
