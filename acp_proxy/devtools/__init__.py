"""Shipped, but not the proxy: the example agent, the demo and the benchmark (only ``cli``
imports them); ``commands`` (``demo``'s).

Modules::

    bench.py          the benchmark: figures, never assertions
    demo.py           the demo: a session through the proxy, shown
    example_agent.py  the example agent (a v1/v2 agent to try acp-proxy on)
    commands/         the layer's click commands, a module each, named for the command
"""
