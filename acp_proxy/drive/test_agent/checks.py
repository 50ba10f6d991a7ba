"""Each check of the client, one function registered by :func:`~.catalog.check` with its
basis and level: its code judges what the client sent back (an answer, its frames); the
checks that ask the client (``fs-*``, ``terminal``) ask through the machine and judge the
effect, not the answer: a write is read back, an echo's output must hold its token.

Every failed expectation is the one check's it belongs to: a custom request never answered
fails ``extension-request`` only; the unknown variant is judged by the next answer that
comes (the permission request's, when the custom one got none)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import BASELINE_PROMPT_CONTENT, METHODS_ANY, PROMPT_CONTENT_CAPABILITY
from acp_proxy.drive.test_agent.catalog import (
    CUSTOM_METHOD,
    ECHO_WORDS,
    FAIL,
    MISSING_NAME,
    PASS,
    SHOULD,
    SKIP,
    WRITTEN_NAME,
    Answer,
    Check,
    broken,
    check,
    inside,
    named_file,
)

if TYPE_CHECKING:
    from acp_proxy.drive.test_agent.core import Core, Turn

#: The most of a written file read back from disk.
READ_BACK = 64 * 1024
#: The lines fs-read asks for.
READ_LINES = 50


@check(
    "initialize-first",
    what="initialize before any session method",
    basis='v1 Initialization: "Before a Session can be created, Clients MUST initialize '
    'the connection by calling the initialize method"',
)
def initialize_first(method: str, seq: int | None) -> Check:
    if method == "initialize":
        return Check("initialize-first", PASS, "initialize came first", seq)
    return broken("initialize-first", f"{method!r} came before initialize", seq)


@check(
    "advertised-methods",
    what="no method the agent did not advertise",
    basis='v1 Session Setup: "Clients MUST NOT attempt to call" a method whose capability '
    "the agent did not advertise",
)
def advertised_methods(method: str, seq: int | None) -> Check:
    why = (
        f"the client called {method!r}, which this agent did not advertise"
        if method in METHODS_ANY
        else f"the client called {method!r}, no ACP method and no extension (_)"
    )
    return broken("advertised-methods", why, seq)


@check(
    "prompt-capabilities",
    what="the prompt's content within the prompt capabilities",
    basis='v1 Prompt Turn (1. User Message): "Clients MUST restrict types of content '
    'according to the Prompt Capabilities established during initialization"',
)
def prompt_capabilities(prompt: Any, seq: int | None, n: int) -> Check:
    allowed = set(BASELINE_PROMPT_CONTENT)  # this agent advertises nothing more
    used = (
        [b.get("type") for b in prompt if isinstance(b, dict)] if isinstance(prompt, list) else []
    )
    beyond = sorted({str(kind) for kind in used if kind not in allowed})
    if beyond:
        caps = ", ".join(PROMPT_CONTENT_CAPABILITY.get(kind, kind) for kind in beyond)
        return broken(
            "prompt-capabilities",
            f"the prompt carries {', '.join(map(repr, beyond))} "
            f"content, and the agent advertised no {caps} capability",
            seq,
            n,
        )
    kinds = ", ".join(repr(str(kind)) for kind in used) or "none"
    return Check(
        "prompt-capabilities",
        PASS,
        f"the prompt's content ({kinds}) is within the baseline",
        seq,
        n,
    )


@check(
    "unknown-update",
    what="still answering after an unknown update variant and _meta",
    basis="Prompt Lifecycle (Session Updates): clients that do not understand an update "
    'ignore it or display it generically; JSON-RPC 2.0 §5: "the Server MUST reply with a '
    'Response" to the request after it',
)
def unknown_update(answer: Answer, n: int) -> Check:
    """Judged by the first answer after the variant (the custom request's, else the next)."""
    if answer.came:
        return Check(
            "unknown-update",
            PASS,
            "still answering after the unknown variant and _meta (whether it was shown "
            "generically or logged as an error is the client's own log to say)",
            answer.seq,
            n,
        )
    return broken(
        "unknown-update", f"after the unknown variant, nothing answered: {answer.missing}", None, n
    )


@check(
    "extension-request",
    what="a custom (_) request answered, a result or an error",
    basis='v1 Extensibility: "Upon receiving a custom request, implementations MUST respond '
    'accordingly with the provided id"',
)
def extension_request(answer: Answer, n: int) -> Check:
    if not answer.came:
        return broken(
            "extension-request", answer.missing or f"no answer to {CUSTOM_METHOD}", None, n
        )
    if answer.error is not None:
        return Check(
            "extension-request", PASS, f"answered with {answer.error_words()}", answer.seq, n
        )
    if "result" in (answer.value or {}):
        return Check("extension-request", PASS, "answered with a result", answer.seq, n)
    return broken("extension-request", "answered with neither a result nor an error", answer.seq, n)


@check(
    "large-chunk",
    what="still answering after a 1 MB chunk",
    basis='JSON-RPC 2.0 §5: "the Server MUST reply with a Response": the permission request '
    "sent after a 1 MB agent_thought_chunk is answered",
)
def large_chunk(answer: Answer, n: int) -> Check:
    if answer.came:
        return Check("large-chunk", PASS, "still answering after the 1 MB chunk", answer.seq, n)
    return broken("large-chunk", f"after the 1 MB chunk: {answer.missing}", None, n)


@check(
    "permission-outcome",
    what="session/request_permission answered with an outcome among the options",
    basis='v1 Tool Calls (Requesting Permission): the client "responds" with an outcome (an '
    "option offered, or cancelled); a baseline method: every client answers it",
)
def permission_outcome(answer: Answer, n: int, cancelled: bool) -> tuple[Check, bool]:
    """The check and whether the tool call was allowed."""
    name, seq = "permission-outcome", answer.seq
    if not answer.came:
        return Check(name, SKIP, f"{answer.missing} (large-chunk says it)", None, n), False
    if answer.error is not None:
        return broken(name, f"refused with {answer.error_words()}", seq, n), False
    result = answer.result
    outcome = result.get("outcome") if isinstance(result, dict) else None
    kind = outcome.get("outcome") if isinstance(outcome, dict) else None
    option = outcome.get("optionId") if isinstance(outcome, dict) else None
    if kind == "selected":
        if option not in ("allow", "reject"):
            return broken(
                name,
                f"selected {str(option)[:80]!r}, not one of the options offered (allow, reject)",
                seq,
                n,
            ), False
        if option == "reject":
            return Check(name, SKIP, "rejected (the user's choice)", seq, n), False
        return Check(name, PASS, "selected allow", seq, n), not cancelled
    if kind == "cancelled":
        why = "cancelled" if cancelled else "cancelled, with no session/cancel"
        return Check(name, SKIP, why, seq, n), False
    if not isinstance(outcome, dict):
        said = "no outcome" if outcome is None else f"the outcome {str(outcome)[:40]!r}"
        return broken(name, f"answered {said}, not an object selected or cancelled", seq, n), False
    return broken(name, f"no outcome selected or cancelled ({str(kind)[:40]!r})", seq, n), False


def permission_unanswered(answer: Answer, n: int) -> Check:
    """The permission request never answered, by a client that answered no request before
    it either (nothing else to blame): the request's own failure."""
    return broken("permission-outcome", answer.missing, None, n)


@check(
    "permission-cancelled",
    what="pending permission requests answered cancelled after session/cancel",
    basis='v1 Prompt Turn (Cancellation): "The Client MUST respond to all pending '
    'session/request_permission requests with the cancelled outcome"',
)
def permission_cancelled(answer: Answer, n: int, cancel_seq: int) -> Check:
    name = "permission-cancelled"
    if not answer.came:
        return broken(name, answer.missing, None, n)
    result = answer.result
    outcome = result.get("outcome") if isinstance(result, dict) else None
    kind = outcome.get("outcome") if isinstance(outcome, dict) else None
    if kind == "cancelled":
        return Check(name, PASS, "answered cancelled after session/cancel", answer.seq, n)
    said = (
        repr(str(kind)[:40]) if kind else (answer.error_words() if answer.error else "no outcome")
    )
    return broken(
        name,
        f"answered {said} after session/cancel (seq {cancel_seq}), not cancelled",
        answer.seq,
        n,
    )


@check(
    "fs-read-missing",
    what="a read of a file that does not exist is an error answer",
    basis="v1 File System (Reading Files): the client reads the file at the path; a file "
    "that does not exist has no content to answer with (no MUST: a warning)",
    level=SHOULD,
)
def fs_read_missing(agent: Core, turn: Turn) -> Generator[int | None, Any, None]:
    missing = posixpath.join(turn.session.cwd, MISSING_NAME)
    answer = yield from agent.ask(
        turn, "fs/read_text_file", {"sessionId": turn.session.id, "path": missing}
    )
    n, name = turn.number, "fs-read-missing"
    if not answer.came:
        turn.checks.append(broken(name, answer.missing, None, n))
    elif answer.error is not None:
        turn.checks.append(Check(name, PASS, f"answered {answer.error_words()}", answer.seq, n))
    else:
        turn.checks.append(
            broken(
                name,
                f"answered a result for {MISSING_NAME}, which does not exist (an error is right)",
                answer.seq,
                n,
            )
        )


@check(
    "fs-read",
    what="the file the prompt names, read as content (as on disk, when the cwd is here)",
    basis='v1 File System (Reading Files): the client "returns the file contents" '
    "(the response's content, a string, is required by the schema)",
)
def fs_read(agent: Core, turn: Turn, prompt: Any) -> Generator[int | None, Any, None]:
    n, name = turn.number, "fs-read"
    named = named_file(prompt)
    if named is None:
        turn.checks.append(
            Check(
                name,
                SKIP,
                "the prompt names no file (an absolute path, or a resource_link)",
                None,
                n,
            )
        )
        return
    path = inside(named, turn.session.cwd)
    if path is None:
        turn.checks.append(
            Check(
                name,
                SKIP,
                "the file the prompt names is outside the session's cwd: not read",
                None,
                n,
            )
        )
        return
    answer = yield from agent.ask(
        turn,
        "fs/read_text_file",
        {"sessionId": turn.session.id, "path": path, "limit": READ_LINES},
    )
    if not answer.came:
        turn.checks.append(broken(name, answer.missing, None, n))
    elif answer.error is not None:
        turn.checks.append(Check(name, SKIP, f"refused: {answer.error_words()}", answer.seq, n))
    elif isinstance(answer.result, dict) and isinstance(answer.result.get("content"), str):
        content = answer.result["content"]
        disk = on_disk(path, turn.session.cwd)
        if disk and len(disk.encode()) < READ_BACK and not _lines_of(content, disk, READ_LINES):
            turn.checks.append(
                broken(
                    name,
                    f"answered {content[:80]!r} for {path!r}, which holds {disk[:80]!r} on disk",
                    answer.seq,
                    n,
                )
            )
            return
        how = " (as on disk)" if disk else ""
        turn.checks.append(
            Check(name, PASS, f"read {path!r} ({len(content)} characters){how}", answer.seq, n)
        )
    else:
        fields = sorted(map(str, answer.result)) if isinstance(answer.result, dict) else []
        said = ", ".join(fields)[:120] or "none"
        turn.checks.append(
            broken(name, f"the result has no string content field (fields: {said})", answer.seq, n)
        )


def _lines_of(content: str, disk: str, limit: int) -> bool:
    """Whether ``content`` is the first ``limit`` lines of ``disk`` (a last newline, or a
    ``\r``, kept or not: clients join lines their own way)."""
    first = "".join(disk.splitlines(keepends=True)[:limit])
    return content.replace("\r\n", "\n").rstrip("\n") == first.replace("\r\n", "\n").rstrip("\n")


def on_disk(path: str, cwd: str) -> str | None:
    """What ``path`` holds on this machine's disk (its first :data:`READ_BACK` bytes, as
    text); ``""`` for a file that is not there when ``cwd`` is (the cwd is shared); None
    when ``cwd`` is not a directory here (the client's disk is not ours: not checked). A
    link is not followed."""
    if not os.path.isdir(cwd):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        return os.read(fd, READ_BACK).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


@check(
    "fs-write",
    what="a file written in the session's cwd, and read back",
    basis="v1 File System (Writing Files): the client writes the content to the file; "
    '"The Client MUST create the file if it doesn\'t exist"',
)
def fs_write(agent: Core, turn: Turn, token: str) -> Generator[int | None, Any, None]:
    """Written (``--allow-write``), then read back: through ``fs/read_text_file`` when
    advertised, and on disk when the session's cwd is a directory here. A success that
    wrote nothing fails."""
    n, name, sid = turn.number, "fs-write", turn.session.id
    path = posixpath.join(turn.session.cwd, WRITTEN_NAME)
    content = f"Written by acp-proxy test-agent (--allow-write), {token}.\n"
    answer = yield from agent.ask(
        turn, "fs/write_text_file", {"sessionId": sid, "path": path, "content": content}
    )
    if not answer.came:
        turn.checks.append(broken(name, answer.missing, None, n))
        return
    if answer.error is not None:
        turn.checks.append(Check(name, SKIP, f"refused: {answer.error_words()}", answer.seq, n))
        return
    if not (answer.result is None or isinstance(answer.result, dict)):
        turn.checks.append(broken(name, "the result is not an object", answer.seq, n))
        return
    seq, how = answer.seq, []
    # the disk first, where it is ours: a write made there is made, whatever a read says
    # (a read that answers other content is fs-read's failure, not this one's)
    disk = on_disk(path, turn.session.cwd)
    if disk is not None:
        if disk != content:
            said = "no such file" if disk == "" else f"{disk[:80]!r}"
            turn.checks.append(
                broken(
                    name,
                    f"answered success, but {path!r} on disk holds {said}, not what was written",
                    seq,
                    n,
                )
            )
            return
        how.append("on disk")
    fs = agent.client_caps.get("fs")
    if isinstance(fs, dict) and fs.get("readTextFile") is True and agent.going(turn):
        back = yield from agent.ask(turn, "fs/read_text_file", {"sessionId": sid, "path": path})
        text = back.result.get("content") if isinstance(back.result, dict) else None
        if not back.came and not how:
            turn.checks.append(broken(name, f"answered success; read back: {back.missing}", seq, n))
            return
        if text == content:
            how.insert(0, "read back through fs/read_text_file")
        elif not how:
            said = back.error_words() if back.error else f"{str(text)[:80]!r}"
            turn.checks.append(
                broken(
                    name,
                    f"answered success, but reading {path!r} back gave "
                    f"{said}, not what was written",
                    back.seq,
                    n,
                )
            )
            return
        else:  # on disk as written; the client's read of it is another check's matter
            how[-1] += " (the client's read of it differs)"
    turn.checks.append(Check(name, PASS, f"wrote {path!r}: {' and '.join(how)}", seq, n))


def _terminal_problem(method: str, answer: Answer, token: str) -> str | None:
    """What is wrong with a terminal method's answer, if anything: an effect that is not
    there (the token not in the output, a non-zero exit) included."""
    if not answer.came:
        return answer.missing
    if answer.error is not None:
        return f"{method}: {answer.error_words()}"
    if method == "terminal/release":
        return None
    result = answer.result
    if not isinstance(result, dict):
        return f"{method}: the result is not an object"
    if method == "terminal/output":
        output = result.get("output")
        if not isinstance(output, str):
            return f"{method}: no string output field"
        if token not in output:
            said = f"{output[:80]!r}"
            return f"{method}: the output ({said}) does not hold {token!r}, which echo printed"
    if method == "terminal/wait_for_exit" and result.get("exitCode") != 0:
        code, signal = result.get("exitCode"), result.get("signal")
        said = str(code) if type(code) is int else repr(str(code)[:20])
        by = f", signal {str(signal)[:20]!r}" if signal is not None else ""
        return f"{method}: echo exited with {said}{by}, not 0"
    return None


@check(
    "terminal",
    what="a terminal that runs echo: its output holds what it printed, its exit status 0",
    basis='v1 Terminals: terminal/create "executes a command", terminal/output returns '
    "its output, terminal/wait_for_exit its exit status",
)
def terminal(agent: Core, turn: Turn, token: str) -> Generator[int | None, Any, None]:
    """``echo TOKEN``: create, wait_for_exit, output, release."""
    n, sid, checks = turn.number, turn.session.id, turn.checks
    created = yield from agent.ask(
        turn,
        "terminal/create",
        {
            "sessionId": sid,
            "command": "echo",
            "args": [token],
            "cwd": turn.session.cwd,
            "outputByteLimit": 4096,
        },
    )
    if not created.came:
        checks.append(broken("terminal", created.missing, None, n))
        return
    if created.error is not None:
        checks.append(Check("terminal", SKIP, f"refused: {created.error_words()}", created.seq, n))
        return
    result = created.result
    term = result.get("terminalId") if isinstance(result, dict) else None
    if not isinstance(term, str):
        checks.append(
            broken("terminal", "terminal/create's result has no terminalId", created.seq, n)
        )
        return
    call = f"call_{n}_echo"
    agent.update(
        sid,
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call,
            "title": "echo",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": term}],
        },
    )
    ids = {"sessionId": sid, "terminalId": term}
    problems: list[tuple[str, int | None]] = []
    last = created.seq
    for method in ("terminal/wait_for_exit", "terminal/output", "terminal/release"):
        answer = yield from agent.ask(turn, method, ids)
        problem = _terminal_problem(method, answer, token)
        if problem is not None:
            problems.append((problem, answer.seq))
        if not answer.came:
            break
        last = answer.seq
    status = "failed" if problems else "completed"
    agent.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": status})
    if problems:
        why = "; ".join(problem for problem, _ in problems)
        checks.append(broken("terminal", why, problems[0][1], n))
    else:
        checks.append(
            Check(
                "terminal",
                PASS,
                "echo ran: its output held its token, it exited 0, and was released",
                last,
                n,
            )
        )


