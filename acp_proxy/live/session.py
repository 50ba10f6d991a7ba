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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import click

from acp_proxy.core.validator import Validator
from acp_proxy.live.addons import run_addons
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder, session_recorder
from acp_proxy.live.user_addons import AddonFileError, load_addons, off_relay
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


def user_addons(files: Iterable[str]) -> list[Addon]:
    """``--addon`` (any role's): the user's addons, loaded before anything crosses (a file
    that gives none is a usage error, exit 2). What their code prints goes to stderr from
    here on: stdout belongs to the protocol (the relay writes to its descriptor, not
    ``sys.stdout``)."""
    files = list(files)
    if not files:
        return []
    sys.stdout = sys.stderr
    addons: list[Addon] = []
    for spec in files:
        try:
            addons += load_addons(spec)
        except AddonFileError as exc:  # (the context's: where it is set said, if not typed)
            ctx = click.get_current_context()
            param = next(p for p in ctx.command.params if p.name == "addon_files")
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return addons
