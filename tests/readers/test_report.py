"""`acp-proxy report`: one self-contained HTML page per recording, opened in a real browser
(headless Chromium: Debian's `chromium`, which `.ci/run` installs; the browser tests skip
where it is missing). Also `show`'s stored findings."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.core.framing import parse_frame
from acp_proxy.readers.report import build_document, embed, render_page, unpack, write_report
from acp_proxy.transcript.records import end_record, frame_record, start_record, violation_record
from tests.conftest import RECORDINGS, invoke
from tests.readers.test_inspect import DevTools

T = "2026-11-30T10:00:00.000000Z"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = '</script><img src=x onerror="document.body.dataset.pwned=1"><b>bold</b>'


def browser(test: Any) -> Any:
    """A test that opens the page in headless Chromium: marked ``agents`` (out of the quick loop)."""
    skip = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
    return pytest.mark.agents(skip(test))


def chromium(url: str, *extra: str, tmp: Path) -> str:
    """Load a page headless; return the DOM once its script ran."""
    assert CHROMIUM is not None
    proc = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp / 'chromium-profile'}",
            "--virtual-time-budget=5000", "--window-size=1400,1000", *extra, url,
        ],
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    return proc.stdout.decode("utf-8", errors="replace")


def dom(page: Path, fragment: str = "", tmp: Path | None = None) -> str:
    return chromium(f"{page.as_uri()}{fragment}", "--dump-dom", tmp=tmp or page.parent)


def report_of(recording: Path, tmp_path: Path, *options: str) -> Path:
    out = tmp_path / (recording.stem + ".html")
    proc = invoke("report", str(recording), "-o", str(out), *options)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout.decode()
    return out


def hostile_recording(path: Path) -> Path:
    """A session whose payloads try to become markup or script in the page."""
    frames = [
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "_x", "params": {"text": HOSTILE}}),
        ("agent", {"jsonrpc": "2.0", "id": 1, "result": {"html": HOSTILE}}),
        ("agent", HOSTILE.encode()),
    ]
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent", HOSTILE], 1))
        for seq, (side, message) in enumerate(frames, 1):
            raw = message if isinstance(message, bytes) else orjson.dumps(message)
            out.write(frame_record(seq, T, side, parse_frame(raw)))
        out.write(end_record(T, 0, HOSTILE))
    return path


# --- the document and the page, without a browser ---------------------------------------------


def test_the_page_is_self_contained_and_payloads_cannot_leave_their_element(tmp_path):
    """No network: nothing is fetched. The data is JSON in one script element, with <, > and &
    escaped, so a payload that contains </script> cannot close it."""
    recording = str(hostile_recording(tmp_path / "h.jsonl"))
    page = render_page(build_document(recording))
    written = tmp_path / "h.html"  # written in pieces, the same page
    assert write_report(recording, str(written)) == len(page.encode())
    assert written.read_text("utf-8") == page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page
    assert page.count("</script>") == 3 and HOSTILE not in page  # data, raw block, script
    raw_block = re.search(r'id="report-raw">(.*?)</script>', page, re.S)
    assert raw_block is not None and "<" not in raw_block.group(1)
    assert b"<" not in embed({"x": "</script><!--"}) and b"&" not in embed("&amp;")
    assert orjson.loads(embed({"x": HOSTILE})) == {"x": HOSTILE}
    separators = "a\u2028b\u2029c"  # line ends to older JavaScript: escaped too
    assert (
        embed(separators) == b'"a\\u2028b\\u2029c"'
        and orjson.loads(embed(separators)) == separators
    )


def test_the_raw_block_gives_every_frame_back_whatever_it_holds(tmp_path):
    """The frames' bytes travel outside the JSON, a line each; what could not stand in a
    script element as itself (<, \\r, NUL, and the escape's own U+E000) is escaped and
    comes back exactly, undone as the page's unescapeRaw undoes it; a frame that is not
    UTF-8 goes as base64."""
    import base64

    frames = [
        b'{"jsonrpc":"2.0","method":"_x","params":{"text":"</script><!--"}}',
        b'{"jsonrpc":"2.0","method":"_y"}\r',
        b"not json \x00 nul",
        '{"jsonrpc":"2.0","method":"_\ue000l"}'.encode(),
        b"\xff\xfe not utf-8",
    ]
    path = tmp_path / "raw.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq, raw in enumerate(frames, 1):
            out.write(frame_record(seq, T, "agent", parse_frame(raw)))
    page = render_page(build_document(str(path)))
    block = re.search(r'id="report-raw">(.*?)</script>', page, re.S)
    assert block is not None
    assert "<" not in block.group(1) and "\r" not in block.group(1) and "\x00" not in block.group(1)
    escapes = {"e": "\ue000", "l": "<", "r": "\r", "0": "\x00", "n": "\n"}
    back = [
        re.sub("\ue000([elr0n])", lambda m: escapes[m.group(1)], line)
        for line in block.group(1).split("\n")
    ]
    assert back[:4] == [raw.decode() for raw in frames[:4]]
    assert base64.b64decode(back[4]) == frames[4]


def test_the_page_carries_rows_packed_and_times_it_can_make_again(tmp_path):
    """Rows travel packed: side, kind, name and session as indexes into tables, a record
    time as microseconds since the section's first, its text only where the page could not
    make it again (a time that is not acp-proxy's own); unpacked, each row is what it was."""
    times = ["2026-11-30T10:00:00.000001Z", "2026-11-30T10:00:01.500000Z", "yesterday"]
    path = tmp_path / "times.jsonl"
    with open(path, "wb") as out:
        out.write(start_record("2026-11-30T10:00:00.000000Z", ["agent"], 1))
        for seq, t in enumerate(times, 1):
            message = {"jsonrpc": "2.0", "method": "_n", "params": {"sessionId": "s"}}
            out.write(frame_record(seq, t, "client", parse_frame(orjson.dumps(message))))
    (section,) = build_document(str(path))["sections"]
    table = section["rows"]
    keys = table["keys"]
    rows_sent = [row for batch in table["values"] for row in orjson.loads(batch.json)]
    sent = [dict(zip(keys, values, strict=True)) for values in rows_sent]
    assert [row["us"] for row in sent] == [1, 1_500_000, None]
    assert [row["t"] for row in sent] == [None, None, "yesterday"]
    assert table["tables"]["side"] == ["client"] and table["tables"]["session"] == ["s"]
    rows = unpack(table)
    assert [row["t"] for row in rows] == times
    assert [row["rel"] for row in rows] == [1e-06, 1.5, None]
    assert {(row["side"], row["name"], row["session"]) for row in rows} == {("client", "_n", "s")}


def test_stored_findings_are_shown_as_recorded_and_revalidate_marks_what_differs(tmp_path):
    """Stored findings are the record of the live session: shown as they are. --revalidate also
    runs today's rules: a stored finding today's rules do not make is marked gone, one they
    make that was not stored is marked new."""
    path = tmp_path / "s.jsonl"
    custom = {"rule": "custom-rule", "level": "warning", "message": "from a plugin", "spec": "x"}
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        out.write(frame_record(1, T, "agent", parse_frame(b"Loading..."), [custom]))
        out.write(violation_record(T, 1, {**custom, "message": "standalone"}))
        out.write(end_record(T, 0, "done"))
    (section,) = build_document(str(path))["sections"]
    assert [(f["rule"], f["state"]) for f in section["findings"]] == [
        ("custom-rule", "stored"),
        ("custom-rule", "stored"),
    ]
    assert unpack(section["rows"])[0]["findings"] == [0] and section["loose"] == [1]
    (section,) = build_document(str(path), revalidate=True)["sections"]
    states = {(f["rule"], f["state"]) for f in section["findings"]}
    assert states == {("custom-rule", "gone"), ("not-json", "new")}


def test_revalidate_finds_what_validate_finds_after_an_end_record_without_a_start(tmp_path):
    """Frames after an end record, with no start record before them, are a connection of their
    own, to the validator and to the page alike (a section each, as stats and the conversation
    count them): today's findings on that connection's end are in its section, as validate
    reports them."""
    path = tmp_path / "split.jsonl"
    initialize = parse_frame(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
    )
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        out.write(frame_record(1, T, "client", initialize))
        out.write(end_record(T, 0, "done"))
        out.write(frame_record(2, T, "client", initialize))
        out.write(end_record(T, 0, "done"))
    sections = build_document(str(path), revalidate=True)["sections"]
    found = [[(f["seq"], f["rule"], f["state"]) for f in s["findings"]] for s in sections]
    assert found == [[(1, "unanswered-request", "new")], [(2, "unanswered-request", "new")]]


def test_show_prints_stored_findings_and_revalidate_recomputes(tmp_path):
    """`show` shows the findings stored in the recording; --revalidate recomputes them."""
    path = tmp_path / "s.jsonl"
    custom = {"rule": "custom-rule", "level": "warning", "message": "from a plugin", "spec": "x"}
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        out.write(frame_record(1, T, "agent", parse_frame(b"Loading..."), [custom]))
        out.write(end_record(T, 0, "done"))
    shown = invoke("show", "--no-color", str(path)).stdout.decode()
    assert "custom-rule" in shown and "not-json" not in shown
    recomputed = invoke("show", "--no-color", "--revalidate", str(path)).stdout.decode()
    assert "not-json" in recomputed and "custom-rule" not in recomputed


def test_report_cli_defaults_and_errors(tmp_path):
    """The page goes beside the recording by default and its path is said; an unreadable
    recording is exit 2 with one line; the recording itself is never overwritten."""
    recording = tmp_path / "clean.jsonl"
    recording.write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    proc = invoke("report", str(recording))
    assert proc.returncode == 0 and (tmp_path / "clean.html").exists()
    assert proc.stdout.decode().startswith(str(tmp_path / "clean.html"))
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    bad = invoke("report", str(text))
    assert bad.returncode == 2 and b"not an acp-proxy transcript" in bad.stderr
    assert b"Traceback" not in bad.stderr
    same = invoke("report", str(recording), "-o", str(recording))
    assert (
        same.returncode == 2 and recording.read_bytes() == (RECORDINGS / "clean.jsonl").read_bytes()
    )


def test_the_report_reads_a_streamed_turn_without_parsing_its_chunks(tmp_path, monkeypatch):
    """A streamed turn's chunks are known by their bytes: of 300 chunks, only the first few
    records are read in full, and the page is the same as from reading all of them."""
    import acp_proxy.readers.annotate
    from acp_proxy.readers.annotate import annotate
    from acp_proxy.readers.report import document
    from acp_proxy.transcript.reading import open_recording

    path = tmp_path / "streamed.jsonl"
    chunk = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text",'
        b'"text":"%s"}}}}'
    )
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq in range(1, 301):
            out.write(frame_record(seq, T, "agent", parse_frame(chunk % b"word %d " % seq)))
        out.write(end_record(T, 0, "done"))
    long_way = document(str(path), annotate(open_recording(str(path)), stored=True))
    parsed: list[int] = []
    from acp_proxy.transcript.records import parse_record as reading

    def counting(number: int, line: bytes) -> object:
        parsed.append(number)
        return reading(number, line)

    monkeypatch.setattr(acp_proxy.readers.annotate, "parse_record", counting)
    assert build_document(str(path)) == long_way
    assert len(unpack(long_way["sections"][0]["rows"])) == 300 and len(parsed) < 10


def test_a_50k_frame_recording_gives_a_page_in_seconds(tmp_path, capsys):
    """Scale: 50,000 frames. Size and generation time are printed (figures, not assertions on
    time); the page stays within a few times the recording's size."""
    path = tmp_path / "big.jsonl"
    chunk = parse_frame(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text",'
        b'"text":"lorem ipsum dolor sit amet, consectetur adipiscing elit"}}}}'
    )
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        out.write(b"".join(frame_record(seq, T, "agent", chunk) for seq in range(1, 50_001)))
        out.write(end_record(T, 0, "done"))
    began = time.perf_counter()
    out_path = report_of(path, tmp_path)
    took = time.perf_counter() - began
    ratio = out_path.stat().st_size / path.stat().st_size
    with capsys.disabled():
        print(
            f"\n  report of 50,000 frames: {path.stat().st_size:,} bytes recorded -> "
            f"{out_path.stat().st_size:,} bytes of page ({ratio:.1f}x) in {took:.1f} s"
        )
    assert ratio < 4


# --- in a real browser ----------------------------------------------------------------------------


@browser
def test_the_page_loads_without_script_errors_and_shows_the_session(tmp_path):
    """Methods, a stored finding, the rebuilt conversation and a frame's exact bytes."""
    page = report_of(RECORDINGS / "misbehaving.jsonl", tmp_path)
    html = dom(page, "#frame=8")
    assert 'data-ready="1"' in html and 'data-errors="0"' in html
    assert "session/request_permission" in html and "session/update · agent_message_chunk" in html
    assert "prompt-result-message-id" in html  # a stored finding, on its frame
    assert "Summarize the project README." in html  # the conversation
    raw = next(
        line
        for line in (RECORDINGS / "misbehaving.jsonl").read_bytes().split(b"\n")
        if b'"seq":8,' in line
    )
    message = orjson.loads(raw)["msg"]
    assert orjson.dumps(message).decode().replace('"', "&quot;") in html or (
        orjson.dumps(message).decode() in html
    )


@browser
def test_filters_and_search_narrow_the_rows(tmp_path):
    """Side, method, update kind, findings only and a text search each narrow the rows."""
    page = report_of(RECORDINGS / "clean.jsonl", tmp_path)

    def count(fragment: str) -> tuple[int, int]:
        found = re.search(r"(\d+) of (\d+) rows", dom(page, fragment, tmp_path))
        assert found is not None
        return int(found.group(1)), int(found.group(2))

    shown, total = count("")
    assert shown == total > 20
    assert count("#side=client")[0] == 4
    assert count("#method=session%2Fprompt")[0] == 2  # the request and its response
    plans = (RECORDINGS / "clean.jsonl").read_bytes().count(b'"sessionUpdate":"plan_update"')
    assert plans and count("#kind=plan_update")[0] == plans
    assert count("#q=Allow%20once")[0] == 1
    assert count("#findings=1")[0] == 0


@browser
def test_a_hostile_payload_renders_as_text(tmp_path):
    """Nothing in a payload becomes markup or script: the page shows it as text."""
    page = report_of(hostile_recording(tmp_path / "hostile.jsonl"), tmp_path)
    html = dom(page, "#frame=3")
    assert 'data-ready="1"' in html and 'data-errors="0"' in html
    assert "data-pwned" not in html
    body = html[html.index("<main") :]
    assert "<img" not in body and "<b>" not in body
    assert "&lt;img src=x onerror=" in body


@browser
def test_screenshot_for_people(tmp_path, capsys):
    """One screenshot a person can look at, at 1280x800, a frame linked (its path is printed)."""
    import base64

    page = laptop(
        tmp_path, report_of(RECORDINGS / "misbehaving.jsonl", tmp_path).as_uri() + "#seq=8"
    )
    shot = Path(os.environ.get("ACP_PROXY_SCREENSHOT", tmp_path / "report.png"))
    try:
        shot.write_bytes(base64.b64decode(str(page.call("Page.captureScreenshot")["data"])))
    finally:
        page.close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    with capsys.disabled():
        print(f"\n  screenshot of the report: {shot}")


def test_where_the_time_went(tmp_path):
    """Per turn, from the prompt: the first chunk, each tool call (first update to final
    status) and permission wait (request to answer) inside the turn; the slowest requests,
    slowest first, each with its seq. The page draws them (a box per method, a waterfall
    per turn) as inline SVG."""
    (section,) = build_document(str(RECORDINGS / "clean.jsonl"))["sections"]
    (turn,) = section["time"]["turns"]
    assert turn["seq"] == 5 and 0 < turn["first_chunk"] < turn["duration"]
    (tool,) = turn["tools"]
    assert (
        tool["title"] == "Read README.md" and 0 <= tool["start"] < tool["end"] <= turn["duration"]
    )
    (wait,) = turn["waits"]
    assert tool["start"] <= wait["start"] < wait["end"] <= tool["end"]
    slowest = section["time"]["slowest_requests"]
    assert [r["latency"] for r in slowest] == sorted((r["latency"] for r in slowest), reverse=True)
    assert {"method", "seq", "latency"} <= set(slowest[0])
    if CHROMIUM is None:
        pytest.skip("chromium is not installed: the drawing is not looked at")
    html = dom(report_of(RECORDINGS / "clean.jsonl", tmp_path), "", tmp_path)
    assert 'data-errors="0"' in html and "Where the time went" in html
    assert html.count('class="waterfall"') == 1 and 'class="boxes"' in html
    assert 'class="tool"' in html and 'class="wait"' in html


@browser
def test_a_long_streamed_message_shows_its_start_and_the_rest_on_request(tmp_path):
    """A message streamed in 1,000 chunks (60,000 characters) is not laid out whole (that
    kept a 200,000-frame page from opening for seconds): the conversation shows its first
    20,000 characters and a button for the rest; the sequence still has every frame."""
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq in range(1, 1001):
            text = f"{seq:05d}" + "x" * 55
            message = {"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                "messageId": "m", "content": {"type": "text", "text": text}}}}  # fmt: skip
            out.write(frame_record(seq, T, "agent", parse_frame(orjson.dumps(message))))
        out.write(end_record(T, 0, "done"))
    html = dom(report_of(path, tmp_path), "", tmp_path)
    assert 'data-ready="1"' in html and 'data-errors="0"' in html
    assert "show all 60,000 characters" in html
    shown = re.search(r"<pre>([^<]*)</pre><button class=\"more\">show all 60,000", html)
    assert shown is not None and len(shown.group(1)) == 20_000
    assert "00334" in shown.group(1) and "00335" not in shown.group(1)  # 333⅓ chunks of 60
    assert "1000 of 1000 rows" in html


@browser
def test_the_conversation_shows_the_sessions_mode_where_it_changed(tmp_path):
    """v1's current_mode_update (the v1 tour sets the mode before its first prompt) is on
    the page's conversation, as `show --conversation` has it."""
    page = report_of(RECORDINGS / "v1-tour.jsonl", tmp_path)
    html = dom(page)
    assert 'data-ready="1"' in html and 'data-errors="0"' in html
    found = re.search(r'outside turns</h4><div class="entity dim"[^>]*><span class="t">mode</span>'
                      r"<pre>code</pre>", html)  # fmt: skip
    assert found, html[html.find("Conversation") :][:3000]


# --- as a person uses it: a laptop's screen, links, the time pictures' scale ------------------


def laptop(tmp_path: Path, url: str) -> DevTools:
    """A page open in headless Chromium at 1280x800."""
    assert CHROMIUM is not None
    page = DevTools(CHROMIUM, tmp_path / f"profile-{len(list(tmp_path.iterdir()))}")
    page.open("about:blank")
    page.call("Emulation.setDeviceMetricsOverride", width=1280, height=800,
              deviceScaleFactor=1, mobile=False)  # fmt: skip
    page.call("Page.navigate", url=url)
    page.until("document.body && document.body.dataset.ready === '1'")
    return page


#: The frame rows wholly in view: below the filters, above the window's bottom, inside the list.
ROWS_IN_VIEW = """(() => {
  const top = document.querySelector("header.top").getBoundingClientRect().bottom;
  const list = document.querySelector(".seqview").getBoundingClientRect();
  return [...document.querySelectorAll(".seqview .row")].filter((r) => {
    const box = r.getBoundingClientRect();
    return box.top >= Math.max(top, list.top) && box.bottom <= Math.min(innerHeight, list.bottom);
  }).map((r) => r.dataset.seq);
})()"""


@browser
def test_at_1280x800_the_frame_list_stays_in_view_and_nothing_is_cut_off(tmp_path):
    """On a laptop's screen the two columns scroll on their own inside the window: scrolling
    the page to its end, or the frame list, leaves frame rows in view under the filters,
    which stay on top; each row's summary has room, inside the list; nothing in the side
    column is wider than it."""
    page = laptop(tmp_path, report_of(RECORDINGS / "misbehaving.jsonl", tmp_path).as_uri())
    try:
        page.js("window.scrollTo(0, document.documentElement.scrollHeight)")
        assert page.js("window.scrollY > 0")  # (the connection's header scrolled away)
        assert page.js("document.querySelector('header.top').getBoundingClientRect().top === 0")
        assert page.js(f"{ROWS_IN_VIEW}.length >= 20")
        page.js("document.querySelector('.seqview').scrollTop = 300")
        page.until("document.querySelector('.seqview').scrollTop === 300")
        rows = page.js(ROWS_IN_VIEW)
        assert isinstance(rows, list) and len(rows) >= 20 and int(rows[0]) > 10
        page.js("window.scrollTo(0, 0)")
        assert page.js(f"{ROWS_IN_VIEW}.length >= 5")
        summaries = page.js("""[...document.querySelectorAll(".seqview .row .summary")].map((s) => {
          const box = s.getBoundingClientRect(), list = s.closest(".seqview");
          const right = list.getBoundingClientRect().left + list.clientLeft + list.clientWidth;
          return [box.width, right - box.right]; })""")
        assert isinstance(summaries, list) and summaries
        assert all(width >= 200 and room >= 0 for width, room in summaries), summaries[0]
        wider = page.js("""[...document.querySelectorAll(".side .box")]
          .filter((b) => b.scrollWidth > b.clientWidth).map((b) => b.className)""")
        assert wider == []
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


#: Each frame row in view: its cells' text (but the findings' badges), and whether each is
#: cut (an ellipsis).
ROW_CELLS = """[...document.querySelectorAll(".seqview .row")].map((r) => [...r.children].map(
  (c) => [[...c.childNodes].filter((n) => !(n.classList && n.classList.contains("badge")))
          .map((n) => n.textContent).join(""), c.scrollWidth > c.clientWidth]))"""


@browser
@pytest.mark.parametrize("name", ["v1-tour.jsonl", "misbehaving.jsonl"])
def test_at_1280_each_frame_row_says_what_the_frame_says_first(tmp_path, name):
    """The frame list at 1280 px: the time, seq, kind and name (the method, or a session
    update's type) never cut; the summary starts with what the frame says (the start of its
    text, what a response answered), not with the method or the session id again."""
    page = laptop(tmp_path, report_of(RECORDINGS / name, tmp_path).as_uri())
    try:
        rows = page.js(ROW_CELLS)
    finally:
        page.close()
    assert isinstance(rows, list) and len(rows) >= 20
    for cells in rows:
        time, rel, seq, _, _, _, kind, method, summary = cells
        assert not any(cut for _, cut in (time, rel, seq, kind, method)), cells
        assert not summary[0].startswith(("session/update", "[sess_0001]", "#")), cells
    said = {method[0]: summary[0] for *_, method, summary in rows}
    assert said["agent_message_chunk"].startswith(("'", '"')), said  # (its text, quoted)
    assert said["session/new"].startswith("ok session sess_0001"), said  # (what it answered)
    assert said["session/prompt"] and said["initialize"].startswith("ok protocolVersion")


@browser
def test_long_unbroken_wire_strings_never_widen_the_page(tmp_path):
    """A 2,000-character method (a filter's option) and a 3,000-character word in the
    prompt (the conversation, the JSON tree): the page is no wider than the window, and
    what holds them wraps inside its box."""
    word = "A" * 3000
    lines = (
        (RECORDINGS / "clean.jsonl")
        .read_bytes()
        .replace(b"Summarize the project README.", word.encode())
        .splitlines(keepends=True)
    )
    method = "_" + "m" * 2000
    request = frame_record(999, "2026-11-29T21:04:47.000000Z", "client", parse_frame(
        orjson.dumps({"jsonrpc": "2.0", "method": method})))  # fmt: skip
    recording = tmp_path / "long.jsonl"
    recording.write_bytes(b"".join([*lines[:-1], request, lines[-1]]))
    page = laptop(tmp_path, report_of(recording, tmp_path).as_uri() + "#turn=1")
    try:
        assert page.js("document.documentElement.scrollWidth <= innerWidth")
        wide = page.js("""[...document.querySelectorAll(".entity, .tree, .filters select")]
          .filter((b) => b.scrollWidth > b.clientWidth + 1).map((b) => b.className || b.id)""")
        assert wide == [], wide
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


@browser
def test_a_clicked_frame_or_turn_is_in_the_url_and_that_url_opens_it(tmp_path):
    """Clicking a frame writes its seq into the URL (#seq=40), clicking a turn its number
    (#turn=2); a page opened at such a URL selects that frame (a turn: its first frame, and
    its heading in the conversation) and scrolls both into view."""
    report = report_of(RECORDINGS / "v1-tour.jsonl", tmp_path)
    page = laptop(tmp_path, report.as_uri())
    try:
        page.js("document.querySelector('.seqview').scrollTop = 40 * 22 - 100")
        page.until("document.querySelector('.seqview .row[data-seq=\"40\"]') !== null")
        page.js("document.querySelector('.seqview .row[data-seq=\"40\"]').click()")
        assert page.js("location.hash") == "#seq=40"
        heading = "[...document.querySelectorAll('.turn h4')].find((h) => h.textContent.startsWith('Turn 2 '))"
        page.js(f"{heading}.click()")
        assert page.js("location.hash") == "#turn=2"
    finally:
        page.close()
    in_view = """((node, box) => { const a = node.getBoundingClientRect(), b = box.getBoundingClientRect();
      const top = document.querySelector("header.top").getBoundingClientRect().bottom;
      return a.top >= Math.max(b.top, top) && a.bottom <= Math.min(b.bottom, innerHeight); })"""
    page = laptop(tmp_path, report.as_uri() + "#seq=40")
    try:
        assert page.js("document.querySelector('.row.sel').dataset.seq") == "40"
        assert page.js(
            f"{in_view}(document.querySelector('.row.sel'), document.querySelector('.seqview'))"
        )
        assert page.js("document.querySelector('.detail h3').textContent.startsWith('Frame 40 ')")
    finally:
        page.close()
    page = laptop(tmp_path, report.as_uri() + "#turn=2")
    try:
        (section,) = build_document(str(RECORDINGS / "v1-tour.jsonl"))["sections"]
        second = section["time"]["turns"][1]
        assert page.js("document.querySelector('.row.sel').dataset.seq") == str(second["seq"])
        assert page.js(
            f"{in_view}(document.querySelector('.row.sel'), document.querySelector('.seqview'))"
        )
        assert page.js("document.querySelector('.turn h4.sel').textContent.startsWith('Turn 2 ')")
        assert page.js(
            f"{in_view}(document.querySelector('.turn h4.sel'), document.querySelector('.side'))"
        )
    finally:
        page.close()


def timed_turns(path: Path) -> Path:
    """A session of two turns at known times: the first 3 s (its first chunk at 0.5 s, a
    tool call from 1 s to 2 s), the second 1.5 s."""
    at = lambda s: f"2026-11-30T10:00:{s:09.6f}Z"  # noqa: E731
    update = lambda u: {"jsonrpc": "2.0", "method": "session/update",  # noqa: E731
                        "params": {"sessionId": "s", "update": u}}  # fmt: skip
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
             "content": {"type": "text", "text": "hi"}}  # fmt: skip
    prompt = lambda i: {"jsonrpc": "2.0", "id": i, "method": "session/prompt",  # noqa: E731
                        "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}  # fmt: skip
    frames = [
        (0.0, "client", prompt(1)),
        (0.5, "agent", update(chunk)),
        (1.0, "agent", update({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Read",
                               "status": "pending"})),
        (2.0, "agent", update({"sessionUpdate": "tool_call_update", "toolCallId": "c",
                               "status": "completed"})),
        (3.0, "agent", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
        (4.0, "client", prompt(2)),
        (4.5, "agent", update(chunk)),
        (5.5, "agent", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
    ]  # fmt: skip
    with open(path, "wb") as out:
        out.write(start_record(at(0), ["agent"], 1))
        for seq, (t, side, message) in enumerate(frames, 1):
            out.write(frame_record(seq, at(t), side, parse_frame(orjson.dumps(message))))
        out.write(end_record(at(6), 0, "done"))
    return path


def test_the_time_pictures_say_their_scale(tmp_path):
    """The waterfalls of a session's turns share one time axis with labelled ticks (a 3 s
    turn and a 1.5 s one: 0 to 3 s, the second's bar half the first's), the latency boxes
    have theirs, and the colours have a legend."""
    recording = timed_turns(tmp_path / "timed.jsonl")
    (section,) = build_document(str(recording))["sections"]
    turns = section["time"]["turns"]
    assert [(t["turn"], t["session"], t["duration"]) for t in turns] == [
        (1, "s", 3.0),
        (2, "s", 1.5),
    ]
    if CHROMIUM is None:
        pytest.skip("chromium is not installed: the drawing is not looked at")
    html = dom(report_of(recording, tmp_path), "", tmp_path)
    assert 'data-errors="0"' in html
    tick = re.compile(r'<text x="([\d.]+)" y="[\d.]+" class="tick">([^<]*)</text>')
    bar = re.compile(
        r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="[\d.]+" class="turn">'
    )
    waterfalls = re.findall(r'<svg [^>]*class="waterfall">(.*?)</svg>', html, re.S)
    assert len(waterfalls) == 2
    axes = [[(float(x), label) for x, label in tick.findall(w)] for w in waterfalls]
    assert [label for _, label in axes[0]] == ["0", "1 s", "2 s", "3 s"]
    assert axes[0] == axes[1]  # one scale for the session's turns
    xs = [x for x, _ in axes[0]]
    assert xs[1] - xs[0] == pytest.approx(xs[3] - xs[2]) and xs[1] > xs[0]
    bars = [bar.search(w) for w in waterfalls]
    widths = [float(b.group(2)) for b in bars if b is not None]
    assert widths[0] == pytest.approx(xs[3] - xs[0]) and widths[1] == pytest.approx(widths[0] / 2)
    (boxes,) = re.findall(r'<svg [^>]*class="boxes">(.*?)</svg>', html, re.S)
    assert [label for _, label in tick.findall(boxes)] == ["0", "1 s", "2 s", "3 s"]
    legend = re.findall(r'<div class="legend">(.*?)</div>', html, re.S)
    keys = [re.sub(r"<[^>]+>", "", k) for k in legend]
    assert keys == [
        "p50 to p95max0 to max",
        "the turnto the first chunka tool calla permission wait",
    ]


#: The longest run of text the page lays out at once (the page's CHUNK).
CHUNK = 65536


@browser
def test_megabytes_in_one_frame_are_laid_out_in_pieces(tmp_path):
    """One 8 MB message in one frame: "show all" (it froze the page 2 s) and the frame's
    bytes (28 s) go in pieces of at most 64 KiB, each laid out only when in view
    (content-visibility); the text is all there, exactly (the pieces' text is the text)."""
    text = "".join(f"line {i:07d} lorem ipsum dolor sit amet\n" for i in range(200_000))
    text = text[:8_000_000] + "x" * 200_000  # (and a long run without a line's end)
    update = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
              "content": {"type": "text", "text": text}}  # fmt: skip
    message = {"jsonrpc": "2.0", "method": "session/update",
               "params": {"sessionId": "s", "update": update}}  # fmt: skip
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        out.write(frame_record(1, T, "agent", parse_frame(orjson.dumps(message))))
        out.write(end_record(T, 0, "done"))
    page = laptop(tmp_path, report_of(path, tmp_path).as_uri())
    pieces = """((box) => [...box.querySelectorAll('.chunk')].map((c) =>
      [c.textContent.length, getComputedStyle(c).contentVisibility]))"""
    try:
        page.js("document.querySelector('.conversation button.more').click()")
        shown = "document.querySelector('.conversation .entity pre')"
        assert page.js(f"{shown}.textContent") == text
        chunks = page.js(f"{pieces}({shown})")
        assert isinstance(chunks, list) and len(chunks) > 100
        assert all(size <= CHUNK and style == "auto" for size, style in chunks)
        page.js("document.querySelector('.seqview .row[data-seq=\"1\"]').click()")
        raw = "document.querySelector('.detail pre.raw')"
        assert page.js(f"{raw}.textContent") == orjson.dumps(message).decode()
        chunks = page.js(f"{pieces}({raw})")
        assert isinstance(chunks, list) and len(chunks) > 100
        assert all(size <= CHUNK and style == "auto" for size, style in chunks)
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


def press(page: DevTools, key: str) -> None:
    """A key pressed and let go, as a keyboard sends it."""
    codes = {"ArrowDown": 40, "ArrowUp": 38, "End": 35, "Home": 36, "Enter": 13, "j": 74, "k": 75}
    for kind in ("keyDown", "keyUp"):
        page.call("Input.dispatchKeyEvent", type=kind, key=key, windowsVirtualKeyCode=codes[key],
                  code=key if len(key) > 1 else f"Key{key.upper()}",
                  **({"text": key} if len(key) == 1 and kind == "keyDown" else {}))  # fmt: skip


@browser
def test_the_frame_list_is_a_listbox_a_keyboard_moves_in(tmp_path):
    """The frame list takes the focus (a tab stop, role listbox, its rows options): ↓ and
    ↑ (j and k), Home and End select a frame as a click does, its detail shown and its seq in
    the URL; the selected row is the list's active descendant and in view."""
    page = laptop(tmp_path, report_of(RECORDINGS / "v1-tour.jsonl", tmp_path).as_uri())
    selected = (
        "document.querySelector('.row.sel') && document.querySelector('.row.sel').dataset.seq"
    )
    try:
        assert page.js("document.querySelector('.seqview').tabIndex") == 0
        assert page.js("document.querySelector('.seqview').getAttribute('role')") == "listbox"
        assert page.js("document.querySelector('.seqview .row').getAttribute('role')") == "option"
        page.js("document.querySelector('.seqview').focus()")
        press(page, "ArrowDown")
        assert page.js(selected) == "1" and page.js("location.hash") == "#seq=1"
        press(page, "ArrowDown")
        press(page, "j")
        assert page.js(selected) == "3" and page.js("location.hash") == "#seq=3"
        assert page.js("document.querySelector('.detail h3').textContent.startsWith('Frame 3 ')")
        press(page, "k")
        assert page.js(selected) == "2"
        active = "document.querySelector('.seqview').getAttribute('aria-activedescendant')"
        assert page.js(f"document.getElementById({active}).dataset.seq") == "2"
        assert page.js("document.querySelector('.row.sel').getAttribute('aria-selected')") == "true"
        press(page, "End")
        last = page.js("[...document.querySelectorAll('.seqview .row')].pop().dataset.seq")
        assert page.js(selected) == last and page.js("location.hash") == f"#seq={last}"
        assert page.js("""(() => { const r = document.querySelector('.row.sel').getBoundingClientRect(),
          b = document.querySelector('.seqview').getBoundingClientRect();
          return r.top >= b.top && r.bottom <= b.bottom; })()""")
        press(page, "Home")
        assert page.js(selected) == "1" and page.js("document.activeElement.className") == "seqview"
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


@browser
def test_the_conversation_item_a_person_narrows_to_is_said_and_in_the_url(tmp_path):
    """A click on a conversation item shows only its frames: the filters say so (its name,
    a button to undo it) and the URL has it (#item=TYPE:ID), so that URL opens the page
    narrowed the same; the button shows every frame again."""
    report = report_of(RECORDINGS / "clean.jsonl", tmp_path).as_uri()
    count = "document.getElementById('f-count').textContent"
    tool = "[...document.querySelectorAll('.entity')].find((e) => e.textContent.includes('Read README.md'))"
    page = laptop(tmp_path, report)
    try:
        everything = page.js(count)
        page.js(f"{tool}.click()")
        narrowed, url = page.js(count), page.js("location.href")
        assert narrowed != everything and "item=tool+call%3A" in str(url)
        assert page.js("document.getElementById('f-item').hidden") is False
        assert "Read README.md" in str(page.js("document.getElementById('f-item').textContent"))
    finally:
        page.close()
    page = laptop(tmp_path, str(url))
    try:
        assert page.js(count) == narrowed and page.js(f"{tool}.classList.contains('sel')")
        assert "Read README.md" in str(page.js("document.getElementById('f-item').textContent"))
        page.js("document.getElementById('f-item-clear').click()")
        assert page.js(count) == everything and "item=" not in str(page.js("location.hash"))
        assert page.js("document.getElementById('f-item').hidden") is True
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


#: Pairs of things drawn in one picture that overprint: two texts, or a text and a bar.
OVERPRINTS = """[...document.querySelectorAll('.box svg')].flatMap((picture) => {
  const boxes = (sel) => [...picture.querySelectorAll(sel)].map((n) => [n, n.getBoundingClientRect()]);
  const texts = boxes('text'), rects = boxes('rect');
  const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const found = [];
  texts.forEach(([n, a], i) => {
    for (const [m, b] of [...texts.slice(i + 1), ...rects]) if (meet(a, b)) found.push([n.textContent, m.textContent]);
  });
  return found; })"""


@browser
def test_the_latency_labels_never_overprint_the_bars(tmp_path):
    """Thirty methods, one of them named with 200 characters, one with 60: in the latency
    picture no label overprints another or a bar; a name too long for its room is cut, with
    an ellipsis, and its title says it whole."""
    long = "_" + "m" * 200
    names = ["session/prompt", long, "_zed.dev/workspace/a_long_extension_method_name_here"]
    names += [f"_ext/method_{i}" for i in range(27)]
    at = lambda s: f"2026-11-30T10:00:{s:09.6f}Z"  # noqa: E731
    path = tmp_path / "methods.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(at(0), ["agent"], 1))
        for i, name in enumerate(names):
            request = {"jsonrpc": "2.0", "id": i, "method": name}
            answer = {"jsonrpc": "2.0", "id": i, "result": {}}
            out.write(frame_record(2 * i + 1, at(i), "client", parse_frame(orjson.dumps(request))))
            out.write(frame_record(2 * i + 2, at(i + 0.02 * i), "agent",
                                   parse_frame(orjson.dumps(answer))))  # fmt: skip
        out.write(end_record(at(40), 0, "done"))
    page = laptop(tmp_path, report_of(path, tmp_path).as_uri())
    try:
        assert page.js(OVERPRINTS) == []
        cut = page.js("""[...document.querySelectorAll('svg.boxes g')].filter((g) =>
          g.querySelector('text').textContent.endsWith('…')).map((g) => g.querySelector('title').textContent)""")
        assert isinstance(cut, list) and long in cut
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


@browser
def test_the_frames_over_time_picture_has_the_time_axis_the_others_have(tmp_path):
    """Frames over time: labelled ticks from 0 past the session's span (5.5 s: 0 to 6 s), its
    bars inside them, as the waterfalls and the latency boxes have; nothing overprints."""
    html_page = report_of(timed_turns(tmp_path / "timed.jsonl"), tmp_path)
    page = laptop(tmp_path, html_page.as_uri())
    try:
        ticks = page.js("""[...document.querySelectorAll('svg.frames .axis text')].map((t) =>
          [t.textContent, Number(t.getAttribute('x'))])""")
        assert isinstance(ticks, list) and [label for label, _ in ticks] == [
            "0",
            "2 s",
            "4 s",
            "6 s",
        ]
        bars = page.js("""[...document.querySelectorAll('svg.frames rect')].map((r) =>
          [Number(r.getAttribute('x')), Number(r.getAttribute('width'))])""")
        assert isinstance(bars, list) and bars
        zero, six = ticks[0][1], ticks[-1][1]
        assert all(
            zero <= x and x + width <= zero + (six - zero) * 5.5 / 6 + 0.01 for x, width in bars
        )
        assert page.js(OVERPRINTS) == []
        assert page.js("document.body.dataset.errors") == "0"
    finally:
        page.close()


@browser
def test_the_conversation_shows_what_permission_was_asked_and_answered(tmp_path):
    """A tool call's permission question and the answer, on the page as `show
    --conversation` has it; the box of findings on no recorded frame says what they are."""
    page = report_of(RECORDINGS / "v1-tour.jsonl", tmp_path)
    html = dom(page)
    assert 'data-ready="1"' in html and 'data-errors="0"' in html
    assert html.count("permission (Allow once / Reject): Allow once") == 2, html[-3000:]
    loose = dom(report_of(RECORDINGS / "misbehaving.jsonl", tmp_path))
    assert "Findings not on a recorded frame (a live-only notice, or the end)" in loose


@browser
def test_at_800_px_the_findings_and_methods_of_the_frame_list_stay_in_view(tmp_path):
    """A narrow window (800 px): the conversation goes below the frame list, which keeps
    each row's method whole and its finding badges inside the window."""
    assert CHROMIUM is not None
    page = DevTools(CHROMIUM, tmp_path / "profile")
    url = report_of(RECORDINGS / "misbehaving.jsonl", tmp_path).as_uri()
    try:
        page.open("about:blank")
        page.call("Emulation.setDeviceMetricsOverride", width=800, height=800,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
        page.call("Page.navigate", url=url)
        page.until("document.body && document.body.dataset.ready === '1'")
        badges = page.js("""[...document.querySelectorAll(".seqview .row .badge")].map(
            (b) => b.getBoundingClientRect().right <= innerWidth)""")
        rows = page.js(ROW_CELLS)
    finally:
        page.close()
    assert isinstance(badges, list) and badges and all(badges), badges
    assert isinstance(rows, list) and rows
    assert not [cells for cells in rows if cells[7][1]], "a method cut"  # (the name column)
