"""The hand-written OTLP encoder against the official messages (``opentelemetry-proto``):
every request decodes there into the spans it was built of, byte for byte what the official
serializer writes for them; the JSON is the OTLP/JSON mapping (hex ids, 64-bit integers as
strings), which the official JSON parser reads into the same request; and the response's
partial success is read as the official serializer writes it."""

from __future__ import annotations

import base64
from typing import Any

import orjson
from google.protobuf.json_format import ParseDict
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from acp_proxy.otlp.encode import (
    STATUS_ERROR,
    Event,
    Span,
    json_request,
    protobuf_request,
    rejected,
)

RESOURCE = {"service.name": "acp-proxy", "service.version": "0.1.0"}
SCOPE = ("acp-proxy", "0.1.0")

_int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_scalar = st.one_of(
    st.text(), st.booleans(), _int64, st.floats(allow_nan=False, allow_infinity=False)
)
_value = st.one_of(_scalar, st.lists(st.one_of(st.text(), _int64, st.booleans()), max_size=4))
_attributes = st.dictionaries(st.text(min_size=1, max_size=20), _value, max_size=6)
_time = st.integers(min_value=0, max_value=2**64 - 1)
_id = st.binary(min_size=8, max_size=8).filter(any)

_span = st.builds(
    Span,
    trace_id=st.binary(min_size=16, max_size=16).filter(any),
    span_id=_id,
    parent_id=st.one_of(st.none(), _id),
    name=st.text(max_size=30),
    start_ns=_time,
    end_ns=_time,
    kind=st.integers(min_value=0, max_value=5),
    attributes=_attributes,
    events=st.lists(
        st.builds(Event, name=st.text(max_size=20), time_ns=_time, attributes=_attributes),
        max_size=3,
    ),
    status=st.integers(min_value=0, max_value=2),
    status_message=st.text(max_size=20),
)


def _official(data: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    request.ParseFromString(data)
    return request


def _as_python(value: Any) -> Any:
    """An ``AnyValue`` as the Python value it holds."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_as_python(item) for item in value.array_value.values]
    return getattr(value, which)


def _attributes_of(key_values: Any) -> dict[str, Any]:
    return {kv.key: _as_python(kv.value) for kv in key_values}


def _hex_ids_as_base64(data: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON's hex ids as the protobuf JSON mapping's base64 (what the official JSON
    parser reads: OTLP/JSON differs from it there only)."""
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return data


@settings(max_examples=100, deadline=None)
@given(st.lists(_span, max_size=5))
def test_a_request_decodes_into_its_spans_as_the_official_serializer_writes_them(
    spans: list[Span],
) -> None:
    """Every request the encoder builds is what the official serializer writes for the same
    message, and decodes into the spans it was built of: ids, parent, name, kind, times,
    attributes (each value's type kept), events, status."""
    data = protobuf_request(RESOURCE, SCOPE, spans)
    request = _official(data)
    assert request.SerializeToString() == data
    (resource_spans,) = request.resource_spans
    assert _attributes_of(resource_spans.resource.attributes) == RESOURCE
    (scope_spans,) = resource_spans.scope_spans
    assert (scope_spans.scope.name, scope_spans.scope.version) == SCOPE
    assert len(scope_spans.spans) == len(spans)
    for meant, got in zip(spans, scope_spans.spans, strict=True):
        assert got.trace_id == meant.trace_id
        assert got.span_id == meant.span_id
        assert got.parent_span_id == (meant.parent_id or b"")
        assert (got.name, got.kind) == (meant.name, meant.kind)
        assert (got.start_time_unix_nano, got.end_time_unix_nano) == (meant.start_ns, meant.end_ns)
        assert _attributes_of(got.attributes) == {
            k: list(v) if isinstance(v, tuple) else v for k, v in meant.attributes.items()
        }
        assert [(e.name, e.time_unix_nano, _attributes_of(e.attributes)) for e in got.events] == [
            (e.name, e.time_ns, e.attributes) for e in meant.events
        ]
        assert (got.status.code, got.status.message) == (meant.status, meant.status_message)


@settings(max_examples=100, deadline=None)
@given(st.lists(_span, max_size=5))
def test_the_json_is_the_otlp_json_mapping_of_the_same_request(spans: list[Span]) -> None:
    """The JSON request, read by the official JSON parser (its hex ids as the protobuf
    mapping's base64), is the protobuf request."""
    data = orjson.loads(json_request(RESOURCE, SCOPE, spans))
    request = ExportTraceServiceRequest()
    ParseDict(_hex_ids_as_base64(data), request)
    assert request.SerializeToString() == protobuf_request(RESOURCE, SCOPE, spans)


def test_the_json_says_ids_in_hex_and_64_bit_integers_as_strings() -> None:
    """OTLP/JSON: lowercase hex trace and span ids, times and ``intValue`` as strings, enums
    as numbers."""
    span = Span(
        bytes(range(1, 17)), bytes(range(1, 9)), b"\xab" * 8, "turn", 1_700_000_000_123_456_789,
        1_700_000_001_000_000_000, attributes={"n": 3, "s": "x"}, status=STATUS_ERROR,
        events=[Event("acp.violation", 1_700_000_000_500_000_000, {"acp.violation.seq": 7})],
    )  # fmt: skip
    (got,) = orjson.loads(json_request(RESOURCE, SCOPE, [span]))["resourceSpans"][0]["scopeSpans"][
        0
    ]["spans"]
    assert got["traceId"] == "0102030405060708090a0b0c0d0e0f10"
    assert got["spanId"] == "0102030405060708"
    assert got["parentSpanId"] == "abababababababab"
    assert got["startTimeUnixNano"] == "1700000000123456789"
    assert got["endTimeUnixNano"] == "1700000001000000000"
    assert got["attributes"] == [
        {"key": "n", "value": {"intValue": "3"}},
        {"key": "s", "value": {"stringValue": "x"}},
    ]
    assert got["events"][0]["timeUnixNano"] == "1700000000500000000"
    assert got["kind"] == 1 and got["status"] == {"code": 2}


def test_the_partial_success_is_read_as_the_backend_writes_it() -> None:
    """A response's ``partial_success`` (rejected spans, its message), protobuf or JSON; an
    empty response rejects nothing."""
    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = 3
    response.partial_success.error_message = "too old"
    assert rejected(response.SerializeToString(), "application/x-protobuf") == (3, "too old")
    said = b'{"partialSuccess":{"rejectedSpans":"2","errorMessage":"no"}}'
    assert rejected(said, "application/json") == (2, "no")
    assert rejected(ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf") == (
        0,
        "",
    )
    assert rejected(b"{}", "application/json") == (0, "")