def echo_token(stem: str) -> str:
    return f"{ECHO_WORDS}-{stem}"


@check(
    "valid-frames",
    what="the validator's rules, on the client's frames",
    basis="the validator's MUST rules (acp-proxy validate), each citing its sentence",
)
def failed_on(checks: list[Check]) -> set[int]:
    """The client's frames (seqs) a failed check other than valid-frames is about."""
    return {
        c.seq for c in checks if c.status == FAIL and c.seq is not None and c.name != "valid-frames"
    }


def valid_frames(
    findings: list[Violation], turn: int | None, said: set[int] | frozenset[int] = frozenset()
) -> list[Check]:
    """A failure per error the validator found on the client's frames, else a pass. An error
    on a frame another check failed on (``said``: their seqs) is that check's failure, said
    once (the report's findings keep it)."""
    errors = [f for f in findings if f.level == "error" and f.seq not in said]
    if not errors:
        theirs = sum(f.level == "error" for f in findings)
        why = (
            f"no error on the client's frames but on those failed checks are about ({theirs})"
            if theirs
            else "no error on the client's frames"
        )
        return [Check("valid-frames", PASS, why, None, turn)]
    return [Check("valid-frames", FAIL, f.message, f.seq, turn, f.rule) for f in errors]


@check(
    "reads-output",
    what="the client reads what the agent writes, within --timeout",
    basis="Transport (stdio): the agent writes its messages to stdout for the client to "
    "read (no MUST on how soon: a warning when no request was waiting)",
    level=SHOULD,
)
def reads_output(reason: str) -> Check:
    return broken("reads-output", reason)
