"""`acp-proxy inspect` and `run --inspect`, through real processes: the sessions of a directory
and a session's page, live, on loopback; safe on a shared machine (a token on every URL, the
Host checked, only the directory's recordings)."""

from __future__ import annotations

import contextlib
import http.client
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PROXY, RECORDINGS, SCRIPTED_AGENT, clean_env


def started(command: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """A process that prints `acp-proxy inspect: URL` on stderr, and that URL."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())  # fmt: skip
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        found = re.search(r"acp-proxy inspect: (http://\S+)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise AssertionError("no URL")


def get(
    url: str, host: str | None = None, path: str | None = None
) -> tuple[int, str, dict[str, str]]:
    parts = re.match(r"http://([^/]+)(/[^?]*)\?token=(\S+)", url)
    assert parts is not None
    connection = http.client.HTTPConnection(parts.group(1), timeout=10)
    target = path if path is not None else f"{parts.group(2)}?token={parts.group(3)}"
    connection.putrequest("GET", target, skip_host=True)
    connection.putheader("Host", host or parts.group(1))
    connection.endheaders()
    response = connection.getresponse()
    body = response.read().decode()
    headers = {k.lower(): v for k, v in response.getheaders()}
    connection.close()
    return response.status, body, headers


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process and close its pipes."""
    if proc.poll() is None:
        proc.terminate()
    proc.wait(10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    for name in ("clean.jsonl", "misbehaving.jsonl"):
        (tmp_path / name).write_bytes((RECORDINGS / name).read_bytes())
    proc, url = started([*PROXY, "inspect", str(tmp_path)])
    yield tmp_path, url
    stop(proc)


def test_the_list_and_a_session_page(served):
    _, url = served
    assert url.startswith("http://127.0.0.1:")
    status, body, headers = get(url)
    assert status == 200 and "clean.jsonl" in body and "misbehaving.jsonl" in body
    assert "<td>38 errors, 2 warnings</td>" in body and "<td>none</td>" in body  # as ls says
    assert "connect-src 'self'" in headers["content-security-policy"]
    assert "access-control-allow-origin" not in headers
    link = re.search(r'href="(http://[^"]+/session/misbehaving\.jsonl\?token=[^"]+)"', body)
    assert link is not None
    status, page, _ = get(link.group(1).replace("&amp;", "&"))
    assert status == 200 and 'id="report-data"' in page and '"events":' in page
    assert "prompt-result-message-id" in page  # the same page report makes


def test_a_request_without_the_token_or_with_another_host_is_refused(served):
    _, url = served
    base = url.split("?")[0]
    port = re.search(r":(\d+)/", url).group(1)  # type: ignore[union-attr]
    assert get(url, path="/")[0] == 403  # no token
    assert get(url, path="/?token=wrong")[0] == 403
    assert get(url, host=f"evil.example:{port}")[0] == 403  # DNS rebinding
    assert get(url, host=f"localhost:{port}")[0] == 200
    token = url.split("token=")[1]
    for outside in (
        "/session/..%2F..%2Fetc%2Fpasswd",
        "/session/%2Fetc%2Fpasswd",
        "/session/.acp-proxy-index.json",
        "/events/..%2Fx",
    ):
        assert get(url, path=f"{outside}?token={token}")[0] == 404, outside
    assert base.startswith("http://127.0.0.1:")


def test_a_growing_recording_is_announced(served):
    """An event as the recording grows (the page polls twice a second; no clock is timed
    here: the connection's timeout is the bound)."""
    directory, url = served
    token = url.split("token=")[1]
    host = url.split("/")[2]
    connection = http.client.HTTPConnection(host, timeout=10)
    connection.request("GET", f"/events/clean.jsonl?token={token}")
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
    assert response.readline() == b": watching\n"
    response.readline()
    with open(directory / "clean.jsonl", "ab") as out:
        out.write(b'{"kind":"stderr","t":"2026-11-29T21:05:05.000000Z","text":"more"}\n')
    assert response.readline() == b"data: changed\n"
    connection.close()


def test_run_inspect_serves_the_session_being_recorded_and_stops_with_the_proxy(tmp_path):
    record = tmp_path / "live.jsonl"
    proc, url = started([*PROXY, "run", "--inspect", "--record", str(record), "--",
                         *SCRIPTED_AGENT, "echo", str(tmp_path / "capture")])  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"_x"}\n')
    proc.stdin.flush()
    assert (
        proc.stdout.readline() == b'{"jsonrpc":"2.0","id":1,"method":"_x"}\n'
    )  # stdout: the protocol only
    status, page, _ = get(url)
    assert status == 200 and "live.jsonl" in page and '"live":{"events":' in page
    proc.stdin.close()
    assert proc.wait(30) == 0
    assert proc.stdout.read() == b""
    stop(proc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            get(url)
        except OSError:
            break
        time.sleep(0.3)
    else:
        raise AssertionError("the inspector outlived the proxy")


def test_inspect_a_missing_directory_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        [*PROXY, "inspect", str(tmp_path / "nowhere")], capture_output=True, timeout=30
    )
    assert proc.returncode == 2 and "no such file or directory" in proc.stderr.decode()


@pytest.mark.agents
def test_the_served_page_runs_in_a_browser(served, tmp_path):
    """The same page as report, live: it loads without a script error and listens."""
    from tests.readers.test_report import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    _, url = served
    _, body, _ = get(url)
    link = re.search(r'href="(http://[^"]+/session/clean\.jsonl\?token=[^"]+)"', body)
    assert link is not None
    # (the DOM is taken once the page has loaded; its stream stays open)
    html = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--timeout=3000",
         "--dump-dom", link.group(1).replace("&amp;", "&")],
        capture_output=True, timeout=60,
    ).stdout.decode()  # fmt: skip
    assert 'data-ready="1"' in html and 'data-errors="0"' in html and 'data-live="1"' in html
    assert "session/prompt" in html


