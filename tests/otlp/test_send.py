"""Where the spans go and how they get there: ``--otlp`` and the ``OTEL_*`` environment read
as the OpenTelemetry specification says, a plain HTTP server (the standard library's) that
receives valid OTLP (JSON with the headers asked for, protobuf gzipped unless refused), and
the exits: 0 every span accepted, 1 in one line naming the endpoint when the backend cannot
be reached or refuses spans (partial success with its counts), 2 for usage."""

from __future__ import annotations

import base64
import gzip
import http.server
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from acp_proxy.otlp.send import NoEndpoint, target
from tests.conftest import RECORDINGS, invoke

PATHS = sorted(str(p) for p in RECORDINGS.glob("*.jsonl"))


def test_the_option_is_a_base_url_and_the_environment_says_the_rest() -> None:
    """``--otlp`` is a base URL (traces beneath it at /v1/traces); without it, the traces
    endpoint variable is the full URL and the general one a base; headers are URL-decoded,
    the traces variable before the general; protocol, timeout, compression, service name."""
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc,x-a=1",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-a=2",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
        "OTEL_SERVICE_NAME": "agents",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,service.name=ignored",
    }
    where = target(None, env)
    assert where.url == "http://collector:4318/v1/traces"
    assert where.headers == {"authorization": "Bearer abc", "x-a": "2"}
    assert (where.protocol, where.timeout, where.gzip) == ("http/json", 2.5, False)
    assert where.resource["service.name"] == "agents"
    assert where.resource["deployment.environment"] == "ci"
    assert target("http://h:1", env).url == "http://h:1/v1/traces"
    assert target("http://h:1/v1/traces", {}).url == "http://h:1/v1/traces"
    full = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://x/custom", **env}
    assert target(None, full).url == "https://x/custom"
    plain = target("http://h:1", {})
    assert (plain.protocol, plain.timeout, plain.gzip) == ("http/protobuf", 10.0, True)
    assert plain.resource["service.name"] == "acp-proxy"


