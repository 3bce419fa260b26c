"""``format: auto`` learns a source's header from its first lines (guard/grouping/header_learning.py)."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from guard.grouping.header_learning import SAMPLE, WINDOW, learn_header
from guard.grouping.headers import LogFormat
from guard.grouping.rules import learn_headers, rule_groupers
from guard.grouping.tokens import template_tokens
from guard.monitors.logfile import LogfileMonitor
from guard.playbooks.models import LogfileMonitorSpec

pytestmark = pytest.mark.unit

WORDS = [
    "disk",
    "cache",
    "queue",
    "worker",
    "client",
    "session",
    "lease",
    "backup",
    "index",
    "shard",
    "replica",
]
VERBS = [
    "failed",
    "started",
    "stopped",
    "retried",
    "timed-out",
    "recovered",
    "dropped",
    "opened",
    "closed",
]
HOSTS = ["web1", "web2", "db-3", "cache7", "api.internal"]
LEVELS = ["INFO", "WARN", "ERROR", "DEBUG"]


def message(rng: random.Random) -> str:
    """A message of varied shape: words, a value or two, lengths 3 to 8."""
    words = [rng.choice(WORDS), rng.choice(VERBS)]
    for _ in range(rng.randint(1, 6)):
        words.append(rng.choice([*WORDS, *VERBS, "on", "for", "after", str(rng.randint(1, 999))]))
    return " ".join(words)


def ts(rng: random.Random) -> str:
    return f"2026-12-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"


# header shapes: name -> a function making (header, message) for one line
SHAPES: dict[str, Callable[[random.Random], str]] = {
    "syslog": lambda r: (
        f"Dec {r.randint(1, 28):2d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:07 "
        f"{r.choice(HOSTS)} {r.choice(['sshd', 'cron', 'kernel'])}[{r.randint(1, 99999)}]:"
    ),
    "iso-level": lambda r: f"{ts(r)} {r.choice(LEVELS)}",
    "bracketed-component-pid": lambda r: (
        f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:07.{r.randint(0, 999):03d} "
        f"[{r.choice(['scheduler', 'http', 'db-pool'])}] {r.randint(1, 99999)}"
    ),
    "epoch-host-pipes": lambda r: (
        f"{r.randint(10**9, 2 * 10**9)}|{r.choice(HOSTS)}|{r.choice(LEVELS).lower()}|"
    ),
    "category-or-dash": lambda r: (
        f"{r.choice(['-', '-', '-', '-', 'KERNDTLB'])} {r.randint(10**9, 2 * 10**9)} "
        f"{r.choice(HOSTS)} {r.choice(['RAS', 'APP'])} {r.choice(LEVELS)}"
    ),
}


def lines_of(shape: str, n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        header, text = SHAPES[shape](rng), message(rng)
        out.append((f"{header}{'' if header.endswith('|') else ' '}{text}", text))
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_the_learned_header_leaves_exactly_the_message(shape):
    lines = lines_of(shape, 400)
    pattern = learn_header([line for line, _ in lines[:SAMPLE]])
    assert pattern is not None, f"no header learned from {shape} lines"
    for line, text in lines:  # the later lines too: learned once, it fits them all
        assert message_of(pattern, line) == text, line


@pytest.mark.parametrize("shape", SHAPES)
def test_auto_takes_the_learned_header_off_every_line(shape):
    fmt = LogFormat("auto")
    lines = lines_of(shape, 300)
    fmt.learn(line for line, _ in lines)
    assert not fmt.learning
    assert all(fmt.content(line) == (text, True) for line, text in lines)


def test_without_a_header_nothing_is_learned_and_lines_are_their_own_content():
    rng = random.Random(3)
    lines = [message(rng) for _ in range(300)]
    assert learn_header(lines) is None
    fmt = LogFormat("auto")
    fmt.learn(lines)
    assert [fmt.content(line) for line in lines] == [(line, False) for line in lines]


def message_of(pattern: re.Pattern[str], line: str) -> str | None:
    found = pattern.match(line)
    return None if found is None else found.group("message")


def test_a_repeated_message_is_not_taken_for_a_header():
    # one event 200 times: its words line up like header fields, but it is one masked form
    lines = [f"{ts(random.Random(i))} ERROR PacketResponder 1 for block 42" for i in range(200)]
    assert learn_header(lines) is None


def test_words_and_a_number_at_the_start_are_message_not_header():
    rng = random.Random(9)
    lines = [
        f"{rng.choice(['GET', 'POST', 'PUT'])} /{rng.choice(WORDS)}/{rng.randint(1, 99)} "
        f"{rng.choice([200, 404, 500])} {rng.randint(1, 900)}ms {message(rng)}"
        for _ in range(200)
    ]
    assert learn_header(lines) is None


def test_an_optional_field_before_a_dash_is_part_of_the_header():
    rng = random.Random(5)
    rows = []
    for _ in range(200):
        extra = " *64" if rng.random() < 0.4 else ""
        text = message(rng)
        rows.append((f"[10.30 16:49:{rng.randint(10, 59)}] chrome.exe{extra} - {text}", text))
    pattern = learn_header([line for line, _ in rows])
    assert pattern is not None
    assert all(message_of(pattern, line) == text for line, text in rows)


def test_a_header_that_changes_mid_file_is_learned_again():
    first, then = lines_of("iso-level", 300, seed=1), lines_of("bracketed-component-pid", 300)
    fmt = LogFormat("auto")
    fmt.learn(line for line, _ in first)
    generation = fmt.generation
    assert all(fmt.content(line) == (text, True) for line, text in first)
    for line, _ in then[:WINDOW]:  # half a window of lines that do not fit: learned again
        fmt.content(line)
    assert fmt.generation > generation
    assert all(fmt.content(line) == (text, True) for line, text in then[WINDOW:])


def test_two_writers_with_their_own_headers_are_both_learned():
    first = lines_of("epoch-host-pipes", 300, seed=2)
    a, b = lines_of("epoch-host-pipes", 400, seed=3), lines_of("bracketed-component-pid", 400)
    mixed = [row for pair in zip(a, b, strict=True) for row in pair]  # one line each in turn
    fmt = LogFormat("auto")
    fmt.learn(line for line, _ in first)
    for line, _ in mixed[: 2 * WINDOW]:
        fmt.content(line)
    generation = fmt.generation
    assert all(fmt.content(line) == (text, True) for line, text in mixed[2 * WINDOW :])
    assert fmt.generation == generation  # and neither pushes the other out


def test_a_declared_format_wins_and_learns_nothing():
    lines = lines_of("bracketed-component-pid", 300)
    fmt = LogFormat(r"^(?P<message>.*)$")
    fmt.learn(line for line, _ in lines)
    assert not fmt.learning and fmt.generation == 0
    assert fmt.content(lines[0][0]) == (lines[0][0], True)


def test_presets_that_fit_keep_today_behaviour():
    lines = [line for line, _ in lines_of("syslog", 300)]
    fmt = LogFormat("auto")
    fmt.learn(lines)
    assert fmt.generation == 0  # the syslog preset fits them: nothing else was learned
    assert fmt.content(lines[0])[1]


def test_a_grouper_forgets_what_it_worked_out_before_the_header_was_learned():
    (grouper,) = rule_groupers([(None, re.compile("."))], default="template", log_format="auto")
    lines = lines_of("bracketed-component-pid", 300)
    before = grouper.group("log", lines[0][0])[1].content  # learning: one line is not enough
    learn_headers([grouper], "".join(f"{line}\n" for line, _ in lines).encode())
    after = grouper.group("log", lines[0][0])[1].content
    assert before != after
    assert after == " ".join(template_tokens(lines[0][1]))


def disk_full_content(log: Path, start: str, appended: str = "") -> str:
    """The grouping content of the one ``ERROR disk ... full`` line a monitor on ``log`` sees
    (``appended``: written after the monitor took its starting position)."""
    spec = {
        "id": "app",
        "type": "logfile",
        "path": str(log),
        "start": start,
        "rules": [{"kind": "disk_full", "pattern": r"ERROR disk \S+ full"}],
    }
    monitor = LogfileMonitor(LogfileMonitorSpec.model_validate(spec))
    state = monitor.baseline({}) or {}
    with open(log, "a") as f:
        f.write(appended)
    (signal,) = monitor.scan(state).signals
    asyncio.run(monitor.close())
    assert signal.grouping is not None
    return signal.grouping.content


def test_a_log_monitor_learns_from_every_line_it_reads_not_only_matched_ones(tmp_path: Path):
    rows = lines_of("bracketed-component-pid", 300)
    rows[-1] = (rows[-1][0].replace(rows[-1][1], "ERROR disk sda full"), "ERROR disk sda full")
    log = tmp_path / "app.log"
    log.write_text("".join(f"{line}\n" for line, _ in rows))
    assert disk_full_content(log, "beginning") == "ERROR disk sda full"  # learned off 300 lines


def test_a_monitor_starting_at_the_end_learns_from_the_lines_already_there(tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text("".join(f"{line}\n" for line, _ in lines_of("bracketed-component-pid", 300)))
    # one new line: too few to learn from on its own
    new = "09:15:07.123 [scheduler] 4121 ERROR disk sda full\n"
    assert disk_full_content(log, "end", new) == "ERROR disk sda full"


def test_a_monitor_shows_the_learner_each_line_of_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines already there are learned from once, as the monitor starts; after that each
    check shows only what it read (each check used to show the file's last 64 KiB again: the
    same lines counted many times, a sample of 200 made of a few, and the CPU of it)."""
    from guard.grouping.header_learning import HeaderLearner

    shown: list[str] = []
    feed = HeaderLearner.feed

    def showing(self: HeaderLearner, lines: Iterable[str]) -> None:
        lines = list(lines)
        shown.extend(lines)
        feed(self, lines)

    monkeypatch.setattr(HeaderLearner, "feed", showing)
    rows = [line for line, _ in lines_of("bracketed-component-pid", 40)]
    log = tmp_path / "app.log"
    log.write_text("".join(f"{line}\n" for line in rows[:10]))
    spec = {
        "id": "app",
        "type": "logfile",
        "path": str(log),
        "start": "end",
        "rules": [{"kind": "oom", "pattern": "out of memory"}],
    }
    monitor = LogfileMonitor(LogfileMonitorSpec.model_validate(spec))
    state = monitor.baseline({}) or {}
    for line in rows[10:]:  # one line a check, as a quiet service writes them
        with open(log, "a") as f:
            f.write(f"{line}\n")
        state = dict(monitor.scan(state).state)
    asyncio.run(monitor.close())
    assert shown == rows


