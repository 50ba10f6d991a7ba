"""Start the agent, with its three pipes: the first thing ``acp-proxy run`` does.

The agent is started before the proxy loads the rest of itself (the validator, the
schemas, the recorder, asyncio), so the agent's own start, often the longest part of
a session's start, overlaps the proxy's instead of following it. What the agent
writes meanwhile waits in its pipe; nothing is read or lost before the relay runs.

This module imports nothing heavy, on purpose: only the standard library's process
handling.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading

__all__ = [
    "Agent",
    "AgentNotExecutable",
    "AgentNotFound",
    "Early",
    "Watchdog",
    "signal_group",
    "start_agent",
    "take_agent",
]


class AgentNotFound(Exception):
    """The agent command does not exist."""


class AgentNotExecutable(Exception):
    """The agent command exists but cannot be executed."""


class Agent:
    """A started agent, and the proxy's ends of its pipes (not inherited by children),
    which whoever relays takes over (:meth:`take`)."""

    __slots__ = ("_taken", "argv", "process", "stderr", "stdin", "stdout", "watchdog")

    def __init__(
        self,
        argv: list[str],
        process: subprocess.Popen[bytes],
        stdin: int,
        stdout: int,
        stderr: int,
    ) -> None:
        self.argv = argv
        self.process = process
        #: Where the proxy writes the agent's stdin, and reads its stdout and stderr.
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self._taken = False
        #: What stops the agent's process group if the proxy dies (:class:`Watchdog`).
        self.watchdog = Watchdog.start(process.pid)

    @property
    def pid(self) -> int:
        return self.process.pid

    def take(self) -> tuple[int, int, int]:
        """The pipes (stdin, stdout, stderr), now the caller's to close."""
        self._taken = True
        return self.stdin, self.stdout, self.stderr

    def release(self) -> None:
        """The session is over: what is left of the agent's process group (a child of a
        wrapper script, one that ignored SIGTERM) gets SIGTERM, then SIGKILL after a grace,
        from the watchdog, which ends with it. Idempotent."""
        if self.watchdog is not None:
            self.watchdog.release()

    def kill(self) -> None:
        """Stop it at once (its whole process group) and reap it; close the pipes unless
        they were taken. For when the proxy fails before or outside the relay, which
        otherwise does this in order."""
        if self.process.poll() is None:
            signal_group(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        self.release()
        if not self._taken:
            self._taken = True
            _close(self.stdin, self.stdout, self.stderr)


def start_agent(argv: list[str]) -> Agent:
    """Start ``argv`` in its own process group, with pipes for its stdio.

    Raises :class:`AgentNotFound` or :class:`AgentNotExecutable` if it cannot be started.
    """
    child_in, agent_in = os.pipe()
    agent_out, child_out = os.pipe()
    agent_err, child_err = os.pipe()
    for fd in (agent_in, agent_out, agent_err):
        os.set_inheritable(fd, False)
    try:
        process = subprocess.Popen(
            argv,
            stdin=child_in,
            stdout=child_out,
            stderr=child_err,
            process_group=0,
            # No thread is running yet: the agent is started first (or before the relay
            # reads anything in a worker thread).
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
        )
    except FileNotFoundError as exc:
        _close(agent_in, agent_out, agent_err)
        raise AgentNotFound(argv[0]) from exc
    except (PermissionError, IsADirectoryError, NotADirectoryError) as exc:
        _close(agent_in, agent_out, agent_err)
        raise AgentNotExecutable(argv[0]) from exc
    except OSError as exc:  # e.g. ENOEXEC: not a program the kernel can run
        _close(agent_in, agent_out, agent_err)
        raise AgentNotExecutable(f"{argv[0]}: {exc.strerror}") from exc
    finally:
        _close(child_in, child_out, child_err)
    return Agent(list(argv), process, agent_in, agent_out, agent_err)


class Early:
    """An agent started before the command that relays it has read its options
    (``acp_proxy.__main__``: before click is even imported), until that command takes it
    over (:meth:`take`). Whatever command did not take it, it is stopped (:meth:`discard`)
    before it was sent a byte."""

    __slots__ = ("agent", "argv")

    def __init__(self, argv: list[str], agent: Agent | None) -> None:
        self.argv = argv
        self.agent = agent

    @classmethod
    def start(cls, argv: list[str]) -> Early:
        """``argv`` started; an agent that cannot start is left to the command, which
        tries again and says why."""
        try:
            return cls(argv, start_agent(argv))
        except (AgentNotFound, AgentNotExecutable):
            return cls(argv, None)

    def take(self, argv: list[str]) -> Agent:
        """The agent, if it is ``argv`` (else it is stopped, and ``argv`` started):
        :func:`start_agent`, the agent already started."""
        agent, self.agent = self.agent, None
        if agent is not None and agent.argv == list(argv):
            return agent
        if agent is not None:
            agent.kill()
        return start_agent(list(argv))

    def discard(self) -> None:
        """Not taken (the command line was wrong after all): stopped. Idempotent."""
        agent, self.agent = self.agent, None
        if agent is not None:
            agent.kill()


def take_agent(early: Early | None, argv: list[str]) -> Agent:
    """The agent ``argv``: the one started early, if it is, else started now."""
    return start_agent(list(argv)) if early is None else early.take(argv)


#: What the watchdog runs: it ignores the signals a terminal or the proxy's stop sends its
#: group, waits for the end of its stdin (the proxy closed it, or died: the kernel closes it
#: then), and stops the group. It is a member of the group it watches, so the group's id
#: cannot be reused by another process before it is done.
_WATCHDOG = (
    'trap "" INT HUP TERM QUIT; read _; kill -TERM "-$1" 2>/dev/null; sleep "$2"; '
    'kill -KILL "-$1" 2>/dev/null'
)

#: Seconds between the watchdog's SIGTERM and its SIGKILL.
WATCHDOG_GRACE = 2


class Watchdog:
    """A small ``sh`` in a process group of ours that stops that group (SIGTERM, then
    SIGKILL after :data:`WATCHDOG_GRACE` seconds) once its stdin ends: when the proxy
    :meth:`release` s it, or when the proxy dies in any way, SIGKILL included (the
    kernel closes the pipe's other end, which only the proxy holds). The parent-death
    signal reaches only the agent itself; this reaches the whole group (a wrapper's
    child, an agent that ignores SIGTERM, a command run in the background)."""

    def __init__(self, process: subprocess.Popen[bytes], pipe: int) -> None:
        self._process = process
        self._pipe: int | None = pipe

    @classmethod
    def start(cls, group: int) -> Watchdog | None:
        """A watchdog over process group ``group`` (None: no ``sh`` to run it)."""
        read_end, write_end = os.pipe()
        os.set_inheritable(write_end, False)
        argv = ["/bin/sh", "-c", _WATCHDOG, "acp-proxy-watchdog", str(group), str(WATCHDOG_GRACE)]
        process = None
        for joined in (group, 0):  # in the group it watches; else (it ended) its own
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=read_end,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    process_group=joined,
                )
                break
            except OSError:
                continue
        os.close(read_end)
        if process is None:
            os.close(write_end)
            return None
        return cls(process, write_end)

    def release(self) -> None:
        """Stop the group now (in the background: the proxy does not wait). Once."""
        if self._pipe is None:
            return
        os.close(self._pipe)
        self._pipe = None
        threading.Thread(target=self._process.wait, name="acp-proxy watchdog", daemon=True).start()


def signal_group(pid: int, sig: int) -> bool:
    """Send ``sig`` to the agent's process group; False if nothing is left."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _die_with_parent() -> None:
    """In the agent, before exec: get SIGTERM if the proxy dies (Linux).

    The agent runs in its own process group, so a SIGKILL the editor sends the
    proxy no longer reaches it as it would without the proxy; this restores
    that. Runs in the forked child, where the proxy has started no threads yet.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
