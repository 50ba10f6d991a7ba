"""``export``: recorded sessions to an observability backend, as OpenTelemetry traces
(:mod:`acp_proxy.otlp`): a trace per session, sent over OTLP/HTTP."""

from __future__ import annotations

import sys

import click

from acp_proxy.clihelp import command, say


@command(
    short="Sessions as traces to an OpenTelemetry backend.",
    examples=[
        "acp-proxy export --otlp http://127.0.0.1:4318 session.jsonl",
        "acp-proxy export --otlp https://otel.example.com --redact out/*.jsonl",
    ],
)
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option(
    "--otlp",
    "endpoint",
    metavar="ENDPOINT",
    help="The OTLP/HTTP base URL (traces go to ENDPOINT/v1/traces). Default: "
    "$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL), else $OTEL_EXPORTER_OTLP_ENDPOINT.",
)
@click.option(
    "--otlp-content",
    is_flag=True,
    help="Also send what users typed and what the agent answered (each turn's prompt and "
    "reply text).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Replace secrets before anything leaves, as `acp-proxy redact` does.",
)
def export(recordings: tuple[str, ...], endpoint: str | None, otlp_content: bool,
           redact: bool) -> None:  # fmt: skip
    """Send each session of RECORDING... to an observability backend as one trace.

    A span per connection, per prompt turn, per tool call and per request; each finding
    an acp.violation event. Ids come from the recording, so exporting it again (or after
    `run --otlp` sent it live) sends the same spans again (a backend that keeps a span
    once, as Phoenix, adds nothing). The OTEL_EXPORTER_OTLP_* variables
    (headers, protocol http/protobuf or http/json, timeout, compression) and
    OTEL_SERVICE_NAME are honoured. Exit status: 0 every span accepted, 1 the backend
    could not be reached or refused spans, 2 usage or an unreadable recording.
    """
    from acp_proxy.otlp.send import Exporter, SendError, target

    try:
        where = target(endpoint)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    from acp_proxy.otlp.encode import Span
    from acp_proxy.otlp.spans import Spans
    from acp_proxy.readers.annotate import read

    redactor = None
    if redact:
        from acp_proxy.transcript.redact import Redactor

        redactor = Redactor()
    exporter = Exporter(where)
    sent = traces = refused = 0
    said = ""
    for path in recordings:
        spans: list[Span] = []
        view = Spans(spans.extend, content=otlp_content, redactor=redactor)
        view.feed(read(path))
        view.finish()
        traces += len({span.trace_id for span in spans})
        try:
            count, message = exporter.send(spans)
        except SendError as exc:
            say(f"acp-proxy export: {where.url}: {exc}")
            sys.exit(1)
        sent += len(spans)
        refused += count
        said = message or said
    if refused:
        why = f": {said}" if said else ""
        say(f"acp-proxy export: {where.url}: the backend rejected {refused} of {sent} spans{why}")
        sys.exit(1)
    files = f"{len(recordings)} recording{'s' if len(recordings) != 1 else ''}"
    say(f"acp-proxy export: {sent} spans, {traces} traces from {files} to {where.url}")
