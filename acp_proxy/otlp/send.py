"""Where spans go and how: :func:`target` reads ``--otlp`` and the OpenTelemetry exporter's
environment variables into a :class:`Target`; an :class:`Exporter` encodes spans
(:mod:`acp_proxy.otlp.encode`) and posts them, one OTLP/HTTP request at a time.

The environment, as the OpenTelemetry specification says it (a ``TRACES_`` variable before
the general one), read when the option does not say:

- ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL), ``OTEL_EXPORTER_OTLP_ENDPOINT``
  (the base URL: traces go to ``/v1/traces`` beneath it, as they do for ``--otlp``);
- ``OTEL_EXPORTER_OTLP_HEADERS``: ``name=value,...``, URL-encoded (an authorization header);
- ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf`` (the default) or ``http/json``;
- ``OTEL_EXPORTER_OTLP_TIMEOUT``: milliseconds a request may take (10000);
- ``OTEL_EXPORTER_OTLP_COMPRESSION``: ``gzip`` (ours by default; a backend that refuses it
  with 415 is sent plain from then on) or ``none``;
- ``OTEL_EXPORTER_OTLP_CERTIFICATE``, ``..._CLIENT_CERTIFICATE``, ``..._CLIENT_KEY``: TLS;
- ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``: the resource (``acp-proxy``).

What goes wrong is said in one line (:class:`SendError`), never a traceback; a value that
cannot be used is a :class:`ValueError` naming the variable, never its value (it may be a
secret).
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acp_proxy.core.version import VERSION
from acp_proxy.otlp.encode import Span, Value, json_request, protobuf_request, rejected

if TYPE_CHECKING:  # (loaded when a request is made: `run --otlp` starts without them)
    import ssl
    import urllib.error

__all__ = [
    "BATCH",
    "PROTOCOLS",
    "Exporter",
    "NoEndpoint",
    "SendError",
    "Target",
    "target",
]

#: The protocols taken (gRPC is not: it needs a dependency).
PROTOCOLS = ("http/protobuf", "http/json")
#: Spans per request at most (the OpenTelemetry SDK's batch size).
BATCH = 512
#: How many times a request the backend asks to have again (429, 502, 503, 504) is sent.
ATTEMPTS = 3
_RETRY = frozenset({429, 502, 503, 504})
_SCOPE = ("acp-proxy", VERSION)


class NoEndpoint(ValueError):
    """Neither ``--otlp`` nor the environment names where the spans go."""


class SendError(Exception):
    """The backend could not be reached, or refused the spans: one line, why."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where the spans go, and how."""

    #: The full URL traces are posted to.
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    protocol: str = "http/protobuf"
    #: Seconds a request may take.
    timeout: float = 10.0
    gzip: bool = True
    resource: dict[str, Value] = field(default_factory=dict)
    certificate: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None


