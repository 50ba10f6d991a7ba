"""The shell (:func:`serve`): the machine as the role of the server
(:class:`~acp_proxy.live.server.Server`: our stdio relayed as ``run`` relays, with its
bounds and back-pressure; ``drive`` leaves the event loop to ``live``), every frame of both
sides observed as ``run`` observes it (the client is ``Side.CLIENT``, what test-agent writes
``Side.AGENT``), the validator's findings on the client's frames handed to the machine."""

from __future__ import annotations

import time
from dataclasses import replace

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import Side
from acp_proxy.drive.test_agent.catalog import Options
from acp_proxy.drive.test_agent.machine import TestAgent
from acp_proxy.drive.test_agent.report import Report
from acp_proxy.live.client import Event
from acp_proxy.live.server import Role, Server, ServerResult
from acp_proxy.live.session import Recording
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon, Seen

#: The validator's end-of-connection rules that blame the side that did not answer (the
#: client, for a request of the agent's).
_UNANSWERED = frozenset({"unanswered-request", "permission-unanswered"})


#: The findings on the client's frames handed to the machine at most (the client core's
#: bound): the rest are counted, said once in the log, and recorded all the same.
MAX_FINDINGS = 10_000


class Findings(Addon):
    """The validator's findings, to the machine when they are on the client's frames (or
    a request of the agent's the client never answered), up to :data:`MAX_FINDINGS`: a
    client that sends junk does not grow test-agent with its every line."""

    name = "test-agent's findings"

    def __init__(self, machine: TestAgent, log: Logger) -> None:
        self.machine = machine
        self.log = log
        #: A byte per frame, by seq: 1 for the client's.
        self.clients = bytearray()
        self.handed = 0
        self.left_out = 0

    def frame(self, seen: Seen) -> bytes | None:
        if seen.findings and seen.side is Side.CLIENT:
            self._hand(list(seen.findings))
        return None

    def read_done(self, side: Side, seqs: range) -> None:
        clients = self.clients
        if len(clients) < seqs.stop:
            clients.extend(bytes(seqs.stop - len(clients)))
        if side is Side.CLIENT:
            clients[seqs.start : seqs.stop] = b"\1" * len(seqs)

    def end(self, findings: list[Violation], t: str) -> None:
        clients = self.clients

        def client(seq: int | None) -> bool:
            return seq is not None and 0 <= seq < len(clients) and clients[seq] == 1

        self._hand([f for f in findings if client(f.seq) or f.rule in _UNANSWERED])
        if self.left_out:
            self.log.warning(
                f"over {MAX_FINDINGS} findings on the client's frames: the report has the "
                "first, the recording has them all",
                left_out=self.left_out,
            )

    def _hand(self, findings: list[Violation]) -> None:
        room = max(MAX_FINDINGS - self.handed, 0)
        if len(findings) > room:
            self.left_out += len(findings) - room
            findings = findings[:room]
        self.handed += len(findings)
        if findings:
            self.machine.found(findings)


class _Played(Role):
    """The machine, as the server's role: what the client writes, as observed, handed to
    it; what it says, sent (and observed as it crosses); its waits, the server's timer."""

    def __init__(self, machine: TestAgent) -> None:
        self.machine = machine
        self.server: Server | None = None

    def opened(self, server: Server) -> None:
        self.server = server

    def received(self, event: Event) -> None:
        assert self.server is not None
        message = event.value if event.is_json else None
        self._say(self.machine.receive(message, event.seq, self.server.now()))

    def wake(self) -> None:
        assert self.server is not None
        self._say(self.machine.expire(self.server.now()))

    def stalled(self, reason: str) -> None:
        self.machine.stall(reason)

    def finished(self, result: ServerResult) -> None:
        self.machine.close(time.monotonic())  # (what it would say now has nobody to read it)

    def _say(self, lines: list[bytes]) -> None:
        assert self.server is not None
        for line in lines:
            self.server.send(line)
        self.server.wake_at(self.machine.deadline)


def serve(
    options: Options,
    log: Logger,
    *,
    record: str | None = None,
    no_record: bool = False,
    redact: bool = False,
    addons: list[Addon] | None = None,
    stdin: int = 0,
    stdout: int = 1,
    argv: list[str] | None = None,
) -> Report:
    """Play the agent on ``stdin``/``stdout`` until the client closes stdin (or SIGTERM, or
    a write the client does not read within the bound), as the server role
    (:class:`~acp_proxy.live.server.Server`: the relay's bounds and back-pressure); the
    session recorded and validated as ``run`` does it (``record``, ``no_record``,
    ``redact``, ``addons``: as ``run``'s options). The report."""
    machine = TestAgent(options)
    command = argv or ["acp-proxy", "test-agent"]
    # run's chain less the findings log (the report says them), and the machine's part
    server = Server(
        _Played(machine),
        log,
        command,
        Recording(record, no_record, redact, addons=addons or ()),
        parts=[Findings(machine, log)],
        stall=options.timeout,
        log_findings=False,
        stdin_fd=stdin,
        stdout_fd=stdout,
    )
    recording = str(server.recording) if server.recording is not None else None
    result = server.run()
    return replace(machine.report(), recording=recording, reason=result.reason)