class DevTools:
    """Headless Chromium driven over its DevTools pipe (``--remote-debugging-pipe``: JSON
    messages on fds 3 and 4, each ended by a NUL), standard library only: a page opened, and
    JavaScript evaluated in it."""

    def __init__(self, browser: str, profile: Path) -> None:
        import os

        commands, self._commands = os.pipe()
        self._events, answers = os.pipe()

        def plumb() -> None:  # in the child: its fds 3 and 4 are the pipe's ends
            os.dup2(commands, 3)
            os.dup2(answers, 4)

        self.proc = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1400,1000",
             "about:blank"],
            pass_fds=(3, 4), preexec_fn=plumb,  # noqa: PLW1509 - only dup2 runs there
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(commands)
        os.close(answers)
        self._buffer, self._id, self.session = b"", 0, ""

    def call(self, method: str, **params: object) -> dict[str, object]:
        import os

        import orjson

        self._id += 1
        message: dict[str, object] = {"id": self._id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._commands, orjson.dumps(message) + b"\0")
        while True:
            while b"\0" in self._buffer:
                line, self._buffer = self._buffer.split(b"\0", 1)
                answer = orjson.loads(line)
                if answer.get("id") == self._id:
                    assert "error" not in answer, answer
                    result: dict[str, object] = answer["result"]
                    return result
            chunk = os.read(self._events, 1 << 16)
            assert chunk, "the browser went away"
            self._buffer += chunk

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", url=url)["targetId"]
        self.session = str(
            self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        )

    def js(self, expression: str) -> object:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer["result"].get("value")  # type: ignore[attr-defined]

    def until(self, expression: str, seconds: float = 20.0) -> object:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"never true: {expression}")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@contextlib.contextmanager
def growing_page(tmp_path: Path, chromium: str) -> Iterator[tuple[Path, int, DevTools]]:
    """clean.jsonl without its end record (still being written), served by `inspect` and
    its page open in Chromium: (the recording, its frame count, the browser)."""
    lines = (RECORDINGS / "clean.jsonl").read_bytes().splitlines(keepends=True)
    recording = tmp_path / "growing.jsonl"
    recording.write_bytes(b"".join(lines[:-1]))
    rows = sum(1 for line in lines if line.startswith(b'{"kind":"frame"'))
    proc, url = started([*PROXY, "inspect", str(tmp_path)])
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        _, body, _ = get(url)
        link = re.search(r'href="(http://[^"]+/session/growing\.jsonl\?token=[^"]+)"', body)
        assert link is not None
        browser.open(link.group(1).replace("&amp;", "&"))
        yield recording, rows, browser
    finally:
        browser.close()
        stop(proc)


