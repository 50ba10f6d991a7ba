"""A session assembled, the one place it is, whatever side acp-proxy plays: the wire between
two others (``run``), the client (:class:`~acp_proxy.live.client.Client`: ``probe``, ``chat``,
``replay --as client``) or the agent (:class:`~acp_proxy.live.server.Server`: ``test-agent``,
``replay``).

A session is an :class:`~acp_proxy.live.observer.Observer` with its wire model (the
validator's), the validator, the recorder (``--record``, ``--no-record``; ``--redact``: the
command line recorded with its secrets hidden, and every frame as ``acp-proxy redact`` would
write it) and the chain of addons (:func:`~acp_proxy.live.addons.run_addons`: the live log,
the transcript, the findings log, the notices, then the role's own parts and the user's
``--addon``, which run off the relay: :class:`~acp_proxy.live.user_addons.OffRelay`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from acp_proxy.core.validator import Validator
from acp_proxy.live.addons import run_addons
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder, session_recorder
from acp_proxy.live.user_addons import ADDONS_THREAD, AddonFileError, load_addons, off_relay
from acp_proxy.log import Logger
from acp_proxy.transcript.items import Addon
from acp_proxy.transcript.redact import Redactor

__all__ = ["Recording", "assemble", "user_addons"]


@dataclass(frozen=True, slots=True)
class Recording:
    """How a session is recorded: as ``run``'s options say it (``record``: ``--record``, None
    the default directory; ``no_record``; ``redact``; ``record_stderr``: not ``--no-stderr``)."""

    record: str | None = None
    no_record: bool = False
    redact: bool = False
    record_stderr: bool = True
    #: The user's own addons (``--addon``), after the role's parts.
    addons: Sequence[Addon] = field(default_factory=tuple)


def assemble(
    log: Logger,
    argv: Sequence[str],
    pid: int | None,
    recording: Recording | None = None,
    *,
    started: str | None = None,
    log_findings: bool = True,
    notify_client: bool = False,
    parts: Iterable[Addon] = (),
) -> Observer:
    """A session's observer, its validator and recorder (``observer.validator``,
    ``observer.recorder``), and its chain: ``run``'s (:func:`run_addons`), then the role's
    ``parts`` (a front-end's), then the user's addons. ``argv``, ``pid``, ``started``: what the
    recording's start record says (``argv`` with its secrets hidden under ``--redact``);
    ``log_findings`` False: the role shows the findings itself."""
    recording = recording or Recording()
    redactor = None
    recorded_argv = list(argv)
    if recording.redact:
        redactor = Redactor()
        recorded_argv = redactor.argv(recorded_argv)[0]
    recorder = (
        Recorder(None, log)
        if recording.no_record
        else session_recorder(recording.record, log, recorded_argv, pid, started)
    )
    validator = Validator()
    chain = run_addons(
        recorder,
        log,
        validator,
        redactor=redactor,
        record_stderr=recording.record_stderr,
        notify_client=notify_client,
        log_findings=log_findings,
        then=[*parts, *off_relay(list(recording.addons), log)],  # the user's: off the relay
    )
    return Observer(recorder, log, validator, addons=chain)


def user_addons(files: Iterable[str], stdout_is_ours: bool = False) -> list[Addon]:
    """``--addon`` (any role's): the user's addons, loaded before anything crosses (a file
    that gives none is a usage error, exit 2). What their code prints goes to stderr from
    here on: stdout belongs to the protocol (the relay writes to its descriptor, not
    ``sys.stdout``). ``stdout_is_ours`` (probe, chat: stdout is their report or the
    agent's reply): only what the addons print goes to stderr (:class:`AddonsPrintToStderr`),
    the command's own output to stdout still."""
    files = list(files)
    if not files:
        return []
    sys.stdout = AddonsPrintToStderr(sys.stdout, sys.stderr) if stdout_is_ours else sys.stderr
    addons: list[Addon] = []
    for spec in files:
        try:
            addons += load_addons(spec)
        except AddonFileError as exc:  # (the context's: where it is set said, if not typed)
            ctx = click.get_current_context()
            param = next(p for p in ctx.command.params if p.name == "addon_files")
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    if isinstance(sys.stdout, AddonsPrintToStderr):
        sys.stdout.loading = False
    return addons


class AddonsPrintToStderr:
    """``sys.stdout`` for a command whose stdout is its own output (probe's report, chat's
    reply) while the user's addons run: what the addons' thread (and their files, as they
    load, in the main thread before the session) writes goes to stderr, the rest to the
    stdout it stands for."""

    def __init__(self, stdout: Any, stderr: Any) -> None:
        self._stdout, self._stderr = stdout, stderr
        self.loading = True

    def _target(self) -> Any:
        here = threading.current_thread()
        if here.name == ADDONS_THREAD or (self.loading and here is threading.main_thread()):
            return self._stderr
        return self._stdout

    def write(self, text: str) -> int:
        return int(self._target().write(text))

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:  # (fileno, isatty, buffer, encoding...)
        return getattr(self._stdout, name)
