"""Window specifications (Kafka Streams' ``TimeWindows``, ``SlidingWindows``,
``SessionWindows``, ``JoinWindows``). Durations are ``datetime.timedelta``; every window keeps
its values in milliseconds (``size_ms``, ``grace_ms`` ...) as Kafka Streams does.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .durations import duration_millis

__all__ = ["TimeWindows", "SlidingWindows", "SessionWindows", "JoinWindows", "Windows", "join_store_retention_ms"]

# Kafka Streams' default grace before 3.0 was 24h; the *_no_grace factories use 0.
_DEPRECATED_DEFAULT_GRACE_MS = 24 * 60 * 60 * 1000


def _ms(duration: timedelta, what: str) -> int:
    if not isinstance(duration, timedelta):
        raise TypeError(f"{what} must be a datetime.timedelta, got {type(duration).__name__}")
    return duration_millis(duration, what)


class Windows:
    """Base of the fixed-size window specs (tumbling/hopping)."""

    grace_ms: int

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True)
class TimeWindows(Windows):
    """Tumbling (advance == size) or hopping (advance < size) windows."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @staticmethod
    def of_size_with_no_grace(size: timedelta) -> "TimeWindows":
        return TimeWindows.of_size_and_grace(size, timedelta(0))

    @staticmethod
    def of_size_and_grace(size: timedelta, after_window_end: timedelta) -> "TimeWindows":
        size_ms = _ms(size, "window size")
        if size_ms <= 0:
            raise ValueError("Window size (sizeMs) must be larger than zero.")
        return TimeWindows(size_ms, size_ms, _ms(after_window_end, "grace period"))

    def advance_by(self, advance: timedelta) -> "TimeWindows":
        advance_ms = _ms(advance, "window advance")
        if advance_ms <= 0 or advance_ms > self.size_ms:
            raise ValueError(
                f"Window advancement interval should be more than zero and less than window duration "
                f"which is {self.size_ms} ms, but given advancement interval is: {advance_ms} ms"
            )
        return TimeWindows(self.size_ms, advance_ms, self.grace_ms)

    def size(self) -> int:
        return self.size_ms

    @property
    def is_tumbling(self) -> bool:
        return self.advance_ms == self.size_ms

    def windows_for(self, timestamp_ms: int) -> list[tuple[int, int]]:
        """The ``[start, end)`` windows containing ``timestamp_ms`` (Kafka's TimeWindows.windowsFor)."""
        window_start = max(0, timestamp_ms - self.size_ms + self.advance_ms) // self.advance_ms * self.advance_ms
        result = []
        while window_start <= timestamp_ms:
            result.append((window_start, window_start + self.size_ms))
            window_start += self.advance_ms
        return result


@dataclass(frozen=True)
class SlidingWindows:
    time_difference_ms: int
    grace_ms: int

    @staticmethod
    def of_time_difference_with_no_grace(time_difference: timedelta) -> "SlidingWindows":
        return SlidingWindows.of_time_difference_and_grace(time_difference, timedelta(0))

    @staticmethod
    def of_time_difference_and_grace(time_difference: timedelta, after_window_end: timedelta) -> "SlidingWindows":
        return SlidingWindows(_ms(time_difference, "time difference"), _ms(after_window_end, "grace period"))

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True)
class SessionWindows:
    inactivity_gap_ms: int
    grace_ms: int

    @staticmethod
    def of_inactivity_gap_with_no_grace(inactivity_gap: timedelta) -> "SessionWindows":
        return SessionWindows.of_inactivity_gap_and_grace(inactivity_gap, timedelta(0))

    @staticmethod
    def of_inactivity_gap_and_grace(inactivity_gap: timedelta, after_window_end: timedelta) -> "SessionWindows":
        gap_ms = _ms(inactivity_gap, "inactivity gap")
        if gap_ms <= 0:
            raise ValueError("Gap time cannot be zero or negative.")
        return SessionWindows(gap_ms, _ms(after_window_end, "grace period"))

    def inactivity_gap(self) -> int:
        return self.inactivity_gap_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True)
class JoinWindows:
    """A record joins records of the other stream within ``[t - before, t + after]``.

    ``spurious_result_fix``: made by ``of_time_difference_*`` (Kafka Streams 3.0+), a left/outer join
    holds a record without partner until its window closes (an outer-join store), so that it is never
    joined with null and then with a partner. The deprecated ``of`` and ``grace`` (still in Kafka
    Streams 4.3.1) turn that off, as there: such a record is joined with null at once, and again
    with each partner that comes later.
    """

    before_ms: int
    after_ms: int
    grace_ms: int
    spurious_result_fix: bool = True

    @staticmethod
    def of_time_difference_with_no_grace(time_difference: timedelta) -> "JoinWindows":
        return JoinWindows.of_time_difference_and_grace(time_difference, timedelta(0))

    @staticmethod
    def of_time_difference_and_grace(time_difference: timedelta, after_window_end: timedelta) -> "JoinWindows":
        ms = _ms(time_difference, "time difference")
        return JoinWindows(ms, ms, _ms(after_window_end, "grace period"))

    @staticmethod
    def of(time_difference: timedelta) -> "JoinWindows":
        """Deprecated in Kafka Streams: a day's grace less both sides of the window (at least 0), and
        no spurious-result fix."""
        ms = _ms(time_difference, "time difference")
        return JoinWindows(ms, ms, max(_DEPRECATED_DEFAULT_GRACE_MS - 2 * ms, 0), spurious_result_fix=False)

    def grace(self, after_window_end: timedelta) -> "JoinWindows":
        """Deprecated in Kafka Streams: only after ``of``, whose spurious-result fix stays off."""
        if self.spurious_result_fix:
            raise ValueError("Cannot call grace() after setting grace value via of_time_difference_and_grace "
                             "or of_time_difference_with_no_grace.")
        return JoinWindows(self.before_ms, self.after_ms, _ms(after_window_end, "afterWindowEnd"),
                           spurious_result_fix=False)

    def before(self, time_difference: timedelta) -> "JoinWindows":
        return JoinWindows(_ms(time_difference, "time difference"), self.after_ms, self.grace_ms,
                           self.spurious_result_fix)

    def after(self, time_difference: timedelta) -> "JoinWindows":
        return JoinWindows(self.before_ms, _ms(time_difference, "time difference"), self.grace_ms,
                           self.spurious_result_fix)

    def size(self) -> int:
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


def join_store_retention_ms(windows: JoinWindows) -> int:
    """How long a stream-stream join's window stores keep a record: the windows' size plus their grace
    (Kafka Streams' ``KStreamImplJoin``; its store suppliers must match it exactly)."""
    return windows.size() + windows.grace_period_ms()
