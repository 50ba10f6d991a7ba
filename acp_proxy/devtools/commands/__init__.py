"""The developers' tools' command, ``demo`` (``demo.py``)."""
