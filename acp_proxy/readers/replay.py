"""Replay a recording: as the agent (a fake agent for clients), or as the client (a
regression test for agents).

Theory of operation
-------------------
A :class:`Script` is one session of a recording: its frames in wire order, each with the
wire model's :class:`~acp_proxy.core.wire.Message` (so responses already name their requests).
Two pure state machines play it; the shells that do the pipes and the clock are in
``acp_proxy.drive.replay``: ``serve_agent`` over the server role (our stdio relayed, recorded
and validated as ``run`` does it) and ``drive_agent`` over the client core (the agent started,
relayed and recorded in-process, as every front-end's is).

**As the agent** (:class:`AgentReplay`): the recording expects client frames in order. Each
client message is matched against the next one: same method (a response: an answer to the same
agent request) and equal params or result, compared as JSON without ``_meta``
(``match="method"``: the method only; ``initialize``: its protocol version only, as the
client's capabilities and info are another client's own). On a match, the agent frames that
followed it in the recording go out byte for byte, each after its recorded gap (scaled by
``speed``); a response to a client request gets the id the client used (only the id's bytes
change). On a mismatch, a report names the recorded seq, what was expected, what came and the
first path where they differ; a request gets a JSON-RPC error carrying it, and from then on no
agent frame is sent and every request gets that error.

A recording someone shared must not act through the editor: the agent frames that ask the
client to act (:func:`client_action`: write or read a file, run a command, call an MCP
tool, an extension method...) are :attr:`AgentReplay.actions`, listed before the replay
starts, and withheld unless ``allow_actions``: the client never sees them, and the
recorded client answers to them are the replay's own (skipped, as if they had come).

**As the client** (:class:`ClientReplay`): the recorded client frames go out in order, each
once the agent frames that preceded it in the recording have arrived. Between two client
frames, agent frames may arrive in any order: each is matched to a recorded frame of the
same kind in that window and compared as JSON, with ``_meta`` and ``ignore`` paths left
out; a response stands for the recorded one that answers the same request, as the wire
model pairs them (the live shell's, or the replay's own when fed bare lines). Ids the agent
creates (``sessionId``, ``messageId``, ``toolCallId``...) are learnt from the live frames
and mapped onto the client frames that follow; an answer to an agent request goes out with
the live id of the request the recording's wire model says it answers. Each recorded
``session/prompt`` whose turn ended in the recording is in :attr:`ClientReplay.prompts`
once sent: the shell drives its turn to its end as ``drive/turn.py`` says it (the one
place a turn's end is decided) and hands the end here (:meth:`ClientReplay.turn_ended`,
:meth:`ClientReplay.turn_overdue`), to be compared with the recorded turn's.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.core.framing import Frame, parse_frame
from acp_proxy.core.jsontext import DEPTH, deeper, preview, shallow, value_spans
from acp_proxy.core.wire import (
    Kind,
    Message,
    Request,
    ResponseMessage,
    Side,
    Turn,
    WireModel,
    id_key,
    kind_of,
    seconds_between,
    update_variant,
)
from acp_proxy.readers.annotate import read
from acp_proxy.readers.compare import (
    MISSING as _MISSING,
)
from acp_proxy.readers.compare import (
    _difference,
    _report_difference,
    difference,
)
from acp_proxy.transcript.items import Addon, Annotated, Repeated
from acp_proxy.transcript.records import FrameRecord, recorded_whole

__all__ = [
    "AgentReplay",
    "ClientReplay",
    "ClientResult",
    "Script",
    "action_summary",
    "client_action",
    "difference",
    "load_script",
]

#: JSON-RPC error code of the answer to a request that does not match the recording.
MISMATCH_CODE = -32099

#: Ids the agent creates: learnt from its live frames, mapped onto the client's.
AGENT_IDS = frozenset({"sessionId", "messageId", "toolCallId", "terminalId", "planId", "optionId"})


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded frame of the session. A streamed chunk the recording repeats but for
    its text (read by its bytes, :class:`~acp_proxy.readers.annotate.Repeated`) keeps only
    its bytes, with the message of the chunk it repeats (the same kind, method, variant):
    its frame is parsed when asked for. A long streamed turn costs its bytes, not their
    parsed values."""

    seq: int
    t: str
    side: Side
    #: The frame's message; for a repeated chunk, the message of the chunk it repeats.
    message: Message
    #: A repeated chunk's bytes; None: the message's frame is this step's.
    raw: bytes | None = None

    @property
    def data(self) -> bytes:
        """The frame's bytes, as they crossed the wire."""
        return self.message.frame.raw if self.raw is None else self.raw

    @property
    def frame(self) -> Frame:
        """The frame (a repeated chunk's parsed anew each time)."""
        return self.message.frame if self.raw is None else parse_frame(self.raw)

    @property
    def label(self) -> str:
        """``seq 12 (session/update agent_message_chunk)``."""
        return f"seq {self.seq} ({describe(self.message)})"


