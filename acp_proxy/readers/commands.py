"""The readers' commands: ``show``, ``follow``, ``stats``, ``report``, ``validate``, ``diff``,
``ls``, ``search``, ``inspect``, ``redact``, ``rules`` and ``replay``; each one's options and
body beside the readers it drives (imported inside the body: a command loads what it uses)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from acp_proxy.clihelp import (
    _cannot_write,
    _color_option,
    _colored,
    _connection,
    _connection_options,
    _deprecated,
    _env,
    _given,
    _only_with,
    _output,
    _pager_option,
    _say,
    _Seconds,
    _size,
    _Unreadable,
)
from acp_proxy.core.visible import dumps, visible

if TYPE_CHECKING:
    from acp_proxy.readers.annotate import RecordingError


def _json_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format text|json`` (and ``--json``, hidden: its older spelling)."""

    def add(func: Any) -> Any:
        func = click.option("--json", "legacy_json", is_flag=True, hidden=True)(func)
        return _format_option(description)(func)

    return add


def _json_wanted(fmt: str, legacy_json: bool) -> bool:
    if legacy_json:
        _deprecated("--json", "--format json")
    return legacy_json or fmt == "json"


def _same_file(output: str, recording: str) -> bool:
    """Whether writing ``output`` would replace ``recording``: the same path, or the same
    file under another name (a symlink, a hard link)."""
    try:
        return os.path.samefile(output, recording)
    except OSError:  # (one of them does not exist yet)
        return Path(output).resolve() == Path(recording).resolve()


@click.command()
@click.argument("recording", metavar="RECORDING")
@click.option(
    "-o",
    "--output",
    metavar="OUT.html",
    help="Where to write the page (-: stdout). Default: the recording's path with .html "
    "(from stdin, RECORDING -, -o is needed).",
)
@click.option(
    "--revalidate",
    is_flag=True,
    help="Also run today's rules and mark the findings that differ from the stored ones.",
)
@click.option(
    "--against",
    metavar="A.jsonl",
    help="Also list what differs from this recording (as `acp-proxy diff A RECORDING`), each "
    "difference linked to its row.",
)
def report(recording: str, output: str | None, revalidate: bool, against: str | None) -> None:
    """Write RECORDING as one self-contained HTML page: the sequence of frames with their
    findings and bytes, the conversation, and the stats. It opens offline (nothing is fetched),
    so it can be attached to a bug report.
    """
    from acp_proxy.files import whole
    from acp_proxy.readers.report import write_report

    if recording == "-" and output is None:
        raise click.UsageError(
            "standard input has no name to make the page's from: give -o OUT.html, or -o - "
            "for standard output"
        )
    out = output or str(Path(recording).with_suffix(".html"))
    if out != "-" and recording != "-" and _same_file(out, recording):
        raise click.UsageError("the output would overwrite the recording; give -o OUT.html")
    try:
        with contextlib.ExitStack() as stack:
            # the page whole or not at all (files.whole): Ctrl-C leaves no half of it
            target = out if out == "-" else stack.enter_context(whole(out))
            size = write_report(recording, target, revalidate=revalidate, against=against)
    except OSError as exc:
        _cannot_write(out, exc)
    if out == "-":
        _say(f"acp-proxy report: {size:,} bytes written to standard output")
        return
    with _output("never") as emit:
        emit(visible(f"{out} ({size:,} bytes)"))