@pytest.mark.parametrize(
    ("endpoint", "env", "said"),
    [
        (None, {}, "no endpoint"),
        ("ftp://h", {}, "not an http:// or https:// URL"),
        ("http://h", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ("http://h", {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ("http://h", {"OTEL_EXPORTER_OTLP_HEADERS": "secret-value"}, "not name=value"),
    ],
)
def test_what_cannot_be_used_is_said_without_its_secret(
    endpoint: str | None, env: dict[str, str], said: str
) -> None:
    """A value that cannot be used is a ValueError naming the variable; a header's value is
    never repeated (it may be a token)."""
    with pytest.raises(ValueError, match=said) as raised:
        target(endpoint, env)
    assert "secret-value" not in str(raised.value)
    if endpoint is None:
        assert isinstance(raised.value, NoEndpoint)


@dataclass
class Received:
    """What the server was sent."""

    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    #: What it answers: a status, and a body.
    status: int = 200
    body: bytes = b""
    refuse_gzip: bool = False


@pytest.fixture
def server() -> Iterator[tuple[str, Received]]:
    """A plain HTTP server on a free loopback port; yields its base URL and what it got."""
    got = Received()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["Content-Length"]))
            headers = {k.lower(): v for k, v in self.headers.items()}
            if got.refuse_gzip and headers.get("content-encoding") == "gzip":
                self.send_response(415)
                self.end_headers()
                return
            if headers.get("content-encoding") == "gzip":
                data = gzip.decompress(data)
            got.requests.append((self.path, headers, data))
            self.send_response(got.status)
            self.send_header("Content-Type", headers["content-type"])
            self.send_header("Content-Length", str(len(got.body)))
            self.end_headers()
            self.wfile.write(got.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", got
    finally:
        httpd.shutdown()
        httpd.server_close()


def _spans(request: ExportTraceServiceRequest) -> list[Any]:
    return [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]


def test_http_json_with_headers_reaches_a_plain_server_as_valid_otlp_json(
    server: tuple[str, Received],
) -> None:
    """``http/json`` with headers: each request is posted to /v1/traces as application/json
    with the headers, and is OTLP/JSON the official parser reads (hex ids as the mapping
    says), every span of the recordings in it; exit 0."""
    url, got = server
    env = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20t0ken,x-team=agents",
    }
    done = invoke("export", "--otlp", url, *PATHS, env=env)
    assert done.returncode == 0, done.stderr
    assert got.requests
    count = 0
    for path, headers, body in got.requests:
        assert path == "/v1/traces"
        assert headers["content-type"] == "application/json"
        assert headers["authorization"] == "Bearer t0ken"
        assert headers["x-team"] == "agents"
        data = orjson.loads(body)
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
                    int(span["traceId"], 16)
                    assert isinstance(span["startTimeUnixNano"], str)
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        request = ExportTraceServiceRequest()
        ParseDict(data, request)
        count += len(_spans(request))
    said = done.stderr.decode()
    assert said.count("\n") == 1 and f"{count} spans, 5 traces from 5 recordings" in said


def test_protobuf_goes_gzipped_and_plain_to_a_backend_that_refuses_gzip(
    server: tuple[str, Received],
) -> None:
    """By default protobuf, gzipped; a backend that answers 415 to gzip gets it plain, and
    the same request decodes."""
    url, got = server
    assert invoke("export", "--otlp", url, PATHS[0]).returncode == 0
    ((_, headers, body),) = got.requests
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["content-encoding"] == "gzip"
    zipped = ExportTraceServiceRequest.FromString(body)
    got.requests.clear()
    got.refuse_gzip = True
    assert invoke("export", "--otlp", url, PATHS[0]).returncode == 0
    ((_, headers, body),) = got.requests
    assert "content-encoding" not in headers
    assert ExportTraceServiceRequest.FromString(body) == zipped


def test_a_closed_port_is_exit_1_in_one_line_naming_the_endpoint() -> None:
    """Nothing listens: exit 1, one line that names the endpoint and why."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = invoke("export", "--otlp", f"http://127.0.0.1:{port}", PATHS[0])
    assert done.returncode == 1
    said = done.stderr.decode()
    assert said.count("\n") == 1, said
    assert said.startswith(f"acp-proxy export: http://127.0.0.1:{port}/v1/traces: ")
    assert "connection refused" in said


def test_a_refusal_and_a_partial_success_are_exit_1_with_their_counts(
    server: tuple[str, Received],
) -> None:
    """A 400 is exit 1 with the status and the backend's first line; a partial success says
    how many of how many spans were rejected, and what the backend said."""
    url, got = server
    got.status, got.body = 400, b"bad spans\nmore"
    done = invoke("export", "--otlp", url, PATHS[0])
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        f"acp-proxy export: {url}/v1/traces: HTTP 400 Bad Request: bad spans"
    )
    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = 2
    response.partial_success.error_message = "too old"
    got.status, got.body = 200, response.SerializeToString()
    done = invoke("export", "--otlp", url, PATHS[0])
    assert done.returncode == 1
    sent = len(_spans(ExportTraceServiceRequest.FromString(got.requests[-1][2])))
    assert done.stderr.decode().strip() == (
        f"acp-proxy export: {url}/v1/traces: the backend rejected 2 of {sent} spans: too old"
    )


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["export", PATHS[0]], {}, "no endpoint: give --otlp ENDPOINT"),
        (["export", "--otlp", "localhost:4318", PATHS[0]], {}, "not an http:// or https://"),
        (
            ["export", "--otlp", "http://h", PATHS[0]],
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "'grpc' is not one of http/protobuf, http/json",
        ),
        (["run", "--otlp", "nowhere", "--", "true"], {}, "--otlp"),
        (["run", "--otlp-content", "--", "true"], {}, "--otlp-content has no effect without"),
    ],
)
def test_usage_errors_are_exit_2_in_one_line(
    args: list[str], env: dict[str, str], said: str
) -> None:
    """An endpoint missing or unusable, an unknown protocol, ``--otlp-content`` alone: exit
    2, one line, before anything is sent or started."""
    done = invoke(*args, env=env)
    assert done.returncode == 2
    text = done.stderr.decode()
    assert text.count("\n") == 1 and said in text, text


def test_an_unreadable_recording_is_exit_2(server: tuple[str, Received], tmp_path: Any) -> None:
    """As every reader: a file that is no recording is exit 2."""
    url, _ = server
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a recording\n")
    assert invoke("export", "--otlp", url, str(bad)).returncode == 2
