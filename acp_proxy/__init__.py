"""acp-proxy: a transparent, recording, validating proxy for the Agent Client Protocol."""

from acp_proxy.core.version import VERSION as __version__

__all__ = ["__version__"]
