"""The pure core: bytes and values in, values out; no I/O, no asyncio; imports only ``core``.

``protocol`` (ACP facts per version), ``framing`` (lines to frames), ``times``, ``wire`` (what
each frame is: kinds, pairing, turns, connections), ``rules`` (the catalog), ``schema`` (the
official schemas compiled into checks), ``unstable`` (what only the unstable schemas define),
``validator`` and ``validator_v1`` (the rules), ``chunks`` (the streamed-chunk shortcut),
``visible`` (wire strings made safe to show), ``version``.
"""
