"""``acp-proxy chat``: talk to an agent from a terminal, or from a script.

acp-proxy plays the client (:class:`~acp_proxy.live.client.Client`: the agent started,
relayed, validated and recorded as ``run`` does), initializes, opens a session (or loads or
resumes one) and sends each line it reads as a ``session/prompt``, one turn at a time.

- **On a terminal** (``interactive``): a prompt line; the reply drawn as it streams, by the
  conversation view of ``show --conversation``
  (:class:`~acp_proxy.readers.text.LiveConversation`); permission requests asked inline;
  Ctrl-C during a turn sends ``session/cancel`` and the chat goes on (a second one quits, as
  Ctrl-D or ``/quit`` at the prompt do); slash commands (:data:`~.slash.HELP`). The agent runs in a
  process group of its own: the terminal's SIGINT reaches the chat, never the agent. What
  is typed during a turn is not echoed, and waits for the prompt after it (a Ctrl-D: the
  chat ends once the turn has); a permission question sets it aside, never an answer, and
  the prompt after the turn starts with it (so with a line typed at the question that
  answers nothing, a paste). A paste is one prompt, whatever its lines (the
  terminal asked to mark it, readline's or not); a line ending in ``\\`` goes on at the next.
- **Piped**: each line a prompt, sent once the turn before has ended; only the agent's
  message text on stdout (tabs and line feeds as written; not a loaded session's history);
  permission requests answered by the policy; a turn that ended otherwise than ``end_turn``
  said on stderr. The chat's own commands are its own, any other ``/word`` the agent's.
  ``-p``/``--prompt``: one turn, as piped, its text with piped stdin after it (or stdin's:
  ``-``). ``--format json`` (piped or not): stdout is one JSON object a line, a ``start``
  first, then :func:`~.events.json_events`', findings, each turn's end, and a ``result``
  last (failures too), built from the messages the view draws.
- Only the chat's session is shown (another's updates: their findings say it); message
  text after its turn ended is late: apart, marked (piped: on stderr).
- Findings (warnings and errors), what the services refused, and errors are lines on
  stderr (dimmed on a terminal; each of the chat's own starting ``acp-proxy chat:``), as
  they happen.
- Every wait has a bound (``timeout``: a response, or in a turn the agent's next message; a
  turn past it is cancelled, then given up); an agent that cannot go on is one line with its
  exit status and the last lines of its stderr.

Free of asyncio: the client core's blocking calls do the waiting.

Modules::

    run.py          chat: the chat assembled and run to its end, its exit status
    options.py      Options, Quit, the exit statuses: what the user asked for
    wire.py         Wire: each frame taken and drawn, the waits, the chat's output
    session.py      Chat: initialize, the session opened, each turn to its end
    interactive.py  Interactive: the prompt line, questions asked, Ctrl-C and Ctrl-D
    terminal.py     Keyboard: the terminal's modes, a paste marked, what was typed ahead
    permissions.py  ChatServices, asked_about: permission requests, put in a few lines
    slash.py        HELP, Commands: the chat's own /commands
    script.py       piped, one_turn, script_prompt: the chat for a script (-p, stdin)
    events.py       json_events, start_record, result_record: --format json's objects
    last.py         last_session: --continue's session, from the recordings
"""

from acp_proxy.drive.chat.events import json_events, not_started
from acp_proxy.drive.chat.options import Options
from acp_proxy.drive.chat.run import chat
from acp_proxy.drive.chat.script import script_prompt
from acp_proxy.drive.chat.slash import HELP

__all__ = ["HELP", "Options", "chat", "json_events", "not_started", "script_prompt"]