@click.command()
@click.argument("recording", metavar="RECORDING")
@click.option(
    "-o", "--output", metavar="OUT", required=True, help="Where to write the copy (-: stdout)."
)
@click.option(
    "--contents",
    is_flag=True,
    help="Also replace file contents, resource contents, terminal output, prompt text (and "
    "its echoes: session titles) and what tool calls carry (content, rawInput, rawOutput) "
    "with their size and a tag.",
)
def redact(recording: str, output: str, contents: bool) -> None:
    """Write a copy of RECORDING that is safe to attach to a bug report.

    \b
    Replaced by "[redacted:<tag>]" (the same value gets the same tag in the copy):
    the values of env and headers entries, authenticate / auth/login parameters,
    any field whose name looks like a token, key, secret, password, credential,
    cookie or authorization, secret-looking flags of the agent command, and in
    every string (stored findings too) API-key shapes, private key blocks, URL and
    curl -u passwords, secret headers, NAME=value secrets, base64 user:secret
    (docker auth, .npmrc _auth), short password flags (mysql -pX, sshpass -p X),
    and a key streamed across a message's chunks. A line that is no
    record is replaced by its size; a record with a key twice, as a reader reads it.
    Everything else stays byte for byte; frames that changed list the paths
    (`"redacted": [...]`). RECORDING - is standard input. The copy is written
    whole or not at all (an error or Ctrl-C leaves none).
    Exit status: 0 written, 2 unreadable recording.
    """
    import itertools

    from acp_proxy.files import open_output, whole
    from acp_proxy.transcript.reading import open_lines
    from acp_proxy.transcript.redact import redact_lines

    to_stdout = output == "-"
    if recording != "-" and not to_stdout and _same_file(output, recording):
        raise click.UsageError("the copy would overwrite the recording; give another -o")
    lines = open_lines(recording)  # (- is standard input)
    first = next(lines)  # says clearly if it is no transcript, before anything is written
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(lines.close)  # (the recording closed on a failed write too)
            # the copy whole or not at all (files.whole): Ctrl-C leaves no half of it that
            # reads as a shorter recording; closed (flushed) before it is renamed into place
            target = output if to_stdout else stack.enter_context(whole(output))
            out = stack.enter_context(os.fdopen(open_output(target, dash=True), "wb"))
            records, changed = redact_lines(itertools.chain([first], lines), out, contents)
    except OSError as exc:
        _cannot_write(output, exc)
    records_text = f"{records} record{'' if records == 1 else 's'}"
    if to_stdout:
        _say(f"acp-proxy redact: {records_text}, {changed} redacted, to standard output")
        return
    with _output("never") as emit:
        emit(visible(f"{output}: {records_text}, {changed} redacted"))


def _format_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=description,
    )


@click.command()
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "sarif"]),
    default="text",
    show_default=True,
    help="text: FILE:LINE: seq SEQ: LEVEL RULE: MESSAGE lines; json: one object per finding; "
    "junit: JUnit XML (a suite per recording, a test case per rule); sarif: SARIF 2.1.0.",
)
@click.option(
    "--by-rule",
    is_flag=True,
    help="text: after the summary line (stderr), a line per rule broken: RULE: N LEVEL.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Warnings fail too (exit 1), such as what the shipped schemas do not define yet.",
)
def validate(recordings: tuple[str, ...], fmt: str, by_rule: bool, strict: bool) -> None:
    """Re-run the validator over recorded sessions and print the findings.

    Stored findings are ignored and recomputed; a file with several sessions
    appended is validated session by session. As text, a line per finding,
    and a summary line on stderr: files, errors, warnings, info. Exit status: 0 no
    error-level finding (with --strict: no warning either), 1 at least one, 2 a file
    that cannot be read.
    """
    from acp_proxy.readers.annotate import RecordingError, finding_line, located, probe_marks, read
    from acp_proxy.readers.ci import Checked, junit, sarif

    if by_rule and fmt != "text":
        raise click.UsageError("--by-rule has no effect with --format " + fmt)
    errors = 0
    failing = ("error", "warning") if strict else ("error",)
    unreadable = False
    checked: list[Checked] = []
    levels: dict[str, int] = {}
    rules: dict[str, tuple[int, str]] = {}
    with _output("never") as emit:
        for path in recordings:
            item = Checked(path)
            checked.append(item)
            try:
                name = item.name  # (- is "(standard input)", as grep and search say)
                marks = probe_marks(path)
                for line, finding in located(_schemas_noted(name, read(path)), marks):
                    errors += finding.level in failing
                    levels[finding.level] = levels.get(finding.level, 0) + 1
                    rules[finding.rule] = (rules.get(finding.rule, (0, ""))[0] + 1, finding.level)
                    if fmt in ("junit", "sarif"):
                        item.findings.append((line, finding))
                    else:
                        emit(finding_line(name, line, finding, fmt))
            except RecordingError as exc:
                _complain(exc)
                item.unreadable = str(exc)
                unreadable = True
        if fmt == "junit":
            emit(junit(checked))
        elif fmt == "sarif":
            emit(sarif(checked).decode())
    if fmt == "text" and not all(item.unreadable for item in checked):
        # on stderr, as a compiler's count: stdout is the findings, a line each
        _say(_validated(checked, levels))
        for rule, (count, level) in sorted(rules.items(), key=lambda r: (-r[1][0], r[0])):
            if by_rule:
                _say(f"  {rule}: {count} {level}")
    sys.exit(2 if unreadable else 1 if errors else 0)


