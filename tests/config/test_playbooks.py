"""Playbooks: the documented forms load, and every mistake is named with file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard.domain.durations import format_duration, parse_duration
from guard.domain.exceptions import ConfigError
from guard.playbooks import (
    DockerMonitorSpec,
    HttpMonitorSpec,
    LogfileMonitorSpec,
    load_playbook,
    load_playbooks,
    playbook_json_schema,
)

REPO = Path(__file__).resolve().parents[2]

ISSUE_EXAMPLE = """\
name: api
monitors:
  - id: api-log
    type: logfile
    path: /var/log/api.log
    every: 10s
    rules:
      - kind: db_too_many_connections
        pattern: "too many clients"
        severity: critical
  - id: web
    type: http
    url: http://127.0.0.1:8080/healthz
    every: 5s
    expect_status: 200
    for: 2            # consecutive failures before an incident opens
  - id: containers
    type: docker
    selector: {label: "guard.watch=true"}
"""


def test_the_documented_form_loads_exactly_as_written(tmp_path: Path):
    path = tmp_path / "api.yaml"
    path.write_text(ISSUE_EXAMPLE)
    book = load_playbook(path)
    log, web, containers = book.monitors
    assert isinstance(log, LogfileMonitorSpec) and log.every == 10 and log.start == "end"
    assert log.rules[0].kind == "db_too_many_connections" and log.rules[0].severity == "critical"
    assert isinstance(web, HttpMonitorSpec) and web.for_count == 2 and web.every == 5
    assert web.expected_statuses == [200]
    assert isinstance(containers, DockerMonitorSpec)
    assert containers.selector.labels == ["guard.watch=true"] and containers.events


def test_each_problem_is_named_with_file_field_and_line(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "playbooks").mkdir()
    bad = (
        ISSUE_EXAMPLE.replace("every: 5s", "every: fast")
        .replace("too many clients", "too many (clients")
        .replace("type: docker", "type: dockr")
    )
    bad = bad.replace("expect_status: 200", "expect_status: [ok]")
    (tmp_path / "playbooks" / "api.yaml").write_text(bad)
    with pytest.raises(ConfigError) as exc:
        load_playbooks(Path("playbooks"))
    problems = exc.value.problems
    text = "\n".join(problems)
    assert "playbooks/api.yaml: monitors[1].every: invalid duration 'fast'" in text
    assert (
        "playbooks/api.yaml: monitors[0].rules[0].pattern: invalid regex 'too many (clients'"
        in text
    )
    assert "playbooks/api.yaml: monitors[2].type: unknown monitor type 'dockr'" in text
    assert "playbooks/api.yaml: monitors[1].expect_status" in text
    assert "(line 14)" in next(p for p in problems if ".every:" in p)
    assert len(problems) == 4


def test_unknown_fields_and_duplicate_ids(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(ISSUE_EXAMPLE.replace("every: 10s", "evry: 10s"))
    (tmp_path / "b.yaml").write_text(
        "name: b\nmonitors:\n  - id: web\n    type: http\n    url: http://x/\n"
    )
    with pytest.raises(ConfigError) as exc:
        load_playbooks(tmp_path)
    text = "\n".join(exc.value.problems)
    assert "a.yaml: monitors[0].evry: unknown field" in text


def test_duplicate_monitor_ids_across_files(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(ISSUE_EXAMPLE)
    (tmp_path / "b.yaml").write_text(
        "name: b\nmonitors:\n  - id: web\n    type: http\n    url: http://x/\n"
    )
    with pytest.raises(ConfigError, match="duplicate monitor id 'web'"):
        load_playbooks(tmp_path)


def test_yaml_syntax_error_names_the_line(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("name: a\nmonitors:\n  - id: [unclosed\n")
    with pytest.raises(ConfigError, match=r"a.yaml: invalid YAML: .*\(line \d+\)"):
        load_playbooks(tmp_path)


def test_docker_monitor_needs_a_selector(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("name: a\nmonitors:\n  - id: d\n    type: docker\n")
    with pytest.raises(ConfigError, match="selector needs a label or a name"):
        load_playbooks(tmp_path)


def test_published_schema_is_current_and_accepts_durations():
    published = REPO / "docs" / "playbook.schema.json"
    assert published.read_text() == playbook_json_schema(), (
        "docs/playbook.schema.json is stale: run `guard playbooks schema -o docs/playbook.schema.json`"
    )
    schema = json.loads(published.read_text())
    assert "monitors" in schema["properties"]


@pytest.mark.parametrize("folder", ["playbooks", "examples/playbooks"])
def test_shipped_playbooks_are_valid(folder):
    assert load_playbooks(REPO / folder)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10s", 10),
        ("5m", 300),
        ("1h30m", 5400),
        ("250ms", 0.25),
        (7, 7),
        ("1.5s", 1.5),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["fast", "", "-1", "10x", True])
def test_bad_durations(bad):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(bad)


def test_format_duration():
    assert format_duration(90) == "1m30s" and format_duration(0.25) == "250ms"


def test_a_playbook_reads_the_same_through_libyaml_and_its_error_words_as_before(tmp_path: Path):
    """libyaml parses (faster, less memory kept at 1,200 monitors); a document it refuses is
    worded by the pure parser, as before: the problem and the line."""
    import yaml

    from guard.playbooks import loader

    assert loader._FAST_LOADER is yaml.CSafeLoader  # Debian's and PyPI's PyYAML have it
    text = ISSUE_EXAMPLE + "\n# anchors, merge keys and typed scalars too\n"
    assert loader._parse(text) == yaml.safe_load(text)
    odd = "a: &x {b: 1, c: [1, 2.5, '3', null, true, 2026-12-06]}\nd: *x\ne: {<<: *x, b: 2}\n"
    assert loader._parse(odd) == yaml.safe_load(odd)
    bad = "name: a\nmonitors:\n  - id: web\n\ttype: http\n"  # a tab
    (tmp_path / "a.yaml").write_text(bad)
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.safe_load(bad)
    with pytest.raises(ConfigError) as told:
        load_playbooks(tmp_path)
    mark, problem = pure.value.problem_mark, pure.value.problem  # type: ignore[attr-defined]
    assert f"invalid YAML: {problem} (line {mark.line + 1})" in str(told.value)
