"""Property: whatever bytes cross the live proxy, in whatever chunks, come out unchanged both
ways, and the transcript gives every frame back (hypothesis, a bounded number of examples:
each one runs the real `acp-proxy run`)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import FrameRecord
from tests.conftest import PROXY, SCRIPTED_AGENT, clean_env

#: Lines of anything (JSON-ish text, raw bytes, \r, empty), joined by newlines.
LINES = st.lists(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=200).map(str.encode),
        st.sampled_from([b"", b"\r", b'{"jsonrpc":"2.0","method":"_x"}', b"\xff\xfe", b"[1,2]"]),
    ),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(lines=LINES, cuts=st.lists(st.integers(min_value=1, max_value=500), max_size=30))
def test_arbitrary_bytes_in_arbitrary_chunks_pass_unchanged_and_are_recorded(lines, cuts):
    data = b"\n".join(line.replace(b"\n", b"") for line in lines)
    with tempfile.TemporaryDirectory() as tmp:
        transcript, capture = Path(tmp) / "t.jsonl", Path(tmp) / "capture"
        with subprocess.Popen(
            [*PROXY, "run", "--record", str(transcript), "--log-level", "error", "--",
             *SCRIPTED_AGENT, "echo", str(capture)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=clean_env(),
        ) as proc:  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            rest = data
            for cut in cuts:  # write in the chunks hypothesis chose, then the rest
                if not rest:
                    break
                proc.stdin.write(rest[:cut])
                proc.stdin.flush()
                rest = rest[cut:]
            proc.stdin.write(rest)
            proc.stdin.close()
            out = proc.stdout.read()
            assert proc.wait(timeout=60) == 0
        assert capture.read_bytes() == data  # client -> agent
        assert out == data  # agent -> client
        frames = [r for r in read_records(transcript) if isinstance(r, FrameRecord)]
        for side in ("client", "agent"):  # every frame, and whether it ended with its \n
            stream = b"".join(
                r.frame.raw + (b"\n" if r.frame.terminated else b"")
                for r in frames
                if r.side == side
            )
            assert stream == data
