"""Recordings in, views out; never imports ``live``.

``annotate`` (records grouped by connection, findings attached), ``conversation`` (what the user
saw), ``text`` (the timeline and the conversation as text), ``stats``, ``report`` (one HTML
page), ``follow`` (a growing recording), ``replay`` (a recording as the agent or the client);
``commands`` (their commands, a module each: ``show``, ``stats``, ``validate``...).

Modules::

    annotate.py      read, annotate, located: the one way into a file, findings attached
    catalog.py       list_sessions, search
    ci.py            junit, sarif
    compare.py       difference, Normalizer: what "the same" means (replay, diff)
    conversation.py  Conversation: what the user saw
    diff.py          load, compare
    follow.py        follow_records
    inspect.py       Inspector, serve: the live page
    mcp/             Server, TOOLS: the recordings as an MCP server on stdio
    replay.py        AgentReplay, ClientReplay, load_script: the replays, pure
    report.py        write_report (+ templates/report.html)
    stats.py         Stats
    summary.py       frame_summary, wanted: a frame in one line, the filters
    text.py          Timeline, render_conversation, LiveConversation (as it happens)
    timing.py        Timing: where the time went
    usage.py         Usage: tokens and cost, as the agent reported them
    commands/        the layer's click commands, a module each, named for the command
"""
