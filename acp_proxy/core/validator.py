"""The ACP protocol state machine and its rules: :class:`Validator`, what the rest of the
package imports.

Theory of operation
-------------------
:class:`Validator` checks the :class:`~acp_proxy.core.wire.Message` values of one
connection's :class:`~acp_proxy.core.wire.WireModel`, in wire order, and returns
:class:`Violation` values; :meth:`Validator.end` says the connection ended.
The wire model has already said what each frame is, which request a response
answers, and where turns begin and end; the validator keeps only the rule
state on top of that, and only as long as a rule needs it:

- the connection: whether initialize completed, the agent's prompt capabilities;
- each session this connection created or resumed: the current turn's
  cancellation and tool calls, the accepted prompts' messageIds, user messages
  still owed, compactions, replay;
- each pending request that a rule follows (prompts, permission requests,
  resumes, loads): what its response will be checked against.

It is six modules, each holding its rules' catalog entries and examples beside the code
that flags them (:mod:`acp_proxy.core.rules` gathers the catalog):

- :mod:`~acp_proxy.core.validator_base`: what every version shares: the entry points,
  the rule state, the gate by version, and the rules of the transport, JSON-RPC, the
  schemas, initialization and sessions;
- :mod:`~acp_proxy.core.validator_schema`: the official schemas of the negotiated version
  (:class:`~acp_proxy.core.validator_schema.SchemaRules`, a base of the base);
- :mod:`~acp_proxy.core.validator_v2`: the prompt lifecycle (the v2 page), and the
  :class:`Validator` that completes the base with it; what a session update carries
  (messages, tool calls, notices, compaction, usage) in
  :mod:`~acp_proxy.core.validator_v2_updates` (a base of it);
- :mod:`~acp_proxy.core.validator_v1`: the v1 pages' rules, composed in
  (:class:`~acp_proxy.core.validator_v1.V1Rules`), with what the agent does in
  :mod:`~acp_proxy.core.validator_v1_agent` (its base).

A streamed chunk that is a checked one around another text is taken by the validator's
:class:`~acp_proxy.core.chunks.Shortcut` in a few byte comparisons; the validator lends it
the rules that follow state (``chunk_session``, ``new_chunk``, ``known_chunk``).

``feed(side, frame, seq)`` is the short way: it runs the validator's own wire
model. Where several consumers share a model, call :meth:`Validator.check`.
The same object serves ``acp-proxy run`` live and ``acp-proxy validate`` offline.

Findings are data, never exceptions: a proxy must keep relaying whatever it
sees. :meth:`Validator.feed` never raises on any input. Rules are gated by the
negotiated version in one place (``ValidatorBase._flag``): a v2 rule never fires
on a v1 connection.
"""

from __future__ import annotations

from acp_proxy.core.findings import Violation
from acp_proxy.core.validator_v2 import Validator

__all__ = ["Validator", "Violation"]
