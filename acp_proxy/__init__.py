"""acp-proxy: a transparent, recording, validating proxy for the Agent Client Protocol.

The Python API (what the README's "From Python" promises) is the names below, imported from
here; everything else is internal and may change. They are loaded on first use, so importing
``acp_proxy`` (as ``acp-proxy run`` does) stays cheap.

- replay a recording: :class:`AgentReplay` (the recording as the agent), :func:`drive_agent`
  (the recording as the client, against a live agent), :func:`load_script`;
- read one: :func:`read` (a file's items, with their findings) into an :class:`Addon` of
  your own, a :class:`Chain` of them, :class:`Conversation` or :class:`Stats`;
  :func:`open_recording` and :func:`annotate` (records already read);
- check traffic: :class:`Validator`, :class:`Violation`, :class:`WireModel`,
  :func:`parse_frame`;
- share one: :class:`Redactor`; show a wire string safely: :func:`visible`.

How the data flows
------------------

::

    stdin ─▶ pump(client→agent) ─┬─▶ agent stdin
                                 └─▶ Framer ─┐
    agent stdout ─▶ pump(agent→client) ─┬─▶ stdout (+ a notice from an addon, at a line start)
                                        └─▶ Framer ─┤
                                                    ▼
                                   Observer: seq, t ─▶ WireModel ─▶ Validator ─▶ findings
                                                         │                          │
                                                         ▼                          ▼
            each frame and its findings, to the addons in order: LiveLog (the live log)
                 ─▶ Save (Recorder: JSONL) ─▶ LogFindings ─▶ Notify (--notify-client)

    recording ─▶ readers.annotate.read ─▶ the same WireModel and Validator ─▶ items
                 ─▶ a Chain of addons: Conversation / Timeline / Stats / Report / Replay...

A pump writes each chunk on unchanged and hands it to the framer and the observer in one callback,
so a frame is recorded before the answer to it can be read; what is done with a frame is its
addons' (``live/addons.py``: each implements the hooks it cares about). The wire model says once
what each frame is; the validator keeps rule state on top; readers feed recordings through the
same model.

Where things are
----------------

The package is in layers, and ``tests/test_architecture.py`` holds them: ``core`` imports only
``core``, ``transcript`` only ``core``, ``readers`` never ``live``, nothing but ``cli`` imports
``devtools`` or ``drive`` (front-ends over ``live/client.py``, free of asyncio), a layer's
``commands/`` (its click commands, a module each named for it) may also import ``clihelp``
and reaches nothing above its layer, and no import cycles. Each module's own docstring says
what it is for and what it promises.

::

    cli.py                   the group (COMMANDS: where each is), main; loaded as asked
                             (``__main__`` first starts run's, probe's or chat's agent)
    clihelp.py               what the commands share: command(), --color, seconds, output, exits
    log.py, files.py         Logger, LogStream (never raise or block); open_output (as a recording)
    core/protocol.py         Side, Kind, State, StopReason, methods_for: ACP facts per version
    core/framing.py          Framer, Frame, parse_frame, LineSplicer
    core/jsontext.py         string_end, value_spans, loads_long, preview: JSON text as bytes
    core/times.py            format_time, parse_time
    core/wire.py             WireModel, Message (a type per kind), Turn: what each frame is
    core/lifecycle.py        TRANSITIONS, step: the v2 prompt lifecycle as a (state, event) table
    core/findings.py         Violation, Rule: a finding and a rule, as data
    core/rules.py            RULES, explain_lines: the catalog, gathered from the validator's
    core/examples.py         INIT, TURN, update...: the frames rules' examples are built of
    core/schema.py           schema_for: the official schemas compiled into checks
    core/checks.py           Defect, Checker: the checks a schema compiles to (its combinators)
    core/unstable.py         surface_for: what only the unstable schemas define
    core/validator.py        Validator, Violation: what the package imports (the three below)
    core/validator_base.py   ValidatorBase: what every version shares, and its rules
    core/validator_schema.py  SchemaRules: the official schemas' rules, a base of ValidatorBase
    core/validator_v2.py     Validator: the prompt lifecycle's rules (v2), CATALOG
    core/validator_v2_updates.py  V2UpdateRules: what a v2 session update carries, its base
    core/validator_v1.py     V1Rules: the v1 pages' rules, composed in
    core/validator_v1_agent.py  V1AgentRules: v1's rules of what the agent does, V1Rules's base
    core/chunks.py           Shortcut: the streamed-chunk shortcut, whole
    core/visible.py          visible, dumps: wire strings made safe to show
    core/version.py          VERSION
    transcript/records.py    the record types and writers, parse_record
    transcript/heads.py      PlainHeads, plain_frame_head: the readers' fast path
    transcript/reading.py    open_recording, open_lines, RecordingError
    transcript/names.py      default_record_dir, recording_name, prune, being_written
    transcript/redact.py     Redactor, redact_stream: frames and records, a recording's lines
    transcript/hiding.py     Hider: secrets in strings, command lines and URLs (Redactor's base)
    transcript/chunks.py     ChunkJoin: keys cut between chunks of streamed text
    transcript/secrets.py    what is secret: one table (redact, the stderr cutter)
    transcript/items.py      Addon, Chain, Annotated, Repeated, Seen: the one hook protocol
    transcript/beneath.py    open_beneath: a file a caller named, opened beneath a directory
    otlp/encode.py           Span: an OTLP ExportTraceServiceRequest, protobuf or JSON, by hand
    otlp/spans.py            Spans: a session as spans (a view, live and over a recording)
    otlp/send.py             target, Exporter: OTEL_* and --otlp, the OTLP/HTTP request
    live/spawn.py            start_agent, Watchdog: the agent process, its group stopped with us
    live/pipes.py            FdSource, FdSink, ThreadFeed, FileSink: feeds and sinks, no copy
    live/loop.py             event_loop, SpinningSelector: polls a little before it sleeps
    live/relay.py            run_relay: the pumps and the session's lifecycle, signals, shutdown
    live/later.py            LateObserver: the relay started before its observer is ready
    live/observer.py         Observer: each frame stamped and checked, handed to the addons
    live/addons.py           run_addons; Save, LiveLog, LogFindings, Notify: a session's parts
    live/recorder.py         Recorder: the transcript file, opened safely
    live/spool.py            Spooler: a line too long to hold, spooled to a file as it crosses
    live/session.py          assemble: a session put together, the one place, whatever side we play
    live/client.py           Client: acp-proxy as the client, in-process, back-pressure not loss
    live/events.py           Event, Pending, Reply, TimedOut, AgentGone: what a front-end gets
    live/outbox.py           Outbox, Inbox: the client's side of the relay, its reading held
    live/serving.py          Serving: the agent's requests served off the loop, the waits bounded
    live/server.py           Server: acp-proxy as the agent on its stdio (test-agent, replay)
    live/services.py         Services: the agent's requests answered, safe by construction
    live/sandbox.py          Sandbox: files beneath a directory descriptor, never raced
    live/commands/run.py     run: a session assembled, the agent started first
    live/user_addons.py      load_addons, OffRelay: run --addon FILE, off the relay
    live/otlp.py             LiveExport: run --otlp, each turn's spans sent off the relay's path
    readers/annotate.py      read, annotate, located: the one way into a file, findings attached
    readers/conversation.py  Conversation: what the user saw
    readers/summary.py       frame_summary, wanted: a frame in one line, the filters
    readers/text.py          Timeline, render_conversation, LiveConversation (as it happens)
    readers/stats.py         Stats
    readers/usage.py         Usage: tokens and cost, as the agent reported them
    readers/report.py        write_report (+ templates/report.html)
    readers/follow.py        follow_records
    readers/replay.py        AgentReplay, ClientReplay, load_script: the replays, pure
    readers/compare.py       difference, Normalizer: what "the same" means (replay, diff)
    readers/diff.py          load, compare
    readers/catalog.py       list_sessions, search
    readers/ci.py            junit, sarif
    readers/timing.py        Timing: where the time went
    readers/inspect.py       Inspector, serve: the live page
    readers/mcp/server.py    Server: MCP on stdio (tools.py, views.py, directory.py, paging.py)
    readers/commands/show.py    a command a module (follow.py, stats.py, report.py, export.py)
    readers/commands/ls.py      (search.py, inspect.py, validate.py, diff.py, redact.py, rules.py)
    readers/commands/mcp.py     mcp: the MCP server's command
    readers/commands/shared.py  what they share: which files, frames, session (replay's too)
    drive/probe/checks.py    probe's checks, one @check each (catalog.py, runner.py, outcome.py)
    drive/probe/output.py    probe's report: text, JSON, JUnit, --list
    drive/chat/run.py        chat: a prompt line (or piped prompts), over the client core
    drive/chat/session.py    Chat: the session and its turns (wire.py: frames, waits, output)
    drive/chat/interactive.py  on a terminal (terminal.py, permissions.py, slash.py)
    drive/chat/script.py     for a script (events.py: --format json; options.py; last.py: -c)
    drive/replay.py          drive_agent: replay --as client, over the client core
    drive/turn.py            PromptTurn, drive_turn: a prompt turn to the end the wire model says
    drive/words.py           agent_words, ended_words, shown_line...: what probe and chat say
    drive/commands/probe.py   a command a module, named for it (chat.py, test_agent.py, replay.py)
    drive/commands/shared.py  what probe and chat share: --protocol, recording, -- AGENT
    drive/test_agent/checks.py  test-agent's checks of a client, one @check each (catalog.py)
    drive/test_agent/machine.py  TestAgent, the agent that checks a client (scenario.py, core.py)
    drive/test_agent/shell.py  serve: TestAgent as the server role (report.py: text, JSON, JUnit)
    devtools/                example_agent.py, demo.py, bench.py (bench_*.py: its parts)
    devtools/commands/demo.py  demo

Tests mirror the package (``tests/core/``, ``tests/live/``...); end-to-end ones sit at the top.

There is one hook protocol, live and offline (``transcript.items.Addon``, mitmproxy's
pattern). Every reader of a file is an addon fed ``read(path)``'s items (the public
``acp_proxy.read`` gives each record as one; ``runs=True``, runs too); ``Chain(a, b)``
feeds several in one pass; the same addon put in a live observer's chain
(``live.observer.Observer``: ``run``, the client core) is handed each frame as it crosses,
as the item reading its record would give. A new one writes ``add(item)``: a run of
streamed chunks known by their bytes reaches it frame by frame unless it overrides
``add_run``, where the run's aggregates (``run.count``, ``run.wire_bytes``, ``run.texts``,
``run.seqs``, ``run.last_t``) make it a line or two. Its ``frame``, ``stderr``, ``end`` and
``done`` hooks fire over a recording as under ``run --addon`` (``transcript.items.Driver``);
there, the user's addons run in a thread of their own, off the relay
(``live.user_addons.OffRelay``). How a chunk is known by its bytes (``core/chunks.py``) is
the chain's and its two drivers' (``readers/annotate.py``, ``live/observer.py``) only.
"""

