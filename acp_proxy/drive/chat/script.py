"""The chat for a script: piped prompts, a line each (the chat's own commands among them),
and ``--prompt``'s one turn (its text with piped stdin, or stdin's)."""

from __future__ import annotations

import contextlib
import select
import signal
from collections.abc import Callable
from typing import BinaryIO, TextIO

from acp_proxy.drive.chat.options import EXIT_INTERRUPTED, Quit
from acp_proxy.drive.chat.session import Chat
from acp_proxy.drive.chat.slash import Commands
from acp_proxy.drive.chat.terminal import sigint


def piped(chat: Chat, commands: Commands, lines: TextIO) -> None:
    """Each line a prompt, sent once the turn before has ended (the chat's own commands
    are its own, any other ``/word`` the agent's), to the end of ``lines``."""
    while True:
        with sigint(signal.default_int_handler):
            try:
                line = lines.readline()
            except KeyboardInterrupt:
                raise Quit(EXIT_INTERRUPTED) from None
        if not line:
            return
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if commands.ours(text):
            if commands.command(text):
                return
            continue
        chat.turn(text[1:] if text.startswith("//") else text)
        chat.settle()


def one_turn(chat: Chat, prompt: str) -> None:
    """``--prompt``: one turn, then the chat ends."""
    chat.turn(prompt)
    chat.settle()


#: Seconds that stdin may hold nothing before the chat says it waits for its end.
_QUIET_STDIN = 2.0


def script_prompt(prompt: str, stdin: BinaryIO, say: Callable[[str], None]) -> str:
    """``--prompt``'s text for a script, as ``claude -p`` and ``codex exec`` take theirs:
    ``-`` is stdin, read to its end; a ``prompt`` with stdin piped (not a terminal) is the
    instruction, stdin the context after it, as a ``<stdin>`` block (codex exec's shape);
    an empty stdin adds nothing. Raises ValueError (said as a usage error) for a prompt
    that comes out empty, or stdin that is not UTF-8 text."""
    if prompt != "-" and _isatty(stdin):
        if not prompt.strip():
            raise ValueError("--prompt is empty")
        return prompt
    with contextlib.suppress(OSError, ValueError):
        if not select.select([stdin], [], [], _QUIET_STDIN)[0]:
            said = "the prompt" if prompt == "-" else "what goes with --prompt"
            say(f"reading stdin to its end ({said}; < /dev/null for none)")
    data = stdin.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"stdin is not UTF-8 text (byte {exc.start})") from None
    if prompt == "-":
        if not text.strip():
            raise ValueError("--prompt -: stdin is empty")
        return text
    if not text.strip():
        if not prompt.strip():
            raise ValueError("--prompt is empty, and so is stdin")
        return prompt
    return f"{prompt}\n\n<stdin>\n{text.rstrip(chr(10))}\n</stdin>"


def _isatty(stream: BinaryIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return True  # (no stdin to read: as a terminal, not read)
