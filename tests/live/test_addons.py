"""The observer's chain of addons: each sees what it asks for, in the chain's order, and one
that fails is dropped without taking the others (or the relay) with it."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from structlog.testing import capture_logs

from acp_proxy.core.framing import Framer
from acp_proxy.core.protocol import Side
from acp_proxy.core.validator import Validator, Violation
from acp_proxy.live.addons import LiveLog, LogFindings, Save, run_addons
from acp_proxy.live.client import Client, Services, initialize_params
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder
from acp_proxy.log import get_logger
from acp_proxy.transcript.items import Addon, Annotated, Repeated, Seen
from acp_proxy.transcript.redact import Redactor
from tests.conftest import SCRIPTED_AGENT


def line(message: dict) -> bytes:
    return orjson.dumps(message) + b"\n"


def records(path: Path) -> list[dict]:
    return [orjson.loads(raw) for raw in path.read_bytes().splitlines()]


PLAIN = {"jsonrpc": "2.0", "method": "_plain"}
#: A frame with a finding (jsonrpc-version).
WRONG = {"jsonrpc": "1.0", "method": "_wrong"}


class Watcher(Addon):
    """Notes every hook it is called with, by seq, in ``calls`` (shared, to see the order)."""

    name = "the watcher"

    def __init__(self, calls: list[tuple[str, ...]], tag: str = "w") -> None:
        self.calls, self.tag = calls, tag

    def frame(self, seen: Seen) -> bytes | None:
        self.calls.append((self.tag, "frame", str(seen.seq), *(f.rule for f in seen.findings)))
        return None

    def read_done(self, side: Side, seqs: range) -> None:
        self.calls.append((self.tag, "read", f"{seqs.start}-{seqs.stop - 1}"))

    def end(self, findings: list[Violation], t: str) -> None:
        self.calls.append((self.tag, "end"))

    def done(self, exit_status: int | None, reason: str) -> None:
        self.calls.append((self.tag, "done", reason))


class Explodes(Addon):
    """Raises on its first frame, of any kind; counts what it is called with after."""

    name = "the exploding addon"

    def __init__(self) -> None:
        self.calls = 0
        self.done_with: str | None = None

    def frame(self, seen: Seen) -> bytes | None:
        self.calls += 1
        raise RuntimeError("addon bug")

    def done(self, exit_status: int | None, reason: str) -> None:
        self.done_with = reason


def test_an_addon_that_raises_is_dropped_and_said_once_while_recording_goes_on(tmp_path):
    path = tmp_path / "t.jsonl"
    log = get_logger()
    recorder = Recorder(path, log, ["agent"], 1)
    exploding = Explodes()
    chain = [exploding, *run_addons(recorder, log, Validator())]
    observer = Observer(recorder, log, Validator(), addons=chain)
    with capture_logs() as logs:
        for message in (PLAIN, WRONG, PLAIN, WRONG):
            observer.observe(Side.CLIENT, Framer().lines(line(message)))
        observer.finish(0, "done")
    failures = [entry for entry in logs if "exploding" in entry["event"]]
    assert [entry["event"] for entry in failures] == [
        "the exploding addon failed; the session goes on without it"
    ]
    assert "addon bug" in failures[0]["error"]
    assert exploding.calls == 1 and exploding not in observer.addons
    assert exploding.done_with == "done"  # a dropped addon is still told the end
    found = records(path)
    assert [r["seq"] for r in found if r["kind"] == "frame"] == [1, 2, 3, 4]
    assert found[-1]["kind"] == "end"
    # the findings log went on too
    assert [entry["seq"] for entry in logs if entry.get("rule") == "jsonrpc-version"] == [2, 4]


class Frames(Addon):
    """A view: notes each frame record it is handed (seq, and its findings' rules)."""

    def __init__(self, calls: list[tuple[str, ...]]) -> None:
        self.calls = calls

    def add(self, item: Annotated) -> None:
        seq = getattr(item.record, "seq", None)
        if item.message is not None:
            self.calls.append(("item", str(seq), *(f.rule for f in item.findings)))


def test_a_view_sees_every_frame_with_its_findings_and_the_parts_only_what_they_ask_for(
    tmp_path,
):
    """A view in the chain is handed each frame once, with its findings (a streamed chunk
    known by its bytes too, parsed for it); a part with only the frame hook sees the frames
    with something to say; the wire's hooks come in order after."""
    from tests.exchanges import CLEAN_CHUNK, setup, turn

    calls: list[tuple[str, ...]] = []
    log = get_logger()
    recorder = Recorder(tmp_path / "t.jsonl", log, ["agent"], 1)
    chain = [*run_addons(recorder, log, Validator()), Watcher(calls), Frames(calls)]
    observer = Observer(recorder, log, Validator(), addons=chain)
    observer._debug = False  # as under `run` at its default log level
    framer = Framer()
    for side, message in [*setup(2), *turn()[:4]]:
        observer.observe(Side(side), framer.lines(line(message)))
    before = observer.seq
    chunks = [CLEAN_CHUNK.replace(b'"ab"', b'"word %d "' % n) + b"\n" for n in range(20)]
    observer.observe(Side.AGENT, framer.lines(b"".join([*chunks, line(WRONG)])))
    observer.finish(0, "done")
    items = [call for call in calls if call[0] == "item"]
    assert [int(call[1]) for call in items] == list(range(1, observer.seq + 1))
    assert items[-1] == ("item", str(before + 21), "jsonrpc-version")
    assert all(len(call) == 2 for call in items[:-1])
    frames = [call for call in calls if call[1] == "frame"]
    assert frames[-1] == ("w", "frame", str(before + 21), "jsonrpc-version")
    assert calls[-3:] == [
        ("w", "read", f"{before + 1}-{before + 21}"),
        ("w", "end"),
        ("w", "done", "done"),
    ]


def test_the_chain_order_is_the_order_hooks_run_in(tmp_path):
    calls: list[tuple[str, ...]] = []
    log = get_logger()
    recorder = Recorder(None, log)
    for order in (("a", "b"), ("b", "a")):
        calls.clear()
        chain = [Watcher(calls, tag) for tag in order]
        observer = Observer(recorder, log, Validator(), addons=chain)
        observer.observe(Side.CLIENT, Framer().lines(line(PLAIN) + line(WRONG)))
        observer.finish(0, "done")
        first, second = order
        assert [call[0] for call in calls] == [first, second] * 4
        assert [call[1] for call in calls[::2]] == ["frame", "read", "end", "done"]


def test_redacting_still_redacts_the_findings_that_quote_a_frame(tmp_path):
    """--redact: the frame and its finding are recorded with the secret replaced."""
    path = tmp_path / "t.jsonl"
    log = get_logger()
    recorder = Recorder(path, log, ["agent"], 1)
    validator = Validator()
    observer = Observer(
        recorder, log, validator, addons=run_addons(recorder, log, validator, redactor=Redactor())
    )
    secret = "sk-ant-api03-" + "x" * 40
    bad = {"jsonrpc": secret, "method": "_wrong"}
    with capture_logs():
        observer.observe(Side.CLIENT, Framer().lines(line(bad)))
        observer.finish(0, "done")
    data = path.read_bytes()
    assert secret.encode() not in data and b"sk-ant-api03-xxxxxxxx" not in data
    frame = next(r for r in records(path) if r["kind"] == "frame")
    assert frame["violations"] and frame["redacted"]
    # without --redact, the finding does quote it (what the redaction is for)
    plain = tmp_path / "plain.jsonl"
    recorder = Recorder(plain, log, ["agent"], 1)
    observer = Observer(recorder, log, Validator())
    with capture_logs():
        observer.observe(Side.CLIENT, Framer().lines(line(bad)))
        observer.finish(0, "done")
    assert secret.encode() in plain.read_bytes()


def test_the_client_chain_logs_no_findings(tmp_path):
    """The client core's front-end shows the findings: its chain leaves the findings log
    out (run's has it), and still records and keeps each one."""
    emitted = tmp_path / "emit.jsonl"
    emitted.write_bytes(line(WRONG))
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    services = Services(sandbox)
    log = get_logger()  # (configured first, so capture_logs is not undone by it)
    with (
        capture_logs() as logs,
        Client.start(
            [*SCRIPTED_AGENT, "emit", str(emitted)],
            services,
            log,
            record=str(tmp_path / "rec.jsonl"),
        ) as client,
    ):
        assert client.next_event(10).method == "_wrong"
    assert "jsonrpc-version" in {finding.rule for finding in client.findings}
    assert not [entry for entry in logs if entry.get("rule")]
    assert [type(addon) for addon in client.observer.addons][:2] == [LiveLog, Save]
    assert not any(isinstance(addon, LogFindings) for addon in client.observer.addons)
    assert b'"rule":"jsonrpc-version"' in (tmp_path / "rec.jsonl").read_bytes()


def test_runs_chain_is_assembled_in_one_place():
    """An observer without a chain gets run's (run_addons, with its defaults); the client
    core's is run's less the findings log, then its front-end: the same function."""
    log = get_logger()
    recorder = Recorder(None, log)
    default = Observer(recorder, log, Validator())
    assert [type(a) for a in default.addons] == [
        type(a) for a in run_addons(recorder, log, Validator())
    ]
    assert [type(a) for a in default.addons] == [LiveLog, LogFindings]
    assert Observer(recorder, log, Validator(), addons=[]).addons == []
    watcher = Watcher([])
    chain = run_addons(recorder, log, None, log_findings=False, then=[watcher])
    assert [type(a) for a in chain] == [LiveLog, Watcher]


def test_the_readers_of_a_file_read_the_wire_live_as_they_read_its_recording(tmp_path):
    """One set of readers, live and offline: Stats and the conversation fed live from the
    chain, as they are (no adapter), make what they make of the session's recording read
    afterwards; each frame reaches them parsed, with its findings, then the agent's stderr
    and the end."""
    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.conversation import Conversation
    from acp_proxy.readers.stats import Stats
    from tests.exchanges import CLEAN_CHUNK, setup, turn

    class Kinds(Addon):
        def __init__(self) -> None:
            self.kinds: list[str] = []

        def add(self, item: Annotated) -> None:
            self.kinds.append(type(item.record).__name__)

    log = get_logger()
    path = tmp_path / "t.jsonl"
    recorder = Recorder(path, log, ["agent"], 1)
    live_stats, kinds = Stats(), Kinds()
    live_conversation = Conversation()

    class Conversing(Addon):
        def add(self, item: Annotated) -> None:
            if item.message is not None:
                live_conversation.observe(item.message)

    views = [live_stats, kinds, Conversing()]
    observer = Observer(
        recorder, log, Validator(), addons=run_addons(recorder, log, None, then=views)
    )
    framer = Framer()
    for side, message in [*setup(2), *turn()[:4]]:
        observer.observe(Side(side), framer.lines(line(message)))
    chunks = [CLEAN_CHUNK.replace(b'"ab"', b'"word %d "' % n) + b"\n" for n in range(20)]
    observer.observe(Side.AGENT, framer.lines(b"".join([*chunks, line(WRONG)])))
    for side, message in turn()[4:]:
        observer.observe(Side(side), framer.lines(line(message)))
    observer.stderr(b"warming up\nhalf a li")
    observer.stderr(b"ne\n")
    observer.stderr(b"")
    observer.finish(0, "done")
    offline = Stats()
    offline.feed(read(path))
    assert live_stats.as_json() == offline.as_json()
    assert live_stats.findings["jsonrpc-version"] == 1 and live_stats.as_json()["turns"]
    (connection,) = Conversation.per_connection(read(path, validate=False))
    assert live_conversation.sessions.keys() == connection[1].sessions.keys()
    for key, view in connection[1].sessions.items():
        assert live_conversation.sessions[key].as_json() == view.as_json()
    assert kinds.kinds[0] == "StartRecord" and kinds.kinds[-1] == "EndRecord"
    assert kinds.kinds.count("StderrRecord") == 2 and kinds.kinds.count("FrameRecord") == (
        observer.seq
    )


def test_the_live_readers_get_the_agents_stderr_as_the_recording_holds_it(tmp_path):
    """A long stderr line with no newline reaches the live readers in the pieces Save records
    (each at most STDERR_PIECE, held no longer), then its unfinished end."""
    from acp_proxy.live.addons import STDERR_PIECE
    from acp_proxy.readers.annotate import read
    from acp_proxy.transcript.records import StderrRecord

    class Lines(Addon):
        def __init__(self) -> None:
            self.lines: list[bytes] = []

        def add(self, item: Annotated) -> None:
            if isinstance(item.record, StderrRecord):
                self.lines.append(item.record.data)

    log = get_logger()
    path = tmp_path / "t.jsonl"
    recorder = Recorder(path, log, ["agent"], 1)
    live, offline = Lines(), Lines()
    observer = Observer(recorder, log, Validator(), addons=[Save(recorder, log), live])
    for _ in range(5):
        observer.stderr(b"x" * 50_000)
    observer.stderr(b"y\nlast")
    observer.stderr(b"")
    observer.finish(0, "done")
    offline.feed(read(path))
    assert live.lines == offline.lines
    assert max(map(len, live.lines)) <= STDERR_PIECE and live.lines[-1] == b"last"
    assert b"".join(live.lines) == b"x" * 250_000 + b"ylast"


class FramesPerMethod(Addon):
    """A view of one's own, written once: frames per method (a response counts for the
    method of its request), and the turns' stop reasons."""

    def __init__(self) -> None:
        self.methods: dict[str, int] = {}
        self.stops: list[str] = []
        self.records: list[str] = []

    def add(self, item: Annotated) -> None:
        self.records.append(type(item.record).__name__)
        message = item.message
        if message is None:
            return
        method = message.method or "?"
        self.methods[method] = self.methods.get(method, 0) + 1
        result = (
            message.frame.value.get("result") if isinstance(message.frame.value, dict) else None
        )
        if method == "session/prompt" and isinstance(result, dict):
            self.stops.append(str(result.get("stopReason")))


def test_a_view_written_once_runs_live_and_on_the_recording(tmp_path):
    """The one hook protocol: the same view class, put in a live session's chain as it is
    (the client core's, which run_addons assembles as it does run's), sees what it sees of
    the recording afterwards through the public read(), and through read() with runs."""
    import acp_proxy

    example = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"]
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    live = FramesPerMethod()
    with Client.start(
        example, Services(sandbox), get_logger(), record=str(tmp_path / "rec.jsonl"), addons=[live]
    ) as client:
        assert client.call("initialize", initialize_params(1, client.services), 10).ok
        new = client.call("session/new", {"cwd": str(sandbox), "mcpServers": []}, 10)
        session_id = new.result["sessionId"]
        for words in ("hi", "tell me more " * 20):
            prompt = client.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": words}]},
            )
            while not prompt.done():
                client.next_event(10)
    assert client.recording is not None
    offline, with_runs = FramesPerMethod(), FramesPerMethod()
    offline.feed(acp_proxy.read(client.recording))
    with_runs.feed(acp_proxy.read(client.recording, runs=True))
    assert live.methods["session/update"] > 2 and live.stops == ["end_turn", "end_turn"]
    assert live.methods == offline.methods == with_runs.methods
    assert live.stops == offline.stops
    assert live.records == offline.records == with_runs.records
    assert live.records[0] == "StartRecord" and live.records[-1] == "EndRecord"


