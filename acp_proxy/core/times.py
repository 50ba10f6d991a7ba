"""Record times: RFC 3339 UTC with microseconds, formatted fast and parsed forgivingly."""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["MAX_AGE", "format_time", "parse_age", "parse_exact_time", "parse_time"]


#: The last whole second formatted, and its text.
_second_cache: list[Any] = [-1, ""]


def format_time(when: datetime | None = None) -> str:
    """RFC 3339 UTC with microseconds: ``2026-11-29T20:17:00.123456Z``.

    Called for every frame, so the current time is formatted from a cached
    per-second prefix: strftime costs more than everything else a record needs.
    """
    if when is not None:
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    now = time.time_ns() // 1000
    second, micro = divmod(now, 1_000_000)
    if _second_cache[0] != second:
        _second_cache[:] = [
            second,
            datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        ]
    return f"{_second_cache[1]}.{micro:06d}Z"


def parse_time(text: str) -> datetime | None:
    """The inverse of :func:`format_time`; None for anything else."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


#: What :func:`format_time` writes, exactly.
_EXACT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")


def parse_exact_time(text: object) -> datetime | None:
    """The time of a text exactly as :func:`format_time` writes it (so formatting the time
    gives the text back); None for anything else."""
    if type(text) is not str or _EXACT.match(text) is None:
        return None
    return parse_time(text)


#: The longest age :func:`parse_age` takes (now less it is still a date).
MAX_AGE = timedelta(days=36_500)
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> timedelta:
    """``2d``, ``12h``, ``30m``, ``90s``, ``1w`` (a bare number: days), at most
    :data:`MAX_AGE`; a ValueError, in words, for anything else."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text.lower())
    if found is None:
        raise ValueError(f"{text!r} is not an age (2d, 12h, 30m)")
    seconds = float(found.group(1)) * _AGE_UNITS[found.group(2) or "d"]
    if not math.isfinite(seconds) or seconds > MAX_AGE.total_seconds():
        shown = text if len(text) <= 40 else f"{text[:40]}…"
        raise ValueError(f"{shown!r} is too large an age: at most {MAX_AGE.days}d (100 years)")
    return timedelta(seconds=seconds)
