"""A tiny stand-in for the Anthropic Messages API, for driving Claude Code ACP offline.

Usage: python fake_anthropic.py PORT [--tool [FILE]]   (PORT 0: any free port; the port is printed)

Every message gets a short streamed text reply; with --tool, a request that offers tools and
has no tool result yet gets a call of the Read tool (Claude Code), read_file (Qwen Code,
deepagents), ReadFile (Kimi Code) or read (opencode) on FILE (default /tmp/hello.txt) instead.
"""

from __future__ import annotations

import itertools
import json
import sys
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_http import send_json, serve

REPLY = "Hello from the stand-in model."
TOOL = "--tool" in sys.argv
_AFTER = sys.argv[sys.argv.index("--tool") + 1 :] if TOOL else []
FILE = _AFTER[0] if _AFTER else "/tmp/hello.txt"
USAGE = {"input_tokens": 10, "output_tokens": 5}
#: The read tools of the agents driven against this stand-in (besides Claude Code's Read).
READ_TOOLS = ("read_file", "read", "ReadFile")
CALLS = itertools.count(1)


def message(model: str, content: list[Any], stop_reason: str | None) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": USAGE,
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("fake-anthropic: " + (format % args) + "\n")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if "count_tokens" in self.path:
            self._json({"input_tokens": 10})
            return
        model = body.get("model", "claude")
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        content = last.get("content") if isinstance(last, dict) else None
        answered = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
        if not body.get("stream"):
            self._json(message(model, [{"type": "text", "text": REPLY}], "end_turn"))
        elif TOOL and not answered and body.get("tools"):
            names = [t.get("name", "") for t in body.get("tools", [])]
            # Claude Code's Read tool and Qwen Code's read_file take file_path; opencode's
            # read takes filePath, Kimi Code's ReadFile path.
            read = next((n for n in names if n.endswith("Read") or n in READ_TOOLS), "Read")
            key = {"read": "filePath", "ReadFile": "path"}.get(read, "file_path")
            call = json.dumps({key: FILE})
            # A new id per call, as a model gives (an agent may announce each call it makes).
            call_id = f"toolu_{next(CALLS)}"
            block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": read, "input": {}}
            self._stream(
                model, block, [{"type": "input_json_delta", "partial_json": call}], "tool_use"
            )
        else:
            deltas = [{"type": "text_delta", "text": word + " "} for word in REPLY.split(" ")]
            self._stream(model, {"type": "text", "text": ""}, deltas, "end_turn")

    def do_GET(self) -> None:
        self._json({"data": []})

    def _stream(self, model: str, block: dict[str, Any], deltas: list[Any], stop: str) -> None:
        """One content block, streamed as server-sent events."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"message": message(model, [], None)}),
            ("content_block_start", {"index": 0, "content_block": block}),
            *(("content_block_delta", {"index": 0, "delta": delta}) for delta in deltas),
            ("content_block_stop", {"index": 0}),
            (
                "message_delta",
                {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": USAGE},
            ),
            ("message_stop", {}),
        ]
        for name, data in events:
            payload = json.dumps({"type": name, **data})
            self.wfile.write(f"event: {name}\ndata: {payload}\n\n".encode())
            self.wfile.flush()

    def _json(self, obj: Any) -> None:
        send_json(self, obj)


if __name__ == "__main__":
    serve(Handler)
