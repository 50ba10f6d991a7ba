"""What the model API stand-ins (fake_anthropic, fake_openai, fake_gemini) share: a JSON
answer, and serving on a free loopback port whose number is printed first."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, obj: Any) -> None:
    """A 200 with ``obj`` as JSON."""
    data = json.dumps(obj).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def serve(handler: type[BaseHTTPRequestHandler]) -> None:
    """Serve on 127.0.0.1 at ``sys.argv[1]`` (0: any free port), printing the port first."""
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