@pytest.mark.agents
def test_a_page_open_in_a_browser_grows_as_its_recording_does_and_keeps_the_readers_place(
    tmp_path, capsys
):
    """A session page open in real Chromium while its recording grows: the new frame and its
    finding appear on their own, and the reader's place in the frame list and the frame they
    selected are kept across the page's reload. How long it took is printed (a figure, not a
    timed assertion)."""
    from acp_proxy.core.framing import parse_frame
    from acp_proxy.transcript.records import frame_record
    from tests.readers.test_report import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    with growing_page(tmp_path, CHROMIUM) as (recording, rows, browser):
        count = (
            "document.getElementById('f-count') && document.getElementById('f-count').textContent"
        )
        assert browser.until(f"document.body.dataset.ready === '1' && {count}") == (
            f"{rows} of {rows} rows"
        )
        errors = "document.querySelector('.meta').textContent.match(/(\\d+) errors?\\b/)[1]"
        assert browser.js(errors) == "0"
        # the reader scrolls the frame list and selects a frame
        browser.js("document.querySelector('.seqview').scrollTop = 300")
        browser.until("document.querySelector('.seqview').scrollTop === 300")
        seq = browser.js(
            "(() => { const r = document.querySelectorAll('.seqview .row')[20]; r.click();"
            " return r.dataset.seq; })()"
        )
        assert browser.js("document.querySelector('.seqview .row.sel').dataset.seq") == seq
        # the recording grows by a frame with an error finding stored on it
        frame = frame_record(
            rows + 1, "2026-11-29T21:05:05.000000Z", "agent", parse_frame(b"not json"),
            [{"rule": "not-json", "level": "error", "message": "not JSON", "spec": "ACP"}],
        )  # fmt: skip
        began = time.monotonic()
        with open(recording, "ab") as out:
            out.write(frame)
        grown = f"{rows + 1} of {rows + 1} rows"
        browser.until(f"document.body.dataset.ready === '1' && {count} === {grown!r}")
        took = time.monotonic() - began
        assert browser.js(errors) == "1"
        assert browser.js("document.querySelector('.seqview').scrollTop") == 300
        assert browser.js("document.querySelector('.seqview .row.sel').dataset.seq") == seq
        assert browser.js("document.getElementById('errors').textContent") == ""
    with capsys.disabled():
        print(f"\n  a new frame on the open page after {took:.2f} s")


@pytest.mark.agents
def test_a_live_page_waits_while_the_reader_types_and_gives_the_field_back(tmp_path):
    """The recording grows while the reader types in the search field: the page does not
    load again under their keys (it waits until they stop), and after it has, the field
    has the focus, its text and its caret back."""
    from acp_proxy.core.framing import parse_frame
    from acp_proxy.transcript.records import frame_record
    from tests.readers.test_report import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    with growing_page(tmp_path, CHROMIUM) as (recording, rows, browser):
        browser.until("document.body.dataset.ready === '1'")
        browser.js(
            "(() => { window.typing = 1; const q = document.getElementById('f-q'); q.focus();"
            " q.value = 'session'; q.setSelectionRange(3, 3);"
            " q.dispatchEvent(new Event('input', { bubbles: true })); })()"
        )
        frame = frame_record(rows + 1, "2026-11-29T21:05:05.000000Z", "agent",
                             parse_frame(b'{"jsonrpc":"2.0","method":"_x"}'))  # fmt: skip
        with open(recording, "ab") as out:
            out.write(frame)
        for _ in range(12):  # a key every 0.25 s for 3 s: no load under the reader's keys
            browser.js("document.getElementById('f-q').dispatchEvent(new KeyboardEvent("
                       "'keydown', { key: 'Shift', bubbles: true })) || 1")  # fmt: skip
            time.sleep(0.25)
            assert browser.js("window.typing") == 1
        count = "document.getElementById('f-count').textContent"
        browser.until(
            f"document.body.dataset.ready === '1' && !window.typing"
            f" && {count}.endsWith('of {rows + 1} rows')"
        )
        field = "(() => { const f = document.activeElement; return [f.id, f.value, f.selectionStart]; })()"
        assert browser.js(field) == ["f-q", "session", 3]


