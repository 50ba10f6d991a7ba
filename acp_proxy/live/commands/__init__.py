"""The live shell's command, ``run`` (``run.py``): a session assembled beside the relay,
the observer and the recorder it starts.

Modules::

    run.py  run
"""