def _schemas_noted(path: str, items: Iterable[Any]) -> Iterator[Any]:
    """``items`` as they are; a session recorded against other schemas than the shipped ones
    said on stderr at its start record (its live findings were made against those: today's
    may differ, as a newer schema's variant is no longer a warning)."""
    from acp_proxy.core.schema import schema_sources
    from acp_proxy.transcript.records import StartRecord

    shipped = schema_sources().as_dict()
    for item in items:
        record = getattr(item, "record", None)
        if type(record) is StartRecord and record.schemas:
            said = record.schemas
            names = [n for n in shipped if n != "from" and said.get(n) != shipped[n]]
            if names:
                then = ", ".join(f"{n} {said.get(n, '?')}" for n in names)
                now = ", ".join(f"{n} {shipped[n]}" for n in names)
                where = f"{path}:{record.line}"
                said_now = f"checked against {now} (the stored findings may differ)"
                _say(visible(f"acp-proxy: {where}: recorded against schema {then}; {said_now}"))
        yield item


def _validated(checked: list[Any], levels: dict[str, int]) -> str:
    """``validate``'s summary line: files, errors, warnings, info."""
    files = len(checked)
    line = f"{files} file{'s' if files != 1 else ''}"
    unreadable = sum(1 for item in checked if item.unreadable)
    if unreadable:
        line += f" ({unreadable} unreadable)"
    counts = [(levels.get(level, 0), level) for level in ("error", "warning", "info")]
    words = {"error": "errors", "warning": "warnings", "info": "info"}
    said = ", ".join(f"{n} {words[level] if n != 1 else level}" for n, level in counts)
    return f"{line}: {said}"


