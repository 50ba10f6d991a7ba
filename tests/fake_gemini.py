"""A tiny stand-in for the Gemini API, for driving Gemini CLI (`gemini --acp`) offline.

Usage: python fake_gemini.py PORT FILE   (PORT 0: any free port; the port is printed)

Gemini CLI finds it through ``GOOGLE_GEMINI_BASE_URL`` (with ``GEMINI_API_KEY``). A
``streamGenerateContent`` request that offers the ``read_file`` tool and carries no function
response yet gets a call of it on FILE; every other one gets a short streamed text reply.
``generateContent`` (the CLI's own side requests: routing, titles, next speaker) gets a JSON
answer, ``countTokens`` a count.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_http import send_json, serve

REPLY = ["Hello from ", "the stand-in model."]
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
FILE = sys.argv[2] if len(sys.argv) > 2 else "/tmp/hello.txt"


def candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        found["finishReason"] = finish
    return {"candidates": [found], "usageMetadata": USAGE, "modelVersion": "gemini-stand-in"}


def _answered(body: dict[str, Any]) -> bool:
    """Whether the last turn already carries a function response."""
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    parts = last.get("parts") if isinstance(last, dict) else None
    return isinstance(parts, list) and any("functionResponse" in p for p in parts)


def _offers_read(body: dict[str, Any]) -> bool:
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            if declaration.get("name") == "read_file":
                return True
    return False


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("fake-gemini: " + (format % args) + "\n")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if ":countTokens" in self.path:
            self._json({"totalTokens": 10})
        elif ":streamGenerateContent" in self.path:
            if _offers_read(body) and not _answered(body):
                call = {"functionCall": {"name": "read_file", "args": {"file_path": FILE}}}
                self._stream([candidate([call], "STOP")])
            else:
                chunks = [candidate([{"text": word}], None) for word in REPLY]
                chunks[-1] = candidate([{"text": REPLY[-1]}], "STOP")
                self._stream(chunks)
        elif ":generateContent" in self.path:
            # Side requests want JSON (a routing decision, a next speaker): one that names
            # the model and says the user speaks next keeps the CLI on its main path.
            text = json.dumps(
                {"reasoning": "stand-in", "model_choice": "flash", "next_speaker": "user"}
            )
            self._json(candidate([{"text": text}], "STOP"))
        else:
            self._json({})

    def do_GET(self) -> None:
        self._json({"models": []})

    def _stream(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            self.wfile.flush()

    def _json(self, obj: Any) -> None:
        send_json(self, obj)


if __name__ == "__main__":
    serve(Handler)
