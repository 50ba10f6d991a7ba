"""Front-ends that drive an agent through the client core (:mod:`acp_proxy.live.client`):
``probe``'s checks. Free of asyncio themselves; nothing imports them but the CLI. Their
commands (``probe``, ``chat``, ``test-agent``, ``replay``) are in ``commands``, a module each.

Modules::

    chat/          chat: a prompt line (or piped prompts), over the client core
    probe/         probe, CHECKS: an agent's checks, one @check each, over the client core
    replay.py      drive_agent: replay --as client, over the client core
    test_agent/    TestAgent, serve: the agent that checks a client, one @check each
    turn.py        PromptTurn, drive_turn: a prompt turn to its end, as the wire model says
    words.py       agent_words, ended_words, shown_line...: what probe and chat say
    commands/      the layer's click commands, a module each, named for the command
"""
