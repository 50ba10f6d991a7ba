"""The readers' commands, a module each, named for the command (``ls``: ``ls.py``), beside
the readers it drives: each one's options, help, few words and examples in one place
(:func:`acp_proxy.clihelp.command`), the readers it drives imported in its body (a command
loads what it uses; ``acp-proxy --help`` loads none of them). What they share is in
``shared.py``; ``acp_proxy.cli`` assembles the group.

Modules::

    diff.py      diff
    export.py    export
    follow.py    follow
    inspect.py   inspect
    ls.py        ls (and pruning's options)
    mcp.py       mcp
    redact.py    redact
    report.py    report
    rules.py     rules
    search.py    search
    shared.py    what they share: which files, frames, session (replay's too)
    show.py      show
    stats.py     stats
    validate.py  validate
"""
