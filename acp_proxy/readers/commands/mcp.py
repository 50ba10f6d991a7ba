"""``mcp``: the recordings as a Model Context Protocol server on stdio
(:mod:`acp_proxy.readers.mcp`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from acp_proxy.clihelp import command


@command(
    short="The recordings as an MCP server on stdio, for a coding agent.",
    examples=[
        "acp-proxy mcp",
        "acp-proxy mcp ~/work/recordings     (claude mcp add acp -- acp-proxy mcp DIR)",
    ],
)
@click.argument("directory", required=False, metavar="[DIR]")
def mcp(directory: str | None) -> None:
    """Serve the recordings of DIR (default: the recordings directory) as a Model Context
    Protocol server on stdin and stdout, read-only: a coding agent (Claude Code, Codex,
    Gemini CLI, Zed) lists the sessions, searches them, reads a conversation, a timeline, a
    frame, the findings, the stats, a diff and the rules. Ends when stdin closes.

    Exit status: 0 at the end of stdin, 2 DIR cannot be read."""
    from acp_proxy.readers.mcp import serve
    from acp_proxy.transcript.names import default_record_dir

    if directory == "-":
        raise click.UsageError("mcp serves a directory: stdin carries the protocol")
    root = Path(directory) if directory else default_record_dir()
    if directory and not root.is_dir():
        raise click.BadParameter(f"{directory}: no such directory", param_hint="DIR")
    sys.exit(serve(root))
