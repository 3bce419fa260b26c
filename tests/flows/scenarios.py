"""The faults of issue #40 on the stack, each as a user would cause and watch it, each
asserting what the issue says Guard must show. Each leaves the stack healthy again (in
``finally``), so a scenario that fails does not break the next one.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import httpx

from tests.flows.ledger import Flow, stamp
from tests.helpers.agent import incidents, show, wait_for

HOG = "for i in $(seq 8); do psql -h 127.0.0.1 -U postgres -c 'select pg_sleep(20)' & done; wait"
FILL = "dd if=/dev/zero of=/data/junk bs=4k 2>/dev/null; true"
QUIET = 4.0  # a log rule's `quiet` (set when the playbooks know it)
RESOLVE_AFTER = 6.0  # the containers' log rules' `resolve_after` (likewise)
APP_RESOLVE_AFTER = 40.0  # the app log's: people answer its questions before it ends
UNRELATED = 35.0  # an OOM kill this long after the payment errors began is not their effect
WORDINGS = ("No space left on device", "Background saving error")  # Redis's, one rule


def healthy_again(flow: Flow) -> None:
    wait_for(flow.stack.healthy, 90, "the stack to answer /health again")


def get(flow: Flow, path: str, timeout: float = 15) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.get(flow.stack.url.replace("/health", path), timeout=timeout)


def opened(flow: Flow, since: float, what: str, within: float = 45, **match: Any) -> Any:
    return wait_for(
        lambda: next(
            (i for i in flow.opened_since(since) if all(i[k] == v for k, v in match.items())),
            None,
        ),
        within,
        what,
    )


def pg_out_of_connections(flow: Flow) -> None:
    """PostgreSQL out of connections: 1 incident, the HTTP check and the app's log joined."""
    s = flow.stack
    since = flow.fault("pg out of connections")
    s.exec("pg", "sh", "-c", HOG, detach=True, user="postgres")
    want = {"pg-container", "app-log", "web-http"}
    found = wait_for(
        lambda: next(
            (i for i in flow.opened_since(since) if flow.monitors_of(i["id"]) >= want), None
        ),
        60,
        "one incident that PostgreSQL's log, the app's log and the HTTP check all joined",
    )
    healthy_again(flow)  # the sessions end after 20 s
    time.sleep(3)  # anything still in flight lands
    flow.kept["pg"] = found["id"]
    figures = flow.record("pg out of connections", since)
    assert figures["incidents"] == 1, flow.opened_since(since)
    view = show(flow.home, found["id"])
    related = {r["monitor"]: r for r in view["related"]}
    assert "web-http" in related or view["monitor_id"] == "web-http"
    text = view["message"] + " ".join(str(r["message"]) for r in view["related"])
    assert "too many clients" in text, view
    assert figures["restarts"] == {} and figures["reopened"] == 0


def crash_loop(flow: Flow) -> None:
    """A crash loop: 1 incident, container_restarting, its real exit code (3), not healed while
    it loops, 1 question; the human's fix heals it."""
    s, app = flow.stack, flow.stack.name("app")
    since = flow.fault("crash loop")
    try:
        s.exec("redis", "redis-cli", "set", "app:mode", "broken")
        inc = opened(flow, since, "the app's incident", target=app)
        flow.kept["loop"] = inc["id"]
        wait_for(
            lambda: show(flow.home, inc["id"])["kind"] == "container_restarting",
            45,
            "the incident to say container_restarting",
        )
        wait_for(lambda: s.inspect("app")["RestartCount"] >= 4, 60, "the loop to go on")
        view = show(flow.home, inc["id"])
        assert "code 3" in view["title"] + view["message"], view  # the loop's real exit code
        assert view["state"] != "resolved", view  # not healed while it loops
        assert flow.questions([inc["id"]]) == 1
        fix = ("redis-cli", "-h", s.name("redis"), "set", "app:mode", "ok")
        reply = flow.home.cli("reply", str(inc["id"]), "--", *fix, timeout=180)
        print(f"FLOW crash loop: the answer: {reply.stdout.strip()}")
        assert show(flow.home, inc["id"])["state"] == "resolved"
        healthy_again(flow)
        first = flow.record("crash loop", since)
        assert first["incidents"] == 1 and first["questions"] == 1, first
    finally:
        s.exec("redis", "redis-cli", "set", "app:mode", "ok")
        healthy_again(flow)


def crash_loop_again(flow: Flow) -> None:
    """The human's fix of the crash loop learned; the repeat healed with 0 new incidents,
    0 questions and no restart after it is healed."""
    s, app, inc = flow.stack, flow.stack.name("app"), flow.kept["loop"]
    learned = show(flow.home, inc)["details"].get("learned_skill")
    assert learned, "the human's fix of the crash loop was not learned"
    again = flow.fault("crash loop again")
    try:
        s.exec("redis", "redis-cli", "set", "app:mode", "broken")
        wait_for(
            lambda: (v := show(flow.home, inc))["reopen_count"] >= 1 and v["state"] == "resolved",
            120,
            "the learned skill to heal the repeat",
        )
        healthy_again(flow)
        healed_at = time.time()
        time.sleep(10)  # it stays up
        repeat = flow.record("crash loop again", again)
        assert repeat["incidents"] == 0 and repeat["questions"] == 0, repeat
        (run,) = flow.runs(again)
        assert run["status"] == "verified" and run["skill"] == learned, run
        assert not flow.engine.of(app, "die", healed_at), "restarted again after it was healed"
    finally:
        s.exec("redis", "redis-cli", "set", "app:mode", "ok")
        healthy_again(flow)


