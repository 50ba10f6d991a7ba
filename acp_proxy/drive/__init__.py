"""Front-ends that drive an agent through the client core (:mod:`acp_proxy.live.client`):
``probe``'s checks. Free of asyncio themselves; nothing imports them but the CLI."""
