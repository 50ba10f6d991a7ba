"""Shipped, but not the proxy: the example agent, the demo and the benchmark (only ``cli``
imports them); ``commands`` (``demo``'s).

Modules::

    bench.py          the benchmark: figures, never assertions; its agents, main
    bench_live.py     the live workloads: setups, a process's costs, one run of each
    bench_readers.py  the offline workloads: readers, hostile inputs, the report page
    bench_tables.py   the tables: each workload through its setups in turn, printed
    demo.py           the demo: a session through the proxy, shown
    example_agent.py  the example agent (a v1/v2 agent to try acp-proxy on)
    commands/         the layer's click commands, a module each, named for the command
"""