def oom_beside_an_open_incident(flow: Flow) -> None:
    """An OOM kill while an unrelated incident of the same service is open: a new incident,
    asked."""
    s = flow.stack
    since = flow.fault("payment error")
    get(flow, "/pay")
    pay = opened(flow, since, "the payment error's incident", monitor_id="app-log")
    wait_for(
        lambda: show(flow.home, pay["id"])["state"] == "awaiting_human", 45, "the pay question"
    )
    began = stamp(pay["first_seen"])
    while time.time() < began + UNRELATED:  # it keeps failing, open and firing, meanwhile
        time.sleep(5)
        get(flow, "/pay")
    oom = flow.fault("oom kill")
    get(flow, "/hog", timeout=30)
    wait_for(lambda: s.inspect("app")["OOMKilled"], 30, "the kernel to OOM-kill the app")
    healthy_again(flow)
    killed = opened(flow, oom, "a new incident for the OOM kill", kind="container_oom_killed")
    assert killed["id"] != pay["id"]
    wait_for(lambda: flow.questions([killed["id"]]) >= 1, 45, "the OOM kill's question")
    figures = flow.record("oom kill", oom)
    assert figures["incidents"] == 1 and figures["questions"] == 1, figures
    assert figures["restarts"] == {"app": 1}, figures  # the restart policy's, no other
    assert "container_oom_killed" not in {r["kind"] for r in show(flow.home, pay["id"])["related"]}


def paid(flow: Flow, fault: str) -> int:
    """A payment error logged now: its incident (opened, or reopened), once a human is asked."""
    since = flow.fault(fault)
    get(flow, "/pay")
    return int(
        wait_for(
            lambda: next(
                (
                    i["id"]
                    for i in incidents(flow.home)
                    if i["monitor_id"] == "app-log"
                    and i["kind"] == "payment_error"
                    and i["state"] == "awaiting_human"
                    and stamp(i["last_seen"]) >= since
                ),
                None,
            ),
            45,
            "the payment error's question",
        )
    )


def noop_fix(flow: Flow) -> None:
    """A no-op fix (`true`) on a log incident whose lines stopped: not learned, and told why."""
    pay = paid(flow, "payment error again")
    last = stamp(show(flow.home, pay)["last_seen"])
    time.sleep(max(0.0, last + QUIET + 1 - time.time()))  # the lines stopped `quiet` ago
    skills = sorted(p.name for p in (flow.home.root / "skills").glob("learned-*"))
    since = flow.fault("no-op fix")
    reply = flow.home.cli("reply", str(pay), "--", "true", timeout=180)
    figures = flow.record("no-op fix", since)
    assert "saved as skill" not in reply.stdout, reply.stdout
    assert "not learned" in reply.stdout, reply.stdout  # and says why
    assert sorted(p.name for p in (flow.home.root / "skills").glob("learned-*")) == skills
    timeline = show(flow.home, pay)["timeline"]
    assert any("not learned" in t["message"] for t in timeline), timeline
    assert figures["incidents"] == 0


def full_disk(flow: Flow) -> None:
    """A full disk logged in two wordings: 1 incident; it ends `resolve_after` after the lines
    stop."""
    s = flow.stack
    since = flow.fault("full disk")
    try:
        s.exec("redis", "sh", "-c", FILL)
        inc = opened(flow, since, "the full disk's incident", monitor_id="redis-container")
        wait_for(lambda: all(w in logs(flow, since) for w in WORDINGS), 30, "Redis's two wordings")
        time.sleep(8)  # both wordings, twice, are read
    finally:
        s.exec("redis", "rm", "-f", "/data/junk")
    stopped = time.time()
    wait_for(lambda: "DB saved on disk" in logs(flow, stopped), 30, "Redis to save again")
    done = wait_for(
        lambda: (v := show(flow.home, inc["id"]))["state"] == "resolved" and v,
        RESOLVE_AFTER + 45,
        "the incident to end resolve_after after the lines stopped",
    )
    figures = flow.record("full disk", since)
    assert figures["incidents"] == 1, flow.opened_since(since)
    took = stamp(done["resolved_at"]) - stamp(done["last_seen"])  # after the last line
    print(f"FLOW full disk: resolved {took:.1f} s after its last line")
    assert stamp(done["resolved_at"]) >= stopped - 1
    assert RESOLVE_AFTER - 1 <= took <= RESOLVE_AFTER + 15, took


def logs(flow: Flow, since: float = 0.0) -> str:
    redis = flow.stack.containers["redis"]
    return str(redis.logs(since=int(since) if since else None).decode(errors="replace"))
