"""Shipped, but not the proxy: the example agent, the demo and the benchmark (only ``cli``
imports them); ``commands`` (``demo``'s)."""
