"""The pure core: bytes and values in, values out; no I/O, no asyncio; imports only ``core``.

``protocol`` (ACP facts per version), ``framing`` (lines to frames), ``times``, ``wire`` (what
each frame is: kinds, pairing, turns, connections), ``rules`` (the catalog), ``schema`` (the
official schemas compiled into checks), ``unstable`` (what only the unstable schemas define),
``validator`` (what the package imports of ``validator_base``, ``validator_v2`` and
``validator_v1``: the rules, each defined beside its check with its example), ``examples``
(the frames the examples are built of), ``chunks`` (the streamed-chunk shortcut),
``visible`` (wire strings made safe to show), ``version``.

Modules::

    chunks.py          Shortcut: the streamed-chunk shortcut, whole
    examples.py        INIT, TURN, update...: the frames rules' examples are built of
    findings.py        Violation, Rule: a finding and a rule, as data
    framing.py         Framer, Frame, parse_frame, LineSplicer
    jsontext.py        string_end, value_spans, loads_long, preview: JSON text as bytes
    lifecycle.py       TRANSITIONS, step: the v2 prompt lifecycle as a (state, event) table
    protocol.py        Side, Kind, State, StopReason, methods_for: ACP facts per version
    rules.py           RULES, explain_lines: the catalog, gathered from the validator's
    schema.py          schema_for: the official schemas compiled into checks
    checks.py          Defect, Checker: the checks a schema compiles to (its combinators)
    times.py           format_time, parse_time
    unstable.py        surface_for: what only the unstable schemas define
    validator.py       Validator, Violation: what the package imports (the three below)
    validator_base.py  ValidatorBase: what every version shares, and its rules
    validator_schema.py SchemaRules: the official schemas' rules, a base of ValidatorBase
    validator_v1.py    V1Rules: the v1 pages' rules, composed in
    validator_v1_agent.py V1AgentRules: v1's rules of what the agent does, V1Rules's base
    validator_v2.py    Validator: the prompt lifecycle's rules (v2), CATALOG
    validator_v2_updates.py V2UpdateRules: what a v2 session update carries, Validator's base
    version.py         VERSION
    visible.py         visible, dumps: wire strings made safe to show
    wire.py            WireModel, Message (a type per kind), Turn: what each frame is
"""
