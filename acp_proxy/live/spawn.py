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

__all__ = ["Agent", "AgentNotExecutable", "AgentNotFound", "start_agent"]


class AgentNotFound(Exception):
    """The agent command does not exist."""


class AgentNotExecutable(Exception):
    """The agent command exists but cannot be executed."""


class Agent:
    """A started agent, and the proxy's ends of its pipes (not inherited by children),
    which whoever relays takes over (:meth:`take`)."""

    __slots__ = ("_taken", "argv", "process", "stderr", "stdin", "stdout")

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

    @property
    def pid(self) -> int:
        return self.process.pid

    def take(self) -> tuple[int, int, int]:
        """The pipes (stdin, stdout, stderr), now the caller's to close."""
        self._taken = True
        return self.stdin, self.stdout, self.stderr

    def kill(self) -> None:
        """Stop it at once (its whole process group) and reap it; close the pipes unless
        they were taken. For when the proxy fails before or outside the relay, which
        otherwise does this in order."""
        if self.process.poll() is None:
            signal_group(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
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
