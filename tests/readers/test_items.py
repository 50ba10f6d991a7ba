"""The addon chain offline: a run's aggregates say what its frames say, and a Chain feeds
each addon as it asks (runs whole, or frame by frame) in one pass over the file."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_proxy.readers.annotate import annotate, read
from acp_proxy.readers.stats import Stats
from acp_proxy.transcript.items import Addon, Annotated, Chain, Repeated
from acp_proxy.transcript.reading import open_recording
from acp_proxy.transcript.records import FrameRecord
from tests.exchanges import streamed_recording


class PerVariant(Addon):
    """An addon that only knows add(): what each frame is, and each chunk's seq and text."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.chunks: list[tuple[int, str]] = []

    def add(self, item: Annotated) -> None:
        message = item.message
        if message is None:
            return
        self.counts[f"{message.method} {message.variant}"] += 1
        if message.variant == "agent_message_chunk":
            self.chunks.append((message.seq, message.params["update"]["content"]["text"]))


class Runs(Addon):
    """An addon that takes runs: it keeps each, and the frames it got one by one."""

    def __init__(self) -> None:
        self.runs: list[Repeated] = []
        self.frames = 0

    def add(self, item: Annotated) -> None:
        self.frames += item.message is not None

    def add_run(self, run: Repeated) -> None:
        self.runs.append(run)


def test_a_runs_aggregates_are_what_its_frames_say(tmp_path: Path) -> None:
    texts = [f"word {n} " for n in range(300)]
    path = tmp_path / "stream.jsonl"
    streamed_recording(path, texts)
    runs = [item for item in read(path) if type(item) is Repeated]
    total = sum(run.count for run in runs)
    assert total >= len(texts) - 2  # all but the chunks the shortcut learns from
    for run in runs:
        items = list(run.items())
        records = [item.record for item in items if isinstance(item.record, FrameRecord)]
        frames = [record.frame for record in records]
        assert run.count == len(items) == len(records)
        assert run.seqs == [record.seq for record in records]
        assert run.times == [record.t for record in records]
        assert run.last_t == max(run.times)
        assert run.texts == [f.value["params"]["update"]["content"]["text"] for f in frames]
        assert list(run.raws()) == [f.raw for f in frames]
        assert run.sizes == [len(f.raw) for f in frames]
        assert run.wire_bytes == sum(len(f.raw) + 1 for f in frames)
    assert [text for run in runs for text in run.texts] == texts[-total:]


def test_a_chain_feeds_each_addon_its_way_in_one_pass(tmp_path: Path) -> None:
    """Each addon of a chain gets what it gets alone: the one that takes runs gets them
    whole, the ones that do not get every frame as the long way (annotate) makes it."""
    path = tmp_path / "stream.jsonl"
    streamed_recording(path, [f"chunk {n}" for n in range(600)])
    alone, plain, long_way = Stats(), PerVariant(), PerVariant()
    alone.feed(read(path))
    plain.feed(read(path))
    long_way.feed(annotate(open_recording(str(path))))
    stats, per_variant, runs, second = Stats(), PerVariant(), Runs(), PerVariant()
    chain = Chain(stats, per_variant, runs, second)
    chain.feed(read(path))
    assert stats.as_json() == alone.as_json()
    assert per_variant.counts == second.counts == plain.counts == long_way.counts
    assert per_variant.chunks == second.chunks == long_way.chunks
    assert long_way.counts["session/update agent_message_chunk"] == 600
    # the run taker saw the runs, and no frame of them one by one
    assert runs.runs and runs.frames + sum(run.count for run in runs.runs) == sum(
        long_way.counts.values()
    )


def test_a_chain_of_addons_that_take_runs_never_makes_their_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that only run takers read is never made frames; one addon that does not take
    runs has them made once."""
    path = tmp_path / "stream.jsonl"
    streamed_recording(path, [f"chunk {n}" for n in range(300)])
    made = 0
    original = Repeated.items

    def counting(self: Repeated) -> Iterator[Annotated]:
        nonlocal made
        for item in original(self):
            made += 1
            yield item

    monkeypatch.setattr(Repeated, "items", counting)
    runs = Runs()
    Chain(Stats(), runs).feed(read(path))
    assert made == 0 and runs.runs
    Chain(Stats(), PerVariant(), PerVariant()).feed(read(path))
    assert made == sum(run.count for run in runs.runs)


def test_the_public_read_as_a_plain_loop_counts_every_frame(tmp_path):
    """``acp_proxy.read(path)`` in a plain loop, as a user writes a reader of their own:
    every update of a turn of 1,003 chunks is an item (before: a run of them was one
    item, and the loop counted 5); ``runs=True`` keeps the runs, for an addon that takes
    them, and ``feed`` counts alike either way."""
    import acp_proxy
    from tests.exchanges import streamed_recording

    path = tmp_path / "turn.jsonl"
    streamed_recording(path, [f"w{i} " for i in range(1003)])
    updates = 0
    for item in acp_proxy.read(path):
        if item.message is not None and item.message.method == "session/update":
            updates += 1
    assert updates == 1003
    assert any(type(item) is Repeated for item in acp_proxy.read(path, runs=True))

    class Count(Addon):
        seen = 0

        def add(self, item: Annotated) -> None:
            if item.message is not None and item.message.method == "session/update":
                self.seen += 1

    for items in (acp_proxy.read(path), acp_proxy.read(path, runs=True)):
        counter = Count()
        counter.feed(items)
        assert counter.seen == 1003


def test_the_addon_help_s_first_table_names_what_an_addon_is_handed():
    """``help(acp_proxy.Addon)`` begins with the hooks and the attributes of what they are
    handed; each attribute it names is there, on a recording's frames (an addon written
    from that table runs), and its way of counting prompts counts the prompts."""
    import re

    import acp_proxy
    from tests.conftest import RECORDINGS

    doc = acp_proxy.Addon.__doc__ or ""
    head = doc[: doc.index("The rest of this")]
    named = set(re.findall(r"``seen\.message\.(\w+)|``\.(\w+)``", head))
    attributes = {a or b for a, b in named} - {"rule", "level"}
    assert {"kind", "method", "params", "session", "result", "request"} <= attributes

    assert acp_proxy.Addon is Addon

    class Everything(Addon):
        def __init__(self) -> None:
            self.prompts = self.responses = self.stderr_lines = 0
            self.ended = False

        def frame(self, seen):
            assert seen.side in ("client", "agent") and isinstance(seen.frame.raw, bytes)
            assert isinstance(seen.seq, int) and isinstance(seen.t, str)
            for finding in seen.findings:
                assert finding.rule and finding.level and finding.message
            message = seen.message
            if message is None:
                return
            for name in ("kind", "method", "id", "params", "session", "update", "variant"):
                getattr(message, name)
            if message.kind == "response":
                self.responses += 1
                for name in ("result", "error", "is_error", "request"):
                    getattr(message, name)
            self.prompts += message.kind == "request" and message.method == "session/prompt"

        def stderr(self, line, t):
            self.stderr_lines += 1

        def end(self, findings, t):
            self.ended = True

    addon = Everything()
    addon.feed(acp_proxy.read(str(RECORDINGS / "v1-tour.jsonl")))
    assert addon.prompts == 2 and addon.responses > 2 and addon.ended