def _env(environ: Mapping[str, str], name: str) -> tuple[str, str | None]:
    """The traces variable of ``name`` if set, else the general one: (its name, value)."""
    for variable in (f"OTEL_EXPORTER_OTLP_TRACES_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        value = environ.get(variable, "").strip()
        if value:
            return variable, value
    return f"OTEL_EXPORTER_OTLP_{name}", None


def _pairs(text: str, variable: str) -> dict[str, str]:
    """``name=value,...``, each URL-decoded (the W3C baggage form the variables use)."""
    pairs: dict[str, str] = {}
    for entry in text.split(","):
        if not entry.strip():
            continue
        name, equals, value = entry.partition("=")
        name = urllib.parse.unquote(name.strip())
        if not equals or not name:
            raise ValueError(f"{variable}: an entry is not name=value")
        pairs[name] = urllib.parse.unquote(value.strip())
    return pairs


def _checked_url(url: str, where: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{where}: {url!r} is not an http:// or https:// URL")
    return url


def traces_url(base: str, where: str) -> str:
    """A base URL's traces URL (``BASE/v1/traces``; a URL that already ends so, as it is)."""
    _checked_url(base, where)
    if urllib.parse.urlsplit(base).path.rstrip("/").endswith("/v1/traces"):
        return base
    return base.rstrip("/") + "/v1/traces"


def target(endpoint: str | None, environ: Mapping[str, str] | None = None) -> Target:
    """The :class:`Target` of ``--otlp ENDPOINT`` (None: the environment's endpoint) and the
    environment. Raises :class:`NoEndpoint` when neither names one, ValueError for a value
    that cannot be used."""
    env = os.environ if environ is None else environ
    if endpoint is not None:
        url = traces_url(endpoint, "--otlp")
    else:
        variable, full = _env(env, "ENDPOINT")
        if variable.startswith("OTEL_EXPORTER_OTLP_TRACES_") and full is not None:
            url = _checked_url(full, variable)
        elif full is not None:
            url = traces_url(full, variable)
        else:
            raise NoEndpoint("no endpoint: give --otlp ENDPOINT or set OTEL_EXPORTER_OTLP_ENDPOINT")
    headers: dict[str, str] = {}
    for variable in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        headers |= _pairs(env.get(variable, ""), variable)
    variable, protocol = _env(env, "PROTOCOL")
    protocol = protocol or "http/protobuf"
    if protocol not in PROTOCOLS:
        raise ValueError(f"{variable}: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    variable, timeout_text = _env(env, "TIMEOUT")
    timeout = 10.0
    if timeout_text is not None:
        try:
            timeout = float(timeout_text) / 1000
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= 3600:
            raise ValueError(f"{variable}: {timeout_text!r} is not a number of milliseconds")
    variable, compression = _env(env, "COMPRESSION")
    if compression not in (None, "gzip", "none"):
        raise ValueError(f"{variable}: {compression!r} is not gzip or none")
    resource: dict[str, Value] = dict(_pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""),
                                             "OTEL_RESOURCE_ATTRIBUTES"))  # fmt: skip
    resource["service.name"] = (
        env.get("OTEL_SERVICE_NAME", "").strip() or str(resource.get("service.name") or "")
    ) or "acp-proxy"
    resource.setdefault("service.version", VERSION)
    return Target(
        url,
        headers,
        protocol,
        timeout,
        compression != "none",
        resource,
        _env(env, "CERTIFICATE")[1],
        _env(env, "CLIENT_CERTIFICATE")[1],
        _env(env, "CLIENT_KEY")[1],
    )


class Exporter:
    """Spans to a :class:`Target`, a request at a time (never raising but
    :class:`SendError`)."""

    def __init__(self, where: Target) -> None:
        self.target = where
        #: Whether requests are gzipped (not after the backend refused it once).
        self.gzip = where.gzip
        self._context: ssl.SSLContext | None = None
        #: Spans sent and accepted; requests made.
        self.accepted = 0
        self.requests = 0

    def encode(self, spans: Sequence[Span]) -> bytes:
        """The request that carries ``spans``, in the target's protocol."""
        encode = json_request if self.target.protocol == "http/json" else protobuf_request
        return encode(self.target.resource, _SCOPE, spans)

    def send(self, spans: Sequence[Span]) -> tuple[int, str]:
        """Send ``spans`` (in requests of at most :data:`BATCH`): how many the backend
        rejected, and what it said of them. Raises :class:`SendError`."""
        refused, said = 0, ""
        for start in range(0, len(spans), BATCH):
            chunk = spans[start : start + BATCH]
            count, message = self.post(self.encode(chunk))
            refused += count
            said = message or said
            self.accepted += len(chunk) - count
        return refused, said

    def post(self, body: bytes) -> tuple[int, str]:
        """One request (again, when the backend asks for it); what it rejected."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self._post(body)
            except _Again as again:
                if attempt == ATTEMPTS:
                    raise SendError(again.reason) from None
                time.sleep(min(again.after, self.target.timeout, 5.0))
        raise AssertionError("unreachable")

    def _post(self, body: bytes) -> tuple[int, str]:
        import gzip  # noqa: PLC0415 - (loaded when a request is made, as the two below)
        import urllib.error  # noqa: PLC0415
        import urllib.request  # noqa: PLC0415

        where = self.target
        json = where.protocol == "http/json"
        content_type = "application/json" if json else "application/x-protobuf"
        headers = {**where.headers, "Content-Type": content_type,
                   "User-Agent": f"acp-proxy/{VERSION}"}  # fmt: skip
        data = body
        if self.gzip:
            data = gzip.compress(body, compresslevel=6, mtime=0)
            headers["Content-Encoding"] = "gzip"
        request = urllib.request.Request(where.url, data=data, headers=headers, method="POST")
        self.requests += 1
        try:
            with urllib.request.urlopen(
                request, timeout=where.timeout, context=self._tls()
            ) as response:
                answer = response.read(1 << 20)
                answered_as = response.headers.get("Content-Type", content_type)
        except urllib.error.HTTPError as exc:
            text = _said(exc)
            if exc.code == 415 and self.gzip:  # gzip not taken: plain from now on
                self.gzip = False
                return self._post(body)
            reason = f"HTTP {exc.code} {exc.reason}" + (f": {text}" if text else "")
            if exc.code in _RETRY:
                raise _Again(reason, _retry_after(exc.headers.get("Retry-After"))) from None
            raise SendError(reason) from None
        except (urllib.error.URLError, OSError) as exc:
            raise SendError(_why(exc, where.timeout)) from None
        try:
            return rejected(answer, answered_as)
        except ValueError:
            return 0, ""  # (an answer that is no OTLP response: 2xx says accepted)

    def _tls(self) -> ssl.SSLContext | None:
        where = self.target
        if not where.url.startswith("https:"):
            return None
        if self._context is None:
            import ssl  # noqa: PLC0415 - (https only)

            try:
                self._context = ssl.create_default_context(cafile=where.certificate)
                if where.client_certificate:
                    self._context.load_cert_chain(where.client_certificate, where.client_key)
            except (OSError, ValueError) as exc:  # (ssl.SSLError is an OSError)
                raise SendError(f"cannot load the TLS certificates: {exc}") from None
        return self._context


class _Again(Exception):
    """The backend asks to send the request again (after ``after`` seconds)."""

    def __init__(self, reason: str, after: float) -> None:
        super().__init__(reason)
        self.reason, self.after = reason, after


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 1.0
    except ValueError:
        return 1.0


def _said(exc: urllib.error.HTTPError) -> str:
    """The first line of an error's body, short."""
    try:
        body = exc.read(4096)
    except OSError:
        return ""
    line = body.decode("utf-8", "replace").strip().splitlines()
    return line[0][:200] if line else ""


def _why(exc: BaseException, timeout: float) -> str:
    """Why a request did not reach the backend, in a few words."""
    import urllib.error  # noqa: PLC0415 - (loaded by the request that failed)

    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return f"no answer in {timeout:g} s"
    if isinstance(reason, ConnectionRefusedError):
        return "cannot connect: connection refused"
    if isinstance(reason, OSError) and reason.strerror:
        return f"cannot connect: {reason.strerror}"
    return f"cannot connect: {reason}"
