"""A tiny stand-in for the OpenAI Responses API, for driving Codex ACP offline.

Usage: python fake_openai.py PORT FILE   (PORT 0: any free port; the port is printed)

A request that offers the exec_command tool and has no tool output yet gets a call of it
(``cat FILE``); every other request gets a short streamed text reply. Codex finds it through
``model_providers`` in ``$CODEX_HOME/config.toml`` (see :func:`config`).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_http import serve

REPLY = ["Hello from ", "the stand-in model."]
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def config(port: int) -> str:
    """The config.toml that points Codex at this server."""
    return (
        'model = "gpt-5"\n'
        'model_provider = "stand-in"\n'
        "[model_providers.stand-in]\n"
        'name = "stand-in"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "STAND_IN_KEY"\n'
    )


def tool_call(path: str) -> list[dict[str, Any]]:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": f"cat {path}"}),
    }
    return [{"type": "response.output_item.done", "output_index": 0, "item": call}]


def text() -> list[dict[str, Any]]:
    item: dict[str, Any] = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": item}
    ]
    for delta in REPLY:
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": delta,
            }
        )
    done = {**item, "content": [{"type": "output_text", "text": "".join(REPLY)}]}
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    return events


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("fake-openai: " + (format % args) + "\n")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        items = body.get("input") or []
        answered = any(
            isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
        )
        tools = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        middle = tool_call(sys.argv[2]) if "exec_command" in tools and not answered else text()
        events = [
            {"type": "response.created", "response": {"id": "resp_1"}},
            *middle,
            {"type": "response.completed", "response": {"id": "resp_1", "usage": USAGE}},
        ]
        data = b"".join(
            b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n"
            for e in events
        )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    serve(Handler)
