"""A watchdog for the event loop: every check, message and timer of ``guard run`` waits while
something holds the loop (a blocking call, a lock, a slow regex). The loop ticks every 50 ms
(each tick's lateness feeds ``guard_event_loop_max_stall_seconds``). When it has not ticked for
``threshold`` seconds, the watchdog's thread logs the loop thread's Python stack, once per
stall, so the culprit is named in the log rather than guessed from missed checks (0: no
watchdog thread, only the metric)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback

from loguru import logger

from guard.telemetry import metrics

TICK = 0.05  # seconds between the loop's ticks


class StallWatch:
    """Ticked by the loop (``run``), watched by a daemon thread (``start``)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.stalls = 0  # stalls reported
        self._last = time.monotonic()
        self._loop_thread = threading.get_ident()
        self._done = threading.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop`` is set (in the loop), watching from a thread meanwhile."""
        self._loop_thread = threading.get_ident()
        self._last = time.monotonic()
        if self.threshold > 0:
            watcher = threading.Thread(target=self._watch, name="loop-stall-watch", daemon=True)
            watcher.start()
        try:
            while not stop.is_set():
                self._last = before = time.monotonic()
                await asyncio.sleep(TICK)
                metrics.record_loop_late(time.monotonic() - before - TICK)
        finally:
            self._done.set()

    def _watch(self) -> None:
        reported = False
        while not self._done.wait(min(self.threshold / 4, 1.0)):
            stalled = time.monotonic() - self._last
            if stalled < self.threshold:
                reported = False
                continue
            if reported:
                continue
            reported = True
            self.stalls += 1
            frame = sys._current_frames().get(self._loop_thread)
            stack = "".join(traceback.format_stack(frame)[-15:]) if frame else "(no frame)\n"
            logger.warning(
                "the event loop has not run for {:.1f}s (checks and messages wait); it is in:\n{}",
                stalled,
                stack.rstrip(),
            )
