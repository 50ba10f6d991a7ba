"""Recordings in, views out; never imports ``live``.

``annotate`` (records grouped by connection, findings attached), ``conversation`` (what the user
saw), ``text`` (the timeline and the conversation as text), ``stats``, ``report`` (one HTML
page), ``follow`` (a growing recording), ``replay`` (a recording as the agent or the client);
``commands`` (their commands, a module each: ``show``, ``stats``, ``validate``...).
"""
