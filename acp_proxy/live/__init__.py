"""The proxy shell: the only process, pipe and asyncio code.

``spawn`` (the agent process), ``relay`` (the pumps, the loop and the session's lifecycle),
``observer`` (each frame stamped, checked, recorded, logged), ``recorder`` (the transcript file);
``commands`` (``run``: a session assembled).
"""
