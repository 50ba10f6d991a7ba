"""acp-proxy: a transparent, recording, validating proxy for the Agent Client Protocol.

The Python API (what the README's "From Python" promises) is the names below, imported from
here; everything else is internal and may change. They are loaded on first use, so importing
``acp_proxy`` (as ``acp-proxy run`` does) stays cheap.

- replay a recording: :class:`AgentReplay` (the recording as the agent), :func:`drive_agent`
  (the recording as the client, against a live agent), :func:`load_script`;
- read one: :func:`open_recording`, :func:`annotate` (records with their findings),
  :class:`Conversation`, :class:`Stats`;
- check traffic: :class:`Validator`, :class:`Violation`, :class:`WireModel`,
  :func:`parse_frame`;
- share one: :class:`Redactor`; show a wire string safely: :func:`visible`.
"""

from __future__ import annotations

import importlib
from typing import Any

from acp_proxy.core.version import VERSION as __version__

#: Each public name, and the module it lives in.
_PUBLIC = {
    "AgentReplay": "acp_proxy.readers.replay",
    "drive_agent": "acp_proxy.readers.replay",
    "load_script": "acp_proxy.readers.replay",
    "open_recording": "acp_proxy.transcript.reading",
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
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'acp_proxy' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