@dataclass(frozen=True, slots=True)
class Script:
    """One session of a recording, ready to play."""

    steps: list[Step]
    #: Which session of the file (1, 2, ...) and how many it has.
    number: int
    sessions: int


def describe(message: Message) -> str:
    """A message in a few words: method and update kind, or what a response answers."""
    if isinstance(message, ResponseMessage):
        what = "error" if message.is_error else "result"
        return f"{what} of {message.method or '?'} {preview(message.id, 100)}"
    if message.kind in (Kind.REQUEST, Kind.NOTIFICATION):
        variant = message.variant
        return f"{message.method} {variant}" if variant else str(message.method)
    return str(message.kind)


def _frames(count: int, which: str) -> str:
    """``3 recorded frames``, ``1 recorded frame``."""
    return f"{count} {which} frame{'s' if count != 1 else ''}"


def load_script(path: str, session: int = 1) -> Script:
    """Session ``session`` (1-based) of a recording. Raises :class:`~acp_proxy.readers.annotate.
    RecordingError` if the file cannot be read, ValueError if it has no such session."""
    steps = _Steps()
    count = 0
    for item in read(path, validate=False, flat=False):  # (a line is played whole)
        count = max(count, item.connection)
        if item.connection == session:
            steps.take(item)
    if session < 1 or session > count:
        has = f"{count} connection{'s' if count != 1 else ''}"
        raise ValueError(f"{path} has {has}; there is no connection {session}")
    return Script(steps.steps, session, count)


