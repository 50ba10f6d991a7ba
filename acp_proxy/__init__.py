"""acp-proxy: a transparent, recording, validating proxy for the Agent Client Protocol."""

__version__ = "0.1.0"
