"""The front-ends' commands (``probe``, ``chat``, ``test-agent``, ``replay``), a module each,
named for the command, beside the front-ends they drive; what probe and chat share is in
``shared.py``. ``replay`` is here because ``--as client`` drives an agent (over the client
core); as the agent, it serves a recording on our stdio. Only ``acp_proxy.cli`` imports
them.

Modules::

    chat.py        chat
    probe.py       probe
    replay.py      replay (as the agent, or --as client)
    shared.py      what probe and chat share: --protocol, recording, -- AGENT
    test_agent.py  test-agent
"""
