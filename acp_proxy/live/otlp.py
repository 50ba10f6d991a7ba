"""``run --otlp``: the session's spans to the backend as it goes, off the relay's path.

:class:`LiveExport` is the OTLP view (:class:`~acp_proxy.otlp.spans.Spans`) in ``run``'s
chain: it maps each frame as it crosses (what the recording will hold, so its ids are the
ones ``export`` derives from the recording), and hands each batch (a prompt turn's spans
when the frame that ends it is observed; the rest when the connection ends) to a sender
thread through a bounded queue. The relay never waits on the backend: a batch that finds the
queue full is not sent; the first request that fails stops the sending. Either way that costs
one log line, at the end, saying how many spans were not sent and why (``acp-proxy export``
sends them later from the recording: what was sent is not sent twice). At the end (the
editor's stdout already closed) the sender gets at most :data:`END_WAIT` seconds to finish: the
proxy's exit waits no longer on the backend.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time

from acp_proxy.log import Logger
from acp_proxy.otlp.encode import Span
from acp_proxy.otlp.send import Exporter, SendError, Target
from acp_proxy.otlp.spans import Spans

__all__ = ["END_WAIT", "QUEUE", "LiveExport"]

#: Batches waiting to be sent, at most (a turn's spans each).
QUEUE = 64
#: Seconds the sender gets at the end to send what waits (at most the request timeout).
END_WAIT = 2.0


class LiveExport(Spans):
    """The OTLP view of a live session, and its sender (see the module)."""

    name = "the OTLP export"

    def __init__(
        self,
        where: Target,
        log: Logger,
        *,
        started: tuple[str, int | None],
        content: bool = False,
        redact: bool = False,
        recorded: bool = True,
    ) -> None:
        """``redact`` (``--redact``): secrets replaced before anything leaves. ``recorded``:
        the session is recorded (what is not sent can be, from the recording)."""
        self.recorded = recorded
        redactor = None
        if redact:
            from acp_proxy.transcript.redact import Redactor  # noqa: PLC0415 - (its tables)

            redactor = Redactor()
        super().__init__(self._queued, content=content, redactor=redactor, started=started)
        self.where = where
        self.log = log
        self.exporter = Exporter(where)
        self._queue: queue.Queue[list[Span] | None] = queue.Queue(QUEUE)
        self._thread: threading.Thread | None = None
        #: Spans handed to the sender, and those it could not send; why not (the first).
        self.queued = 0
        self.unsent = 0
        self.reason: str | None = None
        self._lock = threading.Lock()

    def _queued(self, spans: list[Span]) -> None:
        """A batch to the sender, never waiting (a full queue: not sent)."""
        if self.reason is not None:
            self._lost(len(spans), None)
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._sender, name="acp-proxy otlp", daemon=True)
            self._thread.start()
        try:
            self._queue.put_nowait(spans)
            self.queued += len(spans)
        except queue.Full:
            self._lost(len(spans), f"the backend is slower than the session ({QUEUE} turns wait)")

    def _lost(self, count: int, reason: str | None) -> None:
        with self._lock:
            self.unsent += count
            if self.reason is None and reason is not None:
                self.reason = reason

    def _sender(self) -> None:
        """The sender thread: each batch, until the end (None) or a failure."""
        while (batch := self._queue.get()) is not None:
            if self.reason is not None:
                self._lost(len(batch), None)
                continue
            try:
                refused, said = self.exporter.send(batch)
            except SendError as exc:
                self._lost(len(batch), str(exc))
                continue
            except Exception as exc:  # a bug: the session goes on, the spans are not sent
                self._lost(len(batch), repr(exc))
                continue
            if refused:
                self._lost(refused, f"the backend rejected spans{': ' + said if said else ''}")

    def done(self, exit_status: int | None, reason: str) -> None:
        """The last batch is queued (the end record's): the sender gets :data:`END_WAIT`
        seconds to send what waits; then one line if anything was not sent. Never raises."""
        thread = self._thread
        if thread is not None:
            wait = min(END_WAIT, self.where.timeout)
            deadline = time.monotonic() + wait
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=wait)
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():  # still waiting on the backend: what is left is not sent
                with self._lock:
                    waiting = self.queued - self.exporter.accepted - self.unsent
                    self.unsent += max(0, waiting)
                    self.reason = self.reason or f"no answer in {wait:g} s at the end"
        with contextlib.suppress(Exception):
            if self.unsent:
                later = " (`acp-proxy export` sends them from the recording)"
                self.log.warning(
                    f"{self.unsent} of {self.spans} spans of this session were not sent to the "
                    f"OTLP backend{later if self.recorded else ''}",
                    endpoint=self.where.url,
                    reason=self.reason,
                )
            else:
                self.log.debug("spans sent", endpoint=self.where.url, spans=self.spans)
