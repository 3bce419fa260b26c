"""Which log lines are one fault: headers, templates, group_by and the storm breaker."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from guard.config import TriageSettings
from guard.domain.records import Observation
from guard.grouping.drain import TemplateMiner
from guard.grouping.headers import PRESETS, LogFormat
from guard.grouping.tokens import template_tokens
from guard.monitors.logfile import LogfileMonitor
from guard.playbooks.models import LogfileMonitorSpec
from guard.store.db import Database, open_database
from guard.store.models import Incident, LogTemplate
from guard.triage import Triage
from tests.conftest import GuardHome


def tokens(line: str, spec: str = "auto") -> str:
    content, recognised = LogFormat(spec).content(line)
    return " ".join(template_tokens(content, header=not recognised))


# -- headers: neither split one event nor merge two ------------------------------------------

# (preset, a line of event A, the same event with another header, event B with A's header)
HEADERS = [
    (
        "syslog",
        "Dec  2 18:06:48 web1 sshd[4121]: Failed password for root from 10.0.0.1 port 22",
        "Dec 12 03:00:01 web2 sshd[77]: Failed password for root from 10.9.0.3 port 5122",
        "Dec  2 18:06:48 web1 sshd[4121]: Accepted publickey for deploy from 10.0.0.1 port 22",
    ),
    (
        "iso",
        "2026-12-02T18:06:48.123Z ERROR payment provider returned 502",
        "2026-12-03T01:00:00+01:00 ERROR payment provider returned 503",
        "2026-12-02T18:06:48.123Z ERROR disk /dev/sda1 is full",
    ),
    (
        "log4j",
        "2026-12-02 18:06:48,123 [main] ERROR com.example.Api - order 42 failed",
        "2026-12-02 19:00:00,001 [pool-3-thread-7] WARN org.example.Billing: order 7 failed",
        "2026-12-02 18:06:48,123 [main] ERROR com.example.Api - cache warmup done",
    ),
    (
        "windows-cbs",
        "2016-09-28 04:30:30, Info                  CBS    Ending TrustedInstaller initialization.",
        "2016-09-29 11:02:01, Error                 CSI    Ending TrustedInstaller initialization.",
        "2016-09-28 04:30:30, Info                  CBS    Starting the TrustedInstaller main "
        "loop.",
    ),
    (
        "logcat",
        "03-17 16:13:38.811  1702  2395 D WindowManager: visible is false",
        "03-18 09:00:00.001  99  100 I PowerManager: visible is false",
        "03-17 16:13:38.811  1702  2395 D WindowManager: Skipping AppWindowToken for app",
    ),
    (
        "apache-error",
        "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6",
        "[Mon Dec 05 11:00:02 2005] [notice] mod_jk child workerEnv in error state 7",
        "[Sun Dec 04 04:47:44 2005] [error] jk2_init() Found child 6725 in scoreboard slot 10",
    ),
    (
        "nginx-error",
        "2026/12/02 18:06:48 [error] 31#31: *9 upstream timed out (110: Connection "
        "timed out) while reading response header from upstream, client: 10.0.0.1",
        "2026/12/03 01:00:00 [error] 7#7: *812 upstream timed out (110: Connection timed out) "
        "while reading response header from upstream, client: 10.0.4.9",
        "2026/12/02 18:06:48 [error] 31#31: *9 no live upstreams while connecting to upstream, "
        "client: 10.0.0.1",
    ),
    (
        "access",
        '10.0.0.1 - - [06/Dec/2026:16:13:40 +0000] "GET /users/7641.html HTTP/1.1" 404 153 "-" '
        '"Mozilla/5.0"',
        '192.168.4.9 - alice [07/Dec/2026:01:00:00 +0100] "GET /orders/12.html HTTP/1.1" 404 '
        '9 "https://shop.example.com/" "curl/8.5.0"',
        '10.0.0.1 - - [06/Dec/2026:16:13:40 +0000] "POST /api/cart/checkout HTTP/2.0" 404 153 '
        '"-" "Mozilla/5.0"',
    ),
    (
        "glog",
        "I1203 18:06:48.123456    1234 server.go:42] Serving on port 8080",
        "W1204 01:02:03.000001      7 server.go:42] Serving on port 9090",
        "I1203 18:06:48.123456    1234 server.go:42] Shutting down gracefully now",
    ),
    (
        "postgres",
        "2026-12-03 10:00:01.123 UTC [4321] FATAL:  sorry, too many clients already",
        "2026-12-04 11:11:11.999 UTC [99] app@orders FATAL:  sorry, too many clients already",
        "2026-12-03 10:00:01.123 UTC [4321] ERROR:  deadlock detected",
    ),
    (
        "oslo",
        "2017-05-16 00:07:25.394 25746 INFO nova.compute.manager [req-1 - - - - -] "
        "[instance: 3edec1e4-9678-4a3a-a21b-a145a4ee5e61] VM Started (Lifecycle Event)",
        "2017-05-17 10:00:00.000 99 WARNING nova.compute.manager [-] [instance: "
        "b9000564-fe1a-409b-b8cc-1e88b294cd1d] VM Started (Lifecycle Event)",
        "2017-05-16 00:07:25.394 25746 INFO nova.compute.manager [req-1 - - - - -] "
        "[instance: 3edec1e4-9678-4a3a-a21b-a145a4ee5e61] Took 19.05 seconds to build instance.",
    ),
]


@pytest.mark.parametrize(("preset", "a", "a_again", "b"), HEADERS, ids=[h[0] for h in HEADERS])
def test_a_header_neither_splits_one_event_nor_merges_two(preset, a, a_again, b):
    assert LogFormat(preset).content(a)[1], f"{preset} does not parse its own example"
    assert LogFormat("auto").content(a)[1]  # detected without being told
    miner = TemplateMiner(similarity=0.7)
    ids = []
    for line in (a, a_again, b):
        toks = tokens(line).split()
        found = miner.add(toks).cluster or miner.found(len(miner) + 1, toks)
        ids.append(found.id)
    assert ids[0] == ids[1], "one event split by its header"
    assert ids[0] != ids[2], "two events merged by a shared header"


def test_every_preset_is_covered_by_a_test():
    assert {h[0] for h in HEADERS} == set(PRESETS)


def test_masks_values_glued_to_words_paths_and_hosts():
    assert tokens("Receiving block blk_-6952295868487656571 src: /10.0.0.1:50010") == tokens(
        "Receiving block blk_38865049064139660 src: /10.9.8.7:41234"
    )
    assert tokens("worker x1 open /var/lib/app/data-7.db") == tokens(
        "worker x22 open /srv/other/file.db"
    )
    assert tokens("connect api.example.com:443 failed") == tokens("connect db.local:5432 failed")


def test_a_duration_a_sign_and_a_quoted_value_do_not_change_the_token_count():
    # Proxifier's lifetimes, Spark's "boot = -102", Android's tag="View Lock"
    short, long = (
        tokens("close, 0 bytes, lifetime <1 sec"),
        tokens("close, 12 bytes, lifetime 04:00"),
    )
    assert short == "close, <num> bytes, lifetime <num>"
    assert len(long.split()) == len(short.split())
    assert tokens("took 5 ms") == tokens("took 30 seconds") == "took <num>"
    assert tokens("Times: boot = -102, init = 141") == tokens("Times: boot = 7, init = 150")
    assert tokens('acquire tag="View Lock", uid=3') == tokens('acquire tag="RILJ", uid=9')
    assert tokens("range 1-5 done") == "range <num>-<num> done"  # a hyphen is not a sign


def test_a_template_generalises_and_keeps_its_id():
    miner = TemplateMiner(similarity=0.7)
    first = miner.found(1, ["ERROR", "user", "alice", "not", "found"])
    again = miner.add(["ERROR", "user", "bob", "not", "found"])
    assert again.cluster is first and again.changed
    assert first.template == "ERROR user <*> not found"
    reborn = TemplateMiner(similarity=0.7)  # a restart: the stored template is seeded back
    reborn.seed(1, first.template)
    cluster = reborn.add(["ERROR", "user", "carol", "not", "found"]).cluster
    assert cluster is not None and cluster.id == 1


def test_an_event_key_is_never_shared_and_does_not_count_as_likeness():
    miner = TemplateMiner(similarity=0.7)
    words = [
        "upstream",
        "timed",
        "out",
        "while",
        "reading",
        "the",
        "response",
        "header",
        "from",
        "upstream",
    ]
    first = miner.found(1, ["«504»", *words])
    assert miner.add(["«502»", *words]).cluster is None  # all words alike, another key
    # 2 of 3 words alike is below 0.7; counted with the shared key it would be 3 of 4
    miner.found(2, ["«504»", "client", "closed", "connection"])
    assert miner.add(["«504»", "client", "closed", "keepalive"]).cluster is None
    reborn = TemplateMiner(similarity=0.7)  # stored templates come back keyed
    reborn.seed(1, first.template)
    assert reborn.add(["«502»", *words]).cluster is None
    assert (reborn.add(["«504»", *words]).cluster or first).id == 1


# -- triage, in process ----------------------------------------------------------------------


def _monitor(log: Path, **rule: Any) -> LogfileMonitor:
    spec = {
        "id": "app",
        "type": "logfile",
        "path": str(log),
        "start": "beginning",
        "rules": [{"kind": "app_error", "pattern": r"ERROR", **rule}],
    }
    return LogfileMonitor(LogfileMonitorSpec.model_validate(spec))


def _scan(monitor: LogfileMonitor, triage: Triage, state: dict[str, Any]) -> dict[str, Any]:
    obs = monitor.scan(state)
    triage.process([Observation(obs.signals, obs.state, monitor.id)])
    return obs.state


def _incidents(db: Database) -> list[Incident]:
    with db.session() as session:
        from sqlmodel import col, select

        return list(session.exec(select(Incident).order_by(col(Incident.id))).all())


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def test_500_lines_differing_in_a_user_name_are_one_incident(tmp_path, db):
    log = tmp_path / "app.log"
    names = [f"user{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(500)]
    log.write_text(
        "".join(
            f"2026-12-03T10:00:{i % 60:02d}Z ERROR user {n} not found\n"
            for i, n in enumerate(names)
        )
    )
    _scan(_monitor(log, pattern=r"ERROR user \S+ not found"), Triage(db, TriageSettings()), {})
    (incident,) = _incidents(db)
    assert incident.count == 500
    assert "ERROR user" in incident.message


def test_after_a_restart_and_a_generalisation_lines_count_on_the_same_incident(tmp_path, db):
    log = tmp_path / "app.log"
    log.write_text("ERROR worker alpha failed to start\n")
    monitor = _monitor(log)
    state = _scan(monitor, Triage(db, TriageSettings()), {})
    with open(log, "a") as f:
        f.write("ERROR worker beta failed to start\n")  # generalises the template
    state = _scan(monitor, Triage(db, TriageSettings()), state)  # a new Triage: a restart
    with open(log, "a") as f:
        f.write("ERROR worker alpha failed to start\nERROR worker gamma failed to start\n")
    _scan(_monitor(log), Triage(db, TriageSettings()), state)
    (incident,) = _incidents(db)
    assert incident.count == 4
    with db.session() as session:
        (template,) = session.exec(__import__("sqlmodel").select(LogTemplate)).all()
    assert template.template == "ERROR worker <*> failed to start"
    assert incident.details["template_id"] == template.id


def test_group_by_rule_is_one_incident_whatever_the_message(tmp_path, db):
    log = tmp_path / "app.log"
    log.write_text("ERROR disk full\nERROR payment declined for order 7\nERROR cache cold\n")
    _scan(_monitor(log, group_by="rule"), Triage(db, TriageSettings()), {})
    (incident,) = _incidents(db)
    assert incident.count == 3


def test_group_by_named_groups_is_one_incident_per_value(tmp_path, db):
    log = tmp_path / "app.log"
    log.write_text(
        "ERROR db timed out after 3s\nERROR cache timed out\n"
        "ERROR db timed out while connecting to 10.0.0.5\n"
    )
    _scan(
        _monitor(log, pattern=r"ERROR (?P<service>\w+) timed out", group_by=["service"]),
        Triage(db, TriageSettings()),
        {},
    )
    counts = sorted((i.count, i.details.get("rule")) for i in _incidents(db))
    assert [c for c, _ in counts] == [1, 2]


def test_the_storm_breaker_folds_what_is_past_the_cap_into_one_storm(tmp_path, db):
    log = tmp_path / "app.log"
    words = [
        "disk",
        "cache",
        "queue",
        "mailer",
        "search",
        "billing",
        "auth",
        "cron",
        "dns",
        "proxy",
    ]
    log.write_text(
        "".join(f"ERROR {w} subsystem {v} exploded\n" for w in words for v in ("badly", "again"))
    )
    settings = TriageSettings(max_new_incidents=3, storm_window=1.0)
    triage = Triage(db, settings)
    _scan(_monitor(log), triage, {})
    found = _incidents(db)
    storms = [i for i in found if i.kind == "storm"]
    assert len(found) == 4 and len(storms) == 1
    storm = storms[0]
    assert storm.count == 14  # 20 lines, 6 of them on the 3 incidents opened before the cap
    assert storm.title == "storm on app: 14 signals in 7 templates"
    top = storm.details["top_templates"]
    assert len(top) == 7 and all(t["count"] == 2 for t in top)
    assert any("search subsystem" in t["template"] for t in top)
    time.sleep(1.2)  # a whole storm_window with nothing new
    events = triage.process([Observation([], {}, "app")])
    assert [(e.incident_id, e.type) for e in events] == [(storm.id, "resolved")]


def test_a_storm_is_not_calmed_in_the_batch_that_folds_into_it(tmp_path, db):
    """A batch that lags its scan by more than the storm window (a loaded machine) still opens
    the storm and keeps it: its signals are old, but the storm is not quiet."""
    log = tmp_path / "app.log"
    words = ["disk", "cache", "queue", "mailer", "search", "billing", "auth", "cron"]
    log.write_text(
        "".join(f"ERROR {w} subsystem {v} exploded\n" for w in words for v in ("badly", "again"))
    )
    triage = Triage(db, TriageSettings(max_new_incidents=3, storm_window=1.0))
    obs = _monitor(log).scan({})
    time.sleep(1.2)  # the scan's observations are a whole window old when triage sees them
    events = triage.process([Observation(obs.signals, obs.state, "app")])
    (storm,) = [i for i in _incidents(db) if i.kind == "storm"]
    assert storm.state == "open"
    assert [e.type for e in events if e.incident_id == storm.id] == ["opened"]


def test_check_config_names_an_unknown_group(home: GuardHome):
    home.playbook(
        "api",
        [
            {
                "id": "api-log",
                "type": "logfile",
                "path": "/var/log/api.log",
                "rules": [
                    {
                        "kind": "timeout",
                        "pattern": r"(?P<service>\w+) timed out",
                        "group_by": ["svc"],
                    }
                ],
            }
        ],
    )
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2
    said = proc.stdout + proc.stderr
    assert "api.yaml" in said and "group_by" in said and "'svc'" in said
    assert "line " in said and "service" in said  # where, and what the pattern does name


def test_check_config_refuses_a_format_without_a_message_group(home: GuardHome):
    home.playbook(
        "api",
        [
            {
                "id": "api-log",
                "type": "logfile",
                "path": "/var/log/api.log",
                "format": r"^\S+ (?P<msg>.*)$",
                "rules": [{"kind": "e", "pattern": "ERROR"}],
            }
        ],
    )
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2
    assert "format" in proc.stdout + proc.stderr and "message" in proc.stdout + proc.stderr


def test_incidents_show_json_has_the_template(home: GuardHome, tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text("ERROR user alice not found\nERROR user bob not found\n")
    home.playbook(
        "app",
        [
            {
                "id": "app",
                "type": "logfile",
                "path": str(log),
                "start": "beginning",
                "rules": [{"kind": "user_missing", "pattern": "not found"}],
            }
        ],
    )
    home.cli("run", "--once")
    shown = json.loads(home.cli("incidents", "show", "1", "--json").stdout)
    assert shown["template"] == "ERROR user <*> not found"
    assert shown["message"] == "ERROR user alice not found"
    assert shown["count"] == 2
    listed = json.loads(home.cli("incidents", "list", "--json").stdout)
    assert listed[0]["template"] == "ERROR user <*> not found"


@pytest.mark.unit
def test_masks_worked_out_for_a_block_group_lines_as_one_at_a_time():
    import re

    from guard.domain.fingerprint import mask
    from guard.grouping.rules import masks, rule_groupers

    rules = [
        (None, re.compile("ERROR")),
        ("rule", re.compile("FATAL")),
        (["code"], re.compile(r"code=(?P<code>\w+)")),
    ]
    lines = [
        (0, "2026-12-02T18:00:01Z ERROR req=00001f47 timed out after 3000ms token=hunter2x"),
        (1, "2026-12-02T18:00:02Z FATAL database is down"),
        (2, "2026-12-02T18:00:03Z error code=E031 in billing"),
        (0, "2026-12-02T18:00:04Z ERROR req=00002a11 timed out after 12ms token=hunter2x"),
    ]
    seen = masks(rule_groupers(rules, default="template", log_format="auto"), lines)
    assert seen == [mask(lines[0][1]), None, None, mask(lines[3][1])]
    batched = rule_groupers(rules, default="template", log_format="auto")
    alone = rule_groupers(rules, default="template", log_format="auto")
    for (index, line), known in zip(lines, seen, strict=True):
        assert batched[index].group(f"k{index}", line, known) == alone[index].group(
            f"k{index}", line
        )


def _templates(lines: list[str]) -> list[int]:
    """The template each line lands on, through a catch-all rule's grouper and the miner."""
    import re

    from guard.grouping.rules import rule_groupers

    (grouper,) = rule_groupers([(None, re.compile("."))], default="template", log_format="auto")
    miner = TemplateMiner(similarity=0.7)
    out = []
    for line in lines:
        toks = (grouper.group("log", line)[1].content or "").split()
        out.append((miner.add(toks).cluster or miner.found(len(miner) + 1, toks)).id)
    return out


@pytest.mark.unit
def test_an_access_log_status_tells_events_apart_whatever_the_request():
    # nginx's and Apache's access log: the status is the event (a 404 is not a 502), while the
    # client, the time, the path and the size are values
    def access(status: int, path: str, client: str = "10.0.0.1") -> str:
        return (
            f'{client} - - [06/Dec/2026:16:13:40 +0000] "GET {path} HTTP/1.1" {status} 153 '
            '"-" "Python-urllib/3.11"'
        )

    lines = [
        access(404, "/users/7641.html"),
        access(404, "/orders/12.html", "10.9.9.9"),
        access(502, "/users/7641.html"),
        access(502, "/api/carts/77"),
        access(200, "/static/app.css"),
        access(403, "/static/app.css"),
        access(200, "/static/logo.png"),
    ]
    ids = _templates(lines * 20)  # the same again: more lines never merge them
    assert len(set(ids)) == 4
    assert ids[:7] == [ids[0], ids[0], ids[2], ids[2], ids[4], ids[5], ids[4]]