def test_the_lists_configuration_is_json_its_script_can_read(served):
    """The list's configuration sits in a script element, whose text is never HTML-decoded:
    JSON escaped as the report's data is (\\u003c, never &quot;), so the page can parse it and
    listen; the stream is named by a path, on whichever loopback name the page was opened."""
    import orjson

    _, url = served
    _, body, _ = get(url)
    found = re.search(r'<script type="application/json" id="live-config">(.*?)</script>', body)
    assert found is not None and "&" not in found.group(1)
    token = url.split("token=")[1]
    config = orjson.loads(found.group(1))
    assert re.fullmatch(rf"/events\?token={token}&since=[0-9a-f]+", config["events"])
    _, page, _ = get(url.replace("/?", "/session/clean.jsonl?"))
    live = re.search(r'"live":\{"events":"([^"]+)"[,}]', page)  # (& as \u0026, as JSON there is)
    assert live is not None and "&" not in live.group(1)
    assert re.fullmatch(
        rf"/events/clean.jsonl\?token={token}&since=\w+", orjson.loads(f'"{live.group(1)}"')
    )


def test_a_change_between_the_page_and_its_stream_is_said_at_once(served):
    """A page says what it was made from; a recording that grew after the page was made
    but before its stream began is announced as soon as the stream opens, not at the next
    change (which may never come: the session ended)."""
    directory, url = served
    _, page, _ = get(url.replace("/?", "/session/clean.jsonl?"))
    found = re.search(r'"live":\{"events":"([^"]+)"[,}]', page)
    assert found is not None
    with open(directory / "clean.jsonl", "ab") as out:
        out.write(b'{"kind":"stderr","t":"2026-11-29T21:05:05.000000Z","text":"more"}\n')
    connection = http.client.HTTPConnection(url.split("/")[2], timeout=10)
    connection.request("GET", found.group(1).replace("\\u0026", "&"))
    response = connection.getresponse()
    assert response.readline() == b": watching\n" and response.readline() == b"\n"
    assert response.readline() == b"data: changed\n"  # (waiting for the next change: a timeout)
    connection.close()
    connection = http.client.HTTPConnection(url.split("/")[2], timeout=2)
    _, now, _ = get(url.replace("/?", "/session/clean.jsonl?"))
    again = re.search(r'"live":\{"events":"([^"]+)"[,}]', now)
    assert again is not None and again.group(1) != found.group(1)
    connection.request("GET", again.group(1).replace("\\u0026", "&"))
    response = connection.getresponse()
    assert response.readline() == b": watching\n" and response.readline() == b"\n"
    with pytest.raises(TimeoutError):  # nothing changed since: nothing said
        response.readline()
    connection.close()


@pytest.mark.agents
def test_the_list_open_in_a_browser_lives(tmp_path, capsys):
    """The list open in real Chromium: a recording added to the directory shows, and a row
    keeps current as its recording grows (frames), as its writer goes (a proxy killed: its
    lock let go, the file unchanged) and as it ends. How long the new recording took to show
    is printed (a figure, not a timed assertion)."""
    import fcntl

    from tests.readers.test_report import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    lines = (RECORDINGS / "clean.jsonl").read_bytes().splitlines(keepends=True)
    frames = [i for i, line in enumerate(lines) if line.startswith(b'{"kind":"frame"')]
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"".join(lines[: frames[5]]))  # the start record and 5 frames
    writer = open(growing, "ab")  # noqa: SIM115 - held as the recorder holds its file
    fcntl.flock(writer.fileno(), fcntl.LOCK_EX)
    proc, url = started([*PROXY, "inspect", str(tmp_path)])
    browser = DevTools(CHROMIUM, tmp_path / "profile")
    row = (
        "[...document.querySelectorAll('#sessions tbody tr')].map((r) => r.textContent)"
        ".find((t) => t.includes('{}')) || ''"
    )
    try:
        browser.open(url)
        assert "5 frames" in str(browser.until(row.format("growing.jsonl")))
        assert "recording" in str(browser.js(row.format("growing.jsonl")))
        began = time.monotonic()
        (tmp_path / "misbehaving.jsonl").write_bytes(
            (RECORDINGS / "misbehaving.jsonl").read_bytes()
        )
        assert "51 frames" in str(browser.until(row.format("misbehaving.jsonl")))
        took = time.monotonic() - began
        writer.write(b"".join(lines[frames[5] : -1]))  # every frame, no end record yet
        writer.flush()
        total = f"{len(frames)} frames"
        browser.until(f"({row.format('growing.jsonl')}).includes({total!r})")
        assert "recording" in str(browser.js(row.format("growing.jsonl")))
        fcntl.flock(writer.fileno(), fcntl.LOCK_UN)  # the writer is gone, the file as it was
        browser.until(f"({row.format('growing.jsonl')}).includes('no end')")
        writer.write(lines[-1])  # ... and then it ends after all
        writer.flush()
        browser.until(f"!({row.format('growing.jsonl')}).includes('no end')")
        assert total in str(browser.js(row.format("growing.jsonl")))
        assert browser.js("document.querySelectorAll('#sessions tbody tr').length") == 2
        assert "ended" in str(browser.js(row.format("growing.jsonl")))
        heads = "[...document.querySelectorAll('#sessions th')].map((h) => h.textContent)"
        assert browser.js(f"{heads}[0]") == "start (UTC)"
    finally:
        writer.close()
        browser.close()
        stop(proc)
    with capsys.disabled():
        print(f"\n  a new recording on the open list after {took:.2f} s")


