"""The version of acp-proxy (a leaf: what the transcript's start record names)."""

VERSION = "0.1.0"
