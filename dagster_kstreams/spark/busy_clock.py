"""How much of its process's time each task's batches took: :class:`SharedBusyClock`.

A worker runs its tasks' batches concurrently, so a task's own busy time (the wall time of its
batches) overstates what it cost the worker: four tasks busy for the same ten seconds on one
core each report ten seconds, and their records per busy second are a quarter of what the
worker processes. The lag sensor wants the latter (records of a sub-topology one worker
processes per second), so each task is also charged its *share* of the process's time: at
every moment the batches running then split that moment equally (processor sharing). The
shares of all tasks add up to the time the process had any batch running, however many ran at
once and however many cores Spark had.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

__all__ = ["SharedBusyClock"]


class SharedBusyClock:
    """Processor-sharing time of the batches of one process (module docstring). Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._running: dict[Hashable, int] = {}  # task -> batches of it running now (normally 0 or 1)
        self._shares: dict[Hashable, float] = {}  # task -> seconds charged so far
        self._since = clock()

    def begin(self, task: Hashable) -> None:
        """A batch of ``task`` starts."""
        with self._lock:
            self._charge()
            self._running[task] = self._running.get(task, 0) + 1

    def end(self, task: Hashable) -> None:
        """A batch of ``task`` that :meth:`begin` announced is over (committed or failed)."""
        with self._lock:
            self._charge()
            left = self._running.get(task, 0) - 1
            if left > 0:
                self._running[task] = left
            else:
                self._running.pop(task, None)

    def share(self, task: Hashable) -> float:
        """Seconds of the process's time charged to ``task`` so far (a running batch included)."""
        return self.share_and_time(task)[0]

    def share_and_time(self, task: Hashable) -> tuple[float, float]:
        """:meth:`share`, and the clock's time it was charged up to: a caller that measures a batch's
        own busy time up to that same instant never finds the share beyond it."""
        with self._lock:
            now = self._charge()
            return self._shares.get(task, 0.0), now

    def _charge(self) -> float:
        now = self._clock()
        elapsed, self._since = now - self._since, now
        batches = sum(self._running.values())
        if batches and elapsed > 0:
            for task, count in self._running.items():
                self._shares[task] = self._shares.get(task, 0.0) + elapsed * count / batches
        return now
