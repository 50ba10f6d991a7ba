"""``acp-proxy mcp``'s JSON-RPC on stdio: requests in, answers out; stdin's end ends it."""

from __future__ import annotations

import _thread
import os
import queue
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import orjson

from acp_proxy import __version__
from acp_proxy.core.framing import Frame, Framer
from acp_proxy.core.visible import visible
from acp_proxy.readers.mcp.directory import Recordings
from acp_proxy.readers.mcp.paging import NAME_CHARS, ToolError, cut, safe, said
from acp_proxy.readers.mcp.tools import BY_NAME, TOOLS, check
from acp_proxy.readers.mcp.views import show_session_timeline
from acp_proxy.transcript.reading import RecordingError

__all__ = ["PROTOCOL_VERSIONS", "Server", "serve"]

#: The revisions of MCP this server speaks, newest first (the first is offered to a client
#: that asks for one it does not know).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: The longest request line read (a longer one is refused, and the server goes on).
MAX_REQUEST = 1 << 20
#: How often the directory is looked at for a new recording (list_changed), in seconds.
POLL = 1.0
#: A recording as a resource: this, then its name (percent-encoded).
URI_PREFIX = "acp-proxy://recordings/"

# JSON-RPC error codes
PARSE_ERROR, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS = -32700, -32600, -32601, -32602
RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


INSTRUCTIONS = (
    "Read-only access to acp-proxy's recordings of Agent Client Protocol (ACP) sessions "
    "between an editor and an agent. list_recorded_sessions names the files (newest first); "
    "the other tools take one. Long answers come in pages: ask for the next page."
)


class Server:
    """JSON-RPC 2.0 over stdio: requests in, one answer each; notifications (list_changed)."""

    def __init__(self, recordings: Recordings, out: int) -> None:
        self.recordings = recordings
        self._out = out
        self._lock = threading.Lock()
        self.initialized = False
        self.closed = False
        #: stdin has ended: nothing more is answered.
        self.ending = False

    def send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message) + b"\n"
        with self._lock:
            if self.closed:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._out, view) :]
            except OSError:
                self.closed = True  # the client is gone: nothing more to say

    def handle_line(self, frame: Any) -> None:
        """One line from the client: answered if it is a request."""
        if frame.oversized:
            self._error(None, INVALID_REQUEST, f"a request of {frame.oversized:,} bytes: too long")
            return
        if not frame.is_json:
            self._error(None, PARSE_ERROR, "parse error: the line is not JSON")
            return
        value = frame.value
        if isinstance(value, list):
            self._error(None, INVALID_REQUEST, "batches are not supported (MCP 2025-06-18)")
            return
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            ident = value.get("id") if isinstance(value, dict) else None
            self._error(ident, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return
        method = value.get("method")
        if method is None:
            return  # a response (we ask nothing): ignored
        if "id" not in value:
            if method == "notifications/initialized":
                self.initialized = True
            return  # notifications/cancelled and others: nothing to do (we answer at once)
        ident = value["id"]
        if not isinstance(ident, str | int) or isinstance(ident, bool):
            self._error(None, INVALID_REQUEST, "id must be a string or an integer")
            return
        if not isinstance(method, str):
            self._error(ident, INVALID_REQUEST, "method must be a string")
            return
        params = value.get("params")
        if params is not None and not isinstance(params, dict):
            self._error(ident, INVALID_PARAMS, "params must be an object")
            return
        try:
            result = self.answer(method, params or {})
        except RpcError as exc:
            self._error(ident, exc.code, str(exc))
            return
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _error(self, ident: Any, code: int, message: str) -> None:
        error = {"code": code, "message": said(message)}
        self.send({"jsonrpc": "2.0", "id": ident, "error": error})

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]

            return {
                "protocolVersion": version,
                "capabilities": {
                    "tools": {"listChanged": False},
                    "resources": {"listChanged": True},
                },
                "serverInfo": {
                    "name": "acp-proxy",
                    "title": "acp-proxy recordings",
                    "version": __version__,
                },
                "instructions": INSTRUCTIONS,
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool.as_json() for tool in TOOLS]}
        if method == "tools/call":
            return self.call(params.get("name"), params.get("arguments"))
        if method == "resources/list":
            return self.resources(params.get("cursor"))
        if method == "resources/templates/list":
            return {"resourceTemplates": []}
        if method == "resources/read":
            return self.read(params.get("uri"))
        raise RpcError(NO_METHOD, f"method not found: {cut(method, NAME_CHARS)}")

    def call(self, name: Any, arguments: Any) -> dict[str, Any]:
        tool = BY_NAME.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"unknown tool: {cut(str(name), NAME_CHARS)}")
        try:
            answer = tool.run(self.recordings, check(tool.input_schema(), arguments))
        except (ToolError, RecordingError) as exc:
            return {"content": [{"type": "text", "text": said(exc)}], "isError": True}
        except Exception as exc:  # a bug of ours: said, and the server goes on
            text = said(f"acp-proxy could not answer: {type(exc).__name__}: {exc}")
            sys.stderr.write(f"acp-proxy mcp: {name}: {text}\n")
            return {"content": [{"type": "text", "text": text}], "isError": True}
        result: dict[str, Any] = {"content": [{"type": "text", "text": answer.text}]}
        if answer.data is not None:
            result["structuredContent"] = answer.data
        return safe(result)  # type: ignore[no-any-return]

    def resources(self, cursor: Any) -> dict[str, Any]:
        names = self.recordings.names()
        if cursor is None:
            start = 0
        elif isinstance(cursor, str) and cursor.isdigit() and len(cursor) < 10:
            start = int(cursor)
        else:
            raise RpcError(INVALID_PARAMS, f"invalid cursor: {cut(str(cursor), NAME_CHARS)}")
        page = names[start : start + 100]
        listed: dict[str, Any] = {
            "resources": [
                {
                    "uri": URI_PREFIX + quote(name),
                    "name": visible(name),
                    "title": f"ACP recording {visible(name)}",
                    "description": "A recorded ACP session: its timeline (first page).",
                    "mimeType": "text/plain",
                }
                for name in page
            ]
        }
        if start + 100 < len(names):
            listed["nextCursor"] = str(start + 100)
        return listed

    def read(self, uri: Any) -> dict[str, Any]:
        if not isinstance(uri, str) or not uri.startswith(URI_PREFIX):
            raise RpcError(RESOURCE_NOT_FOUND, f"resource not found: {cut(str(uri), NAME_CHARS)}")
        name = unquote(uri[len(URI_PREFIX) :])
        try:
            answer = show_session_timeline(self.recordings, {"file": name})
        except (ToolError, RecordingError) as exc:
            raise RpcError(RESOURCE_NOT_FOUND, f"resource not found: {said(exc)}") from None
        text = answer.text + "\n[the tool show_session_timeline gives the next pages]"
        return safe({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})  # type: ignore[no-any-return]

    def read_stdin(self, slow: queue.Queue[Any], done: threading.Event) -> None:
        """Read the requests: answer the quick ones, put the slow ones (:data:`_SLOW`) in
        ``slow`` for the main thread; at the end of stdin, say so (None), and interrupt the
        main thread if it is not ``done`` within :data:`ENDING_GRACE`."""
        framer = Framer(cap=MAX_REQUEST)
        try:
            while not self.closed:
                chunk = os.read(sys.stdin.fileno(), 1 << 16)
                for frame in framer.feed(chunk):
                    if not frame.raw.strip():
                        continue
                    if _method(frame) in _SLOW:
                        slow.put(frame)
                    else:
                        self.handle_line(frame)
                if not chunk:
                    break
        except OSError:
            pass
        finally:
            self.ending = True
            slow.put(None)
            if not done.wait(ENDING_GRACE):
                _thread.interrupt_main()  # (a KeyboardInterrupt, as Ctrl-C: caught in serve)

    def watch(self, stop: threading.Event) -> None:
        """Say ``notifications/resources/list_changed`` when the recordings change."""
        known = self.recordings.names()
        while not stop.wait(POLL):
            now = self.recordings.names()
            if now != known and self.initialized:
                self.send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
            known = now