def postgres_lines(zone: str, n: int = 300) -> list[tuple[str, str]]:
    """PostgreSQL's default ``log_line_prefix`` (``%m [%p] ``) with the zone ``log_timezone``
    prints, then a severity, as a real server's log has them."""
    rng = random.Random(11)
    severities = ["LOG", "ERROR", "DETAIL", "STATEMENT", "FATAL", "HINT"]
    out = []
    for _ in range(n):
        text = message(rng)
        stamp = f"2026-12-06 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:07.{rng.randint(0, 999):03d}"
        out.append(
            (f"{stamp} {zone} [{rng.randint(1, 99999)}] {rng.choice(severities)}:  {text}", text)
        )
    return out


@pytest.mark.parametrize("zone", ["-03", "+0530", "+0545"])
def test_a_preset_that_fits_only_the_start_of_the_header_does_not_stop_learning(zone):
    # the iso preset fits the timestamp and leaves "-03 [4321] ERROR:" in every message: the
    # learned header takes off all of it
    lines = postgres_lines(zone)
    fmt = LogFormat("auto")
    fmt.learn(line for line, _ in lines)
    assert [fmt.content(line) for line, _ in lines] == [(text, True) for _, text in lines]


def test_a_learned_header_that_takes_off_no_more_than_the_presets_is_not_kept():
    lines = postgres_lines("UTC")  # the postgres preset fits it whole
    fmt = LogFormat("auto")
    fmt.learn(line for line, _ in lines)
    assert fmt.generation == 0
    assert [fmt.content(line) for line, _ in lines] == [(text, True) for _, text in lines]


