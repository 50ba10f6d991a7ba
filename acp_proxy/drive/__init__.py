"""Front-ends that drive an agent through the client core (:mod:`acp_proxy.live.client`):
``probe``'s checks. Free of asyncio themselves; nothing imports them but the CLI. Their
commands (``probe``, ``chat``, ``test-agent``, ``replay``) are in ``commands``, a module each."""
