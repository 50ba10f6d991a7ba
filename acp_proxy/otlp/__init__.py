"""Sessions as OpenTelemetry traces (``acp-proxy export --otlp``, ``run --otlp``): a layer
below both the readers and the live session, as ``transcript`` is, since the same view maps a
recording and a live session alike.

Modules::

    encode.py  Span: an OTLP ExportTraceServiceRequest, protobuf or JSON (pure, stdlib only)
    spans.py   Spans: the view that makes a connection's items spans, a turn's at its end
    send.py    target, Exporter: --otlp and OTEL_*, the one OTLP/HTTP request
"""
