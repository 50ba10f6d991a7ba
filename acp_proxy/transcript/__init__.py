"""The ``acp-proxy/1`` transcript format, both ways; imports only ``core``.

``records`` (the record types, the writers, ``parse_record`` that never raises: pure),
``heads`` (the readers' fast path over plain frame records: pure), ``reading`` (lines and
records from files, the longest line a reader holds, ``open_recording``, ``RecordingError``),
``redact`` (secrets to tags, for ``run --redact`` and ``redact``), ``secrets`` (what is
secret: one table, read by ``redact`` and the live stderr cutter: pure).
"""