from __future__ import annotations

from acp_proxy.core.version import VERSION as __version__

# Importing the package stays cheap (not even typing): `acp-proxy run` starts its agent first.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Each public name, and the module it lives in (``module:name`` where it is named otherwise
#: there: ``read`` is the readers' ``read_items``, each record an item).
_PUBLIC = {
    "AgentReplay": "acp_proxy.readers.replay",
    "drive_agent": "acp_proxy.drive.replay",
    "load_script": "acp_proxy.readers.replay",
    "open_recording": "acp_proxy.transcript.reading",
    "read": "acp_proxy.readers.annotate:read_items",
    "Addon": "acp_proxy.transcript.items",
    "Chain": "acp_proxy.transcript.items",
    "annotate": "acp_proxy.readers.annotate",
    "Conversation": "acp_proxy.readers.conversation",
    "Stats": "acp_proxy.readers.stats",
    "Validator": "acp_proxy.core.validator",
    "Violation": "acp_proxy.core.validator",
    "WireModel": "acp_proxy.core.wire",
    "parse_frame": "acp_proxy.core.framing",
    "Redactor": "acp_proxy.transcript.redact",
    "visible": "acp_proxy.core.visible",
}

__all__ = ["__version__", *sorted(_PUBLIC)]  # noqa: PLE0604 - the names __getattr__ gives


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module on first use."""
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'acp_proxy' has no attribute {name!r}")
    module, _, own = where.partition(":")
    import importlib  # noqa: PLC0415 - (see TYPE_CHECKING)

    value = getattr(importlib.import_module(module), own or name)
    globals()[name] = value
    return value
