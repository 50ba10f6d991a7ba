"""The pure core: bytes and values in, values out; no I/O, no asyncio; imports only ``core``.

``protocol`` (ACP facts per version), ``framing`` (lines to frames), ``times``, ``wire`` (what
each frame is: kinds, pairing, turns, connections), ``rules`` (the catalog), ``schema`` (the
official schemas compiled into checks), ``unstable`` (what only the unstable schemas define),
``validator`` (what the package imports of ``validator_base``, ``validator_v2`` and
``validator_v1``: the rules, each defined beside its check with its example), ``examples``
(the frames the examples are built of), ``chunks`` (the streamed-chunk shortcut),
``visible`` (wire strings made safe to show), ``version``.
"""