class Texts(Addon):
    """A view that takes runs: every frame's seq, and each message chunk's text, in order;
    how many runs it was handed."""

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.texts: list[str] = []
        self.runs = 0

    def add(self, item: Annotated) -> None:
        message = item.message
        if message is None:
            return
        self.seqs.append(message.seq)
        update = message.update or {}
        if update.get("sessionUpdate") == "agent_message_chunk":
            self.texts.append(update["content"]["text"])

    def add_run(self, run: Repeated) -> None:
        self.runs += 1
        self.seqs += run.seqs
        self.texts += run.texts


def test_a_view_that_takes_runs_gets_the_known_chunks_unparsed_live_and_is_right(tmp_path):
    """The chunk shortcut behind one interface, live as offline: with only views that take
    runs in the chain, a chunk known by its bytes is not parsed, and reaches them in a run
    (``add_run``); they make of the session what they make of its recording."""
    from acp_proxy.readers.annotate import read, read_items
    from acp_proxy.readers.stats import Stats
    from tests.exchanges import CLEAN_CHUNK, setup, turn

    log = get_logger()
    path = tmp_path / "t.jsonl"
    recorder = Recorder(path, log, ["agent"], 1)
    live_stats, live = Stats(), Texts()
    validator = Validator()
    chain = run_addons(recorder, log, validator, then=[live_stats, live])
    observer = Observer(recorder, log, validator, addons=chain)
    framer = Framer()
    for side, message in [*setup(2), *turn()[:4]]:
        observer.observe(Side(side), framer.lines(line(message)))
    for batch in range(3):
        chunks = [
            CLEAN_CHUNK.replace(b'"ab"', b'"word %d.%d "' % (batch, n)) + b"\n" for n in range(40)
        ]
        observer.observe(Side.AGENT, framer.lines(b"".join(chunks)))
    observer.observe(Side.AGENT, framer.lines(line(WRONG)))
    for side, message in turn()[4:]:
        observer.observe(Side(side), framer.lines(line(message)))
    observer.finish(0, "done")
    assert live.runs >= 3  # (each read's chunks after the first: one run)
    offline_stats, offline, with_runs = Stats(), Texts(), Texts()
    offline_stats.feed(read(path))
    offline.feed(read_items(path))  # each record an item
    with_runs.feed(read(path))  # the readers' way: runs too
    assert live_stats.as_json() == offline_stats.as_json()
    assert live.seqs == offline.seqs == with_runs.seqs == list(range(1, observer.seq + 1))
    assert live.texts == offline.texts == with_runs.texts
    assert "word 2.39 " in live.texts