class _Steps(Addon):
    """The steps of :func:`load_script`, an item at a time."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def add(self, item: Annotated) -> None:
        record = item.record
        if isinstance(record, FrameRecord) and item.message:
            self.steps.append(Step(record.seq, record.t, Side(record.side), item.message))

    def add_run(self, run: Repeated) -> None:
        """Streamed chunks: their bytes, with the message of the chunk they repeat."""
        message = run.template.message
        if message is not None:
            frames = zip(run.seqs, run.times, run.raws(), strict=True)
            self.steps += [Step(seq, t, Side.AGENT, message, raw) for seq, t, raw in frames]


# --- comparing -----------------------------------------------------------------------


def replace_id(raw: bytes, new_id: Any) -> bytes:
    """``raw`` (a JSON object) with its top-level ``id`` value replaced; nothing else changes."""
    span = next((span for path, span in value_spans(raw) if path == ("id",)), None)
    if span is None:
        return raw
    start, end = span
    return raw[:start] + orjson.dumps(new_id) + raw[end:]


# --- the recording plays the agent --------------------------------------------------------


#: What the agent may send the client that only shows something or asks the user: every
#: other agent request or notification asks the client to act. A permission request asks
#: the user and does nothing itself (what follows is the recording's, withheld if it acts).
_SHOWN = frozenset(
    {
        "session/update",
        "session/request_permission",
        "elicitation/complete",
        "auth/status_update",
        "$/cancel_request",
    }
)


def client_action(message: Message) -> bool:
    """Whether an agent frame asks the client to act: a request or notification (a batch
    holding one) other than an update, a permission request and the like (:data:`_SHOWN`):
    ``fs/*``, ``terminal/*``, ``elicitation/create`` (a form or a link for the user),
    ``mcp/message`` (a tool of the client's MCP servers), an extension method."""
    return any(
        m.kind in (Kind.REQUEST, Kind.NOTIFICATION) and m.method not in _SHOWN
        for m in message.messages
    )


def unvouched(step: Step) -> str | None:
    """Why a client might read an agent frame otherwise than the replay does, which then
    cannot vouch for it acting on nothing (fail closed: it is withheld as an action is);
    None when it reads the frame as any client would. A frame cut at the proxy's cap (its
    rest unknown); one that is not JSON but holds a ``{`` (a lenient parser, or the line
    it becomes on the wire, may hold a message); bytes that are not the message their
    record holds (a record with ``msg`` twice); a batch holding a batch; a ``method`` key
    twice in one object, however spelled (parsers differ on which counts). A streamed
    chunk known by its bytes is its kind's."""
    if step.raw is not None:
        return None
    frame = step.message.frame
    raw = frame.raw
    if frame.oversized:
        if recorded_whole(frame):  # recorded whole, but never parsed or checked
            return "longer than the proxy's frame cap: never checked"
        return "cut at the proxy's frame cap, its rest unknown"
    if not frame.is_json:
        return None if b"{" not in raw else "not JSON, but holding a '{' a client may read"
    if parse_frame(raw).value != frame.value:
        return "its bytes are not the message its record holds"
    if type(frame.value) is list and any(type(item) is not dict for item in frame.value):
        return "a batch holding what is no message (a nested batch a client may flatten)"
    # a key spelled with escapes (me\u0074hod) is the same key to a parser
    twice = raw.count(b'"method"') > len(step.message.messages) or b"\\u" in raw
    if twice and _key_twice(raw):
        return "an object with a key twice, which clients may read either way"
    return None


def _key_twice(raw: bytes) -> bool:
    """Whether an object of the JSON text ``raw`` has a key twice."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({key for key, _ in items}) < len(items):
            raise _Twice
        return dict(items)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except _Twice:
        return True
    except (ValueError, RecursionError):
        return True  # (it parsed as JSON for orjson: a parser that cannot is no vouching)
    return False


class _Twice(Exception):
    """A key met twice in one object."""


def _acts(step: Step) -> bool:
    """Whether the replay withholds an agent frame unless allowed: it asks the client to act
    (:func:`client_action`), or the replay cannot vouch that it does not (:func:`unvouched`)."""
    return step.side is Side.AGENT and (client_action(step.message) or unvouched(step) is not None)


def action_summary(step: Step) -> str:
    """An action in a line: ``seq 9 fs/write_text_file /home/u/.bashrc``, ``seq 11
    terminal/create sh -c 'curl … | sh'`` (wire strings: escape before showing); a frame
    withheld as one, with why (:func:`unvouched`)."""
    why = unvouched(step)
    if why is not None:
        return f"seq {step.seq} a frame {why}"
    parts = []
    for message in step.message.messages:
        params = message.params
        command, args = params.get("command"), params.get("args")
        if isinstance(command, str):
            words = [command, *(args if isinstance(args, list) else [])]
            what = shlex.join(w if isinstance(w, str) else preview(w, 40) for w in words)
        elif isinstance(params.get("path"), str):
            what = params["path"]
        else:
            what = preview(params, 100) if params else ""
        if len(what) > _ACTION_WIDTH:
            what = what[: _ACTION_WIDTH - 3] + "..."
        parts.append(f"{message.method} {what}".rstrip())
    return f"seq {step.seq} " + "; ".join(parts)


#: How much of an action's command or path its line shows.
_ACTION_WIDTH = 300


@dataclass(slots=True)
class Emit:
    """Bytes to write (one line, without its newline), after a pause."""

    delay: float
    data: bytes


#: The longest wait between two replayed frames, in seconds: a day (a recorded gap longer
#: than that is cut to it, with a warning).
MAX_GAP = 86_400.0


def _version_only(params: Any) -> Any:
    """What of ``initialize``'s params must match the recording's: the protocol version
    (another version is another conversation); the client's capabilities, info and
    ``_meta`` are its own (another editor, or the same one updated, still gets the
    recorded session: what it cannot do shows when the agent's requests come)."""
    return (
        {"protocolVersion": params.get("protocolVersion")} if isinstance(params, dict) else params
    )


class AgentReplay:
    """The recording as an agent. Pure: client lines in, agent lines out."""

    def __init__(
        self,
        script: Script,
        match: str = "exact",
        speed: float = 1.0,
        allow_actions: bool = False,
    ) -> None:
        self.script = script
        self.match = match
        self.speed = speed
        self._next = 0
        #: The agent frames that ask the client to act, or may (:func:`_acts`).
        self.actions = [s for s in script.steps if _acts(s)]
        #: Unless allowed, the indexes of the steps the replay plays itself: the actions
        #: (never sent) and the recorded client answers to them (never awaited).
        self._own: set[int] = set() if allow_actions else _withheld(script.steps)
        #: Recorded client request id -> the id the live client used.
        self._ids: dict[Any, Any] = {}
        #: The mismatch report, once the client diverged.
        self.diverged: str | None = None
        #: The seqs of the frames whose wait (the recorded gap, scaled) was cut to MAX_GAP.
        self.capped: list[int] = []
        self.matched = 0

    @property
    def expected(self) -> Step | None:
        """The next client frame the recording expects."""
        steps = self.script.steps
        return steps[self._next] if self._next < len(steps) else None

    def start(self) -> list[Emit]:
        """The agent frames recorded before the client's first frame."""
        return self._emit()

    def receive(self, line: bytes) -> list[Emit]:
        """One line from the client; what to write back."""
        return self.receive_frame(parse_frame(line.rstrip(b"\n")))

    def receive_frame(self, frame: Frame) -> list[Emit]:
        """One frame from the client (as the relay observed it); what to write back."""
        value = frame.value if frame.is_json else None
        if self.diverged is not None:
            return self._refuse(value)
        expected = self.expected
        if expected is None:
            self.diverged = (
                f"the client sent {_summary(value, frame)}, but the recording has no more "
                "client frames"
            )
            return self._refuse(value)
        problem = self._compare(expected, frame)
        if problem is not None:
            self.diverged = (
                f"at {expected.label}: expected {_summary(expected.frame.value, expected.frame)}"
                f", got {_summary(value, frame)}; {problem}"
            )
            return self._refuse(value)
        if expected.message.kind is Kind.REQUEST and isinstance(value, dict):
            self._ids[id_key(expected.message.id)] = value.get("id")
        self._next += 1
        self.matched += 1
        return self._emit()

    def finish(self) -> tuple[int, str | None]:
        """The client closed its side: (exit status, what went wrong)."""
        if self.diverged is not None:
            return 1, self.diverged
        steps = self.script.steps
        left = [
            steps[i]
            for i in range(self._next, len(steps))
            if steps[i].side is Side.CLIENT and i not in self._own
        ]
        if left:
            return 1, (
                f"the client stopped early: {_frames(len(left), 'recorded client')} left, "
                f"the next is {left[0].label}"
            )
        return 0, None

    def _compare(self, expected: Step, frame: Frame) -> str | None:
        message, value = expected.message, frame.value
        if not frame.is_json or not expected.frame.is_json:
            return None if frame.raw == expected.frame.raw else "the bytes differ"
        if not isinstance(value, dict) or message.kind not in (
            Kind.REQUEST,
            Kind.NOTIFICATION,
            Kind.RESPONSE,
        ):
            found = difference(expected.frame.value, value)
            return None if found is None else _report_difference(found, "got")
        kind = kind_of(value)
        if message.kind is Kind.RESPONSE:
            if kind is not Kind.RESPONSE:
                return "expected a response"
            if id_key(value.get("id")) != id_key(message.id):
                return (
                    f"it answers id {preview(value.get('id'), 100)}, not {preview(message.id, 100)}"
                )
            part = "error" if "error" in expected.frame.value else "result"
            found = difference(expected.frame.value.get(part), value.get(part), part)
        else:
            if value.get("method") != message.method:
                return f"method {preview(value.get('method'), 100)} instead of {message.method}"
            if kind is not message.kind:
                return "a request where the recording has a notification, or the reverse"
            if self.match == "method":
                return None
            recorded, got = (
                expected.frame.value.get("params", _MISSING),
                value.get("params", _MISSING),
            )
            if message.method == "initialize":  # another client, or another version of it
                recorded, got = _version_only(recorded), _version_only(got)
            found = difference(recorded, got, "params")
            if found is not None:
                return f"{_report_difference(found, 'got')} (--match method: the method alone)"
        return None if found is None else _report_difference(found, "got")

    def _emit(self) -> list[Emit]:
        """The agent frames due now, up to the next client frame the client must send; the
        replay's own steps (withheld actions, their answers) are skipped, their gaps kept."""
        out: list[Emit] = []
        steps, own = self.script.steps, self._own
        skipped = 0.0
        while self._next < len(steps) and (
            steps[self._next].side is Side.AGENT or self._next in own
        ):
            step = steps[self._next]
            previous = steps[self._next - 1] if self._next else None
            gap = seconds_between(previous.t, step.t) if previous is not None else None
            delay = max(0.0, gap or 0.0) / self.speed if self.speed > 0 else 0.0
            if self._next in own:
                skipped += delay
                self._next += 1
                continue
            delay, skipped = delay + skipped, 0.0
            if delay > MAX_GAP:  # a frame stamped 9999-12-31 must not stop the replay
                delay = MAX_GAP
                self.capped.append(step.seq)
            data = step.data
            request = step.message.request
            if step.message.kind is Kind.RESPONSE and request is not None:
                live = self._ids.get(id_key(request.id), _MISSING)
                if live is not _MISSING and id_key(live) != id_key(request.id):
                    data = replace_id(data, live)
            out.append(Emit(delay, data))
            self._next += 1
        return out

    def _refuse(self, value: Any) -> list[Emit]:
        """After a divergence: an error for each request, nothing else."""
        if kind_of(value) is not Kind.REQUEST:
            return []
        error = {
            "code": MISMATCH_CODE,
            "message": "acp-proxy replay: the client diverged from the recording",
            "data": {"report": self.diverged},
        }
        return [Emit(0.0, orjson.dumps({"jsonrpc": "2.0", "id": value["id"], "error": error}))]


def _withheld(steps: list[Step]) -> set[int]:
    """The indexes of the actions of ``steps`` and of the client frames that answer them
    (every response they hold answers an action's request)."""
    own: set[int] = set()
    requests: set[Any] = set()  # the wire model's Request objects, by identity
    for index, step in enumerate(steps):
        message = step.message
        if step.side is Side.AGENT:
            if _acts(step):
                own.add(index)
                requests.update(m.request for m in message.messages if m.kind is Kind.REQUEST)
        elif (
            requests
            and message.messages
            and all(
                m.kind is Kind.RESPONSE and m.request is not None and m.request in requests
                for m in message.messages
            )
        ):
            own.add(index)
    return own


def _summary(value: Any, frame: Frame) -> str:
    if not frame.is_json:
        return f"a line that is not JSON ({preview(frame.raw[:60].decode(errors='replace'), 100)})"
    kind = kind_of(value)
    variant = update_variant(value)
    if variant is not None:
        return f"{kind} {value['method']} ({variant})"
    if kind is Kind.REQUEST or kind is Kind.NOTIFICATION:
        return f"{kind} {value['method']}"
    if kind is Kind.RESPONSE:
        return f"response to id {preview(value.get('id'), 100)}"
    return preview(value, 100)


# --- the recording plays the client ---------------------------------------------------------


@dataclass(slots=True)
class _Expected:
    step: Step
    #: What a live frame must have to stand for it (:func:`_key`): the same for a repeated
    #: chunk as for the chunk it repeats, so no frame is parsed to know it.
    key: tuple[Any, ...]
    matched: bool = False


#: Frames the recording does not have that a client replay lists one by one; and the number
#: at which it gives up.
STRAYS_LISTED = 100
STRAYS_MAX = 10_000


class ClientReplay:
    """The recording as a client. Pure: agent lines in, client lines out, divergences kept."""

    def __init__(
        self, script: Script, ignore: Iterable[str] = (), skip_updates: Iterable[str] = ()
    ) -> None:
        self.script = script
        self.ignore = tuple(ignore)
        #: session/update variants left out, recorded and live (sent whenever agents like).
        self.skip_updates = frozenset(skip_updates)
        self._next = 0
        #: The recorded agent frames expected now (between two client frames), the first
        #: of them not matched yet, and how many are not: a live frame is claimed in
        #: constant time when it comes in order, whatever the window's length.
        self._window: list[_Expected] = []
        self._first = 0
        self._unmatched = 0
        #: Recorded agent-created id -> live id.
        self.ids: dict[str, str] = {}
        #: The recorded agent requests (the recording's wire model's) -> their live ids.
        self._requests: dict[Request, Any] = {}
        self.divergences: list[str] = []
        #: Frames the recording did not have; whether there were too many (:data:`STRAYS_MAX`).
        self._strays = 0
        self.gave_up = False
        #: The recorded prompts sent whose turns ended in the recording (:func:`_ends_turn`),
        #: for the shell to drive to their ends; it takes them (:meth:`take_prompts`).
        self.prompts: list[Step] = []
        #: Fed bare lines (no wire model's message with them): the replay's own wire
        #: model, and the client lines sent that it has not been fed yet.
        self._wire: WireModel | None = None
        self._unmodelled: list[bytes] = []
        self._seq = 0

    @property
    def done(self) -> bool:
        """Every recorded frame was sent or arrived, or the replay gave up."""
        return self.gave_up or (self._next >= len(self.script.steps) and not self._unmatched)

    @property
    def missing(self) -> list[Step]:
        """Recorded agent frames of the current window that have not arrived."""
        return [e.step for e in self._window[self._first :] if not e.matched]

    def start(self) -> list[bytes]:
        """The client frames to send first."""
        return self._advance()

    def receive(self, line: bytes) -> list[bytes]:
        """One line from the agent; the client lines to send now."""
        return self.receive_frame(parse_frame(line.rstrip(b"\n")))

    def receive_frame(self, frame: Frame, message: Message | None = None) -> list[bytes]:
        """One frame from the agent, as the relay framed and parsed it, with the wire
        model's message for it (None: the replay models it itself, with the lines it sent;
        a replay is fed one way or the other); the client lines to send now."""
        if message is None:
            message = self._modelled(frame)
        else:
            self._unmodelled.clear()
        if message.is_notice:
            return []  # live-only: recordings never hold notices, so none is expected
        if self.skip_updates and message.variant in self.skip_updates:
            return []
        claimed = self._claim(message)
        if claimed is None:
            self._stray(frame)
            if self.gave_up:
                return []
        else:
            self._check(*claimed, frame, message)
        return self._advance() if not self._unmatched else []

    def _stray(self, frame: Frame) -> None:
        """A frame the recording does not have here: said, the first :data:`STRAYS_LISTED`;
        then counted; at :data:`STRAYS_MAX` the replay gives up (an agent that keeps sending
        what was not recorded would keep it going, its list growing; ``--record`` keeps every
        frame all the same)."""
        self._strays += 1
        if self._strays <= STRAYS_LISTED:
            self.divergences.append(
                f"the agent sent {_summary(frame.value, frame)}, which the recording does not "
                f"have here (waiting for {self._waiting()})"
            )
        elif self._strays == STRAYS_LISTED + 1:
            self.divergences.append(
                "more frames the recording does not have came: counted, not listed "
                "(--record keeps every frame of the replay)"
            )
        if self._strays >= STRAYS_MAX:
            self.gave_up = True
            self.divergences.append(
                f"gave up after {STRAYS_MAX:,} frames the recording does not have "
                f"(waiting for {self._waiting()})"
            )

    def take_prompts(self) -> list[Step]:
        """The recorded prompts sent since last asked whose turns the shell drives."""
        prompts, self.prompts = self.prompts, []
        return prompts

    def live_session(self, step: Step) -> str | None:
        """The live id of the session a recorded frame names."""
        session = step.message.session
        return self.ids.get(session, session) if session is not None else None

    def turn_ended(self, step: Step, failed: bool, stop: Any, seq: int | None) -> None:
        """The turn a recorded prompt opened ended live (at ``seq``): with an error
        (``failed``), else with the stop reason ``stop`` as sent. Another end than the
        recorded turn's is a divergence that names the turn."""
        turn = _turn_of(step)
        reason = stop if isinstance(stop, str) else None
        if (failed, None if failed else reason) == _end(turn):
            return
        self.divergences.append(
            f"the turn of {step.label} ended {_end_words(failed, stop)} (live seq {seq}), "
            f"recorded {_end_words(*_end(turn))} (seq {turn.end_seq})"
        )

    def turn_overdue(self, step: Step, answered: bool, seconds: float) -> None:
        """The turn a recorded prompt opened did not end: nothing came for ``seconds``
        (its prompt ``answered`` or not)."""
        turn = _turn_of(step)
        how = (
            "its prompt was answered, but nothing ended the turn"
            if answered
            else "its prompt was not answered"
        )
        self.divergences.append(
            f"the turn of {step.label} did not end: {how}, and nothing came for "
            f"{seconds:g} s (recorded: it ended {_end_words(*_end(turn))} at seq {turn.end_seq})"
        )

    def _modelled(self, frame: Frame) -> Message:
        """The replay's own wire model's message for an agent frame, once it has the
        client lines sent before it."""
        wire = self._wire = self._wire or WireModel()
        for line in self._unmodelled:
            self._seq += 1
            wire.feed("client", parse_frame(line), self._seq)
        self._unmodelled.clear()
        self._seq += 1
        return wire.feed("agent", frame, self._seq)

    def timed_out(self, seconds: float) -> None:
        """Nothing came for ``seconds``: every frame still awaited is a divergence."""
        for step in self.missing:
            self.divergences.append(f"{step.label} never came (waited {seconds:g} s)")
        self._open([])
        self._next = len(self.script.steps)

    def agent_closed(self) -> None:
        """The agent's output ended."""
        for step in self.missing:
            self.divergences.append(f"{step.label} never came: the agent closed its output")
        unsent = [s for s in self.script.steps[self._next :] if s.side is Side.AGENT]
        if unsent:
            self.divergences.append(
                f"the agent closed its output with {_frames(len(unsent), 'recorded')} still to come"
            )
        self._open([])
        self._next = len(self.script.steps)

    def _waiting(self) -> str:
        missing = self.missing
        return ", ".join(s.label for s in missing[:3]) if missing else "nothing"

    def _open(self, window: list[_Expected]) -> None:
        self._window, self._first, self._unmatched = window, 0, len(window)

    def _claim(self, message: Message) -> tuple[Step, Frame] | None:
        """The first unmatched recorded frame of the window this live frame stands for,
        and that recorded frame."""
        window, first = self._window, self._first
        while first < len(window) and window[first].matched:
            first += 1
        self._first = first
        key = _key(message)
        for index in range(first, len(window)):
            expected = window[index]
            if expected.matched:
                continue
            if expected.key == key:  # (a line that is not JSON: any such line)
                return self._matched(expected), expected.step.frame
        return None

    def _matched(self, expected: _Expected) -> Step:
        expected.matched = True
        self._unmatched -= 1
        return expected.step

    def _check(self, step: Step, recorded_frame: Frame, frame: Frame, message: Message) -> None:
        recorded, live = recorded_frame.value, frame.value
        if not frame.is_json:
            return
        if deeper(recorded, DEPTH, recorded_frame.raw) or deeper(live, DEPTH, frame.raw):
            recorded, live = shallow(recorded), shallow(live)  # compared down to DEPTH
        if isinstance(recorded, dict) and isinstance(live, dict):
            self._learn(recorded, live)
            request = step.message.request
            if step.message.kind is Kind.REQUEST and message.has_id:
                if request is not None:
                    self._requests[request] = message.id
                recorded = {**recorded, "id": message.id}
            recorded = self._mapped(recorded)
        found = _difference(recorded, live, "", self.ignore)
        if found is not None:
            self.divergences.append(f"{step.label}: {_report_difference(found, 'agent sent')}")

    def _learn(self, recorded: Any, live: Any, key: str = "") -> None:
        """Learn the ids the agent created, walking both values side by side."""
        if isinstance(recorded, dict) and isinstance(live, dict):
            for name, value in recorded.items():
                if name in live:
                    self._learn(value, live[name], name)
        elif isinstance(recorded, list) and isinstance(live, list):
            for old, new in zip(recorded, live, strict=False):
                self._learn(old, new, key)
        elif key in AGENT_IDS and isinstance(recorded, str) and isinstance(live, str):
            self.ids.setdefault(recorded, live)

    def _mapped(self, value: Any, key: str = "") -> Any:
        """``value`` with the agent-created ids it holds replaced by their live ones."""
        if isinstance(value, dict):
            return {k: self._mapped(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._mapped(v, key) for v in value]
        if key in AGENT_IDS and isinstance(value, str):
            return self.ids.get(value, value)
        return value

    def _advance(self) -> list[bytes]:
        """Send the client frames that are due, and open the next window of agent frames."""
        out: list[bytes] = []
        steps = self.script.steps
        while self._next < len(steps) and steps[self._next].side is Side.CLIENT:
            step = steps[self._next]
            out.append(self._outgoing(step))
            if _ends_turn(step):
                self.prompts.append(step)
            self._next += 1
        window: list[_Expected] = []
        while self._next < len(steps) and steps[self._next].side is Side.AGENT:
            step = steps[self._next]
            if step.message.variant not in self.skip_updates:
                window.append(_Expected(step, _key(step.message)))
            self._next += 1
        self._open(window)
        self._unmodelled += out
        return out

    def _outgoing(self, step: Step) -> bytes:
        value = step.frame.value
        if not step.frame.is_json or not isinstance(value, dict):
            return step.frame.raw
        if deeper(value, DEPTH, step.frame.raw):  # too deep to walk for ids: as recorded
            return step.frame.raw
        changed = self._mapped(value)
        renamed = False  # (an answer to an agent request: its live id, as the wire model pairs)
        request = step.message.request if step.message.kind is Kind.RESPONSE else None
        live = self._requests.get(request, _MISSING) if request is not None else _MISSING
        if live is not _MISSING:
            changed = {**changed, "id": live}
            renamed = id_key(live) != id_key(step.message.id)
        if changed == value and not renamed:
            return step.frame.raw  # nothing to map: the recorded bytes
        return orjson.dumps(changed)


def _key(message: Message) -> tuple[Any, ...]:
    """What makes two agent frames stand for each other in a window: a call's kind, method
    and update variant; for a response, the request it answers, as the wire model paired
    them (the request's id: a live request went out with the recorded one's)."""
    kind = message.kind
    if kind is Kind.REQUEST or kind is Kind.NOTIFICATION:
        return ("call", kind is Kind.REQUEST, message.method, message.variant)
    if kind is Kind.RESPONSE:
        request = message.request
        return ("response", id_key(request.id if request is not None else message.id))
    return ("other",)


def _ends_turn(step: Step) -> bool:
    """Whether a recorded client frame is a ``session/prompt`` that opened a turn which
    ended in the recording (the turn the replay drives to its end live)."""
    message = step.message
    request = message.request if message.kind is Kind.REQUEST else None
    if request is None or request.method != "session/prompt" or request.side is not Side.CLIENT:
        return False
    turn = request.turn
    return turn is not None and turn.seq == request.seq and turn.ended


def _turn_of(step: Step) -> Turn:
    """The recorded turn a prompt of :func:`_ends_turn` opened."""
    request = step.message.request
    assert request is not None and request.turn is not None
    return request.turn


def _end(turn: Turn) -> tuple[bool, str | None]:
    """How a recorded turn ended, as the recording's wire model says: with an error (the
    prompt's, or the idle's), else its stop reason (None: none that is a string)."""
    failed = turn.rejected is not None or turn.error is not None
    return failed, None if failed else turn.stop_reason


def _end_words(failed: bool, stop: Any) -> str:
    """``with an error``, ``with stop reason "end_turn"``, ``without a stop reason``."""
    if failed:
        return "with an error"
    return "without a stop reason" if stop is None else f"with stop reason {preview(stop, 100)}"


@dataclass(slots=True)
class ClientResult:
    """How an agent did against a recorded client."""

    #: Divergences, in the order they were found.
    divergences: list[str] = field(default_factory=list)
    #: The exit status ``acp-proxy run`` around the agent would have had.
    proxy_status: int | None = None

    @property
    def ok(self) -> bool:
        """Everything matched."""
        return not self.divergences

    def report(self) -> str:
        """The divergences, one per line."""
        return "\n".join(self.divergences) or "every frame matched"
