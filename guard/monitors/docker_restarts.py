"""A restart policy's crash loop, told apart from a plain exit on the events stream.

The engine answers a container's exit by its restart policy before it sends the ``die``
event: the container is then ``Restarting`` (or, after the first back-off of 100 ms, running
again since the exit). Such a ``die`` is ``container_restarting`` from the first one, with the
exit code it died with: the container is in the loop the moment the engine restarts it, and
every later exit lands on the same incident (the same kind, the same masked message as the
poll's). The ``start`` that follows is no sign of health (a container that exits 1 at start is
"running" for milliseconds): it is judged ``STAYS_UP`` seconds later, and reported running
(``ok``) only if that same start still runs. An exit the policy does not answer (no policy,
``docker stop``, ``on-failure`` out of retries) is ``container_exited`` as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any

STAYS_UP = 10.0
"""Seconds a start by the restart policy must last to count as running: Docker's own measure
(its restart back-off resets once a container ran this long)."""


def started_ns(state: Mapping[str, Any]) -> int | None:
    """``State.StartedAt`` in nanoseconds since the epoch (the engine's clock, as event times)."""
    text = str(state.get("StartedAt") or "")
    if not text or text.startswith("0001-"):
        return None
    whole, _, rest = text.rstrip("Z").partition(".")
    digits = "".join(c for c in rest if c.isdigit())[:9].ljust(9, "0")
    try:
        seconds = datetime.fromisoformat(whole + "+00:00").timestamp()
    except ValueError:
        return None
    return int(seconds) * 1_000_000_000 + int(digits)


def restarted_by_policy(attrs: Mapping[str, Any], died_ns: int | None) -> bool:
    """Whether the engine answered the exit at ``died_ns`` with its restart policy."""
    state = attrs.get("State") or {}
    if state.get("Restarting"):
        return True
    started = started_ns(state)
    if not state.get("Running") or started is None or died_ns is None:
        return False
    return started > died_ns  # back already: the first back-off is 100 ms


def still_that_start(attrs: Mapping[str, Any] | None, start_ns: int | None) -> bool:
    """Whether the container runs the start the ``start`` event at ``start_ns`` reported."""
    state = (attrs or {}).get("State") or {}
    started = started_ns(state)
    if not state.get("Running") or state.get("Restarting") or started is None:
        return False
    return start_ns is None or started <= start_ns


class RestartLoops:
    """The containers whose last exit their restart policy answered, and for each, the pending
    look at whether its latest start held."""

    def __init__(self) -> None:
        self._looping: set[str] = set()
        self._looks: dict[str, asyncio.Task[None]] = {}

    def died(self, cid: str, *, restarting: bool) -> None:
        self._cancel(cid)
        if restarting:
            self._looping.add(cid)
        else:
            self._looping.discard(cid)

    def started(self, cid: str, look: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """For a start by the restart policy: schedule ``look`` (the judgement) and say True;
        for anyone else's start, False (it is reported at once)."""
        if cid not in self._looping:
            return False
        self._cancel(cid)
        self._looks[cid] = asyncio.create_task(look(), name=f"docker-stays-up:{cid[:12]}")
        return True

    def held(self, cid: str) -> None:
        """The start held: the loop is over."""
        self._looping.discard(cid)
        self._looks.pop(cid, None)

    def _cancel(self, cid: str) -> None:
        task = self._looks.pop(cid, None)
        if task is not None and task is not _current():
            task.cancel()

    async def aclose(self) -> None:
        tasks = list(self._looks.values())
        self._looks.clear()
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)


def _current() -> asyncio.Task[Any] | None:
    with contextlib.suppress(RuntimeError):
        return asyncio.current_task()
    return None


class KnownPolicies:
    """Each container's restart policy, as the monitor's own inspects told it: a ``die`` of a
    container whose policy is ``no`` is an exit without asking the engine again (that inspect
    was most of Guard's part of the detection latency). ``update`` and ``destroy`` events
    forget a container (``docker update --restart`` may have changed it): ask again."""

    def __init__(self) -> None:
        self._policy: dict[str, str] = {}

    def learn(self, cid: str, attrs: Mapping[str, Any]) -> None:
        policy = ((attrs.get("HostConfig") or {}).get("RestartPolicy") or {}).get("Name")
        self._policy[cid] = policy or "no"

    def never_restarts(self, cid: str) -> bool:
        """Whether the engine never answers this container's exit (its policy is ``no``)."""
        return self._policy.get(cid) == "no"

    def event(self, event: Mapping[str, Any]) -> None:
        if event.get("Action") in ("update", "destroy"):
            self._policy.pop(str(event.get("id", "")), None)
