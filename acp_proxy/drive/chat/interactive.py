"""The chat on a terminal: the prompt line (a paste one prompt, a line ending in ``\\``
going on, what a question set aside there to edit), what the agent sends between turns
drawn above it, permission questions asked, Ctrl-C and Ctrl-D."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import click

from acp_proxy.core.visible import visible
from acp_proxy.drive.chat.options import EXIT_INTERRUPTED, TICK, Quit
from acp_proxy.drive.chat.permissions import Ask, asked_about, chosen, cut, option_keys
from acp_proxy.drive.chat.session import Chat
from acp_proxy.drive.chat.slash import Commands
from acp_proxy.drive.chat.terminal import (
    PASTE_END,
    PASTE_OFF,
    PASTE_ON,
    PASTE_START,
    brackets,
    sigint,
)
from acp_proxy.live.client import AgentGone, TimedOut

#: Characters of an option's name shown at most; options and detail lines shown at most.
_OPTION = 80
_OPTIONS = 9
_DETAILS = 5


class Interactive:
    """:attr:`chat` on a terminal: its prompt loop, and the user asked what the agent asks
    (:meth:`ask`, the chat's :attr:`~.wire.Wire.asker`)."""

    def __init__(self, chat: Chat, commands: Commands) -> None:
        self.chat = chat
        self.commands = commands
        chat.asker = self.ask

    def loop(self) -> None:
        chat = self.chat
        quitting = False
        while True:
            chat.settle()
            if chat.interrupted() and chat.ctrl_c_cancelled:  # Ctrl-C twice in one turn
                raise Quit(EXIT_INTERRUPTED)
            chat.taken = chat.interrupts
            with sigint(signal.default_int_handler):
                try:
                    with self.idle():
                        line = self.prompt_lines()
                except EOFError:
                    chat.write("\n")
                    return
                except KeyboardInterrupt:
                    chat.write("\n")
                    # (after a turn a Ctrl-C cancelled, "Ctrl-C again quits", as it said)
                    if quitting or chat.ctrl_c_cancelled:
                        raise Quit(EXIT_INTERRUPTED) from None
                    quitting = True
                    chat.say("  (Ctrl-C again, Ctrl-D or /quit ends the chat)")
                    continue
            quitting = chat.ctrl_c_cancelled = False
            if not line.strip():
                continue
            if line.startswith("/") and not line.startswith("//"):
                if self.commands.command(line):
                    return
                continue
            chat.turn(line[1:] if line.startswith("//") else line)

    def prompt_lines(self) -> str:
        """A prompt typed or pasted at the terminal: a bracketed paste is one, whatever its
        lines (readline takes it whole: :func:`~.run.chat` turned its bracketed paste on;
        without readline its markers are read here, the terminal asked to send them); a
        line ending in ``\\`` goes on at the next. What a question set aside is the line's
        start (readline: there to edit)."""
        kept, eof = self.chat.keyboard.take_typed()
        if eof and not kept.strip():
            raise EOFError  # (a Ctrl-D typed in the turn: the chat ends once it has)
        edit = sys.modules.get("readline")
        raw = edit is None and brackets()
        if raw:
            self.chat.control(PASTE_ON)
        if kept and edit is not None:

            def prefill() -> None:
                edit.insert_text(kept)
                edit.redisplay()

            edit.set_pre_input_hook(prefill)
        try:
            line = input("> " + ("" if edit is not None else kept))
            if edit is None:
                line = kept + line
            if PASTE_START in line:
                while PASTE_END not in line:
                    line += "\n" + input("")
                line = line.replace(PASTE_START, "").replace(PASTE_END, "")
            while line.endswith("\\"):
                line = line[:-1] + "\n" + input(". ")
        finally:
            if raw:
                self.chat.control(PASTE_OFF)
            if kept and edit is not None:
                edit.set_pre_input_hook(None)
        return line

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """While the prompt waits for a line: what the agent sends, and the findings,
        drawn as they come (by a thread: the main one is in ``input``), above the prompt
        line, drawn again after them with what was typed so far."""
        stop = threading.Event()
        thread = threading.Thread(target=self._idle, args=(stop,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _idle(self, stop: threading.Event) -> None:
        chat = self.chat
        while not stop.is_set():
            shown: list[str] = []
            chat.capture = shown
            try:
                event = chat.next_event(TICK)
                chat.take(event)
                chat.stream.close_line()
            except TimedOut:
                pass
            except AgentGone:  # (the main thread says it, once the line is typed)
                return
            finally:
                chat.capture = None
            if not shown and not chat.notes:
                continue
            edit = sys.modules.get("readline")
            typed = edit.get_line_buffer() if edit is not None else ""
            # the prompt line cleared: by ESC [ K, or where colour is off (so is ESC: a
            # dumb terminal), written over with spaces
            clear = "\x1b[K" if chat.colour else " " * (2 + len(typed)) + "\r"
            chat.write("\r" + clear + "".join(shown))
            chat.show_notes()
            chat.write("> " + typed)
            chat.flush()

    # --- permission requests ---------------------------------------------------------------

    def ask(self, ask: Ask) -> None:
        """The user answers a permission request: a key per option the agent offered."""
        chat = self.chat
        params = ask.params
        if chat.services.is_cancelled(params.get("sessionId")):
            ask.answered.set()  # answered cancelled
            return
        keys = option_keys(params)
        chat.stream.close_line()
        named = params.get("sessionId")
        view = chat.stream.model.sessions.get(
            named if isinstance(named, str) else chat.session or ""
        )
        what, details = asked_about(params, view)  # (the agent's: each cut, the cut said)
        chat.write(click.style(f"  permission: {visible(cut(what))}", fg="yellow") + "\n")
        for detail in details[:_DETAILS]:
            chat.write(f"    {visible(cut(detail))}\n")
        choices = "  ".join(
            f"[{key}] {visible(cut(str(o.get('name') or o.get('optionId')), _OPTION))}"
            for key, o in list(keys.items())[:_OPTIONS]
        )
        if len(keys) > _OPTIONS:
            choices += f"  (and {len(keys) - _OPTIONS} more: answer with their numbers)"
        chat.write(f"    {choices}\n")
        if chat.keyboard.set_aside():  # never an answer the user typed before the question
            chat.write(click.style("    (what was typed before this question waits for the "
                                   "next prompt)", dim=True) + "\n")  # fmt: skip
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        while keys:
            answer = self.read(f"    {'/'.join(keys)}? ")
            if answer is None:  # Ctrl-D or Ctrl-C: the turn is cancelled
                chat.interrupts += 1
                break
            option = chosen(answer, keys)
            if option is not None and "optionId" in option:
                outcome = {"outcome": "selected", "optionId": option["optionId"]}
                break
            if answer.strip():  # (a paste, a line meant for the prompt: never lost)
                chat.keyboard.keep(answer)
                chat.write(click.style("    (not an answer: kept for the next prompt)",
                                       dim=True) + "\n")  # fmt: skip
        ask.outcome = outcome
        ask.answered.set()
        chat.services.said(f"permission asked; answered {outcome.get('optionId', 'cancelled')}",
                           False)  # fmt: skip

    def read(self, prompt: str) -> str | None:
        """A line from the user (Ctrl-C reaches us as KeyboardInterrupt here): None at
        Ctrl-D, and at Ctrl-C."""
        with self.chat.keyboard.cooked(), sigint(signal.default_int_handler):
            try:
                return input(prompt)
            except EOFError:
                self.chat.write("\n")
                return None
            except KeyboardInterrupt:
                self.chat.write("\n")
                return None
