"""``acp-proxy inspect``: the report page, served live on loopback.

Theory of operation
-------------------
A :class:`ThreadingHTTPServer` on ``127.0.0.1`` serves two pages, both the report's template
(one page, not two: a static report is the same page with the data inlined once):

- ``/``: the sessions of the directory (``ls``'s summaries), newest first;
- ``/session/<name>``: the report of one recording, built when asked, as it is now.

Each page listens to ``/events`` (Server-Sent Events): the server looks at the directory, or
at the recording, twice a second and says ``changed`` when it did (for the directory, also when
a recording's writer comes or goes: its lock); the list then fetches itself again and swaps its
table in place, and a session's page loads itself again, keeping the reader's place (or
following the end, when they were at the bottom, as ``tail -f`` views do). Either asks again at
most every twice its last load time, so a big recording being written stays usable. The
proxy is untouched: recordings are read as ``follow`` reads them, so a session recorded
elsewhere, or several, show the same way.

Safe on a shared machine: loopback only; every URL carries a random token, and a request
without it, or with a ``Host`` other than the loopback name and port (DNS rebinding), gets 403;
no CORS headers; the page's Content-Security-Policy allows nothing but its own origin for the
stream; only the recordings of the directory it was given are served (by name, never a path).

The token never leaves the user: ``--open`` hands the browser a file (0600, in a directory of
its own, 0700) that redirects to the page (:func:`redirect_file`), not the URL, which every
local user could read in the browser's command line.

Nor can idle connections starve the token holder: a connection must send its request (one
per connection) within :data:`REQUEST_TIMEOUT` seconds, or it is hung up on (however slowly
it drips); at most :data:`MAX_WAITING` connections wait for their request at once, and a new
one takes the place of the oldest. So a flood costs the server a bounded number of threads
and descriptors, and never the one connection that brings the token. A peer that goes away
(a tab closed mid-page) ends its request, silently (:meth:`_Server.handle_error`).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from acp_proxy.core.visible import visible
from acp_proxy.files import open_output
from acp_proxy.log import get_logger
from acp_proxy.readers.catalog import list_sessions, select
from acp_proxy.readers.report import build_document, embed, live_page
from acp_proxy.transcript.names import being_written

__all__ = ["MAX_WAITING", "REQUEST_TIMEOUT", "Inspector", "redirect_file", "serve"]

#: How often a watched file or directory is looked at, in seconds.
POLL = 0.5
#: A comment sent on an idle stream this often, so a dead client is noticed.
HEARTBEAT = 15.0
#: Seconds a connection has to send its request (and any one read or write may wait).
REQUEST_TIMEOUT = 10.0
#: Connections waiting for their request at once; past it, the oldest is hung up on.
MAX_WAITING = 32
#: The policy every response carries (the page's own meta tag says the same).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; connect-src 'self'"
)


class Inspector:
    """What the server serves: recordings under ``root`` (a directory, or one file)."""

    def __init__(self, target: Path, token: str | None = None) -> None:
        self.single = target if target.is_file() else None
        self.root = (target.parent if target.is_file() else target).resolve()
        self.token = token or secrets.token_urlsafe(24)
        self.port = 0

    def recordings(self) -> list[Path]:
        if self.single is not None:
            return [self.single.resolve()]
        try:
            return sorted(p for p in self.root.iterdir() if p.suffix == ".jsonl" and p.is_file())
        except OSError:
            return []

    def recording(self, name: str) -> Path | None:
        """The recording called ``name`` in the root, or None (never a path outside it)."""
        if "/" in name or "\\" in name or name.startswith("."):
            return None
        for path in self.recordings():
            if path.name == name:
                resolved = path.resolve()
                if resolved.parent == self.root:
                    return resolved
        return None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def events(self, name: str | None = None) -> str:
        """Where a page listens: a path on the page's own origin (whichever loopback name it
        was opened by), with the token and what the page is made from (``since``, taken
        before it is): a change the stream did not see happen is said at once."""
        since = _digest(self.signature(name))
        return (
            f"/events{'' if name is None else '/' + quote(name)}?token={self.token}&since={since}"
        )

    def signature(self, name: str | None) -> Any:
        """What changes when the directory (or a recording) does; for the directory, also
        whether each recording is being written (a proxy killed leaves its file as it was)."""
        paths = self.recordings() if name is None else [p for p in [self.recording(name)] if p]
        found = []
        for path in paths:
            with contextlib.suppress(OSError):
                info = path.stat()
                live = being_written(path) if name is None else None
                found.append((path.name, info.st_size, info.st_mtime_ns, live))
        return found


class _Handler(BaseHTTPRequestHandler):
    """One request; :attr:`inspector` says what is served (set per server, by :func:`serve`)."""

    inspector: Inspector
    server_version = "acp-proxy"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # quiet: stdout is not ours
        return

    def _allowed(self) -> dict[str, list[str]] | None:
        host = self.headers.get("Host", "")
        if host not in (f"127.0.0.1:{self.inspector.port}", f"localhost:{self.inspector.port}"):
            return None
        query = parse_qs(urlsplit(self.path).query)
        token = (query.get("token") or [""])[0]
        if not secrets.compare_digest(token.encode(), self.inspector.token.encode()):
            return None
        return query

    def _send(self, status: int, body: bytes, kind: str = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self._security()
        self.end_headers()
        self.wfile.write(body)

    def _security(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")

    def do_GET(self) -> None:
        server = self.server
        if isinstance(server, _Server):  # its request is in: no longer waiting
            server.answering(self.request)
        query = self._allowed()
        if query is None:
            self._send(403, b"forbidden\n", "text/plain; charset=utf-8")
            return
        since = (query.get("since") or [""])[0]
        path = unquote(urlsplit(self.path).path)
        if path == "/":
            self._send(200, _listing(self.inspector))
        elif path.startswith("/session/"):
            self._session(path[len("/session/") :])
        elif path == "/events":
            self._events(None, since)
        elif path.startswith("/events/"):
            self._events(path[len("/events/") :], since)
        else:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def _session(self, name: str) -> None:
        recording = self.inspector.recording(name)
        if recording is None:
            self._send(404, b"no such recording\n", "text/plain; charset=utf-8")
            return
        # (a session still being recorded: its page says so, and how long so far)
        live = {"events": self.inspector.events(name), "recording": being_written(recording)}
        try:
            document = build_document(str(recording))
        except Exception as exc:  # a recording that cannot be read (yet): say so
            body = f"<p>{html.escape(visible(f'cannot read {name}: {exc}'))}</p>"
            self._send(200, body.encode())
            return
        self._send(200, live_page(str(recording), document, live))

    def _events(self, name: str | None, since: str = "") -> None:
        if name is not None and self.inspector.recording(name) is None:
            self._send(404, b"no such recording\n", "text/plain; charset=utf-8")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self._security()
        self.end_headers()
        seen = self.inspector.signature(name)
        quiet = 0.0
        try:
            self.wfile.write(b": watching\n\n")
            if since and since != _digest(seen):  # (changed while the page was on its way)
                self.wfile.write(b"data: changed\n\n")
            self.wfile.flush()
            while True:
                time.sleep(POLL)
                now = self.inspector.signature(name)
                if now != seen:
                    seen = now
                    self.wfile.write(b"data: changed\n\n")
                    self.wfile.flush()
                    quiet = 0.0
                else:
                    quiet += POLL
                    if quiet >= HEARTBEAT:
                        self.wfile.write(b": still here\n\n")
                        self.wfile.flush()
                        quiet = 0.0
        except OSError:  # the page went away
            return


def _digest(signature: Any) -> str:
    return hashlib.blake2b(repr(signature).encode(), digest_size=8).hexdigest()


#: The list's column names.
_HEAD = "<thead><tr>" + "".join(
    f"<th>{name}</th>" for name in
    ("start (UTC)", "agent", "ACP", "turns, frames", "findings", "state", "recording")
) + "</tr></thead>"  # fmt: skip


def _listing(inspector: Inspector) -> bytes:
    """The sessions of the directory, newest first, each linked to its page."""
    events = inspector.events()  # (before the sessions are read: see Inspector.events)
    sessions, problems = list_sessions(inspector.recordings())
    rows = []
    for summary in select(sessions):
        name = Path(summary.path).name
        link = html.escape(inspector.url(f"/session/{quote(name)}"), quote=True)
        cells = [
            (summary.start or "-")[:19].replace("T", " "),
            summary.agent or "-",
            f"v{summary.protocol}" if summary.protocol else "-",
            f"{summary.turns_text}, {summary.frames:,} frame{'' if summary.frames == 1 else 's'}",
            summary.findings_text,
            summary.state,
        ]
        text = "".join(f"<td>{html.escape(visible(c))}</td>" for c in cells)
        rows.append(f'<tr>{text}<td><a href="{link}">{html.escape(visible(name))}</a></td></tr>')
    said = "".join(f"<p class=dim>{html.escape(visible(str(p)))}</p>" for p in problems)
    # JSON in a script element: its text is never HTML-decoded, so escaped as report's data is
    config = embed({"events": events}).decode()
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>acp-proxy inspect</title>
<style>body{{font:14px system-ui,sans-serif;margin:1.5em}}td,th{{padding:2px 10px}}
th{{text-align:left;font-weight:600;color:#555}}td:first-child{{white-space:nowrap}}
.dim{{color:#777}}</style>
</head><body><h1>acp-proxy inspect · {html.escape(visible(str(inspector.root)))}</h1>
<div id="listing"><table id="sessions">{_HEAD if rows else ""}<tbody>
{"".join(rows) or "<tr><td>no recordings yet</td></tr>"}</tbody></table>{said}</div>
<script type="application/json" id="live-config">{config}</script>
<script>
  "use strict";
  // On each change, the list is fetched again and swapped in place (the server's own,
  // escaped markup), at most every twice its last load time; data-updates counts the swaps.
  const live = JSON.parse(document.getElementById("live-config").textContent);
  let busy = false, again = false, updates = 0;
  async function refresh() {{
    if (busy) {{ again = true; return; }}
    busy = true;
    try {{
      do {{
        again = false;
        const began = performance.now();
        const response = await fetch(location.href, {{ cache: "no-store" }});
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById("listing");
        const old = document.getElementById("listing");
        if (response.ok && fresh) old.replaceWith(document.adoptNode(fresh));
        document.body.dataset.updates = String(++updates);
        const took = performance.now() - began;
        await new Promise((done) => setTimeout(done, Math.max(300, 2 * took)));
      }} while (again);
    }} catch (e) {{ /* the server went away: the stream says when it is back */ }}
    busy = false;
  }}
  new EventSource(live.events).onmessage = refresh;
  document.body.dataset.ready = "1";
</script></body></html>""".encode()


