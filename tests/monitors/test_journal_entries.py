"""journalctl's JSON output read in bounded memory, the journald playbook fields, and where a
restart resumes (in process; the real journal is in test_journald.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard.domain.exceptions import ConfigError
from guard.monitors.journal_entries import TAIL, Entry, Lines, parse
from guard.monitors.journal_tail import JournalTail
from guard.monitors.logfile import Tally, groupers_of
from guard.monitors.matcher import LineMatcher
from guard.monitors.multiline import Framer
from guard.playbooks import load_playbooks
from guard.playbooks.models import JournaldMonitorSpec

pytestmark = pytest.mark.unit

PLAYBOOK = """\
name: host
monitors:
  - id: host-journal
    type: journald
    units: [api.service, worker.service]
    priority: warning
    multiline: python
    rules:
      - kind: oom_killed
        pattern: "Out of memory: Killed process"
        severity: critical
"""


def test_the_playbook_form_loads_and_a_bad_priority_is_named(tmp_path: Path):
    (tmp_path / "host.yaml").write_text(PLAYBOOK)
    [book] = load_playbooks(tmp_path)
    [spec] = book.monitors
    assert isinstance(spec, JournaldMonitorSpec)
    assert spec.units == ["api.service", "worker.service"] and spec.priority_level == 4
    assert spec.directory == "/var/log/journal" and spec.multiline_spec.preset == "python"
    (tmp_path / "host.yaml").write_text(PLAYBOOK.replace("warning", "loud"))
    with pytest.raises(ConfigError) as exc:
        load_playbooks(tmp_path)
    assert "monitors[0].priority" in "\n".join(exc.value.problems)
    (tmp_path / "host.yaml").write_text(PLAYBOOK.replace("priority: warning", "priority: 9"))
    with pytest.raises(ConfigError, match=r"monitors\[0\]\.priority"):
        load_playbooks(tmp_path)
    number = JournaldMonitorSpec.model_validate(
        {"id": "j", "type": "journald", "priority": 0, "rules": [{"kind": "k", "pattern": "x"}]}
    )
    assert number.priority_level == 0


def _line(**fields: object) -> bytes:
    return json.dumps(
        {"__CURSOR": "c1", "__REALTIME_TIMESTAMP": "1700000000000000", **fields}
    ).encode()


def test_an_entry_names_the_unit_it_is_about_and_reads_binary_messages():
    entry = parse(
        _line(MESSAGE="a\nb\r", _SYSTEMD_UNIT="api.service", SYSLOG_IDENTIFIER="api"), None, 100
    )
    assert entry == Entry("c1", 1700000000000000, "api.service", "api", [b"a", b"b"])
    about = parse(_line(MESSAGE="x", UNIT="api.service", _SYSTEMD_UNIT="init.scope"), None, 100)
    assert about is not None and about.target == "api.service"  # systemd's word on a unit
    raw = parse(_line(MESSAGE=[66, 0xFF, 10, 67], _COMM="a.out"), None, 100)
    assert raw is not None and raw.lines == [b"B\xff", b"C"] and raw.target == "a.out"
    assert parse(b"not json", None, 100) is None
    assert parse(json.dumps({"MESSAGE": "no cursor"}).encode(), None, 100) is None
    cut = parse(_line(MESSAGE="y" * 500), None, 100)
    assert cut is not None and cut.lines == [b"y" * 101]  # one over: the matcher marks it cut


def test_a_line_over_the_limit_is_kept_bounded_and_still_read():
    lines = Lines(head=1000)
    big = _line(MESSAGE='ERROR \u00e9"quoted" ' + "z" * 50_000, PRIORITY="3", _SYSTEMD_UNIT="big")
    got = []
    for i in range(0, len(big), 4096):  # as a pipe delivers it
        got += lines.feed(big[i : i + 4096])
        assert lines.buffered <= 1000 + TAIL
    got += lines.feed(b"\n" + _line(MESSAGE="next") + b"\n")
    (head, tail), (small, none) = got
    assert len(head) == 1000 and tail is not None and none is None
    entry = parse(head, tail, 100)
    assert entry is not None and entry.target == "big" and entry.cursor == "c1"
    assert entry.lines[0].startswith('ERROR \u00e9"quoted" zzz'.encode())
    assert parse(small, none, 100) is not None
    # cut inside an escape, or inside an array of byte values: what came before still reads
    head = b'{"__CURSOR":"c9","MESSAGE":"ab\\u00'
    assert parse(head, b"", 100) == Entry("c9", 0, "journal", "", [b"ab"])
    head = b'{"__CURSOR":"c9","MESSAGE":[65,66,6'
    assert parse(head, b"", 100) == Entry("c9", 0, "journal", "", [b"AB"])


def _tail(flush_after: float = 3600) -> JournalTail:
    spec = JournaldMonitorSpec.model_validate(
        {
            "id": "j",
            "type": "journald",
            "rules": [{"kind": "err", "pattern": r"ERROR (?P<n>\d+)", "group_by": ["n"]}],
            "multiline": {"flush_after": flush_after},
        }
    )
    matcher = LineMatcher([(r.pattern, r.ignore_case) for r in spec.rules])
    return JournalTail(
        list(spec.rules), matcher, groupers_of(spec), Framer(spec.multiline_spec), 4096
    )


def _entry(n: int, unit: str, text: str = "") -> Entry:
    return Entry(f"c{n}", n, unit, unit, [(text or f"ERROR {n}").encode()])


def _counted(tail: JournalTail, entries: list[Entry]) -> list[str]:
    tally = Tally("j", "", source="journald")
    tail.count(tally, tail.add(entries))
    return sorted(f"{s.target}:{s.message}" for s in tally.result() for _ in range(s.count))


def test_a_restart_resumes_before_what_was_pending_and_skips_what_was_counted():
    tail = _tail()
    tail.restore({"cursor": "c0"})
    first = [_entry(1, "a"), _entry(2, "b"), _entry(3, "b"), _entry(4, "b")]
    assert _counted(tail, first) == ["b:ERROR 2", "b:ERROR 3"]  # a's and b's last are held
    state = tail.state()
    assert state["cursor"] == "c0" and state["done"] == [["b", "b", "c3", 3]]
    again = _tail()
    again.restore(state)  # journalctl reads again from c0 (inclusive: --cursor)
    replay = [_entry(0, "z"), *first, _entry(5, "a"), _entry(6, "b")]
    assert replay[0].cursor == "c0"  # the resume entry itself is dropped
    assert _counted(again, replay) == ["a:ERROR 1", "b:ERROR 4"]
    # the entry a key was counted to is gone (vacuumed): its later entries are new
    gone = _tail()
    gone.restore({"cursor": "c0", "done": [["b", "b", "c3", 3]]})
    assert _counted(gone, [_entry(2, "b"), _entry(4, "b"), _entry(9, "b")]) == ["b:ERROR 4"]
