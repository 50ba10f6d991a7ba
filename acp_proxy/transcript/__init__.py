"""The ``acp-proxy/1`` transcript format, both ways; imports only ``core``.

``records`` (the record types, the writers, ``parse_record`` that never raises), ``reading``
(lines and records from files, ``open_recording``, ``RecordingError``), ``redact`` (secrets to
tags, for ``run --redact`` and ``redact``).
"""
