"""The proxy shell: the only process, pipe and asyncio code.

``spawn`` (the agent process), ``relay`` (the pumps between two endpoints, the loop and the
session's lifecycle), ``session`` (a session assembled, the one place, whatever side we play:
``run``, ``client`` as the client, ``server`` as the agent), ``observer`` (each frame stamped,
checked, recorded, logged), ``recorder`` (the transcript file); ``commands`` (``run``).

Modules::

    addons.py       run_addons; Save, LiveLog, LogFindings, Notify: a session's parts
    client.py       Client: acp-proxy as the client, in-process, back-pressure not loss
    events.py       Event, Pending, Reply, TimedOut, AgentGone: what a front-end gets
    later.py        LateObserver: the relay started before its observer is ready
    loop.py         event_loop, SpinningSelector: polls a little before it sleeps
    observer.py     Observer: each frame stamped and checked, handed to the addons
    outbox.py       Outbox, Inbox: the client's side of the relay, its reading held
    otlp.py         LiveExport: run --otlp, each turn's spans sent off the relay's path
    pipes.py        FdSource, FdSink, ThreadFeed, FileSink: feeds and sinks, no copy
    recorder.py     Recorder: the transcript file, opened safely
    relay.py        run_relay: the pumps and the session's lifecycle, signals, shutdown
    sandbox.py      Sandbox: files beneath a directory descriptor, never raced
    server.py       Server: acp-proxy as the agent on its stdio (test-agent, replay)
    services.py     Services: the agent's requests answered, safe by construction
    serving.py      Serving: the agent's requests served off the loop, the waits bounded
    session.py      assemble: a session put together, the one place, whatever side we play
    spawn.py        start_agent, Watchdog: the agent process, its group stopped with us
    spool.py        Spooler: a line too long to hold, spooled to a file as it crosses
    user_addons.py  load_addons, OffRelay: run --addon FILE, off the relay
    commands/       the layer's click commands, a module each, named for the command
"""