#: The methods whose answer may take long (a tool, a resource): answered one at a time by the
#: main thread, while the reader answers the others (ping) and sees stdin end.
_SLOW = ("tools/call", "resources/read")
#: The most requests waiting for the main thread (more: stdin is not read, back-pressure).
_WAITING = 64
#: How long, once stdin has ended, what was asked before may still take (seconds).
ENDING_GRACE = 2.0


def serve(root: Path) -> int:
    """Serve the recordings of ``root`` on stdin and stdout until stdin ends (0).

    A thread reads stdin and answers what is quick (``ping``); tools and resources are
    answered in turn by the main thread (a search's budget is a timer's signal, which only
    the main thread takes). When stdin ends, what was asked before is answered, for
    :data:`ENDING_GRACE` at most: a call still running then is given up, and the server
    exits."""
    out = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing else reaches the client
    server = Server(Recordings(root), out)
    stop, done = threading.Event(), threading.Event()
    threading.Thread(target=server.watch, args=(stop,), daemon=True).start()
    slow: queue.Queue[Any] = queue.Queue(_WAITING)
    threading.Thread(target=server.read_stdin, args=(slow, done), daemon=True).start()
    try:
        while (frame := slow.get()) is not None:
            server.handle_line(frame)
    except KeyboardInterrupt:
        if not server.ending:
            raise
    finally:
        done.set()
        stop.set()
    return 0


def _method(frame: Frame) -> Any:
    """The method a line asks for, if it is a JSON object that names one."""
    value = frame.value if frame.is_json and not frame.oversized else None
    return value.get("method") if isinstance(value, dict) else None
