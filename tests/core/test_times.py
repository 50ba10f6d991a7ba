"""Record times: written fast, read forgivingly, and read exactly where a reader must write the
same text again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from acp_proxy.core.times import format_time, parse_exact_time, parse_time


def test_an_exact_time_is_one_format_time_writes_and_gives_its_text_back():
    when = datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)
    text = format_time(when)
    assert text == "2026-11-30T10:00:00.123456Z"
    assert parse_exact_time(text) == when and format_time(parse_exact_time(text)) == text
    assert format_time(when + timedelta(microseconds=1)) == "2026-11-30T10:00:00.123457Z"
    now = format_time()
    assert parse_exact_time(now) is not None and format_time(parse_exact_time(now)) == now


def test_other_times_parse_but_are_not_exact():
    for text in (
        "2026-11-30T10:00:00Z",
        "2026-11-30T10:00:00.123+00:00",
        "2026-11-30 10:00:00.123456Z",
    ):
        assert parse_time(text) is not None and parse_exact_time(text) is None
    for value in ("yesterday", "", None, 5, "2026-11-30T10:00:00.123456Z\n"):
        assert parse_exact_time(value) is None