def test_idle_connections_are_hung_up_on_and_never_starve_the_token_holder(served_slowly):
    """A flood of connections that never send their request, more than the server's
    descriptors allow (its limit lowered here to 64), and one that drips a byte at a time:
    the token holder's request is still answered, and every idle connection is closed
    after the request timeout (here 1 s) or when newer ones take its place."""
    import resource
    import socket

    proc, url = served_slowly
    resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (64, 64))
    host, port = url.split("/")[2].split(":")
    idle = []
    for _ in range(150):  # (not waiting for each: a server that stopped accepting never ends it)
        connection = socket.socket()
        connection.setblocking(False)
        connection.connect_ex((host, int(port)))
        idle.append(connection)
    drip = socket.create_connection((host, int(port)), timeout=30)
    assert get(url)[0] == 200  # the token holder gets in

    def hung_up(connection: socket.socket) -> bool:
        connection.settimeout(30)
        try:
            return connection.recv(1) == b""
        except TimeoutError:  # still open
            return False
        except OSError:  # reset
            return True
        finally:
            connection.close()

    assert all([hung_up(connection) for connection in idle])
    sent = 0
    with contextlib.suppress(OSError):
        for _ in range(600):  # a minute of dripping at most; hung up on after a second
            drip.sendall(b"G")
            sent += 1
            time.sleep(0.1)
    assert sent < 600
    drip.close()
    assert get(url)[0] == 200


@pytest.fixture
def served_slowly(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    (tmp_path / "clean.jsonl").write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    proc, url = started([*PROXY, "inspect", "--request-timeout", "1", str(tmp_path)])
    yield proc, url
    stop(proc)


def test_open_gives_the_browser_a_private_file_never_the_token(tmp_path: Path):
    """``--open`` hands the browser (``$BROWSER``) a path, not the tokened URL, which every
    local user could read in its command line: a 0600 file, in a directory only the user
    can enter, that redirects to the page; removed when the server stops."""
    import os
    import stat
    import sys

    seen = tmp_path / "seen.json"
    browser = tmp_path / "browser"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "from urllib.parse import unquote, urlsplit\n"
        "path = unquote(urlsplit(sys.argv[1]).path)\n"
        "info = {'argv': sys.argv, 'page': open(path).read(), 'mode': os.stat(path).st_mode,\n"
        "        'dir': os.stat(os.path.dirname(path)).st_mode, 'path': path}\n"
        # (written beside, then renamed: the test reads it whole or not at all)
        f"open({str(seen)!r} + '.part', 'w').write(json.dumps(info))\n"
        f"os.replace({str(seen)!r} + '.part', {str(seen)!r})\n"
    )
    browser.chmod(0o700)
    (tmp_path / "clean.jsonl").write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    command = [*PROXY, "inspect", "--open", str(tmp_path)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env(BROWSER=str(browser)))  # fmt: skip
    assert proc.stderr is not None
    url = re.search(r"acp-proxy inspect: (http://\S+)", proc.stderr.readline().decode())
    assert url is not None
    token = url.group(1).split("token=")[1]
    deadline = time.monotonic() + 30
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    import orjson

    info = orjson.loads(seen.read_bytes())
    assert not any(token in arg for arg in info["argv"])
    assert info["argv"][1].startswith("file:///")
    assert f'url={url.group(1)}"' in info["page"]
    assert stat.S_IMODE(info["mode"]) == 0o600 and stat.S_IMODE(info["dir"]) == 0o700
    stop(proc)
    assert not os.path.exists(info["path"])


