"""The probe's checks, one function each, registered in the order they run by
:func:`~.catalog.check` with their basis, level and needs (``acp-proxy probe --list``).

A check returns what it found (it passed) or raises :class:`~.runner.Stop` (failed, or
skipped, and why); a wait that runs out or an agent gone fails it (:class:`~.runner.Probe`
says how). A check of level ``SHOULD`` that fails is said as a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_proxy.core.protocol import (
    TURN_OUTPUT_UPDATES,
    Kind,
    agent_capabilities,
    agent_info,
    auth_methods,
)
from acp_proxy.core.visible import visible
from acp_proxy.drive.probe.catalog import (
    AFTER_CANCEL_PROMPT,
    CANCEL_PROMPT,
    FAIL,
    NO_SUCH_SESSION,
    PASS,
    READ_ME,
    SHOULD,
    SKIP,
    check,
)
from acp_proxy.drive.probe.outcome import TRANSPORT_RULES, plural, stop_words, wire
from acp_proxy.drive.probe.runner import (
    ANSWER_SETTLE,
    WENT_ON,
    WENT_ON_SECONDS,
    Probe,
    Stop,
    came_after,
    message_id,
    result_of,
    state_of,
)
from acp_proxy.drive.words import shown, shown_line
from acp_proxy.live.client import AgentGone, TimedOut, auth_method_id, config_option_params


def _version_words(version: Any, asked: int) -> str:
    """Why the protocol version answered cannot be taken, in words that do not read as a
    contradiction (a string "1" is not the number 1)."""
    if type(version) is not int:
        what = "no protocolVersion" if version is None else f"protocolVersion {wire(version)}"
        return f"answered {what}, not a number: a protocol version is an integer (asked: {asked})"
    may = "1" if asked == 1 else " or ".join(str(v) for v in range(1, asked + 1))
    return (
        f"answered protocolVersion {version}, which the probe cannot speak: it asked for "
        f"{asked}, and an agent answers that version or an earlier one ({may})"
    )


def _id_words(result: dict[str, Any]) -> str:
    """A sessionId that is no id, said as it is: missing, empty, or not a string."""
    if "sessionId" not in result:
        return "without a sessionId"
    session = result["sessionId"]
    if session == "":
        return "an empty sessionId"
    return f"sessionId {wire(session)}, not a string"


#: JSON-RPC's code for invalid method parameters.
INVALID_PARAMS = -32602


@check(
    "handshake",
    spec="Initialization",
    what=(
        "initialize (as editors send it: clientCapabilities._meta opt-ins, unless "
        "--initialize plain) "
        "is answered in time, with a protocol version the client may take; capabilities and auth "
        'methods well formed (a terminal auth method only when the client enabled it: "Agents MUST '
        "advertise this method only when the client enabled its terminal authentication "
        'capability")'
    ),
    basis=(
        'Initialization: "the Agent MUST respond with the chosen protocol version" (the '
        "client's or an"
        " earlier one it supports)"
    ),
    page="initialization",
)
def handshake(run: Probe) -> str:
    asked = run.options.protocol
    params = run.initialize_params()
    try:
        reply = run.client.call("initialize", params, run.timeout)
        result = result_of(reply, "initialize")
    except (Stop, TimedOut, AgentGone):
        run.handshake_failed = True
        raise
    run.init = result
    version = result.get("protocolVersion")
    if type(version) is not int or version not in (1, 2) or version > asked:
        run.handshake_failed = True
        raise Stop(FAIL, _version_words(version, asked))
    run.protocol = version
    methods = auth_methods(result) or []
    ids = [auth_method_id(m, version) for m in methods] if isinstance(methods, list) else None
    if ids is None or not all(isinstance(i, str) for i in ids):
        key = "id" if version == 1 else "methodId"
        raise Stop(FAIL, f"authMethods is not a list of methods with string {key}s")
    info = [part for part in agent_info(run.init, run.protocol) if part]
    said = f"protocol {version}" + (f" (asked {asked})" if version != asked else "")
    if info:
        said += f", {shown(' '.join(info))}"
    if methods:
        said += f", auth methods: {shown(', '.join(map(str, ids)))}"
    return said


@check(
    "authenticate",
    spec="Initialization (Authentication); v2 Authentication",
    what="authenticate (v2: auth/login) with the method --auth names succeeds",
    basis="Initialization (Authentication): the method offered in authMethods authenticates",
    page="initialization",
    needs=("handshake",),
)
def authenticate(run: Probe) -> str:
    if run.handshake_failed:
        raise Stop(SKIP, "the handshake failed")
    methods = auth_methods(run.init)
    listed = methods if isinstance(methods, list) else []
    offered = [auth_method_id(m, run.protocol) for m in listed if isinstance(m, dict)]
    method = run.options.auth
    if method is None:
        why = "no --auth METHOD given"
        if offered:
            why += f" (the agent offers {shown(', '.join(map(str, offered)))})"
        raise Stop(SKIP, why)
    if method not in offered:
        those = f"it offers: {', '.join(map(str, offered))}" if offered else "it offers none"
        raise Stop(FAIL, f"{shown(method)} is not among the agent's authMethods ({shown(those)})")
    name = "authenticate" if run.protocol == 1 else "auth/login"
    chosen = next(m for m in listed if auth_method_id(m, run.protocol) == method)
    if chosen.get("type") == "terminal":  # (AuthMethodTerminal: "without passing this
        # method to" authenticate: the client runs the agent in a terminal for it)
        raise Stop(SKIP, f"{shown(method)} is a terminal method: the client runs the "
                          f"agent in a terminal for it, never {name}")  # fmt: skip
    run.call(name, {"methodId": method})
    return f"{name} {shown(method)} succeeded"


@check(
    "session-new",
    spec="Session Setup (Creating a Session)",
    what="session/new returns a session id",
    basis=(
        'Session Setup: "The Agent MUST respond with a unique Session ID that identifies this '
        'conversation"'
    ),
    page="session-setup",
    needs=("handshake", "authenticate"),
)
def session_new(run: Probe) -> str:
    if run.handshake_failed:
        raise Stop(SKIP, "the handshake failed")
    reply = run.client.call("session/new", {"cwd": run.sandbox, "mcpServers": []}, run.timeout)
    if reply.error is not None and reply.error.get("code") == -32000:
        raise Stop(
            FAIL,
            "session/new needs authentication (--auth METHOD): " + shown_line(reply.error_words()),
        )
    result = result_of(reply, "session/new")
    session = result.get("sessionId")
    if not isinstance(session, str) or not session:
        raise Stop(FAIL, f"session/new answered {_id_words(result)}", reply.seq)
    run.session, run.new_result = session, result
    return f"session {shown(session)}"


@check(
    "session-id-unique",
    spec="Session Setup (Creating a Session)",
    what=(
        'a second session/new returns another id ("The Agent MUST respond with a unique Session ID '
        'that identifies this conversation")'
    ),
    basis=(
        'Session Setup: "The Agent MUST respond with a unique Session ID that identifies this '
        'conversation"'
    ),
    page="session-setup",
    needs=("session-new",),
)
def session_id_unique(run: Probe) -> str:
    session = run.needs_session()
    reply = run.client.call("session/new", {"cwd": run.sandbox, "mcpServers": []}, run.timeout)
    second = result_of(reply, "the second session/new")
    other = second.get("sessionId")
    if not isinstance(other, str) or not other:
        raise Stop(FAIL, f"the second session/new answered {_id_words(second)}", reply.seq)
    if other == session:
        raise Stop(
            FAIL, f"the second session/new answered the first one's id, {shown(other)}",
            reply.seq,
        )  # fmt: skip
    run.listen(other)  # (what the new session announces comes now, not in a turn)
    return f"two sessions, two ids: {shown(session)}, {shown(other)}"


@check(
    "prompt",
    spec="Prompt Turn; v2 Prompt Lifecycle",
    what=(
        "a prompt turn (by default one that asks to read a file in the scratch directory: tools, "
        "permissions and fs at work) ends with a stop reason; its updates name its "
        "session; nothing of"
        " the turn comes after its end"
    ),
    basis=(
        'Prompt Turn: the turn ends with a response carrying a StopReason; "All Agents '
        "MUST support "
        'ContentBlock::Text"'
    ),
    page="prompt-turn",
    page2="prompt-lifecycle",
    needs=("session-new",),
    turn=True,
)
def prompt(run: Probe) -> str:
    session = run.turn_session()
    turn = run.turn(session, run.options.prompt)
    run.prompted = True
    run.ended_well(turn, "the turn")
    updates = sum(1 for e in turn.events if e.method == "session/update")
    return f"ended {stop_words(turn.stop)} after {plural(updates, 'update')}"


@check(
    "lifecycle",
    spec="v2 Prompt Lifecycle",
    what=(
        "v2: the prompt's response carries the inserted user message's messageId (\"The response "
        'returns that message\'s messageId"), reported with it ("The Agent MUST also report the '
        "inserted user message through a user_message update [...] All updates for that "
        "message MUST "
        'use the returned messageId"); running before the turn\'s output ("The Agent MUST report '
        'running when foreground work starts"); idle, with a stop reason, ends the turn ("When '
        'foreground work ends, the Agent MUST report idle")'
    ),
    basis=(
        'v2 Prompt Lifecycle: "The Agent MUST report running when foreground work starts"; "When '
        'foreground work ends, the Agent MUST report idle"'
    ),
    page="prompt-turn",
    page2="prompt-lifecycle",
    needs=("prompt",),
)
def lifecycle(run: Probe) -> str:
    if run.protocol != 2:
        raise Stop(SKIP, "v1 has no prompt lifecycle (states, message ids): --protocol 2")
    turn = next((turn for name, turn in run.turns if name == "prompt"), None)
    if turn is None:
        run.needs_session()
        raise Stop(SKIP, "no prompt turn ran")
    if turn.response is None or turn.error is not None:
        raise Stop(SKIP, "the prompt turn failed (see prompt)")
    result = turn.response.value.get("result")
    message = result.get("messageId") if isinstance(result, dict) else None
    if not isinstance(message, str) or not message:
        raise Stop(FAIL, "the prompt's response carries no messageId", turn.response.seq)
    mine = [e for e in turn.events if e.method == "session/update" and e.session == turn.session]
    users = [e for e in mine if e.update in ("user_message", "user_message_chunk")]
    if not any(message_id(e) == message for e in users):
        said = f"no user_message update with the prompt's messageId {wire(message)}"
        if users:
            said += f" (the first came with {wire(message_id(users[0]))})"
        raise Stop(FAIL, said, users[0].seq if users else turn.response.seq)
    states = [(e, state_of(e)) for e in mine if e.update == "state_update"]
    output = next((e for e in mine if e.update in TURN_OUTPUT_UPDATES), None)
    running = next((e for e, state in states if state == "running"), None)
    if output is not None and (running is None or came_after(running, output)):
        raise Stop(FAIL, f"{shown(str(output.update))} (seq {output.seq}) before any "
                    "running state_update", output.seq)  # fmt: skip
    idle = next((e for e, state in states if state == "idle"), None)
    if idle is None:
        raise Stop(FAIL, "no idle state_update ended the turn", turn.response.seq)
    stop = idle.params["update"].get("stopReason")
    said = f"messageId {wire(message)} reported as the user message; "
    said += "running before output; " if output is not None else "no output; "
    if stop is None:
        return said + "idle ended the turn (without a stop reason: a SHOULD)"
    return said + f"idle ({stop_words(stop)}) ended the turn"


@check(
    "resource-link",
    spec="Prompt Turn (User Message); Content",
    what=(
        "a prompt made of a resource_link block (a file in the scratch directory) ends with a stop "
        'reason ("As a baseline, all Agents MUST support ContentBlock::Text and '
        'ContentBlock::ResourceLink in session/prompt requests")'
    ),
    basis=(
        'Content: "all Agents MUST support ContentBlock::Text and ContentBlock::ResourceLink in '
        'session/prompt requests"'
    ),
    page="content",
    needs=("session-new",),
    turn=True,
)
def resource_link(run: Probe) -> str:
    session = run.turn_session()
    link = {"type": "resource_link", "uri": (Path(run.sandbox) / READ_ME).as_uri(),
            "name": READ_ME, "mimeType": "text/plain"}  # fmt: skip
    turn = run.turn(session, [link])
    run.ended_well(turn, "the turn")
    return f"a resource_link prompt ended {stop_words(turn.stop)}"


@check(
    "empty-prompt",
    spec="Prompt Turn (User Message); Content",
    what=(
        'a prompt of one empty text block ends with a stop reason, not an error ("As a '
        "baseline, all "
        "Agents MUST support ContentBlock::Text and ContentBlock::ResourceLink in session/prompt "
        'requests")'
    ),
    basis='Content: "all Agents MUST support ContentBlock::Text [...] in session/prompt requests"',
    page="content",
    needs=("session-new",),
    turn=True,
)
def empty_prompt(run: Probe) -> str:
    session = run.turn_session()
    turn = run.turn(session, [{"type": "text", "text": ""}])
    run.ended_well(turn, "the turn")
    return f"an empty text prompt ended {stop_words(turn.stop)}"


@check(
    "cancel",
    spec="Prompt Turn (Cancellation); v2 Prompt Lifecycle (Cancellation)",
    what="session/cancel mid-turn: the turn ends with stop reason cancelled, nothing after it",
    basis=(
        'Prompt Turn (Cancellation): "the Agent MUST [...] respond to the original session/prompt '
        'request with the cancelled stop reason"'
    ),
    page="prompt-turn",
    page2="prompt-lifecycle",
    needs=("session-new",),
    turn=True,
)
def cancel(run: Probe) -> str:
    session = run.turn_session()
    turn = run.turn(session, CANCEL_PROMPT, cancel=True)
    run.prompted = True
    if turn.cancelled_at is None:
        if turn.error is not None:
            raise Stop(FAIL, f"the prompt failed: {shown_line(turn.error)}")
        raise Stop(SKIP, f"the turn ended ({stop_words(turn.stop)}) before it could be cancelled")
    if turn.error is not None and run.protocol == 2 and turn.error.startswith("error -32800"):
        run.nothing_after(turn, "the cancelled turn")
        return "the prompt was answered -32800 (Request Cancelled)"
    if turn.error is not None:
        raise Stop(FAIL, f"the cancelled prompt was answered with {shown_line(turn.error)}, "
                    "not stop reason cancelled")  # fmt: skip
    if turn.stop != "cancelled":
        stop = stop_words(turn.stop)
        # Its end may have crossed the cancel: what it wrote before it read the cancel
        # arrives after it, at once (a burst in the pipe, on a loaded machine: 33 chunks).
        if len(turn.went_on) < WENT_ON or turn.went_on_for < WENT_ON_SECONDS:
            raise Stop(SKIP, f"the turn ended {stop} soon after session/cancel (its end "
                        "may have crossed the cancel: too short a turn to tell)")  # fmt: skip
        raise Stop(
            FAIL,
            f"after session/cancel the agent went on ({plural(len(turn.went_on), 'update')}) "
            f"and ended the turn {stop}, not cancelled",
        )
    run.nothing_after(turn, "the cancelled turn")
    return "the turn ended cancelled"


@check(
    "cancel-idle",
    spec="Prompt Turn (Cancellation); JSON-RPC 2.0 (4.1 Notification)",
    what=(
        "session/cancel on an idle session does no harm: no answer to the notification "
        '("The Server '
        'MUST NOT reply to a Notification"), the agent still there'
    ),
    basis='JSON-RPC 2.0 (4.1 Notification): "The Server MUST NOT reply to a Notification"',
    page="prompt-turn",
    page2="prompt-lifecycle",
    needs=("session-new",),
)
def cancel_idle(run: Probe) -> str:
    session = run.turn_session()
    # (what came before it, left unread, is no answer to it; read before it is sent: the
    # relay may have observed the cancel and the agent's answer to it by the time notify
    # returns, so the seq after it would leave the answer out)
    before = run.client.seq
    run.client.notify("session/cancel", {"sessionId": session})
    run.idle_cancelled = session
    answers = []
    for event in run.settling(ANSWER_SETTLE):
        paired = event.message is not None and event.message.request is not None
        if event.kind is Kind.RESPONSE and (event.seq or 0) > before and not paired:
            answers.append(event)  # (a response the wire model pairs with no request)
    if answers:
        raise Stop(FAIL, "the agent answered the session/cancel notification (a "
                    "notification gets no response)", answers[0].seq)  # fmt: skip
    return f"session/cancel of idle session {shown(session)}: no answer, the agent still there"


@check(
    "prompt-after-cancel",
    spec="Prompt Turn (Cancellation)",
    what=(
        "a prompt in the session whose turn was cancelled (and then cancelled idle) runs "
        "and ends with"
        " a stop reason, not cancelled: the old cancel does not stop the new turn"
    ),
    basis="Prompt Turn (Cancellation): a cancel stops the turn it was sent for, and no later one",
    page="prompt-turn",
    page2="prompt-lifecycle",
    needs=("session-new",),
    turn=True,
)
def prompt_after_cancel(run: Probe) -> str:
    session = run.turn_session()
    if run.idle_cancelled != session:
        run.client.notify("session/cancel", {"sessionId": session})
    cancelled = any(t.session == session and t.cancelled_at is not None for _, t in run.turns)
    turn = run.turn(session, AFTER_CANCEL_PROMPT)
    if turn.permissions and run.options.permissions == "cancel":
        raise Stop(SKIP, "the probe cancelled this turn too (--permissions cancel)")
    if turn.stop == "cancelled":
        raise Stop(FAIL, "the turn ended cancelled, though nothing cancelled it (a cancel "
                    "sent before its prompt stopped it)",
                    turn.response.seq if turn.response else None)  # fmt: skip
    run.ended_well(turn, "the turn")
    after = "a cancelled turn and a cancel" if cancelled else "a cancel"
    return f"after {after} of the idle session, a prompt ended {stop_words(turn.stop)}"


@check(
    "permission",
    spec="Tool Calls (Requesting Permission)",
    what=(
        "permission requests, answered by --permissions, are followed through to the turn's end "
        "(--only permission runs a prompt turn, unreported)"
    ),
    basis="Tool Calls (Requesting Permission): the turn goes on to its end once the client answers",
    page="tool-calls",
    needs=("prompt",),
)
def permission(run: Probe) -> str:
    if not run.turns:
        run.needs_session()  # (what stopped the turns, if anything did)
        raise Stop(SKIP, "no turn ran (prompt and cancel were not checked)")
    if not any(turn.ended for _, turn in run.turns):
        names = list(dict.fromkeys(name for name, _ in run.turns))
        checks = "check" if len(names) == 1 else "checks"
        listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        raise Stop(SKIP, f"no turn ended (the {listed} {checks} failed)")
    if not run.permission_requests:
        raise Stop(SKIP, "the agent asked for no permission during the turns")
    asked = [turn for _, turn in run.turns if turn.permissions]
    ended = [turn for turn in asked if turn.ended]
    if not ended:
        raise Stop(SKIP, "no turn that asked for permission ended")
    count = plural(len(run.permission_requests), "request")
    said = f"{count} answered by --permissions {run.options.permissions}"
    if run.options.permissions != "cancel":
        return said
    for turn in ended:  # the answer cancelled: the probe cancelled the turn
        stopped = turn.stop == "cancelled" or (
            run.protocol == 2 and (turn.error or "").startswith("error -32800")
        )
        if not stopped:
            how = shown_line(turn.error) if turn.error else stop_words(turn.stop)
            raise Stop(FAIL, f"{said}, with session/cancel; the turn ended {how}, not "
                        "cancelled")  # fmt: skip
    return f"{said}, with session/cancel; the turns ended cancelled"


@check(
    "session-load",
    spec="Session Setup (Loading Sessions)",
    what=(
        "session/load (when advertised) replays the conversation before its response "
        '("When all the '
        'conversation entries have been streamed to the Client, the Agent MUST respond"); an agent '
        "that will not load a session still open on the connection (no sentence requires "
        "it) is asked "
        "again after session/close, or on a new connection"
    ),
    basis=(
        'Session Setup (Loading Sessions): "The Agent MUST replay the entire conversation"; '
        '"When all the conversation entries have been streamed to the Client, the Agent MUST '
        'respond"'
    ),
    page="session-setup",
    needs=("prompt",),
)
def session_load(run: Probe) -> str:
    session = run.needs_session()
    if run.protocol != 1:
        raise Stop(SKIP, "v2 has no session/load (session/resume replays)")
    if agent_capabilities(run.init, run.protocol).get("loadSession") is not True:
        raise Stop(SKIP, "not advertised (agentCapabilities.loadSession)")
    replayed, reply = run.load(session)
    again = ""
    if reply.error is not None:
        # No sentence requires an agent to load a session still open on the connection
        # (GitHub Copilot's CLI answers -32602 "already loaded"): asked again after
        # session/close, or on a new connection; the check fails only if that fails too.
        first, first_seq = shown_line(reply.error_words()), reply.seq
        if run.advertised("close"):
            run.call("session/close", {"sessionId": session})
            replayed, reply = run.load(session)
            again = "after session/close"
        else:
            replayed, reply = run.load_anew(session)
            again = "on a new connection"
        if reply.error is not None:
            # where to look: the recording's own frame (a new connection's is recorded
            # beside it, as the note says, with seqs of its own)
            seq = reply.seq if again.startswith("after") else first_seq
            raise Stop(FAIL, f"session/load answered with {first}; {again}, with "
                        f"{shown_line(reply.error_words())}", seq)  # fmt: skip
        run.services.note(f"session/load of the open session answered with {first}; "
                           f"{again} it loaded")  # fmt: skip
        again = f" ({again}: the open session's load answered with {first})"
    result_of(reply, "session/load")
    late = run.listen(session)
    if late:
        raise Stop(FAIL, f"{plural(len(late), 'update')} of the conversation after the "
                    f"session/load response (first: {shown(str(late[0].update))} at seq "
                    f"{late[0].seq}): the replay comes before it", late[0].seq)  # fmt: skip
    if run.prompted and replayed == 0:
        raise Stop(FAIL, "session/load replayed nothing of the session's conversation",
                    reply.seq)  # fmt: skip
    return f"replayed {plural(replayed, 'update')} before its response{again}"


@check(
    "session-list",
    spec="Session List",
    what="session/list (when advertised) answers a list",
    basis="Session List: an agent that advertises sessionCapabilities.list answers session/list",
    page="session-list",
    needs=("session-new",),
)
def session_list(run: Probe) -> str:
    run.needs_session()
    if not run.advertised("list"):
        raise Stop(SKIP, "not advertised (sessionCapabilities.list)")
    result = run.call("session/list", {"cwd": run.sandbox})
    sessions = result.get("sessions")
    if not isinstance(sessions, list):
        raise Stop(FAIL, "session/list answered without a sessions list")
    return f"{plural(len(sessions), 'session')} listed"


@check(
    "session-resume",
    spec="Session Setup (Resuming a Session)",
    what="session/resume (when advertised) answers without replaying history",
    basis="Session Setup (Resuming a Session): an agent that advertises resume answers it",
    page="session-setup",
    needs=("session-new",),
)
def session_resume(run: Probe) -> str:
    session = run.needs_session()
    if not run.advertised("resume"):
        raise Stop(SKIP, "not advertised (sessionCapabilities.resume)")
    run.call("session/resume", {"sessionId": session, "cwd": run.sandbox, "mcpServers": []})
    return "resumed"


@check(
    "session-fork",
    spec="unstable schema (session/fork)",
    what="session/fork (when advertised) answers a new session id",
    basis="unstable schema (session/fork): an agent that advertises fork answers a new session",
    page="session-setup",
    needs=("session-new",),
)
def session_fork(run: Probe) -> str:
    session = run.needs_session()
    if not run.advertised("fork"):
        raise Stop(SKIP, "not advertised (sessionCapabilities.fork)")
    result = run.call("session/fork", {"sessionId": session, "cwd": run.sandbox, "mcpServers": []})
    forked = result.get("sessionId")
    if not isinstance(forked, str) or forked == session:
        raise Stop(FAIL, "session/fork answered without a new sessionId")
    return f"forked as {shown(forked)}"


@check(
    "set-mode",
    spec="Session Modes",
    what="session/set_mode (when the session offers modes) to its current mode is accepted",
    basis="Session Modes: the client may set the session to a mode it offers",
    page="session-modes",
    needs=("session-new",),
)
def set_mode(run: Probe) -> str:
    session = run.needs_session()
    modes = run.new_result.get("modes")
    if run.protocol != 1 or not isinstance(modes, dict):
        raise Stop(SKIP, "the session offers no modes")
    current = modes.get("currentModeId")
    if not isinstance(current, str):
        raise Stop(FAIL, "the session's modes have no currentModeId")
    run.call("session/set_mode", {"sessionId": session, "modeId": current})
    return f"mode {shown(current)} set"


@check(
    "set-config-option",
    spec="Session Config Options",
    what="session/set_config_option (when the session offers options) to a current value",
    basis="Session Config Options: the client may set an option to a value it offers",
    page="session-config-options",
    needs=("session-new",),
)
def set_config_option(run: Probe) -> str:
    session = run.needs_session()
    options = run.new_result.get("configOptions")
    if not isinstance(options, list) or not options:
        raise Stop(SKIP, "the session offers no config options")
    key = "id" if run.protocol == 1 else "configId"
    option = next((o for o in options if isinstance(o, dict) and "currentValue" in o), None)
    if option is None or not isinstance(option.get(key), str):
        raise Stop(SKIP, "no config option with a current value")
    params = config_option_params(run.protocol, session, option[key], option["currentValue"])
    run.call("session/set_config_option", params)
    return f"{shown(option[key])} set to its current value"


@check(
    "session-close",
    spec="Session Setup (Closing a Session)",
    what="session/close (when advertised) answers",
    basis="Session Setup (Closing a Session): an agent that advertises close answers session/close",
    page="session-setup",
    needs=("session-new",),
)
def session_close(run: Probe) -> str:
    session = run.needs_session()
    if not run.advertised("close"):
        raise Stop(SKIP, "not advertised (sessionCapabilities.close)")
    run.call("session/close", {"sessionId": session})
    return "closed"


@check(
    "invalid-params",
    spec="JSON-RPC 2.0 (5.1 Error object); Session Setup",
    what=(
        "session/new with a cwd that is a number, then null, and session/prompt with a "
        "sessionId that "
        'is a number, each get an error, not a result ("-32602 Invalid params"); the probe\'s own '
        "malformed requests, never held against the agent"
    ),
    basis=(
        "acpx's conformance suite and JSON-RPC 2.0 (5.1, the suggested code -32602 "
        "Invalid params): no"
        " ACP sentence requires an error for a malformed request"
    ),
    page="session-setup",
    level=SHOULD,
    needs=("handshake",),
    turn=True,
)
def invalid_params(run: Probe) -> str:
    text = [{"type": "text", "text": "hello"}]
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("session/new", {"cwd": 42, "mcpServers": []}, "a cwd that is a number"),
        ("session/new", {"cwd": None, "mcpServers": []}, "a cwd that is null"),
        ("session/prompt", {"sessionId": 42, "prompt": text}, "a sessionId that is a number"),
    ]
    codes, other = [], None
    for method, params, what in cases:
        reply = run.wrong(method, params, what, settle=method == "session/prompt")
        if reply.error is None:
            raise Stop(FAIL, f"{method} with {what} was answered with a result, not an "
                       "error (acpx's suite wants -32602 Invalid params)", reply.seq)  # fmt: skip
        code = reply.error.get("code")
        codes.append(wire(code))
        if code != INVALID_PARAMS and other is None:
            other = reply.seq
    said = ", ".join(codes)
    if other is not None:
        raise Stop(FAIL, f"each of {len(cases)} malformed requests answered with an error "
                   f"({said}), not each -32602 Invalid params (JSON-RPC's code for it, which "
                   "acpx's suite wants)", other)  # fmt: skip
    return f"each of {len(cases)} malformed requests answered with an error ({said})"


@check(
    "unknown-session",
    spec="Prompt Turn; JSON-RPC 2.0 (5 Response object)",
    what=(
        'session/prompt naming a session that does not exist gets an error, not a turn ("Before '
        'sending prompts, Clients MUST first complete the initialization phase and session setup": '
        "there is no such session to prompt)"
    ),
    basis=(
        "acpx's conformance suite (an error for a prompt of an unknown session); no ACP "
        "sentence makes"
        " a turn there the agent's error (\"Clients MUST first complete [...] session "
        'setup" binds the '
        "client)"
    ),
    page="prompt-turn",
    page2="prompt-lifecycle",
    level=SHOULD,
    needs=("handshake",),
    turn=True,
)
def unknown_session(run: Probe) -> str:
    params = {"sessionId": NO_SUCH_SESSION, "prompt": [{"type": "text", "text": "hello"}]}
    reply = run.wrong("session/prompt", params, "a session that does not exist", settle=True)
    if reply.error is None:
        result = reply.result if isinstance(reply.result, dict) else {}
        how = f"a turn (stop reason {stop_words(result.get('stopReason'))})"
        raise Stop(FAIL, f"session/prompt for a session the probe made up ({NO_SUCH_SESSION}) "
                   f"was answered with {how}, not an error: acpx's suite wants an error; no "
                   "ACP sentence requires one (the frames are marked as provoked by the probe "
                   "in the recording)", reply.seq)  # fmt: skip
    return f"answered with {shown_line(reply.error_words())}"


@check(
    "stdout",
    spec="Transports (stdio)",
    what="every line the agent writes on stdout is a JSON-RPC message: no banner, log or ANSI",
    basis=(
        'Transports (stdio): "The agent MUST NOT write anything to its stdout that is '
        "not a valid ACP "
        'message"'
    ),
    page="transports",
    needs=("handshake",),
    at_end=True,
)
def stdout(run: Probe) -> str:
    noise = [f for f in run.client.findings if f.rule in TRANSPORT_RULES]
    if noise:
        errors = [f for f in noise if f.level == "error"] or noise
        first = errors[0]
        raise Stop(
            FAIL if errors[0].level == "error" else PASS,
            f"not a clean JSON-RPC message on stdout: {plural(len(noise), 'line')} "
            f"(first at seq {first.seq}: {visible(first.message)})",
        )
    if not run.wrote():
        why = f" ({run.unreported})" if run.unreported else ""
        raise Stop(SKIP, f"the agent wrote nothing on stdout{why}")
    return "every line is a JSON-RPC message"
