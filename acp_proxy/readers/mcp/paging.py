"""Answers of ``acp-proxy mcp`` bounded: pages, cut lines, errors in words, escaped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from acp_proxy.core.visible import visible

__all__ = [
    "LINE_CHARS",
    "NAME_CHARS",
    "PAGE_CHARS",
    "PAGE_ITEMS",
    "Answer",
    "Pager",
    "ToolError",
    "cut",
    "paged",
    "safe",
    "said",
]

#: The most characters of text a page of an answer holds.
PAGE_CHARS = 24_000
#: The most characters of one line (a longer one is cut, and says by how much).
LINE_CHARS = 2_000
#: The most characters of an argument repeated in an error (a name, a pattern, a method).
NAME_CHARS = 200
#: The most items (sessions, matches, findings, differences) on a page.
PAGE_ITEMS = 50


class ToolError(Exception):
    """What a tool says back as its result with ``isError``: a bad argument, a refused name,
    an unreadable recording (in words for the model)."""


@dataclass
class Answer:
    """A tool's answer: text for the model, and the data (``structuredContent``) if any."""

    text: str
    data: dict[str, Any] | None = None


def said(error: object) -> str:
    """An error's text as a client sees it: escaped, and never longer than a line (what it
    repeats of an argument is cut where it is said, and this is the net)."""
    return cut(visible(str(error)), LINE_CHARS)


def cut(line: str, limit: int = LINE_CHARS) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… ({len(line) - limit:,} more characters cut)"


class Pager:
    """Lines into pages of at most :data:`PAGE_CHARS` (a line longer than :data:`LINE_CHARS`
    wrapped: the next page goes on with it); keeps only the page asked for."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.pages = 1
        self._size = 0
        self.kept: list[str] = []

    def add(self, line: str) -> None:
        for part in line.split("\n"):
            part = click.unstyle(part)  # noqa: PLW2901 - (the line as text)
            for at in range(0, max(len(part), 1), LINE_CHARS):  # a long line: wrapped
                self._line(part[at : at + LINE_CHARS])

    def _line(self, piece: str) -> None:
        if self._size and self._size + len(piece) + 1 > PAGE_CHARS:
            self.pages += 1
            self._size = 0
        self._size += len(piece) + 1
        if self.pages == self.page:
            self.kept.append(piece)

    def text(self, again: str) -> str:
        """The page, and a note of how to get the rest (``again``: the call, with ``page=``)."""
        if self.page > self.pages:
            raise ToolError(f"page {self.page}: there are {self.pages} pages")
        text = "\n".join(self.kept)
        if self.pages > 1:
            more = (
                f"; call {again} page={self.page + 1} for the next"
                if self.page < self.pages
                else ""
            )
            text += f"\n[page {self.page} of {self.pages}{more}]"
        return text


def paged(items: list[Any], page: int, again: str) -> tuple[list[Any], dict[str, Any]]:
    """A page of ``items`` (:data:`PAGE_ITEMS` each), and what says where it is."""
    pages = max(1, -(-len(items) // PAGE_ITEMS))
    if page > pages:
        raise ToolError(f"page {page}: there are {pages} pages")
    shown = items[(page - 1) * PAGE_ITEMS : page * PAGE_ITEMS]
    where: dict[str, Any] = {"total": len(items), "page": page, "pages": pages}
    if page < pages:
        where["note"] = f"cut: {len(shown)} of {len(items)}; call {again} page={page + 1} for more"
    return shown, where


def safe(value: Any) -> Any:
    """Every string of ``value`` with its control and format characters escaped (a line
    feed and a tab kept: text of several lines)."""
    if isinstance(value, str):
        return visible(value, lines=True, tabs=True)
    if isinstance(value, dict):
        return {safe(str(k)): safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe(v) for v in value]
    return value
