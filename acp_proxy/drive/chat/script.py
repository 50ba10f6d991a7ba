"""The chat for a script: piped prompts, a line each (the chat's own commands among them),
and ``--prompt``'s one turn."""

from __future__ import annotations

import signal
from typing import TextIO

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
