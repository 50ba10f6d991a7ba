"""The ``acp-proxy/1`` transcript format, both ways; imports only ``core``.

``records`` (the record types, the writers, ``parse_record`` that never raises: pure),
``heads`` (the readers' fast path over plain frame records: pure), ``reading`` (lines and
records from files, the longest line a reader holds, ``open_recording``, ``RecordingError``),
``redact`` (secrets to tags, for ``run --redact`` and ``redact``; the text's in ``hiding``,
keys cut between streamed chunks in ``chunks``), ``secrets`` (what is secret: one table,
read by ``redact`` and the live stderr cutter: pure).

Modules::

    beneath.py  open_beneath: a file a caller named, opened beneath a directory
    chunks.py   ChunkJoin: keys cut between chunks of streamed text (redact's)
    heads.py    PlainHeads, plain_frame_head: the readers' fast path
    hiding.py   Hider: secrets in strings, command lines and URLs to tags (Redactor's base)
    items.py    Addon, Chain, Annotated, Repeated, Seen: the one hook protocol
    names.py    default_record_dir, recording_name, prune, being_written
    reading.py  open_recording, open_lines, RecordingError
    records.py  the record types and writers, parse_record
    redact.py   Redactor, redact_stream: frames and records, a recording's lines
    secrets.py  what is secret: one table (redact, the stderr cutter)
"""
