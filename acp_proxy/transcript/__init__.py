"""The ``acp-proxy/1`` transcript format, both ways; imports only ``core``.

``records`` (the record types, the writers, ``parse_record`` that never raises: pure),
``heads`` (the readers' fast path over plain frame records: pure), ``reading`` (lines and
records from files, the longest line a reader holds, ``open_recording``, ``RecordingError``),
``redact`` (secrets to tags, for ``run --redact`` and ``redact``), ``secrets`` (what is
secret: one table, read by ``redact`` and the live stderr cutter: pure).

Modules::

    beneath.py  open_beneath: a file a caller named, opened beneath a directory
    heads.py    PlainHeads, plain_frame_head: the readers' fast path
    items.py    Addon, Chain, Annotated, Repeated, Seen: the one hook protocol
    names.py    default_record_dir, recording_name, prune, being_written
    reading.py  open_recording, open_lines, RecordingError
    records.py  the record types and writers, parse_record
    redact.py   Redactor, redact_stream
    secrets.py  what is secret: one table (redact, the stderr cutter)
"""