def _age(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    from acp_proxy.readers.catalog import parse_age

    try:
        return None if value is None else parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _targets(paths: tuple[str, ...]) -> tuple[str, ...]:
    """What ``ls`` and ``search`` look at: the paths given, else the recordings directory;
    none when that directory is not made yet (no session was recorded: no recordings, no
    error). A directory the user names that does not exist stays an error."""
    from acp_proxy.transcript.names import default_record_dir

    if paths:
        return paths
    default = default_record_dir()
    return (str(default),) if os.path.lexists(default) else ()


def _unlisted(problems: list[Any], targets: tuple[str, ...]) -> bool:
    """Say each file ``ls`` or ``search`` could not take; whether one fails the command (exit
    2, as grep's unreadable file, even when others matched): a file named that cannot be
    read or is no recording, and any file that cannot be read (a session may be in it). A
    file found in a directory that is no recording is said and does not fail it; an empty
    one there is not even said (a session starting writes its start record next)."""
    named = {Path(t) for t in targets if t == "-" or not Path(t).is_dir()}
    failed = False
    for problem in problems:
        if problem.path in named or problem.unreadable:
            failed = True
        elif problem.empty:
            continue
        _say(f"acp-proxy: {problem}")
    return failed


@click.command(name="ls")
@click.argument("paths", nargs=-1, metavar="[DIR|FILES...]")
@_json_option("text: a line per session; json: an object per session, for tools.")
@click.option(
    "--since", callback=_age, metavar="AGE", help="Only sessions started in the last AGE (2d, 12h)."
)
@click.option("--until", callback=_age, metavar="AGE", help="Only sessions started before AGE ago.")
@click.option(
    "--agent", metavar="NAME", help="Only sessions whose agent name or command contains NAME."
)
@click.option("--with-findings", is_flag=True, help="Only sessions with errors or warnings.")
@click.option(
    "--prune",
    is_flag=True,
    help="First remove old recordings from DIR (one; default: the recordings directory), as "
    "--keep-days/--keep-size say.",
)
@click.option(
    "--dry-run", is_flag=True, help="With --prune: say what would be removed, remove nothing."
)
@click.option(
    "--keep-days",
    type=_Seconds(high=100_000.0),
    envvar=_env("KEEP_DAYS"),
    metavar="N",
    help="With --prune: remove recordings older than N days.",
)
@click.option(
    "--keep-size",
    callback=_size,
    envvar=_env("KEEP_SIZE"),
    metavar="SIZE",
    help="With --prune: remove the oldest until the rest fit SIZE (500M, 2G).",
)
def list_recordings(
    paths: tuple[str, ...],
    fmt: str,
    legacy_json: bool,
    since: Any,
    until: Any,
    agent: str | None,
    with_findings: bool,
    prune: bool,
    dry_run: bool,
    keep_days: float | None,
    keep_size: int | None,
) -> None:
    """The recorded sessions, newest first: start, agent, protocol version, duration, prompt
    turns, frames, findings by level, size, path. Default: the recordings directory.

    A session's summary is read once and kept in a small index in the user's cache
    directory ($XDG_CACHE_HOME or ~/.cache, acp-proxy/), read again when the file changes.
    """
    as_json = _json_wanted(fmt, legacy_json)
    from acp_proxy.readers.catalog import list_sessions, recordings_in, select, table
    from acp_proxy.readers.catalog import prune as prune_directory
    from acp_proxy.transcript.names import default_record_dir

    if "-" in paths:  # (ls lists files: their size, their time, an index of them)
        raise click.UsageError("- (standard input) is no file to list (show - reads it)")
    targets = _targets(paths)
    if not targets:
        _say(f"acp-proxy: no recordings yet in {default_record_dir()}")
    if not prune:
        _only_with("without --prune", "keep_days", "keep_size", "dry_run")
    if prune:
        if keep_days is None and keep_size is None:
            raise click.UsageError("--prune needs --keep-days or --keep-size")
        # one directory, the one named (else the default): never another than it says
        if paths and (len(paths) != 1 or not Path(paths[0]).is_dir()):
            raise click.UsageError("--prune tidies one directory: name one DIR, or none")
        done = "would remove" if dry_run else "removed"
        for target in targets:
            for removed in prune_directory(Path(target), keep_days, keep_size, dry_run=dry_run):
                _say(f"acp-proxy: {done} {removed}")
    files, problems = recordings_in(targets)
    for problem in problems:
        _say(f"acp-proxy: {problem}")
    sessions, unlisted = list_sessions(files)
    failed = _unlisted(unlisted, targets)
    shown = select(sessions, since, until, agent, with_findings)
    with _output("never") as emit:
        for line in (dumps(s.as_json()).decode() for s in shown) if as_json else table(shown):
            emit(line)
    sys.exit(2 if problems or failed else 0)


@click.command()
@click.argument("path", required=False, metavar="[DIR|FILE]")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Default: a free one.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.option(
    "--request-timeout",
    type=_Seconds(high=3600.0, open_low=True),
    default=10.0,
    show_default=True,
    envvar=_env("REQUEST_TIMEOUT"),
    help="Seconds a connection has to send its request before it is closed.",
)
@click.option("--parent", type=int, hidden=True, help="Stop when this process is gone.")
def inspect(
    path: str | None, port: int, open_browser: bool, request_timeout: float, parent: int | None
) -> None:
    """Serve the report page on 127.0.0.1, live: the sessions of DIR (default: the recordings
    directory), newest first, each growing as it is recorded. Every URL carries a token; the
    URL is printed on stderr (--open gives the browser a private file that leads to it, never
    the token itself)."""
    import signal
    import threading

    from acp_proxy.readers.inspect import Inspector, redirect_file, serve
    from acp_proxy.transcript.names import default_record_dir

    if path == "-":  # (a page is served from files, read again as they grow)
        raise click.UsageError("inspect reads a directory or a file, not standard input")
    target = Path(path) if path else default_record_dir()
    if not target.exists():
        raise _Unreadable(f"{target}: no such file or directory")
    if not target.is_dir():
        _inspectable(target)
    inspector = Inspector(target)
    ready = threading.Event()
    server = threading.Thread(
        target=serve,
        args=(target, port, parent, ready, inspector, request_timeout),
        daemon=True,
    )
    server.start()
    ready.wait(10)
    url = inspector.url("/session/" + target.name) if target.is_file() else inspector.url()
    _say(f"acp-proxy inspect: {url}")
    # (stopped as by Ctrl-C, so that what it made is removed: run --inspect terminates it)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.ExitStack() as cleanup:
        if open_browser:
            import webbrowser

            try:
                page = cleanup.enter_context(redirect_file(url))
            except OSError as exc:
                _say(f"acp-proxy inspect: cannot make the page to open: {exc.strerror or exc}")
            else:
                webbrowser.open(page.as_uri())
        while server.is_alive():  # (Ctrl-C: exit 130, as every command; the stack cleans up)
            server.join(0.5)


def _inspectable(target: Path) -> None:
    """A file to inspect is refused before anything is served unless it is a recording (one
    line, exit 2); an empty one the recorder holds is one about to be written (served: it
    grows as it is recorded)."""
    from acp_proxy.readers.annotate import RecordingError, open_recording
    from acp_proxy.readers.catalog import being_written

    try:
        with contextlib.suppress(OSError):
            if target.stat().st_size == 0 and being_written(target):
                return
        next(iter(open_recording(str(target))), None)
    except RecordingError as exc:
        raise _Unreadable(str(exc)) from None


@click.command()
@click.argument("pattern")
@click.argument("paths", nargs=-1, metavar="[DIR|FILES...]")
@click.option("--method", metavar="GLOB", help="Only frames whose method matches.")
@click.option("--rule", metavar="GLOB", help="Only frames with a finding of a matching rule.")
@click.option(
    "--from", "side", type=click.Choice(["client", "agent"]), help="Only frames sent by that side."
)
@click.option("--session", metavar="ID", help="Only frames of that session.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match PATTERN without regard to case.")
@click.option("-l", "files_only", is_flag=True, help="Print only the names of files with a match.")
@_json_option("text: PATH:LINE: seq SEQ: SUMMARY lines; json: an object per match.")
def search(
    pattern: str,
    paths: tuple[str, ...],
    method: str | None,
    rule: str | None,
    side: str | None,
    session: str | None,
    ignore_case: bool,
    files_only: bool,
    fmt: str,
    legacy_json: bool,
) -> None:
    """The frames across recordings whose method, update variant, rule or text matches
    PATTERN (a regular expression), grep-style: PATH:LINE: seq SEQ: METHOD SUMMARY. Default: the
    recordings directory. Exit 0 when something matched, 1 when nothing did, 2 on error.
    """
    as_json = _json_wanted(fmt, legacy_json)
    if files_only and as_json:
        raise click.UsageError("--format json has no effect with -l (it prints file names)")
    import re

    from acp_proxy.readers.catalog import Unlisted, recordings_in
    from acp_proxy.readers.catalog import search as find

    try:
        re.compile(pattern)
    except re.error as exc:
        raise click.BadParameter(f"{pattern!r}: {exc}", param_hint="PATTERN") from None
    if rule is not None:
        _known_rule(rule)
    targets = _targets(paths)
    files, problems = recordings_in(targets)
    for problem in problems:
        _say(f"acp-proxy: {problem}")
    matched, named, failed = False, set(), False
    with _output("never") as emit:
        for hit in find(pattern, files, method, rule, side, session, ignore_case, files_only):
            if isinstance(hit, Unlisted):
                failed = _unlisted([hit], targets) or failed
                continue
            matched = True
            # (a newline in a file name, a rule or a finding makes no line of its own)
            if files_only:
                if hit.path not in named:
                    named.add(hit.path)
                    emit(visible(hit.path))
            elif as_json:
                emit(dumps(hit.as_json()).decode())
            else:
                seq = "-" if hit.seq is None else hit.seq
                rules = f"  [{', '.join(hit.rules)}]" if hit.rules else ""
                emit(visible(f"{hit.path}:{hit.line}: seq {seq}: {hit.summary}{rules}"))
    sys.exit(2 if problems or failed else 0 if matched else 1)


def _known_rule(glob: str) -> None:
    """A ``--rule`` GLOB that matches no rule of the catalog is a usage error naming the
    close ones (as ``rules RULE``): it could only ever match nothing."""
    import difflib
    import fnmatch

    from acp_proxy.core.rules import RULES

    if any(fnmatch.fnmatchcase(name, glob) for name in RULES):
        return
    close = difflib.get_close_matches(glob, list(RULES), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise click.BadParameter(
        visible(f"{glob!r} matches no rule{hint}; `acp-proxy rules` lists them"),
        param_hint="'--rule'",
    )


def _complain(exc: RecordingError) -> None:
    _say(f"acp-proxy: {exc}")


def _filter_options(func: Any) -> Any:
    func = _color_option("Colour findings and directions")(func)
    func = click.option(
        "--violations", is_flag=True, help="Only frames with findings, and standalone findings."
    )(func)
    func = click.option("--session", metavar="ID", help="Only frames of this session.")(func)
    func = click.option(
        "--method",
        metavar="PATTERN",
        help="Only frames of methods matching this glob (a response matches its request's).",
    )(func)
    func = click.option(
        "--from",
        "side",
        type=click.Choice(["client", "agent"]),
        help="Only frames sent by this side.",
    )(func)
    return func


@click.command()
@click.argument("recording", metavar="RECORDING")
@click.option(
    "--conversation",
    is_flag=True,
    help="Show the session as a client would render it, turn by turn.",
)
@_json_option("json: the conversation's reconstructed state (implies --conversation).")
@click.option(
    "--revalidate",
    is_flag=True,
    help="Recompute the findings with today's rules (as validate does) instead of showing the "
    "ones stored in the recording.",
)
@click.option(
    "--seq",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only frame N, whole: where it is, its JSON pretty-printed, its findings.",
)
@_filter_options
@_pager_option
def show(
    recording: str,
    conversation: bool,
    fmt: str,
    legacy_json: bool,
    revalidate: bool,
    seq: int | None,
    side: str | None,
    method: str | None,
    session: str | None,
    violations: bool,
    color: str,
) -> None:
    """Show a recording as a timeline (default) or as the conversation.

    \b
    The timeline has a line per frame: time since the start, seq, direction,
    request / response / notify, the method and a summary; findings right
    under their frame, as stored in the recording (--revalidate: recomputed).
    """
    as_json = _json_wanted(fmt, legacy_json)
    import orjson

    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.conversation import Conversation
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.readers.text import Timeline

    # (each option named as the user wrote it)
    as_typed = "--json" if legacy_json else "--format json"
    view = "--conversation" if conversation else as_typed
    if seq is not None:
        if conversation or as_json:
            raise click.UsageError(f"--seq shows one frame: not with {view}")
        _only_with("with --seq", "side", "method", "session", "violations")
        _show_frame(recording, seq, revalidate, color)
        return
    if conversation or as_json:
        from acp_proxy.readers.text import conversation_lines

        # The conversation is the session's state, as a client renders it: no frames to keep
        # by side or method, no findings (so none to recompute); --session picks one.
        _only_with(f"with {view}", "side", "method", "violations", "revalidate")
        if as_json:
            _only_with(f"with {as_typed}", "color", "no_color")

        # the whole file is read before anything is shown
        connections = Conversation.per_connection(read(recording, validate=False))
        if as_json:
            document = Conversation.document(connections, session)
            with _output("never") as emit:
                emit(dumps(document, option=orjson.OPT_INDENT_2).decode())
            return
        with _output(color) as emit:
            for line in conversation_lines(connections, session):
                emit(line)
        return
    only = TimelineFilter(side, method, session, violations)
    # A regular file is read to its end without waiting: lines go out in blocks. From a
    # pipe, each line goes out as soon as it is read (read() says which).
    items = read(recording, stored=not revalidate)
    with _output(color, live=not Path(recording).is_file()) as emit:
        Timeline(emit, only, _colored(color)).feed(items)


def _show_frame(recording: str, seq: int, revalidate: bool, color: str) -> None:
    """``show --seq N``: frame N of each connection, whole; exit 1 if there is none."""
    import orjson

    from acp_proxy.readers.annotate import plain, read
    from acp_proxy.transcript.records import FrameRecord

    found = False
    with _output(color) as emit:
        for item in plain(read(recording, stored=not revalidate)):
            record = item.record
            if not isinstance(record, FrameRecord) or record.seq != seq:
                continue
            found = True
            arrow = "client → agent" if record.side == "client" else "agent → client"
            where = f"{recording}:{record.line}: seq {seq}, {arrow}, {record.t}"
            emit(click.style(visible(f"{where}, connection {item.connection}"), bold=True))
            frame = record.frame
            if frame.is_json:
                body = dumps(frame.value, option=orjson.OPT_INDENT_2).decode()
            elif frame.utf8:
                body = "(not JSON) " + visible(frame.raw.decode())
            else:
                body = f"(not UTF-8, {len(frame.raw)} bytes) {frame.raw.hex(' ')}"
            for line in body.splitlines():
                emit(line)
            for finding in item.findings:
                said = f"  {finding.level} {finding.rule}: {finding.message} ({finding.spec})"
                emit(click.style(visible(said), fg="red" if finding.level == "error" else "yellow"))
    if not found:
        _say(f"acp-proxy: {recording} has no frame with seq {seq}")
        sys.exit(1)


@click.command()
@click.argument("path", metavar="PATH")
@_filter_options
@click.option(
    "--revalidate",
    is_flag=True,
    help="Recompute the findings with today's rules instead of showing the recorded ones.",
)
@click.option(
    "--interval",
    type=_Seconds(low=0.01, high=3600.0),
    default=0.2,
    show_default=True,
    help="Seconds between checks for new records.",
)
def follow(
    path: str,
    side: str | None,
    method: str | None,
    session: str | None,
    violations: bool,
    color: str,
    revalidate: bool,
    interval: float,
) -> None:
    """Show a recording live, as frames are appended (tail -f for ACP).

    PATH may be a recording, or a directory: then the newest recording in it is
    followed, and each new one as new sessions start; or - for standard input,
    shown as it arrives, to its end. Ctrl-C stops. Exit status: 2 when PATH is
    no recording (an empty file is waited on: a recording being written).
    """
    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.follow import follow_lines, follow_stream
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.readers.text import Timeline
    from acp_proxy.transcript.reading import RecordingError, refuse_device

    target = Path(path)
    if path == "-":
        refuse_device(sys.stdin.fileno(), "standard input")  # (as the other readers)
    elif not target.exists():
        raise _Unreadable(visible(f"cannot follow {path}: No such file or directory"))
    only = TimelineFilter(side, method, session, violations)

    def refused(exc: RecordingError) -> None:
        _say(f"acp-proxy: {exc}; waiting for the next recording")

    def waiting(directory: Path) -> None:
        _say(visible(f"acp-proxy: waiting for a recording to appear in {directory}"))

    try:
        with _output(color, live=True) as emit:
            timeline = Timeline(emit, only, _colored(color))

            def switched(current: Path) -> None:
                emit(click.style(visible(f"==> following {current}"), bold=True))

            if path == "-":
                stdin = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115
                lines = follow_stream(stdin)
            else:
                lines = follow_lines(
                    target, switched, interval, on_refused=refused, check=True, on_waiting=waiting
                )
            timeline.feed(read(lines, stored=not revalidate))
    except BrokenPipeError:
        raise  # stdout closed by its reader (| head): the quiet exit of cli.main
    except OSError as exc:
        raise _Unreadable(visible(f"cannot follow {path}: {exc.strerror}")) from None
    except RecordingError as exc:
        raise _Unreadable(str(exc)) from None


def _layers(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    from acp_proxy.readers.diff import LAYERS

    if value is None:
        return LAYERS
    chosen = tuple(part.strip() for part in value.split(",") if part.strip())
    unknown = [part for part in chosen if part not in LAYERS]
    if unknown or not chosen:
        raise click.BadParameter(
            f"{', '.join(unknown) or value!r}: choose from {', '.join(LAYERS)}"
        )
    return chosen


@click.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@_format_option("text: grouped by layer and turn; json: one document, for tools.")
@click.option(
    "--only",
    "only",
    callback=_layers,
    metavar="LAYERS",
    help="Compare only these layers (comma-separated): handshake, conversation, wire, "
    "findings, timing.",
)
@_connection_options(" (the same number on both sides)")
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="PATH",
    help="A field to leave out, as replay --ignore takes it: params.update.content.text "
    "(repeatable).",
)
@click.option("--meta", is_flag=True, help="Compare _meta too (left out by default).")
@click.option(
    "--slower",
    type=_Seconds(low=1.0, high=1000.0, open_low=True),
    default=1.5,
    show_default=True,
    help="Timing: flag a median only this many times slower or faster (and 50 ms apart).",
)
@_color_option("Colour the layers' headings")
@_pager_option
def diff(
    a: str,
    b: str,
    fmt: str,
    only: tuple[str, ...],
    connection: int | None,
    session_id: str | None,
    ignore: tuple[str, ...],
    meta: bool,
    slower: float,
    color: str,
) -> None:
    """What changed between two recorded sessions, A and B: the handshake, the conversation,
    the wire, the findings and the timing. Ids and times are normalised first, so two runs of
    one scenario compare equal.

    Exit status, as diff(1): 0 no layer differs, 1 they differ, 2 a file cannot be read.
    """
    import orjson

    from acp_proxy.readers.diff import compare, lines, load

    if fmt == "json":
        _only_with("with --format json", "color", "no_color")
    if "timing" not in only:
        _only_with("without timing in --only", "slower")
    sides = []
    numbers = [_connection(path, connection, session_id) for path in (a, b)]
    session = numbers[0] if numbers[0] == numbers[1] else numbers
    for path, number in zip((a, b), numbers, strict=True):
        try:
            sides.append(load(path, number, ignore, meta))
        except ValueError as exc:
            raise _Unreadable(str(exc)) from None
    found = compare(sides[0], sides[1], only, slower)
    with _output(color) as emit:
        if fmt == "json":
            document = {
                "a": a,
                "b": b,
                "session": session,
                "sessions": {"a": sides[0].connections, "b": sides[1].connections},
                "identical": not found,
                "differences": [d.as_json() for d in found],
            }
            emit(dumps(document, option=orjson.OPT_INDENT_2).decode())
        else:
            for line in lines(found, (sides[0].connections, sides[1].connections)):
                styled = line.endswith(":") and not line.startswith(" ")
                emit(click.style(visible(line), bold=True) if styled else visible(line))
    sys.exit(1 if found else 0)


@click.command()
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@_format_option("How to print the figures.")
def stats(recordings: tuple[str, ...], fmt: str) -> None:
    """Figures about recorded sessions: traffic, methods, latency, turns, findings."""
    import orjson

    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.stats import Stats

    figures = Stats()
    for path in recordings:
        figures.recording = path
        figures.feed(read(path))
    with _output("never") as emit:
        if fmt == "json":
            emit(dumps(figures.as_json(), option=orjson.OPT_INDENT_2).decode())
        else:
            for line in figures.lines():
                emit(line)


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="How to print the catalog.",
)
@click.argument("rule", required=False, metavar="[RULE]")
@_pager_option
def rules(fmt: str, rule: str | None) -> None:
    """Print the catalog of rules the validator checks, and the schemas it checks against
    (text and markdown: a first line; json: each line's "schemas"); with RULE, that rule
    explained: its level, versions, source, what it flags, and an example of a frame that
    breaks it."""
    from acp_proxy.core.examples import explain_lines
    from acp_proxy.core.rules import RULES, catalog_lines

    if rule is None:
        lines = catalog_lines(fmt)
    else:
        if _given("fmt"):
            raise click.UsageError("--format is for the catalog, not one RULE")
        explained = explain_lines(rule)
        if explained is None:
            import difflib

            close = difflib.get_close_matches(rule, list(RULES), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise click.BadParameter(
                visible(f"{rule!r} is no rule{hint}; `acp-proxy rules` lists them"),
                param_hint="RULE",
            )
        lines = explained
    with _output("never") as emit:
        for line in lines:
            emit(line)
