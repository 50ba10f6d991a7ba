"""structlog set-up. Logs go to stderr or a file, never to stdout.

stdout belongs to the protocol: structlog's default logger prints there, so
the project's logger (:func:`get_logger`, the only way to one) is configured before
it is handed out: as a command says (:func:`configure`), else at info to stderr.

structlog is loaded on first use, not on import: ``acp-proxy run`` starts the agent
before it loads it (and asyncio, which it brings), and the commands that never log
(the readers) never load it.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import orjson

__all__ = ["LEVELS", "configure", "get_logger"]

#: Accepted values of ``--log-level``.
LEVELS = ("debug", "info", "warning", "error")


def _dumps(obj: Any, **_: Any) -> str:
    return orjson.dumps(obj, default=str).decode()


def configure(level: str = "info", fmt: str = "console", stream: TextIO | None = None) -> None:
    """Send structured logs at ``level`` and above to ``stream`` (stderr by default)."""
    import structlog  # noqa: PLC0415 - loaded on first use (see above)

    global _configured  # noqa: PLW0603 - once per process
    _configured = True
    stream = stream or sys.stderr
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_dumps)
    else:
        colors = bool(getattr(stream, "isatty", lambda: False)())
        renderer = structlog.dev.ConsoleRenderer(colors=colors)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


#: Whether :func:`configure` has run.
_configured = False


def get_logger() -> Any:
    """The project's logger; never structlog's default, which prints to stdout."""
    if not _configured:
        configure("info", "console")
    import structlog  # noqa: PLC0415 - loaded on first use (see above)

    return structlog.get_logger("acp-proxy")
