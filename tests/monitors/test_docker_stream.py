"""The pieces of a container log stream, in process: frames, lines and their bounds, stamps."""

from __future__ import annotations

import struct
import time

import pytest

from guard.monitors.docker_logs import _Lines, parse_ts
from guard.monitors.docker_stream import Demux

pytestmark = pytest.mark.unit


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def test_frames_split_anywhere_across_chunks_come_out_whole_and_in_order():
    body = frame(1, b"out one\n") + frame(2, b"err one\n") + frame(1, b"") + frame(1, b"x" * 70000)
    for size in (1, 3, 7, 8, 9, 4096, len(body)):
        demux = Demux(tty=False)
        got = [f for i in range(0, len(body), size) for f in demux.feed(body[i : i + size])]
        assert got == [(1, b"out one\n"), (2, b"err one\n"), (1, b""), (1, b"x" * 70000)]
    assert Demux(tty=True).feed(b"raw \x01\x00 bytes") == [(1, b"raw \x01\x00 bytes")]


def test_lines_are_split_per_stream_and_a_long_one_is_cut_once():
    lines = _Lines(keep=10)
    assert lines.feed(1, b"a\nbb") == [(1, b"a")]
    assert lines.feed(2, b"err\n") == [(2, b"err")]  # another stream: its own line
    assert lines.feed(1, b"b\n") == [(1, b"bbb")]
    assert lines.feed(1, b"0123456789ABC") == [(1, b"0123456789")]  # cut at keep, handed over
    assert lines.feed(1, b"DEF" * 1000) == []  # the rest of that line is dropped...
    assert lines.held() == 0
    assert lines.feed(1, b"G\nnext\n") == [(1, b"next")]  # ...up to its newline


def test_a_line_without_its_newline_is_handed_over_after_flush_after_then_its_rest_dropped():
    lines = _Lines(keep=100)
    assert lines.feed(1, b"waiting for input") == []
    due = lines.due(0.2)
    assert due is not None and 0 < due <= 0.2
    assert lines.flush(0.2) == []  # not yet
    time.sleep(0.25)
    assert lines.flush(0.2) == [(1, b"waiting for input")]
    assert lines.due(0.2) is None and lines.held() == 0
    assert lines.feed(1, b"... still\nnew line\n") == [(1, b"new line")]


def test_engine_timestamps_parse_to_nanoseconds():
    assert parse_ts(b"2026-12-05T06:53:04.009592904Z") == 1796453584_009592904
    assert parse_ts(b"2026-12-05T06:53:04.5Z") == 1796453584_500000000
    assert parse_ts(b"2026-12-05T06:53:04Z") == 1796453584_000000000
    for bad in (b"", b"garbage", b"2026-12-05Tab:53:04.1Z", b"\x00" * 30):
        with pytest.raises(ValueError):
            parse_ts(bad)


def test_the_positions_an_observation_carries_do_not_move_on_with_later_lines():
    """The runtime stores an observation later, maybe after more lines were counted: its state
    must be the positions of its own signals, or a kill in between loses those lines."""
    from guard.monitors.docker import _container_logs
    from guard.monitors.docker_logs import _Pending
    from guard.playbooks.models import DockerMonitorSpec

    spec = DockerMonitorSpec.model_validate(
        {
            "id": "c",
            "type": "docker",
            "selector": {"label": "x"},
            "rules": [{"kind": "k", "pattern": "x"}],
        }
    )
    logs = _container_logs(spec)
    logs.positions = {"web": {"stdout": [5, 1]}}
    carried = logs.state()
    logs._consumed(("web", "stdout"), _Pending(lines=[b"later"], stamps=[9]), 1)
    assert carried["logs"] == {"web": {"stdout": [5, 1]}}
    assert logs.state()["logs"] == {"web": {"stdout": [9, 1]}}