def _reset(url: str, path: str) -> None:
    """Ask for ``path`` (the token's query added) and reset the connection at once, as a tab
    closed mid-page does: the server's answer meets a peer that has gone."""
    import socket
    import struct

    host, port = url.split("/")[2].split(":")
    token = url.split("token=")[1]
    connection = socket.create_connection((host, int(port)), timeout=10)
    connection.sendall(f"GET {path}?token={token} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()  # (with no linger: a reset, not a close)


def test_a_peer_that_goes_away_mid_response_ends_its_request_silently(tmp_path: Path) -> None:
    """A browser that drops its connections (a tab closed mid-page): five connections reset
    as their answer is on its way end their requests without a word on stderr (no
    BrokenPipeError or ConnectionResetError traceback), and the server goes on serving."""
    (tmp_path / "clean.jsonl").write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    proc, url = started([*PROXY, "inspect", str(tmp_path)])
    try:
        for path in ("/session/clean.jsonl", "/", "/session/clean.jsonl", "/", "/events"):
            _reset(url, path)
        time.sleep(1.5)  # (the answers written to the gone peers, and failed)
        assert get(url)[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.stderr is not None
    said = proc.stderr.read().decode()
    stop(proc)
    assert "Traceback" not in said and "Error" not in said, said


def test_inspect_says_what_it_serves_and_that_no_browser_could_open_it(tmp_path):
    """As ``python -m http.server`` does: after the URL, what is served (the directory and
    its count of recordings) and how it stops; --open where no browser can be started says
    so (the URL above is the way), never silence."""
    for name in ("clean.jsonl", "misbehaving.jsonl"):
        (tmp_path / name).write_bytes((RECORDINGS / name).read_bytes())
    bare = {k: v for k, v in clean_env().items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    bare.update(PATH=str(tmp_path / "no-such-bin"), BROWSER="")
    proc = subprocess.Popen([*PROXY, "inspect", "--open", str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=bare)  # fmt: skip
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline().decode() for _ in range(3)]
    finally:
        stop(proc)
    assert lines[0].startswith("acp-proxy inspect: http://127.0.0.1:"), lines
    assert (
        lines[1]
        == f"acp-proxy inspect: serving {tmp_path} (2 recordings) on 127.0.0.1 until Ctrl-C\n"
    )
    assert lines[2] == "acp-proxy inspect: cannot open a browser here; the URL above opens it\n"


def test_a_session_being_recorded_says_live_and_how_long_so_far(tmp_path):
    """The page of a session a proxy records now (its file locked by the recorder, its end
    record not written yet): ``live, N s so far`` and ``(running: recording now)``, not
    ``?`` and ``(no end record)``, which stay for a session whose end is lost."""
    import fcntl

    from tests.readers.test_report import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    lines = (RECORDINGS / "clean.jsonl").read_bytes().splitlines(keepends=True)
    assert b'"kind":"end"' in lines[-1]
    (tmp_path / "live.jsonl").write_bytes(b"".join(lines[:-1]))
    (tmp_path / "lost.jsonl").write_bytes(b"".join(lines[:-1]))
    proc, url = started([*PROXY, "inspect", str(tmp_path)])
    browser = DevTools(CHROMIUM, tmp_path / "profile")
    meta = "document.body.dataset.ready === '1' && document.querySelector('.meta').textContent"
    try:
        base, token = url.split("?", 1)
        with open(tmp_path / "live.jsonl", "rb") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # (as the recorder holds it while it writes)
            browser.open(f"{base.rstrip('/')}/session/live.jsonl?{token}")
            live = str(browser.until(meta))
        browser.open(f"{base.rstrip('/')}/session/lost.jsonl?{token}")
        lost = str(browser.until(meta))
    finally:
        browser.close()
        stop(proc)
    assert re.search(r"durationlive, \d+ s so far", live), live
    assert "exit(running: recording now)" in live
    assert "duration?" in lost and "exit(no end record)" in lost, lost
