"""An OTLP ``ExportTraceServiceRequest``, as protobuf or as JSON, from :class:`Span` values.

Pure and small: the one request OTLP/HTTP takes for traces, and the messages inside it
(``ResourceSpans``, ``Resource``, ``ScopeSpans``, ``InstrumentationScope``, ``Span``,
``Span.Event``, ``Status``, ``KeyValue``, ``AnyValue``, ``ArrayValue``), written out by hand
from ``opentelemetry/proto/trace/v1/trace.proto`` and ``common/v1/common.proto``, as the
official serializer writes them: fields in number order, proto3 defaults left out (but a
``oneof`` member, which is written whatever its value). The tests hold every request to
``opentelemetry-proto``'s parser and serializer.

JSON follows the OTLP/JSON mapping: lowerCamelCase names, trace and span ids as hex, 64-bit
integers (times, ``intValue``) as strings, enums as numbers.

The response (``ExportTraceServiceResponse``) is read back for its partial success only:
:func:`rejected`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "KIND_CLIENT",
    "KIND_INTERNAL",
    "KIND_SERVER",
    "STATUS_ERROR",
    "STATUS_OK",
    "STATUS_UNSET",
    "Event",
    "Span",
    "json_request",
    "protobuf_request",
    "rejected",
]

#: ``Span.SpanKind``.
KIND_INTERNAL, KIND_SERVER, KIND_CLIENT = 1, 2, 3
#: ``Status.StatusCode``.
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2

#: An attribute's value: a string, a bool, an integer, a float, or a list of them.
Value = str | bool | int | float | Sequence[Any]


@dataclass(slots=True)
class Event:
    """A time-stamped event on a span."""

    name: str
    time_ns: int
    attributes: dict[str, Value] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    """One span, as the request carries it."""

    trace_id: bytes
    span_id: bytes
    #: The parent's span id; None for a trace's root.
    parent_id: bytes | None
    name: str
    start_ns: int
    end_ns: int
    kind: int = KIND_INTERNAL
    attributes: dict[str, Value] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    status: int = STATUS_UNSET
    status_message: str = ""


# --- protobuf -----------------------------------------------------------------------------


def _slow_varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


#: The varints of the lengths and numbers most requests are made of, made once.
_SMALL = [_slow_varint(n) for n in range(1 << 14)]


def _varint(value: int) -> bytes:
    """A base-128 varint; a negative int64 as its two's complement (ten bytes)."""
    return _SMALL[value] if 0 <= value < 16384 else _slow_varint(value)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes_field(number: int, data: bytes) -> bytes:
    """A length-delimited field (wire type 2): a string, bytes, a message."""
    return _tag(number, 2) + _varint(len(data)) + data


def _string(number: int, text: str) -> bytes:
    """A string field, left out when empty (proto3)."""
    return _bytes_field(number, text.encode("utf-8", "surrogatepass")) if text else b""


def _fixed64(number: int, value: int) -> bytes:
    return _tag(number, 1) + struct.pack("<Q", value) if value else b""


def _enum(number: int, value: int) -> bytes:
    return _tag(number, 0) + _varint(value) if value else b""


def _any_value(value: Any) -> bytes:
    """An ``AnyValue``: its one member, always written (a ``oneof``)."""
    if isinstance(value, str):
        return _bytes_field(1, value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bool):
        return _tag(2, 0) + _varint(int(value))
    if isinstance(value, int):
        return _tag(3, 0) + _varint(value)
    if isinstance(value, float):
        return _tag(4, 1) + struct.pack("<d", value)
    if isinstance(value, (list, tuple)):
        values = b"".join(_bytes_field(1, _any_value(item)) for item in value)
        return _bytes_field(5, values)
    return _bytes_field(1, str(value).encode("utf-8", "surrogatepass"))


#: Each attribute key's field, made once (the same few keys make every span).
_KEYS: dict[str, bytes] = {}


def _key(key: str) -> bytes:
    made = _KEYS.get(key)
    if made is None:
        made = _string(1, key)
        if len(_KEYS) < 4096:
            _KEYS[key] = made
    return made


def _key_values(number: int, attributes: Mapping[str, Any]) -> bytes:
    """Repeated ``KeyValue``s, as field ``number``."""
    tag = _tag(number, 2)
    out = []
    for key, value in attributes.items():
        pair = _key(key) + _bytes_field(2, _any_value(value))
        out.append(tag + _varint(len(pair)) + pair)
    return b"".join(out)


