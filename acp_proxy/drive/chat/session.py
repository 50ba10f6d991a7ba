"""The session the chat drives: initialize, a session opened (or loaded, or resumed), and
each prompt's turn to its end, as the wire model says (its closing message, its stop
reason; with cancel and timeout)."""

from __future__ import annotations

import time
from typing import Any

from acp_proxy.core import protocol
from acp_proxy.core.wire import Turn
from acp_proxy.drive import words
from acp_proxy.drive.chat.options import EXIT_FAILED, Quit
from acp_proxy.drive.chat.wire import Wire
from acp_proxy.drive.turn import PromptTurn
from acp_proxy.live.client import initialize_params

#: The stop reasons that end a turn that failed (a cancel is one, unless the user's).
_FAILED_REASONS = frozenset({"refusal", "cancelled"})


class Chat(Wire):
    """One chat: its session and its turns, over :class:`~.wire.Wire`."""

    def start(self) -> None:
        """initialize, then a session opened, loaded or resumed."""
        asked = self.options.protocol
        result = self.call("initialize", initialize_params(asked, self.services))
        if result is None:
            raise Quit(EXIT_FAILED)
        self.init = result
        version = result.get("protocolVersion")
        if type(version) is int and version in (1, 2) and version <= asked:
            self.protocol = version
        else:
            self.say(f"the agent answered protocolVersion {version!r}; asked {asked}", False)
            raise Quit(EXIT_FAILED)
        if self.options.session is None:
            if not self.new_session():
                raise Quit(EXIT_FAILED)
            self.begin(self.session)
        else:
            self.open_session(self.options.session)
        who = words.agent_words(protocol.agent_info(self.init, self.protocol), self.argv)
        recording = self.client.recording  # (up front: to follow it in another pane)
        self.say(
            f"acp-proxy chat: {who}, protocol {self.protocol}, session {self.session} "
            f"in {self.options.cwd}"
            + ("" if recording is None else f"; recording: {recording}")
            + (
                " (/help: commands; Ctrl-C cancels a turn; Ctrl-D quits)"
                if self.interactive
                else ""
            )
        )

    def session_params(self) -> dict[str, Any]:
        return {"cwd": str(self.options.cwd), "mcpServers": []}

    def new_session(self) -> bool:
        """session/new: whether a session was opened (if not, why was said)."""
        self.listening = None  # (its id is not known yet)
        try:
            result = self.call("session/new", self.session_params())
        finally:
            self.listening = self.session
        if result is None:
            return False
        session = result.get("sessionId")
        if not isinstance(session, str):
            self.say("session/new answered without a sessionId", False)
            return False
        self.session, self.setup = session, result
        self.listening, self.turned = session, False
        return True

    def open_session(self, session: str) -> None:
        """``--session``: loaded (its conversation replayed) where the agent can, else
        resumed."""
        caps = protocol.agent_capabilities(self.init, self.protocol)
        params = {"sessionId": session, **self.session_params()}
        if self.protocol == 1 and caps.get("loadSession") is True:
            method = "session/load"
        elif self.protocol == 2 or protocol.advertises_session(self.init, 1, "resume"):
            method = "session/resume"
        else:
            self.say(
                "--session: the agent can neither load nor resume a session "
                "(agentCapabilities.loadSession, sessionCapabilities.resume)",
                False,
            )
            raise Quit(EXIT_FAILED)
        self.begin(session)  # (--format json: its history follows, marked)
        self.stream.echo_user = True  # the conversation replayed: the user's part too
        self.listening = session
        # piped, the history is not the answer: not on stdout (json: marked as history)
        hidden = not self.interactive and not self.json
        outer = self.capture
        if hidden:
            self.capture = []
        self.history = True
        try:
            result = self.call(method, params)
            self.settle()  # (what the agent replays after its response is history too)
        finally:
            self.stream.close_line()
            self.stream.echo_user = self.history = False
            if hidden:
                self.capture = outer
        if result is None:
            raise Quit(EXIT_FAILED)
        self.session, self.setup = session, result

    # --- turns -----------------------------------------------------------------------------

    def turn(self, text: str) -> None:
        """One prompt turn, to its end (the prompt's response, and v2's idle)."""
        assert self.session is not None
        self.take_queued()  # what the agent sent since the last turn (late), before this one
        self.cut_by = None
        self.reply_text, self.stop_reason = [], None
        self.turns += 1
        began = time.monotonic()
        params = {"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}
        pending = self.client.request("session/prompt", params)
        prompt = self.prompt = PromptTurn(self.session, pending)
        self.in_turn = True
        try:
            with self.keyboard.quiet():
                self.wait(lambda: prompt.ended, "end of the turn", turn=True)
        finally:
            self.in_turn = False
            self.prompt = None
        self.turned = True
        self.stream.close_line()
        self._replies.pop(pending.id, None)
        assert prompt.reply is not None
        end = self._outcome(prompt.reply.value, prompt.wire)
        end["duration_ms"] = round((time.monotonic() - began) * 1000)
        if self.json:
            self.emit(end)

    def _outcome(self, reply: dict[str, Any], wire: Turn | None) -> dict[str, Any]:
        """How a turn ended (its response, and the wire model's turn), said where it
        failed: ``--format json``'s ``turn_end``."""
        end: dict[str, Any] = {"type": "turn_end", "session": self.session, "stop_reason": None}
        if "error" in reply:
            self.failed = True
            end["error"] = reply["error"]
            if not self.interactive:
                self.say(f"the prompt failed: {words.error_words(reply)}", False)
        elif wire is not None and wire.error is not None:
            self.failed = True
            end["error"] = wire.error
            if not self.interactive:
                error = wire.error
                said = repr(error)
                if isinstance(error, dict):
                    said = words.error_words({"error": error})
                self.say(f"the turn ended with an error: {said}", False)
        else:
            result = reply.get("result")
            reason = wire.stop_reason if wire is not None else None
            if reason is None and isinstance(result, dict):
                reason = result.get("stopReason")
            end["stop_reason"] = self.stop_reason = reason if isinstance(reason, str) else None
            if isinstance(result, dict) and isinstance(result.get("usage"), dict):
                self.usage = end["usage"] = result["usage"]  # (v1's, unstable: tokens)
            if reason == "cancelled" and self.cut_by:
                end["cancelled_by"] = self.cut_by
            self.ended(reason if isinstance(reason, str) else None)
        return end

    def ended(self, reason: str | None) -> None:
        """How a turn ended, if not as it should (end_turn): said on stderr when piped (a
        terminal has the conversation's own ``ended:`` line). A refusal, and a cancel not
        the user's (``--timeout``'s), is a failed turn; ``max_tokens`` and
        ``max_turn_requests`` are not."""
        if reason is None or reason == "end_turn":
            return
        if reason in _FAILED_REASONS and self.cut_by != "Ctrl-C":
            self.failed = True
        if not self.interactive:
            how = f" ({self.cut_by})" if reason == "cancelled" and self.cut_by else ""
            self.say(f"ended: {reason}{how}", reason not in _FAILED_REASONS)
