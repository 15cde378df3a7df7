"""A windowed aggregation's store as Kafka Streams 4.3.1 settles it (``WindowStoreMaterializer``,
``SlidingWindowStoreMaterializer``, ``SessionStoreMaterializer``): the ``Materialized`` retention
(else the windows' size, or twice the time difference, or the inactivity gap, plus the grace) must
cover the windows, checked when the operation is defined; the store then keeps its supplier's own
retention when it is given one (``Materialized.as_(Stores.in_memory_window_store(...))``), which
Kafka Streams does not check against the windows (the Spark runner refuses one that would drop
windows still open: :mod:`dagster_kstreams.processors.store_suppliers`)."""
from __future__ import annotations

from .durations import duration_millis
from .errors import TopologyException
from .materialized import Materialized
from .store_suppliers import SessionBytesStoreSupplier, WindowBytesStoreSupplier
from .windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = ["windowed_store_retention", "windows_minimum_retention"]


def windows_minimum_retention(windows) -> int:
    """The retention a store of ``windows`` needs to hold every window still open (Kafka Streams'
    default retention of the DSL's store)."""
    if isinstance(windows, TimeWindows):
        return windows.size_ms + windows.grace_ms
    if isinstance(windows, SlidingWindows):
        return 2 * windows.time_difference_ms + windows.grace_ms
    return windows.inactivity_gap_ms + windows.grace_ms


def windowed_store_retention(windows, materialized: Materialized, store_name: str, operation: str) -> int:
    """The retention of the store ``store_name`` of an aggregation over ``windows``, after Kafka
    Streams' checks: the supplier's kind (a window store's for time and sliding windows, a session
    store's for session windows) and the ``Materialized`` retention against the windows."""
    session = isinstance(windows, SessionWindows)
    materialized.check_supplier(SessionBytesStoreSupplier if session else WindowBytesStoreSupplier, operation)
    needed = windows_minimum_retention(windows)
    retention = needed if materialized.retention is None else duration_millis(materialized.retention, "retention")
    if retention < needed:
        raise TopologyException(f"The retention period of the {'session' if session else 'window'} store "
                                f"{store_name} must be no smaller than {_covered(windows)}. Got {_got(windows)}, "
                                f"retention=[{retention}]")
    return retention if materialized.supplier is None else materialized.supplier.retention_ms


def _covered(windows) -> str:
    if isinstance(windows, TimeWindows):
        return "its window size plus the grace period"
    if isinstance(windows, SlidingWindows):
        return "2 * time difference plus the grace period"
    return "the session inactivity gap plus the grace period"


def _got(windows) -> str:
    if isinstance(windows, TimeWindows):
        return f"size=[{windows.size_ms}], grace=[{windows.grace_ms}]"
    if isinstance(windows, SlidingWindows):
        return f"time difference=[{windows.time_difference_ms}], grace=[{windows.grace_ms}]"
    return f"gap=[{windows.inactivity_gap_ms}], grace=[{windows.grace_ms}]"