def test_once_learned_the_first_lines_are_not_kept():
    """A log monitor keeps its learner for good: the ``SAMPLE`` lines it learned from would be
    200 lines of memory per monitor (4 MB at 200 log files), for nothing."""
    from guard.grouping.header_learning import HeaderLearner

    lines = [f"node-{n % 3} pid={4000 + n} | request {n} served in {n % 7}ms" for n in range(300)]
    learner, reference = HeaderLearner(), HeaderLearner()
    for line in lines:
        learner.header(line)
    reference.feed(lines[:SAMPLE])
    assert not learner.learning and learner._sample == []
    assert learner.patterns == reference.patterns and learner.generation == reference.generation


def test_the_first_lines_are_masked_once_and_learn_what_learning_at_once_learns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The learner tries at 8, 16, 32, ... lines: each line is masked once as it comes, and each
    attempt learns from exactly what masking the whole sample again would give."""
    from guard.grouping import header_learning
    from guard.grouping.header_learning import HeaderLearner, distinct_lines

    rng = random.Random(7)
    lines = [
        f"2026-12-0{1 + i % 3} 10:{i % 60:02d}:0{i % 10}.{i:03d} [{4000 + i % 7}] "
        f"{rng.choice(['ERROR', 'LOG', 'WARNING'])}: {rng.choice(WORDS)} {rng.choice(VERBS)} {i}"
        for i in range(SAMPLE + 40)
    ] + ["2026-12-03T10:00:01Z INFO request 1 served in 3ms"] * 30
    masked = 0
    from guard.domain.fingerprint import mask as real_mask

    def counting(line: str) -> str:
        nonlocal masked
        masked += 1
        return real_mask(line)

    monkeypatch.setattr(header_learning, "mask", counting)
    learner = HeaderLearner()
    fed, kept = 0, []
    while learner.learning:
        chunk = lines[fed : fed + 5]
        learner.feed(chunk)
        fed += len(chunk)
        if learner.learning:
            kept.append((list(learner._sample), list(learner._distinct.values())))
    assert masked == SAMPLE  # once per sampled line, however many attempts
    monkeypatch.setattr(header_learning, "mask", real_mask)
    assert all(distinct == distinct_lines(sample) for sample, distinct in kept)
    once = learn_header(lines[:SAMPLE])
    assert once is not None and learner.patterns == [once]