def _event(event: Event) -> bytes:
    return _fixed64(1, event.time_ns) + _string(2, event.name) + _key_values(3, event.attributes)


def _span(span: Span) -> bytes:
    status = _string(2, span.status_message) + _enum(3, span.status)
    return b"".join(
        (
            _bytes_field(1, span.trace_id),
            _bytes_field(2, span.span_id),
            _bytes_field(4, span.parent_id) if span.parent_id else b"",
            _string(5, span.name),
            _enum(6, span.kind),
            _fixed64(7, span.start_ns),
            _fixed64(8, span.end_ns),
            _key_values(9, span.attributes),
            b"".join(_bytes_field(11, _event(event)) for event in span.events),
            _bytes_field(15, status) if status else b"",
        )
    )


def protobuf_request(
    resource: Mapping[str, Value], scope: tuple[str, str], spans: Iterable[Span]
) -> bytes:
    """The ``ExportTraceServiceRequest`` of ``spans`` (one resource, one scope: its name and
    version), serialized."""
    scope_message = _string(1, scope[0]) + _string(2, scope[1])
    scope_spans = _bytes_field(1, scope_message) + b"".join(
        _bytes_field(2, _span(span)) for span in spans
    )
    resource_spans = _bytes_field(1, _key_values(1, resource)) + _bytes_field(2, scope_spans)
    return _bytes_field(1, resource_spans)


# --- JSON ---------------------------------------------------------------------------------


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_json_value(item) for item in value]}}
    return {"stringValue": str(value)}


def _json_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _json_value(value)} for key, value in attributes.items()]


def _json_span(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id.hex(),
        "spanId": span.span_id.hex(),
    }
    if span.parent_id:
        out["parentSpanId"] = span.parent_id.hex()
    out |= {
        "name": span.name,
        "kind": span.kind,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": _json_attributes(span.attributes),
    }
    if span.events:
        out["events"] = [
            {
                "timeUnixNano": str(event.time_ns),
                "name": event.name,
                "attributes": _json_attributes(event.attributes),
            }
            for event in span.events
        ]
    status: dict[str, Any] = {}
    if span.status_message:
        status["message"] = span.status_message
    if span.status:
        status["code"] = span.status
    if status:
        out["status"] = status
    return out


def json_request(
    resource: Mapping[str, Value], scope: tuple[str, str], spans: Iterable[Span]
) -> bytes:
    """:func:`protobuf_request`, as OTLP/JSON."""
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": _json_attributes(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": scope[0], "version": scope[1]},
                        "spans": [_json_span(span) for span in spans],
                    }
                ],
            }
        ]
    }
    return orjson.dumps(request)


# --- the response ---------------------------------------------------------------------------


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a varint runs past the end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> Iterable[tuple[int, int | bytes]]:
    """A message's fields: (number, value); a varint as an int, the rest as bytes."""
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _read_varint(data, at)
            yield number, value
        elif wire == 2:
            size, at = _read_varint(data, at)
            if at + size > len(data):
                raise ValueError("a field runs past the end")
            yield number, data[at : at + size]
            at += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, data[at : at + width]
            at += width
        else:
            raise ValueError(f"wire type {wire} is not read here")


def rejected(body: bytes, content_type: str) -> tuple[int, str]:
    """What an ``ExportTraceServiceResponse`` says it rejected: (spans, message); (0, "")
    when it says nothing (an empty body). Raises ValueError when it cannot be read."""
    if not body.strip():
        return 0, ""
    if "json" in content_type:
        data = orjson.loads(body)
        partial = data.get("partialSuccess") if isinstance(data, dict) else None
        if not isinstance(partial, dict):
            return 0, ""
        count = partial.get("rejectedSpans", 0)
        message = partial.get("errorMessage", "")
        return int(count or 0), message if isinstance(message, str) else str(message)
    count, message = 0, ""
    for number, value in _fields(body):
        if number == 1 and isinstance(value, bytes):
            for inner, item in _fields(value):
                if inner == 1 and isinstance(item, int):
                    count = item - (1 << 64) if item >= 1 << 63 else item
                elif inner == 2 and isinstance(item, bytes):
                    message = item.decode("utf-8", "replace")
    return count, message
