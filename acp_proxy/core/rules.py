"""The rule catalog: every check the validator makes, with its level and source.

Each rule comes from a sentence of the ACP v2 Prompt Lifecycle page (``spec``
names its section), from JSON-RPC 2.0, from the ACP v2 schema (for shapes), or
from the ACP transport (UTF-8 JSON-RPC, one message per ``\\n``-terminated line).

``error`` is a MUST, MUST NOT or a required field; ``warning`` a SHOULD, a
reserved value, what the shipped schemas do not know yet, or a likely-but-not-certain
breach; ``info`` what is worth knowing but not wrong (the use of ACP's unstable surface).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import orjson

from acp_proxy.core.schema import schema_sources

__all__ = [
    "CATALOG",
    "NOT_LENIENT",
    "RULES",
    "SCHEMA_OVERLAP",
    "Level",
    "Rule",
    "Scope",
    "catalog_lines",
]


class Level(StrEnum):
    """How bad a finding is."""

    #: A MUST, a MUST NOT, or a required field.
    ERROR = "error"
    #: A SHOULD, a reserved value, or a likely-but-not-certain breach.
    WARNING = "warning"
    #: Worth knowing, not wrong (a part of ACP that may still change); never changes an
    #: exit status.
    INFO = "info"


class Scope(StrEnum):
    """Which negotiated protocol versions a rule applies to."""

    #: Every version: JSON-RPC, transport, initialization and sessions.
    ALL = "all"
    #: ACP v1 only (and connections whose version is not known yet).
    V1 = "v1"
    #: ACP v2 only: the prompt lifecycle.
    V2 = "v2"


@dataclass(frozen=True, slots=True)
class Rule:
    """One check."""

    #: Stable kebab-case id.
    id: str
    level: Level
    #: Where the rule comes from: a section of the Prompt Lifecycle page, or
    #: "JSON-RPC 2.0", "ACP v2 schema", "ACP transport".
    spec: str
    #: One line: what is flagged.
    description: str
    #: Which negotiated versions the rule applies to.
    scope: Scope = Scope.ALL


E, W, N = Level.ERROR, Level.WARNING, Level.INFO  # N: a note
V1, V2 = Scope.V1, Scope.V2
TRANSPORT = "ACP transport"
JSONRPC = "JSON-RPC 2.0"
SCHEMA = "ACP v2 schema"
LIFECYCLE = "Prompt Lifecycle"
UNSTABLE = "ACP unstable schema"

CATALOG: tuple[Rule, ...] = (
    # --- JSON-RPC and framing -------------------------------------------------
    Rule("not-json", E, TRANSPORT, "A line that is not a JSON value."),
    Rule("not-utf8", E, TRANSPORT, "A line that is not valid UTF-8."),
    Rule(
        "lone-surrogate",
        W,
        "ACP transport (RFC 8259, 8.2 Unicode Characters)",
        'A string with a lone UTF-16 surrogate escape ("\\ud83d"): JSON, but no Unicode text.',
    ),
    Rule(
        "oversized-frame",
        E,
        "acp-proxy/1 transcript",
        "A line longer than the proxy observes (ACP_PROXY_MAX_FRAME): relayed whole, "
        "not checked (a recording holds it whole, in base64).",
    ),
    Rule(
        "crlf-line-ending", W, TRANSPORT, "A line ending in \\r\\n; messages are delimited by \\n."
    ),
    Rule("blank-line", W, TRANSPORT, "An empty line between messages."),
    Rule(
        "batch",
        E,
        TRANSPORT,
        "A JSON-RPC batch (array) on a v1 connection: v1 sends one message per line.",
        V1,
    ),
    Rule(
        "batch-empty",
        E,
        "Transports (JSON-RPC Batch Messages)",
        "An empty JSON-RPC batch ([]).",
        V2,
    ),
    Rule("jsonrpc-version", E, JSONRPC, 'A message whose "jsonrpc" is not "2.0".'),
    Rule(
        "invalid-message",
        E,
        JSONRPC,
        "Not a request, notification or response (a response has exactly one of result/error).",
    ),
    Rule("invalid-id", E, JSONRPC, "An id that is not a string, an integer or null."),
    Rule(
        "invalid-error-object",
        E,
        JSONRPC,
        "An error that is not an object with an integer code and a string message.",
    ),
    Rule(
        "unexpected-response",
        E,
        JSONRPC,
        "A response to an id the other side never sent, or already answered; one with id null "
        "that is not a -32700 or -32600 error (it answers no request, or a notification).",
    ),
    Rule(
        "duplicate-request-id",
        E,
        JSONRPC,
        "A request id reused while the same side's request with that id is pending.",
    ),
    Rule("unanswered-request", W, JSONRPC, "A request still unanswered when the connection ends."),
    Rule(
        "schema",
        E,
        "ACP schema",
        "A field missing, of the wrong JSON type, outside its closed enum or its bounds, per the "
        "official schema of the negotiated version (params by method, result by the request's "
        "method, error objects, every update variant).",
    ),
    Rule(
        "schema-lenient",
        W,
        "ACP schema",
        "A malformed field the SDKs silently replace with its default "
        "(x-deserialize-default-on-error), or a list item they drop; _meta that is not an object.",
    ),
    Rule(
        "schema-reserved",
        W,
        "ACP schema",
        "A value the schema does not know where it has a catch-all variant: reserved for future "
        "versions (_-prefixed values are extensions and never flagged).",
    ),
    Rule(
        "not-in-schema",
        W,
        "ACP schema",
        "A value the shipped schemas (stable and unstable) do not define where ACP extends: an "
        "update variant, a content block type, an enum value (stop reason, tool kind or status, "
        "config category), a field. A newer schema may define it, so a warning, never an error "
        "(validate --strict fails on it), once per place and value per connection; _-prefixed "
        "ones are extensions, never flagged.",
    ),
    Rule(
        "wrong-direction",
        E,
        "ACP v2 schema; v1 schema (x-side)",
        "A method sent by the side that should receive it.",
    ),
    Rule(
        "unknown-method",
        W,
        "ACP v2 schema; v1 Extensibility (Custom requests)",
        "A method the negotiated version does not define (not _-prefixed).",
    ),
    Rule(
        "unstable-feature",
        N,
        UNSTABLE,
        "A method, update variant, capability or field that only the version's unstable schema "
        "defines: the message is checked against that schema, and the session relies on a part "
        "of ACP that may still change. Once per feature per connection.",
    ),
    Rule(
        "mcp-legacy-method",
        W,
        "ACP unstable schema (MessageMcpRequest)",
        "mcp/connect or mcp/disconnect (with a connectionId): the older MCP-over-ACP draft, "
        "which the shipped unstable schema replaced with mcp/message (serverId, requestId).",
    ),
    # --- Initialization and sessions ---------------------------------------------
    Rule(
        "before-initialize",
        E,
        "Prompt Lifecycle; v1 Initialization, v1 Session Setup",
        "A session method before initialize has completed.",
    ),
    Rule(
        "initialize-protocol-version",
        E,
        "ACP v2 schema; v1 Initialization (Version negotiation)",
        "An initialize result without an integer protocolVersion.",
    ),
    Rule(
        "initialize-version-higher",
        W,
        "v1 Initialization (Version negotiation)",
        "An initialize result with a protocolVersion above the one the client asked for: the "
        "client sends its latest version, and the agent answers that one or the latest it "
        'supports ("If the Agent supports the requested version, it MUST respond with the '
        'same version").',
    ),
    Rule(
        "unknown-session",
        E,
        "derived: Prompt Lifecycle; v1 Session Setup, v1 Prompt Turn",
        "A session-scoped message naming a sessionId this connection never created or resumed "
        "(derived: no sentence says it in so many words; a session exists once session/new, "
        "load, resume or fork created it).",
    ),
    Rule(
        "resume-without-state",
        E,
        SCHEMA,
        "A successful session/resume with no state_update for the session before the response.",
        V2,
    ),
    # --- Prompt acceptance ---------------------------------------------------------
    Rule("prompt-empty", E, SCHEMA, "A session/prompt whose prompt is an empty array.", V2),
    Rule(
        "prompt-capability",
        E,
        "1. User Message; v1 Prompt Turn",
        "A prompt content block the agent's advertised prompt capabilities do not allow.",
    ),
    Rule(
        "prompt-result-message-id",
        E,
        "2. Prompt Accepted",
        "A session/prompt result without a non-null string messageId.",
        V2,
    ),
    Rule(
        "prompt-message-id-reused",
        E,
        "2. Prompt Accepted",
        "Two accepted prompts with the same messageId in a session.",
        V2,
    ),
    Rule(
        "user-message-missing",
        E,
        "2. Prompt Accepted",
        "No user_message or user_message_chunk with the returned messageId by the end of the turn.",
        V2,
    ),
    Rule(
        "prompt-error-after-insert",
        W,
        "2. Prompt Accepted",
        'A prompt answered with an error after a user message for it was reported ("Once '
        'inserted, it MUST NOT return an error response"); the user message is taken as the '
        "session's one pending prompt's, hence a warning.",
        V2,
    ),
    Rule(
        "user-message-after-rejection",
        W,
        "Prompts that are never inserted",
        "A new user message after the error response to the session's last prompt, before "
        'another prompt ("MUST return a JSON-RPC error response and MUST NOT emit user-message '
        'updates for that submission"); the link is inferred, hence a warning.',
        V2,
    ),
    Rule(
        "cancelled-prompt-error",
        W,
        "Cancellation",
        "A prompt the client cancelled, answered with an error other than -32800.",
        V2,
    ),
    # --- Foreground state ------------------------------------------------------------
    Rule("state-missing", E, "Session States", "A state_update without state.", V2),
    Rule("state-unknown", W, "Session States", "An unknown state that is not _-prefixed.", V2),
    Rule(
        "stop-reason-unknown",
        W,
        "Stop Reasons",
        "A stop reason outside the six standard ones that is not _-prefixed.",
        V2,
    ),
    Rule(
        "idle-without-stop-reason",
        W,
        "4. Report Completion",
        "An idle that ends foreground work without a stop reason.",
        V2,
    ),
    Rule(
        "error-beside-stop-reason",
        W,
        "Failures",
        "An error field beside a stop reason other than error.",
        V2,
    ),
    Rule(
        "idle-without-running",
        E,
        "Foreground and Background Work",
        "An idle that ends a prompted turn in which running was never reported.",
        V2,
    ),
    Rule(
        "turn-still-running",
        W,
        "4. Report Completion",
        "Foreground work still running when the connection ends.",
        V2,
    ),
    Rule(
        "cancel-ended-with-error",
        E,
        "Cancellation",
        "After the client cancelled running work, an idle with stop reason error.",
        V2,
    ),
    Rule(
        "cancel-ended-without-cancelled",
        W,
        "Cancellation; v1 Prompt Turn (Cancellation)",
        "After the client cancelled, the turn ended with a stop reason other than cancelled "
        "(v2: the idle; v1: the prompt's response). It may have raced.",
    ),
    Rule(
        "update-after-cancelled-idle",
        W,
        "Cancellation",
        "An update about a cancelled turn's tool call after the turn's idle, or an agent "
        'message or thought after that idle before any new state or prompt ("MUST ensure '
        'that it does so before sending the idle state_update").',
        V2,
    ),
    Rule(
        "error-idle-unfinished-tools",
        W,
        "Failures",
        "An error idle that leaves the turn's tool calls pending or in_progress.",
        V2,
    ),
    Rule(
        "running-not-reported",
        W,
        "5. Tool Invocation and Status Reporting",
        "Agent output (a message or thought) after requires_action, with no permission request "
        'pending and no running reported: "When foreground work resumes, the Agent MUST report '
        'running" (inferred from the output, hence a warning).',
        V2,
    ),
    Rule(
        "permission-without-requires-action",
        W,
        "5. Tool Invocation and Status Reporting",
        "A permission request during running work, resolved without requires_action reported.",
        V2,
    ),
    # --- Cancellation --------------------------------------------------------------------
    Rule(
        "cancel-with-id",
        E,
        "Cancellation; v1 schema (session/cancel is a notification)",
        "A session/cancel sent as a request (with an id).",
    ),
    Rule(
        "permission-not-cancelled",
        E,
        "Cancellation; v1 Prompt Turn (Cancellation)",
        "After session/cancel, a pending permission request (v1: or one asked while the "
        "cancelled prompt runs) answered with another outcome.",
    ),
    Rule(
        "permission-option-unknown",
        E,
        "Tool Calls (Requesting Permission); v1 Tool Calls (Requesting Permission)",
        "A selected permission outcome whose optionId is not among the request's options.",
    ),
    Rule(
        "permission-unanswered",
        W,
        "JSON-RPC 2.0 (5. Response object); 5. Tool Invocation and Status Reporting",
        "A session/request_permission never answered by the end of the connection.",
        V2,
    ),
    # --- Entities ------------------------------------------------------------------------
    Rule(
        "message-id-missing",
        E,
        "Message IDs",
        "A message update or chunk without a string messageId.",
        V2,
    ),
    Rule(
        "message-content-shape",
        E,
        "Message IDs",
        "Chunk content that is not one content block (whole-message content that is not an "
        "array or null is schema-lenient: the SDKs replace it with its default).",
        V2,
    ),
    Rule(
        "tool-call-id-missing",
        E,
        "Entity IDs",
        "A tool_call_update or tool_call_content_chunk without a string toolCallId.",
        V2,
    ),
    Rule(
        "terminal-id-missing",
        E,
        "Entity IDs",
        "A terminal_update or terminal_output_chunk without a string terminalId.",
        V2,
    ),
    Rule(
        "terminal-data-not-base64",
        E,
        SCHEMA,
        "A terminal_output_chunk whose data is not a base64 string.",
        V2,
    ),
    Rule("plan-id-missing", E, "Entity IDs", "A plan_update without a string plan.planId.", V2),
    Rule(
        "unknown-update",
        W,
        "Session Updates",
        "A sessionUpdate variant that is not standard and not _-prefixed.",
        V2,
    ),
    # --- Notices, compaction, usage ---------------------------------------------------------
    Rule("notice-severity-missing", E, "Session Notices", "A notice without severity.", V2),
    Rule(
        "notice-title-missing",
        E,
        "Session Notices",
        "A notice whose title is missing, null, empty or not a string.",
        V2,
    ),
    Rule(
        "notice-severity-unknown",
        W,
        "Session Notices",
        "A notice severity that is not standard and not _-prefixed.",
        V2,
    ),
    Rule(
        "notice-during-replay",
        W,
        "Session Notices",
        "A notice sent while the session is replaying history.",
        V2,
    ),
    Rule(
        "compaction-field-missing",
        E,
        "Session Compaction",
        "A compaction update without compactionId or status, or a summary chunk without "
        "compactionId or content.",
        V2,
    ),
    Rule(
        "compaction-status-unknown",
        W,
        "Session Compaction",
        "A compaction status that is not standard and not _-prefixed.",
        V2,
    ),
    Rule(
        "compaction-id-reused",
        E,
        "Session Compaction",
        "A compaction id started again after its compaction ended.",
        V2,
    ),
    Rule(
        "compaction-chunk-outside-progress",
        W,
        "Session Compaction",
        "A compaction summary chunk for a compaction that is not in_progress.",
        V2,
    ),
    Rule(
        "compaction-unfinished",
        W,
        "Session Compaction",
        "A compaction still in_progress when the connection ends.",
        V2,
    ),
    Rule(
        "usage-fields",
        E,
        "Session Usage Updates",
        "A usage_update without non-negative integer used and size.",
        V2,
    ),
    Rule(
        "usage-cost-fields",
        E,
        "Session Usage Updates",
        "A usage_update cost without amount and currency.",
        V2,
    ),
    # --- The proxy itself ------------------------------------------------------------------
    # --- ACP v1 (v1-rules: the stable v1 pages) -----------------------------------
    Rule(
        "capability-fs",
        E,
        "v1 File System (Checking Support)",
        "The agent called fs/read_text_file or fs/write_text_file although the client did not "
        "advertise fs.readTextFile or fs.writeTextFile.",
        V1,
    ),
    Rule(
        "capability-terminal",
        E,
        "v1 Terminals (Checking Support)",
        "The agent called a terminal/* method although the client did not advertise terminal.",
        V1,
    ),
    Rule(
        "capability-config-boolean",
        E,
        "v1 Session Config Options (Boolean)",
        "A boolean config option offered although the client did not advertise "
        "session.configOptions.boolean.",
        V1,
    ),
    Rule(
        "capability-notices",
        E,
        "v1 schema (SessionUpdate notice)",
        "A notice update although the client did not advertise session.notices.",
        V1,
    ),
    Rule(
        "capability-compaction",
        E,
        "v1 schema (SessionUpdate compaction_update); v1 draft Prompt Turn (Session Compaction)",
        "A compaction update although the client did not advertise session.compaction.",
        V1,
    ),
    Rule(
        "capability-session",
        E,
        "v1 Session Setup, List, Delete; Authentication (Checking Support)",
        "The client called session/load, resume, close, list, delete, fork (or another "
        "session method of the unstable schema) or logout although the agent did not "
        "advertise it.",
        V1,
    ),
    Rule(
        "capability-additional-directories",
        E,
        "v1 Session Setup (Additional Workspace Roots)",
        "additionalDirectories sent although the agent did not advertise "
        "sessionCapabilities.additionalDirectories.",
        V1,
    ),
    Rule(
        "capability-system-prompt",
        E,
        "unstable schema (SystemPrompt, SystemPromptMode; stable from v1 schema 1.30)",
        "A systemPrompt on session/new, load, resume or fork although the agent did not "
        "advertise it (v1 sessionCapabilities.systemPrompt, v2 session.systemPrompt: "
        '"Clients MUST only send this when the Agent advertises" it), or in override mode '
        "without its mode.override.",
    ),
    Rule(
        "system-prompt-empty",
        E,
        "unstable schema (SystemPrompt.content; stable from v1 schema 1.30)",
        'A systemPrompt whose content is an empty array ("Clients MUST NOT send an empty array").',
    ),
    Rule(
        "capability-mcp-transport",
        E,
        "v1 Session Setup (Checking Transport Support)",
        "An http or sse MCP server passed although the agent did not advertise that transport.",
        V1,
    ),
    Rule(
        "path-not-absolute",
        E,
        "v1 Overview (Argument Requirements)",
        "A relative path where v1 requires an absolute one: cwd, additionalDirectories, fs "
        "paths, terminal cwd, diff paths, tool call locations, a listed session's cwd.",
        V1,
    ),
    Rule(
        "prompt-overlap",
        W,
        "v1 Prompt Turn",
        "A session/prompt while another prompt of the same session is still running.",
        V1,
    ),
    Rule(
        "cancel-answered-with-error",
        E,
        "v1 Prompt Turn (Cancellation)",
        "A cancelled prompt answered with a JSON-RPC error instead of the cancelled stop reason.",
        V1,
    ),
    Rule(
        "cancelled-without-cancel",
        W,
        "v1 schema (StopReason cancelled)",
        "A prompt that ended with stop reason cancelled although the client never cancelled it.",
        V1,
    ),
    Rule(
        "update-after-cancelled",
        E,
        "v1 Prompt Turn (Cancellation)",
        "A message chunk or tool call update after the response to the cancelled prompt.",
        V1,
    ),
    Rule(
        "line-not-1-based",
        W,
        "v1 Overview (Argument Requirements); File System (Reading Files)",
        'A tool call location line or an fs/read_text_file line below 1: "Line numbers are '
        '1-based" (the schema allows 0, hence a warning).',
        V1,
    ),
    Rule(
        "auth-method-duplicate",
        W,
        "v1 schema (AuthMethod id)",
        'An initialize result that offers the same auth method id twice ("Unique identifier '
        'for this authentication method").',
        V1,
    ),
    Rule(
        "mode-current-unknown",
        W,
        "v1 Session Modes (SessionModeState)",
        "A session's current mode (in the session/new, load or resume result, or a "
        "current_mode_update) that is not among the modes it offers.",
        V1,
    ),
    Rule(
        "config-current-unknown",
        W,
        "v1 Session Config Options (Default Values)",
        "A select config option whose currentValue is not one of its options.",
        V1,
    ),
    Rule(
        "initialize-again",
        W,
        "v1 schema (ClientRequest initialize)",
        'A second initialize on a connection ("This method is called once at the beginning of '
        'the connection").',
        V1,
    ),
    Rule(
        "cancel-request-unknown",
        W,
        "v1 schema ($/cancel_request); ACP v2 schema ($/cancel_request)",
        'A $/cancel_request for a request its sender does not have outstanding ("sent by the '
        'side that sent a request to cancel that request"); v2 too, where it is the same '
        "protocol-level notification.",
    ),
    Rule(
        "cancel-request-error-code",
        W,
        "v1 Cancellation ($/cancel_request)",
        "A request cancelled with $/cancel_request answered with an error other than -32800 "
        "(Request Cancelled); a warning, as it may have failed before the cancel arrived.",
        V1,
    ),
    Rule(
        "list-cursor-unknown",
        E,
        "v1 Session List (Pagination)",
        'A session/list cursor that no nextCursor on this connection issued: "Clients MUST '
        'treat cursors as opaque tokens — do not parse, modify, or persist them".',
        V1,
    ),
    Rule(
        "list-cwd-filter",
        E,
        "v1 Session List (Listing Sessions)",
        'A session/list result for a cwd that lists a session of another cwd ("Only sessions '
        'with a matching cwd are returned").',
        V1,
    ),
    Rule(
        "baseline-method-not-found",
        E,
        "v1 Initialization (Agent Capabilities, Client Capabilities)",
        'A -32601 (Method not found) answer to initialize, session/new or session/prompt ("As '
        'a baseline, all Agents MUST support session/new, session/prompt [...]"), or to a '
        "method whose capability the responder advertised.",
        V1,
    ),
    Rule(
        "update-after-close",
        W,
        "v1 Session Setup (Closing a Session)",
        "A session/update for a session after the agent answered its session/close (derived: "
        '"The Agent MUST cancel any ongoing work for that session [...], then free the '
        'resources associated with the session"). Once per close.',
        V1,
    ),
    Rule(
        "deleted-session-listed",
        E,
        "v1 Session Delete (Semantics)",
        'A session/list result that lists a session session/delete removed ("Deleted sessions '
        'no longer appear in future session/list results").',
        V1,
    ),
    Rule(
        "prompt-end-turn-open-tools",
        W,
        "v1 Prompt Turn (Check for Completion)",
        "A prompt answered end_turn while tool calls of its turn are still pending or "
        "in_progress (agents MAY stop a turn at any point, hence a warning).",
        V1,
    ),
    Rule(
        "tool-call-unknown",
        W,
        "v1 Tool Calls (Creating)",
        "A tool_call_update for a tool call that no tool_call announced.",
        V1,
    ),
    Rule(
        "terminal-unknown",
        E,
        "v1 Terminals",
        "A terminal id (in a terminal/* request or tool call content) that no terminal/create "
        "returned.",
        V1,
    ),
    Rule(
        "terminal-released",
        E,
        "v1 Terminals (Releasing)",
        "A terminal/* request for a terminal already released.",
        V1,
    ),
    Rule(
        "terminal-unreleased",
        W,
        "v1 Terminals (Executing Commands)",
        "A terminal never released with terminal/release by the end of the connection.",
        V1,
    ),
    Rule(
        "load-replay-after-response",
        E,
        "v1 Session Setup (Loading a Session)",
        "A replayed user message after the session/load response (the replay must come first).",
        V1,
    ),
    Rule(
        "resume-replayed-history",
        E,
        "v1 Session Setup (Resuming a Session)",
        "Conversation history sent while a session/resume is pending.",
        V1,
    ),
    Rule(
        "mode-unknown",
        E,
        "v1 Session Modes (From the Client)",
        "A session/set_mode with a mode the session did not offer.",
        V1,
    ),
    Rule(
        "config-value-unknown",
        E,
        "v1 Session Config Options (From the Client)",
        "A session/set_config_option for an option the session did not offer, or a value not "
        "among the option's values (a boolean for a boolean option).",
        V1,
    ),
    Rule(
        "capability-elicitation",
        E,
        "v1 Elicitation (Checking Support)",
        "An elicitation/create in a mode (form, url) the client did not advertise.",
        V1,
    ),
    Rule(
        "session-id-reused",
        E,
        "v1 Session Setup (Creating a Session)",
        "A session/new or session/fork result whose sessionId an earlier session/new or "
        "session/fork on the connection returned.",
        V1,
    ),
    Rule(
        "tool-call-duplicate",
        W,
        "v1 Tool Calls (Creating)",
        "A tool_call that announces a tool call id already announced (updates are "
        "tool_call_update).",
        V1,
    ),
    Rule(
        "capability-auth-terminal",
        E,
        "v1 Authentication (Authentication Method Types); v1 schema (AuthMethodTerminal)",
        "An initialize result that offers a terminal auth method although the client did not "
        'advertise clientCapabilities.auth.terminal ("Agents MUST advertise this method only '
        'when the client enabled its terminal authentication capability").',
        V1,
    ),
    Rule(
        "auth-terminal-method",
        E,
        "v1 Authentication (Terminal Authentication)",
        "An authenticate that names a terminal auth method (the user runs it, not the client).",
        V1,
    ),
    Rule(
        "auth-method-unknown",
        E,
        "v1 Authentication",
        "An authenticate whose methodId the agent did not advertise in authMethods.",
        V1,
    ),
    Rule(
        "validator-error",
        W,
        "acp-proxy",
        "The validator failed on a frame: a bug in acp-proxy (the frame was still relayed).",
    ),
)


#: The catalog by rule id.
RULES: dict[str, Rule] = {rule.id: rule for rule in CATALOG}

#: Hand-written rules that report a defect the schema check would also find, and
#: the paths they cover: when one fires on a frame, the schema's findings at or
#: under those paths are left out (one finding per defect, the more specific rule).
SCHEMA_OVERLAP: dict[str, tuple[str, ...]] = {
    "invalid-error-object": ("error",),
    "initialize-protocol-version": ("result.protocolVersion",),
    "prompt-empty": ("params.prompt",),
    "prompt-result-message-id": ("result.messageId",),
    "state-missing": ("params.update.state",),
    "state-unknown": ("params.update.state",),
    "stop-reason-unknown": ("params.update.stopReason",),
    "idle-without-stop-reason": ("params.update.stopReason",),
    "message-id-missing": ("params.update.messageId",),
    "message-content-shape": ("params.update.content",),
    "tool-call-id-missing": ("params.update.toolCallId",),
    "terminal-id-missing": ("params.update.terminalId",),
    "terminal-data-not-base64": ("params.update.data",),
    "plan-id-missing": ("params.update.plan",),
    "unknown-update": ("params.update.sessionUpdate",),
    "notice-severity-missing": ("params.update.severity",),
    "notice-severity-unknown": ("params.update.severity",),
    "notice-title-missing": ("params.update.title",),
    "compaction-field-missing": (
        "params.update.compactionId",
        "params.update.status",
        "params.update.content",
    ),
    "compaction-status-unknown": ("params.update.status",),
    "usage-fields": ("params.update.used", "params.update.size"),
    "usage-cost-fields": ("params.update.cost",),
}


#: Hand-written rules of SCHEMA_OVERLAP that stay errors where the schema calls the field
#: lenient (x-deserialize-default-on-error), for now: usage_update cost is lenient in the v2
#: schema, but the example agent's --misbehave and the shipped recordings show this rule.
#: Every other rule gives way there to the schema-lenient warning.
NOT_LENIENT: frozenset[str] = frozenset({"usage-cost-fields"})


def catalog_lines(fmt: str = "text") -> list[str]:
    """The catalog as ``acp-proxy rules`` prints it: text, json (a line per rule) or markdown;
    text and markdown open with the schemas it checks against, json lines carry them."""
    sources = schema_sources()
    if fmt == "json":
        tags = sources.as_dict()
        return [
            orjson.dumps(
                {
                    "rule": rule.id,
                    "level": str(rule.level),
                    "spec": rule.spec,
                    "versions": str(rule.scope),
                    "description": rule.description,
                    "schemas": tags,
                }
            ).decode()
            for rule in CATALOG
        ]
    schemas = f"Schemas: {sources.summary()}."
    if fmt == "markdown":
        lines = [
            schemas,
            "",
            "| rule | level | versions | spec | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for rule in CATALOG:
            description = rule.description.replace("|", "\\|")
            lines.append(
                f"| `{rule.id}` | {rule.level} | {rule.scope} | {rule.spec} | {description} |"
            )
        return lines
    width = max(len(rule.id) for rule in CATALOG)
    return [
        schemas,
        *(
            f"{rule.id:<{width}}  {rule.level:<7}  {rule.scope:<3}  {rule.description} "
            f"({rule.spec})"
            for rule in CATALOG
        ),
    ]
