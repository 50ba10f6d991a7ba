"""Many recordings, through real processes, on a directory the tests fill (the example agent v2
and v1, clean and misbehaving, one still being written, one truncated): `ls` lists each session
once with its figures and answers from its index the second time; `search` finds a method, a
rule and a text with the right path:seq; pruning removes only old files the proxy made, never a
locked one; `validate --format junit|sarif` is what CI servers read; the README's DuckDB queries
run over the same files."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.devtools.demo import run_demo
from acp_proxy.transcript.names import recording_name
from tests.conftest import PROXY, README, RECORDINGS, clean_env, invoke


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("recordings")
    for scenario, name in (("clean", "a"), ("v1-tour", "b"), ("misbehaving", "c")):
        assert run_demo(where / f"{name}.jsonl", delay=0, echo=None, scenario=scenario) in (0, 1)
    # one truncated: a crash left half a line
    data = (where / "a.jsonl").read_bytes()
    (where / "d-truncated.jsonl").write_bytes(data[: len(data) - 40])
    return where


def ls(*args: str) -> list[dict[str, Any]]:
    proc = invoke("ls", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_ls_lists_each_session_once_with_its_figures_then_from_its_index(directory):
    first = ls(str(directory))
    by_name = {Path(s["path"]).name: s for s in first}
    assert sorted(by_name) == ["a.jsonl", "b.jsonl", "c.jsonl", "d-truncated.jsonl"]
    assert not any(s["from_index"] for s in first)
    a, b, c = by_name["a.jsonl"], by_name["b.jsonl"], by_name["c.jsonl"]
    frames = sum(
        1 for line in (directory / "a.jsonl").read_bytes().splitlines() if b'"kind":"frame"' in line
    )
    assert a["frames"] == frames and a["turns"] == 1 and a["protocol"] == 2
    assert a["agent"] == "acp-proxy-example-agent 0.1.0" and a["errors"] == 0
    assert b["protocol"] == 1 and b["turns"] == 2
    assert c["errors"] > 0 and a["size"] == (directory / "a.jsonl").stat().st_size
    assert a["duration"] is not None and a["duration"] > 0
    assert [s["start"] for s in first] == sorted((s["start"] for s in first), reverse=True)
    # the second time, nothing is read again; a file that changed is
    second = ls(str(directory))
    assert all(s["from_index"] for s in second) and len(second) == len(first)
    with open(directory / "b.jsonl", "ab") as out:
        out.write(b"\n")
    third = {Path(s["path"]).name: s["from_index"] for s in ls(str(directory))}
    assert third == {"a.jsonl": True, "b.jsonl": False, "c.jsonl": True, "d-truncated.jsonl": True}
    # a broken index is rebuilt, never trusted
    from acp_proxy.readers.catalog import index_path

    index_path(directory).write_text("{not json")
    assert len(ls(str(directory))) == len(first)
    # filters
    noisy = sorted(Path(s["path"]).name for s in first if s["errors"] or s["warnings"])
    assert "c.jsonl" in noisy and "d-truncated.jsonl" in noisy and "a.jsonl" not in noisy
    assert sorted(Path(s["path"]).name for s in ls("--with-findings", str(directory))) == noisy
    assert ls("--agent", "nobody", str(directory)) == []
    assert len(ls("--since", "1d", str(directory))) == len(first)
    assert ls("--until", "1d", str(directory)) == []
    text = invoke("ls", str(directory)).stdout.decode()
    assert "a.jsonl" in text and "v2" in text and "turns" in text


def test_ls_says_which_session_is_still_being_recorded_and_which_lost_its_end(directory, tmp_path):
    """A session a proxy is recording now is "recording" (its file is the recorder's, locked),
    the one a crash cut short "no end", the others "ended"; from the index or not."""
    import shutil
    import time

    for name in ("a.jsonl", "d-truncated.jsonl"):
        shutil.copy(directory / name, tmp_path / name)
    live = tmp_path / "e-live.jsonl"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    proc = subprocess.Popen(
        [*PROXY, "run", "--record", str(live), "--", *sleeper],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (live.exists() and live.read_bytes().endswith(b"\n")):
            assert time.monotonic() < deadline, "the recording never started"
            time.sleep(0.05)
        for _ in range(2):  # read, then from the index
            states = {Path(s["path"]).name: s["state"] for s in ls(str(tmp_path))}
            assert states == {
                "a.jsonl": "ended", "d-truncated.jsonl": "no end", "e-live.jsonl": "recording"
            }  # fmt: skip
        text = invoke("ls", str(tmp_path)).stdout.decode()
        assert re.search(r"\blive\b.*e-live\.jsonl", text) and "no end" in text
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the session ends: the end record, the lock let go
        proc.wait(timeout=30)
    assert {Path(s["path"]).name: s["state"] for s in ls(str(tmp_path))}["e-live.jsonl"] == "ended"


def test_ls_has_a_header_and_says_findings_in_words(directory):
    """A header names the columns; findings are counted in words, zeros left out."""
    lines = invoke("ls", str(directory)).stdout.decode().splitlines()
    assert lines[0].split() == [
        "START", "(UTC)", "AGENT", "ACP", "DURATION", "TURNS", "FRAMES", "FINDINGS", "USAGE", "BYTES",
        "FIRST", "PROMPT", "PATH",
    ]  # fmt: skip
    by_name = {line.rsplit("/", 1)[-1]: line for line in lines[1:]}
    (c,) = [s for s in ls(str(directory)) if s["path"].endswith("c.jsonl")]
    said = f"{c['errors']} errors, {c['warnings']} warning{'' if c['warnings'] == 1 else 's'}"
    assert c["infos"] == 0 and said in by_name["c.jsonl"] and "0I" not in by_name["c.jsonl"]
    assert " none " in by_name["a.jsonl"]
    assert invoke("ls", "--agent", "nobody", str(directory)).stdout == b""  # no header for nothing
    # the columns line up: each header starts where its cells do
    at = lines[0].index("FRAMES") + len("FRAMES")
    assert all(line[at - 1] != " " and line[at] == " " for line in lines[1:])


def test_a_session_cut_during_a_turn_has_an_unfinished_turn(tmp_path):
    """A recording cut while the agent streams (the proxy killed): `ls`, `stats` and the
    report count its turn, marked unfinished, with no duration."""
    clean = (RECORDINGS / "clean.jsonl").read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(clean) if b"agent_message_chunk" in line) + 1
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join(clean[:cut]))
    (summary,) = ls(str(path))
    assert summary["turns"] == 1 and summary["unfinished"] == 1 and summary["state"] == "no end"
    assert "1 turn (1 unfinished)" in invoke("ls", str(path)).stdout.decode()
    for name in ("clean.jsonl", "v1-tour.jsonl"):  # (copied: ls writes its index beside)
        (tmp_path / name).write_bytes((RECORDINGS / name).read_bytes())
    whole = [*ls(str(tmp_path / "clean.jsonl")), *ls(str(tmp_path / "v1-tour.jsonl"))]
    assert [(s["turns"], s["unfinished"]) for s in whole] == [(1, 0), (2, 0)]
    stats = orjson.loads(invoke("stats", "--format", "json", str(path)).stdout)
    (turn,) = stats["turns"]
    assert turn["unfinished"] is True and turn["duration"] is None and turn["first_chunk"] > 0
    text = invoke("stats", str(path)).stdout.decode()
    assert re.search(r"sess_0001 +\d+ +[\d.]+s +- +unfinished", text), text
    # a whole recording after it: its turn ends, the cut one stays unfinished
    both = orjson.loads(
        invoke("stats", "--format", "json", str(path), str(tmp_path / "clean.jsonl")).stdout
    )
    assert [t["unfinished"] for t in both["turns"]] == [True, False]
    from acp_proxy.readers.report import build_document

    (section,) = build_document(str(path))["sections"]
    assert [t["unfinished"] for t in section["turns"]] == [True]


def test_ls_says_what_it_cannot_read_and_lists_the_rest(directory, tmp_path):
    proc = invoke("ls", "--json", str(directory), str(tmp_path / "nowhere"))
    assert proc.returncode == 2  # (as grep: a path named that is not there fails the command)
    assert "nowhere: no such file or directory" in proc.stderr.decode()
    assert len(proc.stdout.splitlines()) == 4
    alone = invoke("ls", str(tmp_path / "nowhere"))
    assert alone.returncode == 2 and "Traceback" not in alone.stderr.decode()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.jsonl").write_text("not a recording\n")
    (bad / "y.jsonl").write_bytes((directory / "a.jsonl").read_bytes())
    mixed = invoke("ls", "--json", str(bad))
    assert "not an acp-proxy transcript" in mixed.stderr.decode()
    assert [Path(orjson.loads(line)["path"]).name for line in mixed.stdout.splitlines()] == [
        "y.jsonl"
    ]


def test_search_finds_a_method_a_rule_and_a_text_with_path_and_seq(directory):
    def lines(*args: str) -> list[str]:
        proc = invoke("search", *args, str(directory))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().splitlines()

    by_method = lines("session/request_permission")
    assert by_method and all(re.match(r"^.*\.jsonl:\d+: seq \d+: ", line) for line in by_method)
    rule = lines("prompt-result-message-id")
    assert len(rule) == 1 and rule[0].startswith(f"{directory / 'c.jsonl'}:")
    number, seq = map(int, re.findall(r":(\d+): seq (\d+):", rule[0])[0])
    record = orjson.loads((directory / "c.jsonl").read_bytes().splitlines()[number - 1])
    assert record["seq"] == seq  # PATH:LINE is the line of the file (as grep -n), seq beside
    assert record["msg"]["result"] is not None  # the prompt's response that lacks the id
    assert {Path(line.split(":")[0]).name for line in lines("Read README")} >= {
        "a.jsonl",
        "c.jsonl",
    }
    assert lines("-l", "Read README")[0].endswith(".jsonl")
    only = lines("--method", "session/prompt", "--from", "client", "README")
    assert only and all("session/prompt" in line for line in only)
    hits = [
        orjson.loads(line)
        for line in invoke(
            "search", "--json", "--rule", "message-id-*", str(directory)
        ).stdout.splitlines()
    ]
    assert hits and all(any(r.startswith("message-id") for r in h["rules"]) for h in hits)
    assert invoke("search", "no-such-thing-anywhere", str(directory)).returncode == 1
    assert invoke("search", "(", str(directory)).returncode == 2


def test_search_with_a_filter_takes_a_directory_as_where_to_look_not_as_the_pattern(directory):
    """``search --rule GLOB DIR`` searches DIR (it once took DIR as the pattern, matched
    nothing and said nothing); ``-e PATTERN`` makes every argument a place."""
    by_rule = invoke("search", "--rule", "message-id-*", str(directory))
    assert by_rule.returncode == 0, by_rule.stderr
    lines = by_rule.stdout.decode().splitlines()
    assert lines and all(line.startswith(f"{directory / 'c.jsonl'}:") for line in lines)
    assert all("message-id-missing" in line for line in lines)
    by_method = invoke("search", "--method", "session/prompt", str(directory / "b.jsonl"))
    assert by_method.returncode == 0 and b"session/prompt" in by_method.stdout
    explicit = invoke("search", "-e", "README", str(directory / "b.jsonl"))
    assert explicit.returncode == 0 and b"README" in explicit.stdout
    bare = invoke("search")
    assert bare.returncode == 2 and b"missing argument 'PATTERN'" in bare.stderr


def test_search_shows_what_matched_in_the_frame_highlighted_and_escaped(directory):
    """As grep shows the matched line: what matched in the frame's bytes, with a little
    around it; on a terminal (--color always here) in bold red; JSON carries it too."""
    proc = invoke("search", "Summarize the project", str(directory / "b.jsonl"))
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.decode().splitlines()[0]
    assert line.endswith('"text","text":"Summarize the project README."}]}}'), line
    coloured = invoke("search", "--color", "always", "proj.ct", str(directory / "b.jsonl"))
    assert b"\x1b[31m\x1b[1mproject\x1b[0m".decode("unicode_escape") in (coloured.stdout.decode())
    hit = orjson.loads(invoke("search", "--format", "json", "proj.ct", str(directory / "b.jsonl"))
                       .stdout.splitlines()[0])  # fmt: skip
    assert hit["match"] == "project" and hit["before"].endswith("Summarize the ")
    # a method matched: its name is in the line already, no text is added
    method = invoke("search", "^session/prompt$", str(directory / "b.jsonl")).stdout.decode()
    assert method and all('{"' not in line for line in method.splitlines())


def test_search_escapes_what_matched(tmp_path):
    """What matched is a wire string: an escape sequence in it is shown, never acted on."""
    path = tmp_path / "hostile.jsonl"
    start = {"kind": "start", "t": "2026-12-01T10:00:00.000000Z", "format": "acp-proxy/1"}
    raw = b"bad \x1b]0;owned\x07 line"  # (not JSON: the agent's banner, say)
    frame = {"kind": "frame", "t": "2026-12-01T10:00:00.100000Z", "seq": 1, "from": "agent",
             "text": raw.decode("unicode_escape")}  # fmt: skip
    path.write_bytes(orjson.dumps(start) + b"\n" + orjson.dumps(frame) + b"\n")
    proc = invoke("search", "owned", str(path))
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout


def test_search_l_stops_reading_a_file_at_its_first_match(directory, tmp_path):
    """As grep -l: once a file matched, the rest of it is not read (a line past the reader's
    bound after the match stops `search`, never `search -l`)."""
    path = tmp_path / "long.jsonl"
    path.write_bytes(
        (directory / "a.jsonl").read_bytes()
        + b'{"kind":"stderr","text":"'
        + b"x" * 4_000_000  # past a read block (1 MiB): a line the reader must hold
        + b'"}\n'
    )
    limit = {"ACP_PROXY_MAX_RECORD": "1500000"}
    files = invoke("search", "-l", "session/prompt", str(path), env=limit)
    assert files.returncode == 0 and files.stdout.decode().splitlines() == [str(path)]
    assert files.stderr == b""
    every = invoke("search", "session/prompt", str(path), env=limit)
    assert b"ACP_PROXY_MAX_RECORD" in every.stderr


def test_pruning_removes_only_old_files_the_proxy_made_never_a_locked_one(tmp_path):
    made = tmp_path / "recs"
    made.mkdir()
    source = RECORDINGS / "clean.jsonl"
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    names = [recording_name(n, now - timedelta(days=10 - n)) for n in range(5)]  # oldest first
    for name in names:
        (made / name).write_bytes(source.read_bytes())
    (made / "mine.jsonl").write_bytes(source.read_bytes())  # not the proxy's: never removed
    (made / "20200101T000000.000000Z-1.txt").write_text("not a recording")
    locked = os.open(made / names[0], os.O_RDONLY)
    fcntl.flock(locked, fcntl.LOCK_EX)  # a session still writes the oldest
    try:
        proc = invoke("ls", "--prune", "--keep-days", "7.5", str(made))
        removed = [
            line.split("removed ", 1)[1]
            for line in proc.stderr.decode().splitlines()
            if "removed" in line
        ]
        assert sorted(Path(r).name for r in removed) == sorted(names[1:3])
        left = sorted(p.name for p in made.iterdir() if not p.name.startswith("."))
        assert left == sorted([names[0], *names[3:], "mine.jsonl", "20200101T000000.000000Z-1.txt"])
        size = source.stat().st_size
        proc = invoke("ls", "--prune", "--keep-size", str(size), str(made))
        left = sorted(p.name for p in made.iterdir() if p.name.endswith(".jsonl"))
        assert left == sorted([names[0], names[4], "mine.jsonl"])  # the newest fits; locked stays
    finally:
        os.close(locked)
    assert invoke("ls", "--prune", str(made)).returncode == 2  # --prune says what to keep


def test_run_keeps_the_default_recordings_directory_tidy(tmp_path):
    """run --keep-days: when a session starts, old recordings there go."""
    from datetime import UTC, datetime, timedelta

    old = tmp_path / recording_name(1, datetime.now(UTC) - timedelta(days=30))
    old.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    proc = subprocess.run(
        [*PROXY, "run", "--keep-days", "7", "--", sys.executable, "-c", "print('{}')"],
        capture_output=True, timeout=60, env=clean_env(ACP_PROXY_RECORD_DIR=str(tmp_path)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not old.exists() and "removed an old recording" in proc.stderr.decode()
    assert len(list(tmp_path.glob("*.jsonl"))) == 1  # this session's


def test_junit_is_what_ci_servers_read(directory):
    """A test suite per recording, a test case per rule that found an error (one failure
    each, all its findings in it) or one ``valid`` case; the counts add up."""
    proc = invoke(
        "validate", "--format", "junit", *(str(p) for p in sorted(directory.glob("[abc].jsonl")))
    )
    assert proc.returncode == 1  # c has errors
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [Path(s.get("name", "")).name for s in suites] == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert [c.get("name") for c in suites[0].findall("testcase")] == ["valid"]
    errors = [
        orjson.loads(e)
        for e in invoke(
            "validate", "--format", "json", str(directory / "c.jsonl")
        ).stdout.splitlines()
    ]
    errors = [e for e in errors if e["level"] == "error"]
    # (a rule that only warned is a passing case: test_validate_cli's junit test)
    cases = [c for c in suites[2].findall("testcase") if c.find("failure") is not None]
    assert sorted(c.get("name", "") for c in cases) == sorted({e["rule"] for e in errors})
    for case in cases:
        (failure,) = case.findall("failure")
        assert failure.get("type") == case.get("name") and failure.get("message")
        lines = (failure.text or "").splitlines()
        assert len(lines) == sum(1 for e in errors if e["rule"] == case.get("name"))
        assert all("seq" in line for line in lines)
    every = root.iter("testcase")
    assert int(root.get("tests", "-1")) == len(list(every))
    assert int(root.get("failures", "-1")) == len(list(root.iter("failure"))) == len(cases)
    for suite in suites:
        assert int(suite.get("tests", "-1")) == len(suite.findall("testcase"))
        assert int(suite.get("failures", "-1")) == len(list(suite.iter("failure")))


def test_sarif_is_sarif_2_1_0(directory):
    import jsonschema

    proc = invoke(
        "validate", "--format", "sarif", str(directory / "c.jsonl"), str(directory / "a.jsonl")
    )
    document = orjson.loads(proc.stdout)
    jsonschema.validate(document, SARIF_SHAPE)
    (run,) = document["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"].endswith("c.jsonl")
        assert location["region"]["startLine"] >= 1
    assert {r["level"] for r in run["results"]} <= {"error", "warning", "note"}


#: The official SARIF 2.1.0 schema (OASIS, its final "rtm.5" draft) as a package on npm ships it.
SARIF_SCHEMA_PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
SARIF_SCHEMA_FILE = "package/lib/schemas/sarif-2.1.0-rtm.5.json"


def test_sarif_passes_the_official_sarif_2_1_0_schema(directory, tmp_path):
    """validate --format sarif against the whole official schema (fetched from npm, pinned;
    skipped where npm is not), for recordings with findings of every level and without."""
    import shutil
    import tarfile

    import jsonschema

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    packed = subprocess.run(
        [npm, "pack", "--silent", SARIF_SCHEMA_PACKAGE], cwd=tmp_path, capture_output=True,
        timeout=120,
    )  # fmt: skip
    if packed.returncode != 0:
        pytest.skip(f"npm could not fetch {SARIF_SCHEMA_PACKAGE}: {packed.stderr[-200:]!r}")
    (tarball,) = tmp_path.glob("*.tgz")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(SARIF_SCHEMA_FILE)
        assert member is not None
        schema = orjson.loads(member.read())
    recordings = [str(directory / name) for name in ("a.jsonl", "b.jsonl", "c.jsonl")]
    proc = invoke("validate", "--format", "sarif", *recordings)
    document = orjson.loads(proc.stdout)
    assert document["runs"][0]["results"], "c.jsonl has findings"
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(document)


#: The parts of the SARIF 2.1.0 schema (OASIS) that code-scanning servers read (held without
#: npm too; the whole schema: the test above).
SARIF_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string", "pattern": "sarif-2\\.1\\.0"},
        "runs": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["tool", "results"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {"driver": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "rules": {"type": "array", "items": {
                        "type": "object", "required": ["id"],
                        "properties": {"id": {"type": "string"},
                                       "shortDescription": {"type": "object", "required": ["text"]},
                                       "defaultConfiguration": {"type": "object", "properties": {
                                           "level": {"enum": ["none", "note", "warning", "error"]}}}}}}}}}},
                "results": {"type": "array", "items": {
                    "type": "object", "required": ["message"],
                    "properties": {
                        "ruleId": {"type": "string"}, "ruleIndex": {"type": "integer", "minimum": 0},
                        "level": {"enum": ["none", "note", "warning", "error"]},
                        "message": {"type": "object", "required": ["text"]},
                        "locations": {"type": "array", "items": {"type": "object", "properties": {
                            "physicalLocation": {"type": "object", "required": ["artifactLocation"],
                                                 "properties": {"region": {"type": "object", "properties": {
                                                     "startLine": {"type": "integer", "minimum": 1}}}}}}}}}}},
            }}},
    },
}  # fmt: skip


QUERIES = Path(__file__).parent.parent / "queries"


@pytest.mark.parametrize("source", ["README", "tests/queries"])
def test_the_readmes_duckdb_queries_run_over_the_recordings(directory, source):
    """The README's queries, as they are there (and their long form in tests/queries), over
    this directory, the recording a crash cut in half included (its half line is skipped,
    not an error): the figures `stats` and `validate` give."""
    duckdb = pytest.importorskip("duckdb")
    if source == "README":
        section = README.read_text().split("### Fleets of recordings", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"```sql\n(.*?)```", section, re.S)
    else:
        names = ("common", "frames_per_method", "errors_per_agent", "p95_turn_per_agent_and_day")
        blocks = [(QUERIES / f"{name}.sql").read_text() for name in names]
    assert len(blocks) == 4  # the views, then three queries
    files = sorted(directory.glob("*.jsonl"))
    assert b"\n" not in (directory / "d-truncated.jsonl").read_bytes()[-40:]  # a cut last line
    con = duckdb.connect()
    con.execute(f"SET VARIABLE recordings = '{directory}/*.jsonl'")
    con.execute(blocks[0])
    methods = dict(con.sql(blocks[1]).fetchall())
    stats = orjson.loads(invoke("stats", "--format", "json", *map(str, files)).stdout)
    assert methods == stats["methods"]
    errors = dict(con.sql(blocks[2]).fetchall())
    found = [orjson.loads(line) for p in files
             for line in invoke("validate", "--format", "json", str(p)).stdout.splitlines()]  # fmt: skip
    stored = (directory / "c.jsonl").read_bytes().count(b'"level":"error"')
    assert errors == {"acp-proxy-example-agent 0.1.0": stored} and stored
    assert sum(1 for f in found if f["level"] == "error") >= stored
    turns = con.sql(blocks[3]).fetchall()
    assert sum(row[2] for row in turns) == len(stats["turns"]) and all(row[3] > 0 for row in turns)


def test_search_and_ls_read_a_streamed_turn_by_its_bytes_and_say_what_reading_it_does(
    tmp_path, monkeypatch
):
    """A streamed turn's chunks are searched in their bytes: only a chunk whose bytes match
    is read in full. The hits, and ls's figures, are what reading every record gives."""
    import acp_proxy.transcript.records
    from acp_proxy.readers import annotate, catalog
    from acp_proxy.readers.annotate import plain, read
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.transcript.reading import open_lines
    from tests.exchanges import streamed_recording

    texts = [f"word {n} " for n in range(1_000)]
    texts[17], texts[500], texts[998] = "a needle ", 'say "needle"\n', "needle\\"
    path = tmp_path / "stream.jsonl"
    streamed_recording(path, texts)

    def every_record(pattern: str, session: str | None = None) -> list[Any]:
        """The hits reading every record in full."""
        regex, filters = catalog.Pattern(pattern), TimelineFilter(session=session)
        items = plain(read(open_lines(str(path)), run=256))
        return [h for h in (catalog._match(regex, str(path), i, filters) for i in items) if h]

    expected = {
        pattern: every_record(pattern) for pattern in ("needle", "agent_message_chunk", "nowhere")
    }
    expected["session"] = every_record("word", session="other")
    reference = catalog.SessionSummary(str(path), 1, size=path.stat().st_size)
    for item in plain(read(open_lines(str(path)), run=256)):
        catalog._add(reference, item)
    parsed = 0
    parse_record = acp_proxy.transcript.records.parse_record

    def counting(*args: Any) -> Any:
        nonlocal parsed
        parsed += 1
        return parse_record(*args)

    monkeypatch.setattr(annotate, "parse_record", counting)
    hits = list(catalog.search("needle", [path]))
    assert [hit.seq for hit in hits] == [6 + 17, 6 + 500, 6 + 998]  # type: ignore[union-attr]
    assert hits == expected["needle"]
    assert parsed < 30  # the setup, the chunks the template is learned from, the hits
    assert list(catalog.search("agent_message_chunk", [path])) == expected["agent_message_chunk"]
    assert len(expected["agent_message_chunk"]) == 1_000
    assert list(catalog.search("nowhere", [path])) == expected["nowhere"] == []
    assert list(catalog.search("word", [path], session="other")) == expected["session"] == []
    (summary,) = catalog.summarize(path)
    assert summary == reference and summary.frames == 1_000 + 6


_PATTERNS = ["error.*timeout", "a.+b", "a.{2,}b", ".*", "a.*?b.*c", "(?s)a.*b", "(?i)Ab.*c",
             "a\\.b", ".+a", "a.+", "x|y", "^a", "a+b"]  # fmt: skip


@given(
    pattern=st.sampled_from(_PATTERNS),
    ignore_case=st.booleans(),
    text=st.text(alphabet="aAbBcxy.\n \u017f\u212a", max_size=16),  # long s, Kelvin: (?i) s, k
)
@settings(max_examples=400, deadline=None)
def test_search_answers_a_literal_and_gap_pattern_as_re_does(pattern, ignore_case, text):
    """A pattern of literals and ``.*`` gaps is answered by finding each literal after the
    one before (linear time: ``error.*timeout`` over 480 KB of ``error error …`` took 12 s);
    the answer is always the one :mod:`re` gives."""
    from acp_proxy.readers.catalog import Pattern

    found = Pattern(pattern, ignore_case)
    flags = re.IGNORECASE if ignore_case else 0
    assert found.search(text) == (re.search(pattern, text, flags) is not None)


def test_search_finds_a_literal_and_gap_pattern_across_a_long_message(tmp_path):
    """``search 'error.*timeout'`` over a message of ``error error …`` with or without a
    ``timeout`` at its end: a hit only with one (the bench times it: ``hostile``)."""
    from acp_proxy.devtools.bench import hostile_recording

    path = tmp_path / "errors.jsonl"
    hostile_recording(str(path), "search", 64)
    found = invoke("search", "error.*timeout", str(path))
    assert found.returncode == 1 and found.stdout == b""
    path.write_bytes(path.read_bytes().replace(b'error "}', b'error timeout"}'))
    found = invoke("search", "ERROR.*TIMEOUT", "-i", str(path))
    assert found.returncode == 0 and found.stdout.count(b"agent_message_chunk") == 1, found


def test_the_index_keeps_every_figure_of_a_summary():
    """A summary read from the index is the summary: every field but what is never taken from
    it (the path, where it came from, whether it is live now) has its type in the index's
    check, so a new figure cannot silently fall out of every cached ``ls``."""
    from dataclasses import fields

    from acp_proxy.readers import catalog

    kept = {f.name for f in fields(catalog.SessionSummary)} - {"path", "from_index", "live"}
    assert set(catalog._FIELD_TYPES) == kept


@pytest.mark.parametrize(
    "args",
    [
        ("--since", "99999999999"),
        ("--since", "999999"),
        ("--until", "9" * 400),
        ("--since", "99999999999w"),
        ("--prune", "--dry-run", "--keep-size", "9" * 400),
    ],
)
def test_an_age_or_a_size_too_large_is_a_usage_error(args: tuple[str, ...], tmp_path: Path) -> None:
    """An AGE or a SIZE past what a date or a count can hold is a one-line usage error (exit
    2), never a traceback."""
    proc = invoke("ls", *args, str(tmp_path))
    said = proc.stderr.decode()
    assert proc.returncode == 2, said
    assert "Traceback" not in said and len(said.strip().splitlines()) == 1, said
    assert "too large" in said or "out of range" in said, said


def test_a_pattern_that_backtracks_without_end_is_given_up_with_a_one_line_error() -> None:
    """A pattern whose matching would never end (nested repeats, ``(.*.*)*x``) is given up
    after its budget on one frame: a one-line error naming the budget, exit 2."""
    proc = subprocess.run(
        [*PROXY, "search", "(.*.*)*QQQ", str(RECORDINGS / "clean.jsonl")],
        capture_output=True,
        env=clean_env(),
        timeout=60,  # a bound on the wait, not a measure
        check=False,
    )
    said = proc.stderr.decode()
    assert proc.returncode == 2, said
    assert len(said.strip().splitlines()) == 1 and "Traceback" not in said, said
    assert "budget" in said and "(.*.*)*QQQ" in said, said
    assert proc.stdout == b""


def test_ls_n_keeps_the_newest_and_a_path_under_home_is_shown_with_a_tilde(directory):
    """``-n N`` as ``git log -n``: the N newest of what would be listed (JSON too); in the
    text, a recording under the home directory is ``~/...`` (shorter rows; the shell reads
    it back), the JSON keeps the path whole."""
    every = ls(str(directory))
    assert [s["path"] for s in ls("-n", "2", str(directory))] == [s["path"] for s in every[:2]]
    assert len(ls("--max-count", "1", str(directory))) == 1
    assert invoke("ls", "-n", "0", str(directory)).returncode == 2
    home = {"HOME": str(directory.parent)}
    text = invoke("ls", "-n", "1", str(directory), env=home).stdout.decode().splitlines()
    assert len(text) == 2  # the header, one session
    assert text[1].endswith(f"  ~/{directory.name}/{Path(every[0]['path']).name}"), text
    whole = invoke("ls", "--format", "json", str(directory), env=home).stdout.decode()
    assert "~/" not in whole and str(directory) in whole


def test_ls_shows_each_session_s_first_prompt_as_claude_resume_lists_them(directory, tmp_path):
    """The session "where I asked X": its first prompt's start in the text (whitespace made
    one space, cut with …), the first 200 characters in the JSON, kept in the index too; a
    session without a prompt shows ``-``."""
    from acp_proxy.readers.catalog import PROMPT_SHOWN

    rows = {Path(s["path"]).name: s for s in ls(str(directory))}
    first = rows["b.jsonl"]["prompt"]
    assert first == "Summarize the project README."  # the v1 tour's first of two prompts
    again = {Path(s["path"]).name: s for s in ls(str(directory))}  # (from the index)
    assert again["b.jsonl"]["from_index"] and again["b.jsonl"]["prompt"] == first
    text = invoke("ls", str(directory)).stdout.decode().splitlines()
    line = next(row for row in text if row.endswith("b.jsonl"))
    assert f"  {first[: PROMPT_SHOWN - 1]}…  " in line, line
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes((directory / "a.jsonl").read_bytes().split(b"\n", 1)[0] + b"\n")
    (row,) = ls(str(bare))
    assert row["prompt"] is None
    assert invoke("ls", str(bare)).stdout.decode().splitlines()[1].split()[-2] == "-"
