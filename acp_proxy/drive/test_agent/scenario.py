"""The scenario of a turn (:class:`Scenario`): every update a client must handle, the
unknown variant and the custom request, the 1 MB chunk, the permission request, the
client's ``fs`` and ``terminal`` where advertised; each judged by its check's code
(:mod:`.checks`), and the turn's summary for the user."""

from __future__ import annotations

import posixpath
from collections.abc import Generator
from typing import Any

import acp_proxy.drive.test_agent.checks as judge
from acp_proxy.drive.test_agent.catalog import (
    CUSTOM_METHOD,
    LARGE_CHUNK,
    SKIP,
    UNKNOWN_VARIANT,
    WRITTEN_NAME,
    Check,
)
from acp_proxy.drive.test_agent.core import Core, Turn

#: The checks a turn makes, in order (what it did not get to is a skip).
TURN_CHECKS = (
    "unknown-update",
    "extension-request",
    "large-chunk",
    "permission-outcome",
    "fs-read-missing",
    "fs-read",
    "fs-write",
    "terminal",
)


class Scenario(Core):
    """A turn's steps, v1's and v2's (a generator each, see :class:`~.core.Core`)."""

    def _meta(self) -> dict[str, Any]:
        return {"acp-proxy": {"test": "a client ignores _meta keys it does not know"}}

    def _common_updates(self, turn: Turn) -> None:
        """The session-level variants, the same in v1 and v2 (but config options' key)."""
        sid = turn.session.id
        command: dict[str, Any] = {"name": "test", "description": "Run the test scenario again"}
        if self.version == 2:
            command = {"type": "command", **command}
        self.update(
            sid, {"sessionUpdate": "available_commands_update", "availableCommands": [command]}
        )
        if self.version == 1:
            self.update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "test"})
        self.update(
            sid, {"sessionUpdate": "config_option_update", "configOptions": self._config_options()}
        )
        self.update(
            sid,
            {
                "sessionUpdate": "session_info_update",
                "title": "acp-proxy test-agent",
                "updatedAt": "2025-01-01T00:00:00Z",
            },
        )
        self.update(
            sid,
            {
                "sessionUpdate": "usage_update",
                "used": 1000 * turn.number,
                "size": 200_000,
                "cost": {"amount": 0.0, "currency": "USD"},
            },
        )

    def _text(
        self, variant: str, text: str, message_id: str | None, meta: bool = False
    ) -> dict[str, Any]:
        update: dict[str, Any] = {
            "sessionUpdate": variant,
            "content": {"type": "text", "text": text},
        }
        if message_id is not None:
            update["messageId"] = message_id
        if meta:
            update["_meta"] = self._meta()
        return update

    def _large(self, turn: Turn, message_id: str | None) -> None:
        piece = "acp-proxy test-agent: one large chunk, 1 MB of text. "
        text = (piece * (LARGE_CHUNK // len(piece) + 1))[:LARGE_CHUNK]
        self.update(turn.session.id, self._text("agent_thought_chunk", text, message_id))

    def _turn_v1(self, turn: Turn, prompt: Any) -> Generator[int | None, Any, None]:
        sid, n, cwd = turn.session.id, turn.number, turn.session.cwd
        update = self.update
        update(
            sid,
            self._text(
                "agent_thought_chunk", "Running the acp-proxy test-agent scenario.", None, meta=True
            ),
        )
        update(
            sid,
            self._text(
                "agent_message_chunk",
                f"acp-proxy test-agent, turn {n}: the scenario runs.\n\n",
                None,
            ),
        )
        update(
            sid,
            {
                "sessionUpdate": "plan",
                "entries": [
                    {
                        "content": "Send every session update",
                        "priority": "high",
                        "status": "completed",
                    },
                    {"content": "Ask for permission", "priority": "medium", "status": "pending"},
                    {
                        "content": "Use the client's files and terminal",
                        "priority": "low",
                        "status": "pending",
                    },
                ],
            },
        )
        self._common_updates(turn)
        diff_path = posixpath.join(cwd, WRITTEN_NAME)
        show = f"call_{n}_show"
        update(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": show,
                "title": "Show an edit",
                "kind": "edit",
                "status": "pending",
                "locations": [{"path": diff_path}],
                "content": [
                    {
                        "type": "content",
                        "content": {"type": "text", "text": "A proposed edit (not made)."},
                    },
                    {
                        "type": "diff",
                        "path": diff_path,
                        "oldText": "old line\n",
                        "newText": "new line\n",
                    },
                ],
                "_meta": self._meta(),
            },
        )
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": show, "status": "in_progress"}
        )
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": show, "status": "completed"}
        )
        yield from self._unknown_and_custom(turn)
        if self.going(turn):
            self._large(turn, None)
            ask = f"call_{n}_ask"
            tool = {
                "toolCallId": ask,
                "title": "A tool call that asks first",
                "kind": "other",
                "status": "pending",
            }
            update(sid, {"sessionUpdate": "tool_call", **tool})
            allowed = yield from self._permission(turn, tool)
            done = "completed" if allowed and turn.cancel_seq is None else "failed"
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": ask, "status": done})
        if self.going(turn):
            yield from self._fs(turn, prompt)
        if self.going(turn):
            yield from self._terminal(turn)
        self._skip_rest(turn)
        self._summary(turn, None)
        stop = "cancelled" if turn.cancel_seq is not None else "end_turn"
        self._respond(turn.prompt_id, {"stopReason": stop})

    def _turn_v2(self, turn: Turn, prompt: Any) -> Generator[int | None, Any, None]:
        sid, n = turn.session.id, turn.number
        update = self.update
        user, thought, reply = f"msg_user_{n}", f"msg_thought_{n}", f"msg_agent_{n}"
        update(sid, {"sessionUpdate": "state_update", "state": "running"})
        update(
            sid,
            {
                "sessionUpdate": "user_message",
                "messageId": user,
                "content": prompt if isinstance(prompt, list) else [],
            },
        )
        self._respond(turn.prompt_id, {"messageId": user})
        update(
            sid,
            self._text(
                "agent_thought_chunk",
                "Running the acp-proxy test-agent scenario.",
                thought,
                meta=True,
            ),
        )
        update(
            sid,
            self._text(
                "agent_message_chunk",
                f"acp-proxy test-agent, turn {n}: the scenario runs.\n\n",
                reply,
            ),
        )
        plan = {
            "type": "items",
            "planId": f"plan_{n}",
            "entries": [
                {"content": "Send every session update", "priority": "high", "status": "completed"},
                {"content": "Ask for permission", "priority": "medium", "status": "pending"},
            ],
        }
        update(sid, {"sessionUpdate": "plan_update", "plan": plan})
        self._common_updates(turn)
        diff_path = posixpath.join(turn.session.cwd, WRITTEN_NAME)
        show = f"call_{n}_show"
        update(
            sid,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": show,
                "title": "Show an edit",
                "kind": "edit",
                "status": "in_progress",
                "_meta": self._meta(),
            },
        )
        update(
            sid,
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": show,
                "content": {
                    "type": "content",
                    "content": {"type": "text", "text": "A proposed edit (not made)."},
                },
            },
        )
        update(
            sid,
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": show,
                "content": {
                    "type": "diff",
                    "changes": [{"operation": "modify", "path": diff_path}],
                },
            },
        )
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": show, "status": "completed"}
        )
        yield from self._unknown_and_custom(turn)
        ask = f"call_{n}_ask"
        if self.going(turn):
            self._large(turn, thought)
            tool = {
                "toolCallId": ask,
                "title": "A tool call that asks first",
                "kind": "other",
                "status": "pending",
            }
            update(sid, {"sessionUpdate": "tool_call_update", **tool})
            update(sid, {"sessionUpdate": "state_update", "state": "requires_action"})
            allowed = yield from self._permission(turn, {"toolCallId": ask})
            if turn.cancel_seq is None:
                update(sid, {"sessionUpdate": "state_update", "state": "running"})
                done = "completed" if allowed else "failed"
            else:
                done = "cancelled"
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": ask, "status": done})
        for name in ("fs-read-missing", "fs-read", "fs-write", "terminal"):
            turn.checks.append(Check(name, SKIP, "v2 has no fs or terminal methods", None, n))
        self._skip_rest(turn)
        self._summary(turn, reply)
        stop = "cancelled" if turn.cancel_seq is not None else "end_turn"
        update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})

    def _skip_rest(self, turn: Turn) -> None:
        """What the turn did not get to (cancelled, or the client stopped answering) is a
        skip, with why; a cancel with no permission request pending, too."""
        done = {check.name for check in turn.checks}
        why = (
            "the turn was cancelled first"
            if turn.cancel_seq is not None
            else "the client stopped answering"
        )
        for name in TURN_CHECKS:
            if name not in done:
                turn.checks.append(Check(name, SKIP, why, None, turn.number))
        if "permission-cancelled" not in done:
            why = (
                "the client cancelled with no permission request pending"
                if turn.cancel_seq is not None
                else "the client did not cancel during the permission request"
            )
            turn.checks.append(Check("permission-cancelled", SKIP, why, None, turn.number))

    def _summary(self, turn: Turn, message_id: str | None) -> None:
        """The turn's last agent message: what failed, warned and passed, for the user."""
        connection = [c for c in self.checks if c.turn is None]
        said = judge.failed_on([*connection, *turn.checks])
        checks = [*connection, *turn.checks, *judge.valid_frames(self.findings, turn.number, said)]
        counts = {s: sum(c.status == s for c in checks) for s in ("fail", "warn", "pass", SKIP)}
        lines = [
            f"\n\nacp-proxy test-agent, turn {turn.number}: {counts['fail']} failed, "
            f"{counts['warn']} warned, {counts['pass']} passed, {counts['skip']} skipped "
            "so far (the connection's own checks are judged as it ends: the report has them)."
        ]
        for check in checks:
            if check.status != "pass":
                at = f" (seq {check.seq})" if check.seq is not None else ""
                lines.append(f"- {check.status} {check.name}: {check.why}{at}")
        self.update(
            turn.session.id, self._text("agent_message_chunk", "\n".join(lines) + "\n", message_id)
        )

    def _config_options(self) -> list[dict[str, Any]]:
        key = "configId" if self.version == 2 else "id"
        options = [{"value": "fast", "name": "Fast"}, {"value": "thorough", "name": "Thorough"}]
        return [
            {
                key: "depth",
                "name": "Depth",
                "type": "select",
                "currentValue": "fast",
                "options": options,
            }
        ]

    def _unknown_and_custom(self, turn: Turn) -> Generator[int | None, Any, None]:
        """The unknown variant (with ``_meta``), then the custom request: its answer judges
        both; a custom request never answered fails ``extension-request`` alone, and the
        unknown variant waits for the next answer (the permission request's). A client that
        answers no request at all is not said to have stopped at the variant (or the chunk):
        each request it left unanswered fails its own check."""
        sid, n = turn.session.id, turn.number
        if not self.going(turn):  # (a client that stopped answering is asked nothing more)
            return
        self.update(
            sid,
            {"sessionUpdate": UNKNOWN_VARIANT, "detail": "a future variant", "_meta": self._meta()},
        )
        answer = yield from self.ask(
            turn, CUSTOM_METHOD, {"sessionId": sid, "_meta": self._meta()}, optional=True
        )
        if answer.came:
            turn.checks.append(judge.unknown_update(answer, n))
        else:
            turn.unknown_open, turn.answered_before = True, self.answered
        turn.checks.append(judge.extension_request(answer, n))

    def _permission(
        self, turn: Turn, tool_call: dict[str, Any]
    ) -> Generator[int | None, Any, bool]:
        """The permission request (after the large chunk); its checks. Whether allowed."""
        n, sid = turn.number, turn.session.id
        options = [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        if self.version == 2:
            params: dict[str, Any] = {
                "sessionId": sid,
                "title": "Allow the test tool call?",
                "options": options,
                "subject": {"type": "tool_call", "toolCall": tool_call},
            }
        else:
            params = {"sessionId": sid, "toolCall": tool_call, "options": options}
        answer = yield from self.ask(turn, "session/request_permission", params)
        if turn.unknown_open:  # nothing answered since the unknown variant: it is judged here
            turn.unknown_open = False
            if not answer.came and turn.answered_before == 0:
                # a client that answered no request at all: nothing tells the unknown
                # variant or the chunk stopped it; each unanswered request is its own check's
                why = (
                    "cannot tell: the client answered no request before it or after it "
                    "(extension-request and permission-outcome say what went unanswered)"
                )
                turn.checks.append(Check("unknown-update", SKIP, why, None, n))
                turn.checks.append(Check("large-chunk", SKIP, why, None, n))
                if turn.cancel_seq is not None:
                    turn.checks.append(judge.permission_cancelled(answer, n, turn.cancel_seq))
                else:
                    turn.checks.append(judge.permission_unanswered(answer, n))
                return False
            turn.checks.append(judge.unknown_update(answer, n))
            if not answer.came:
                turn.checks.append(
                    Check(
                        "large-chunk",
                        SKIP,
                        "nothing was answered since the unknown variant (unknown-update says it)",
                        None,
                        n,
                    )
                )
                turn.checks.append(Check("permission-outcome", SKIP, answer.missing, None, n))
                return False
        turn.checks.append(judge.large_chunk(answer, n))
        if turn.cancel_seq is not None:
            turn.checks.append(judge.permission_cancelled(answer, n, turn.cancel_seq))
            if answer.came:
                turn.checks.append(
                    Check(
                        "permission-outcome",
                        SKIP,
                        "the turn was cancelled: permission-cancelled judges the answer",
                        answer.seq,
                        n,
                    )
                )
                return False
        found, allowed = judge.permission_outcome(answer, n, turn.cancel_seq is not None)
        turn.checks.append(found)
        return allowed

    def _fs(self, turn: Turn, prompt: Any) -> Generator[int | None, Any, None]:
        """fs/read_text_file of a missing file and of the one the prompt names,
        fs/write_text_file with --allow-write: each only when advertised, inside the cwd."""
        n = turn.number
        fs = self.client_caps.get("fs")
        fs = fs if isinstance(fs, dict) else {}
        if fs.get("readTextFile") is not True:
            for name in ("fs-read-missing", "fs-read"):
                why = "the client did not advertise fs.readTextFile"
                turn.checks.append(Check(name, SKIP, why, None, n))
        else:
            yield from judge.fs_read_missing(self, turn)
            if not self.going(turn):
                return
            yield from judge.fs_read(self, turn, prompt)
        if not self.going(turn):
            return
        if not self.options.allow_write:
            turn.checks.append(Check("fs-write", SKIP, "--allow-write not given", None, n))
        elif fs.get("writeTextFile") is not True:
            why = "the client did not advertise fs.writeTextFile"
            turn.checks.append(Check("fs-write", SKIP, why, None, n))
        else:
            yield from judge.fs_write(self, turn, f"{self.token}-{n}")

    def _terminal(self, turn: Turn) -> Generator[int | None, Any, None]:
        if self.client_caps.get("terminal") is not True:
            why = "the client did not advertise terminal"
            turn.checks.append(Check("terminal", SKIP, why, None, turn.number))
            return
        yield from judge.terminal(self, turn, judge.echo_token(f"{self.token}-{turn.number}"))
