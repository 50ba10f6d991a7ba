"""The developers' tools' command, ``demo`` (``demo.py``).

Modules::

    demo.py  demo
"""
