"""``acp-proxy mcp``: the recordings of a directory as a Model Context Protocol server on stdio,
so that a coding agent can look at ACP sessions by asking (MCP 2025-06-18 and 2025-11-25,
older revisions answered as well).

What it promises:

- **stdout is JSON-RPC only**: one message per line, written by :class:`Server` alone (the
  process's own stdout is pointed at stderr while it runs, so nothing else can reach it);
  logs and stray prints go to stderr. A line that is not JSON is answered with a parse error
  (-32700) and the server goes on; end of input ends it, with exit status 0.
- **Read-only**: every tool says so (``readOnlyHint``); nothing in the directory is written.
- **Every answer is bounded**: a long one is cut to a page (:data:`PAGE_CHARS`), and says
  which page to ask for next; a long line is cut (:data:`LINE_CHARS`).
- **Nothing raw from a recording**: every string of an answer goes through
  :func:`~acp_proxy.core.visible.visible` (terminal escapes and control characters shown as
  ``\\x1b``); files are named only relative to the directory.
- **Only files beneath the directory**: a name is opened by
  :func:`~acp_proxy.transcript.beneath.open_beneath` (no ``..``, no absolute path, no
  symlink that leads out; no check that can be raced); a refusal is a tool error
  (``isError``), as is every bad argument: never a crash.

The views are the readers' own (:mod:`~acp_proxy.readers.catalog` for ``ls`` and ``search``,
:mod:`~acp_proxy.readers.text` for the timeline and the conversation,
:mod:`~acp_proxy.readers.stats`, :mod:`~acp_proxy.readers.diff`, :mod:`acp_proxy.core.rules`):
this module only opens files safely, pages and speaks JSON-RPC.

Modules::

    server.py     Server, serve: JSON-RPC on stdio; a reader thread, the tools in the main one
    tools.py      TOOLS, Tool: each tool's name, description and schemas; arguments checked
    views.py      what each tool answers (the readers' views, paged)
    directory.py  Recordings: the files of the directory, opened beneath it
    paging.py     Pager, Answer, ToolError: answers bounded, errors cut, strings escaped
"""

from __future__ import annotations

from acp_proxy.readers.mcp.directory import Recordings
from acp_proxy.readers.mcp.paging import PAGE_CHARS
from acp_proxy.readers.mcp.server import PROTOCOL_VERSIONS, Server, serve
from acp_proxy.readers.mcp.tools import TOOLS

__all__ = ["PAGE_CHARS", "PROTOCOL_VERSIONS", "TOOLS", "Recordings", "Server", "serve"]