class _Server(ThreadingHTTPServer):
    """A thread per connection, as :class:`ThreadingHTTPServer`; but a connection that has
    not sent its request within ``timeout`` seconds is hung up on (:meth:`reap`), and at
    most ``waiting`` wait at once (a new one takes the place of the oldest)."""

    daemon_threads = True
    #: The kernel's queue of connections not yet accepted (socketserver's default: 5, which
    #: a flood fills, so the token holder's connection waits for the retries of its SYN).
    request_queue_size = 128

    def __init__(self, port: int, handler: type[_Handler], timeout: float, waiting: int) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.timeout_seconds = timeout
        self.waiting_max = waiting
        #: The connections waiting for their request, oldest first, and their deadlines.
        self._waiting: dict[socket.socket, float] = {}
        self._lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            while len(self._waiting) >= self.waiting_max:
                oldest = next(iter(self._waiting))
                del self._waiting[oldest]
                _hang_up(oldest)
            self._waiting[request] = time.monotonic() + self.timeout_seconds
        super().process_request(request, client_address)

    def answering(self, request: socket.socket) -> None:
        """The request of this connection is in: it waits no more."""
        with self._lock:
            self._waiting.pop(request, None)

    def shutdown_request(self, request: Any) -> None:
        self.answering(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed. A peer that went away (a tab closed mid-page: the answer
        meets a reset or a broken pipe; a read timed out) ends its request, said in one
        debug line at most; anything else (a bug) in one error line, never a traceback."""
        error = sys.exc_info()[1]
        with contextlib.suppress(Exception):  # (saying it never fails the server)
            if isinstance(error, ConnectionError | TimeoutError):
                get_logger().debug("a page went away", error=repr(error))
                return
            said = f"acp-proxy inspect: error: a request failed: {error!r}\n"
            sys.stderr.write(visible(said.rstrip("\n")) + "\n")
            sys.stderr.flush()

    def reap(self) -> None:
        """Hang up on the connections past their deadline, for good (a thread's loop)."""
        while True:
            time.sleep(min(0.25, self.timeout_seconds / 4))
            now = time.monotonic()
            with self._lock:
                late = [c for c, deadline in self._waiting.items() if deadline <= now]
                for connection in late:
                    del self._waiting[connection]
            for connection in late:
                _hang_up(connection)


def _hang_up(connection: socket.socket) -> None:
    """End a connection another thread reads: its read returns at once, and that thread
    closes it (closing it here could close a descriptor already reused)."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


def serve(
    target: Path,
    port: int = 0,
    parent: int | None = None,
    ready: threading.Event | None = None,
    inspector: Inspector | None = None,
    timeout: float = REQUEST_TIMEOUT,
    waiting: int = MAX_WAITING,
) -> None:
    """Serve until interrupted (or until the ``parent`` process is gone); ``timeout`` and
    ``waiting``: see :class:`_Server`."""
    inspector = inspector or Inspector(target)
    handler = type("Handler", (_Handler,), {"inspector": inspector, "timeout": timeout})
    server = _Server(port, handler, timeout, waiting)
    inspector.port = server.server_address[1]
    threading.Thread(target=server.reap, daemon=True).start()
    if parent is not None:
        threading.Thread(target=_watch_parent, args=(parent, server), daemon=True).start()
    if ready is not None:
        ready.set()
    try:
        server.serve_forever(poll_interval=0.25)
    finally:
        server.server_close()


@contextlib.contextmanager
def redirect_file(url: str) -> Iterator[Path]:
    """A page that sends the browser on to ``url``, for as long as the context lasts: made as
    a recording is (0600, never through a symlink), in a new directory only the user can
    enter, removed at the end. Its path is what the browser is given: a command line is
    readable by every local user, and the token must not be in it (as Jupyter does)."""
    directory = Path(tempfile.mkdtemp(prefix="acp-proxy-inspect-"))
    try:
        path = directory / "open.html"
        link = html.escape(url, quote=True)
        page = (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="0;url={link}"><title>acp-proxy inspect</title>'
            f'</head><body><p><a href="{link}">acp-proxy inspect</a></p></body></html>\n'
        ).encode()
        fd = open_output(str(path))
        try:
            view = memoryview(page)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _watch_parent(pid: int, server: ThreadingHTTPServer) -> None:
    """``run --inspect``: the server lives as long as the proxy that started it."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            server.shutdown()
            return
        except PermissionError:
            continue
