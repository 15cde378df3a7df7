"""``KTable.suppress``: Kafka Streams 4.3.1's ``KTableSuppressProcessorSupplier`` over its
``InMemoryTimeOrderedKeyValueChangeBuffer``.

Per table update ``(key, value)`` reaching the processor (a windowed aggregation's window, a
table's row), with ``t`` the update's timestamp:

* the processor's stream time becomes ``max(stream time, t)``: its own, over the updates that
  reach it (a window's update carries the largest timestamp of the window's records);
* the update is buffered under its serialized key (the table's key serde; a windowed key is
  Kafka's windowed format), at buffer time ``t`` (``until_time_limit``) or the window's end
  (``until_window_closes``). A key already buffered keeps its buffer time and place, and only its
  latest update is kept (Kafka's "non-resetting" put);
* then, while the oldest buffered record has a buffer time ``<= stream time - duration``
  (``time_to_wait_for_more_events``, or the windows' grace: a session window's gap plus grace),
  it is evicted and forwarded with the timestamp of its latest update. Eviction order is Kafka's
  ``TreeMap`` order: buffer time, then the serialized key's bytes (unsigned, lexicographic);
* with ``BufferConfig.max_records(n)`` (emit early when full), while more than ``n`` records are
  buffered, the oldest is evicted and forwarded the same way.

A tombstone (a deleted window or row) is buffered like any update; at eviction it is forwarded
by ``until_time_limit`` and dropped by ``until_window_closes`` (Kafka Streams' "safe to drop
tombstones": a final result was never emitted for the key). A suppression makes the tables before
it send their old values, so a table ``filter`` on the way drops an update whose new and old
values both fail it (or are absent): such an update never reaches the suppression (it neither
advances its stream time nor enters the buffer); the processor reads the old value behind the
update from the table's store (:class:`~.table_joins.ValueGetter`) to tell.

State: the buffer and the stream time of each suppress processor are task-level values of the
task's state (:mod:`.task_state`), so the sub-topology runs task-grouped: an update of one key
evicts the records of other keys, in one order across keys. Both survive restarts with the
task's checkpoint, where Kafka Streams restores the buffer from its changelog but starts the
stream time over (the runner's result is Kafka Streams' when it does not restart).

Definition time: a bounded ``max_bytes`` buffer is refused (Kafka Streams counts each record's
serialized size plus its record context's topic name and headers, a size the runner's buffer does
not keep), and so is a bounded buffer that shuts down when full (Kafka Streams stops
the application after whatever its last commit wrote, a point the runner's micro-batches cannot
reproduce). So are processors that keep state downstream of the suppression in its sub-topology,
and a filter of a windowed table before it (the runner does not carry a window's old value).
"""

from __future__ import annotations

import dataclasses
import heapq
from typing import Any, Iterator, Optional

from dagster_kstreams.processors.base import Processor, reachable, register
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.table_joins import ValueGetter, value_getter
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows

__all__ = ["SuppressionBuffer", "Suppress", "BUILDERS"]


class SuppressionBuffer:
    """Kafka Streams' time-ordered suppression buffer: the latest update of each buffered key,
    ordered by ``(buffer time, serialized key)``. Pure logic, pickled into the task's state."""

    def __init__(self) -> None:
        self._order: list[tuple[int, bytes]] = []  # a heap: one entry per buffered key
        # serialized key -> (key, value, timestamp, headers of its latest update; absent in older checkpoints)
        self._records: dict[bytes, tuple] = {}

    def __len__(self) -> int:
        return len(self._records)

    def put(self, buffer_time: int, key_bytes: bytes, key, value, timestamp: int, headers=None) -> None:
        """Buffer an update (``headers``: its record context's, which it is emitted with, as Kafka
        Streams' buffer keeps the record context); a key already buffered keeps its buffer time and place."""
        if key_bytes not in self._records:
            heapq.heappush(self._order, (buffer_time, key_bytes))
        self._records[key_bytes] = (key, value, timestamp, headers)

    def min_time(self) -> Optional[int]:
        """The oldest buffer time (None: the buffer is empty)."""
        return self._order[0][0] if self._order else None

    def evict_oldest(self) -> tuple:
        """Remove the first record in buffer order: ``(key, value, timestamp, headers)`` of its
        latest update (``(key, value, timestamp)`` when an older version buffered it)."""
        _, key_bytes = heapq.heappop(self._order)
        return self._records.pop(key_bytes)

    def expired(self, expiry_time: int) -> Iterator[tuple]:
        """Evict, in order, every record whose buffer time is at most ``expiry_time``."""
        while self._order and self._order[0][0] <= expiry_time:
            yield self.evict_oldest()

    def over(self, max_records: Optional[int]) -> Iterator[tuple]:
        """Evict, in order, while more than ``max_records`` records are buffered (None: no bound)."""
        while max_records is not None and len(self._records) > max_records:
            yield self.evict_oldest()


@dataclasses.dataclass
class _SuppressState:
    stream_time: int = -1  # Kafka's ConsumerRecord.NO_TIMESTAMP
    buffer: SuppressionBuffer = dataclasses.field(default_factory=SuppressionBuffer)


@register
class Suppress(Processor):
    """``KTableSuppressProcessor``: buffers table updates, forwards them when their time is up."""

    kind = "suppress"
    task_grouped = True

    def __init__(self, name: str, key_serde, window_end_time: bool, duration_ms: int, max_records: Optional[int],
                 drop_tombstones: bool, filtered_table: Optional[ValueGetter] = None):
        super().__init__(name)
        self.key_serde = key_serde
        self.window_end_time = window_end_time
        self.duration_ms, self.max_records, self.drop_tombstones = duration_ms, max_records, drop_tombstones
        # the table behind a filter on the way, whose old value tells an update the filter drops
        self.filtered_table = filtered_table
        self._state_key = f"suppress.{name}"

    def init(self, program) -> None:
        super().init(program)
        if self.filtered_table is not None:
            self.filtered_table.bind(program)

    def process(self, key, value, context, out, state) -> None:
        if value is None and self.filtered_table is not None and \
                self.filtered_table.get_old(self, key, state, context) is None:
            return  # KTableFilter with old values: neither the new nor the old value passes
        task = task_state_of(self, state)
        suppress = task.values.get(self._state_key)
        if suppress is None:
            suppress = task.values[self._state_key] = _SuppressState()
        timestamp = context.timestamp
        if timestamp is None:
            raise ValueError(f"processor {self.name} needs record timestamps")
        suppress.stream_time = max(suppress.stream_time, timestamp)
        buffer_time = key.window.end if self.window_end_time else timestamp
        try:
            key_bytes = self.key_serde.serialize(key)
        except Exception as cause:  # noqa: BLE001 - named below
            raise ValueError(f"processor {self.name} cannot serialize the key {key!r} with {self.key_serde!r}: "
                             f"{type(cause).__name__}: {cause}") from cause
        suppress.buffer.put(buffer_time, key_bytes, key, value, timestamp, context.headers)
        for evicted in suppress.buffer.expired(suppress.stream_time - self.duration_ms):
            self._emit(evicted, context, out, state)
        for evicted in suppress.buffer.over(self.max_records):
            self._emit(evicted, context, out, state)

    def _emit(self, evicted, context, out, state) -> None:
        key, value, timestamp, *headers = evicted  # no headers: buffered by an older version
        if value is None and self.drop_tombstones:
            return
        emitted = dataclasses.replace(context, timestamp=timestamp, headers=headers[0] if headers else None)
        self.forward(key, value, emitted, out, state)


# -- definition time -------------------------------------------------------------------------
# What may follow a suppression in its sub-topology: processors that keep no state (the evicted
# records of other keys are forwarded with the state of the record being processed).
_STATELESS_KINDS = {
    NodeKind.TABLE_TO_STREAM, NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES, NodeKind.FILTER, NodeKind.MAP,
    NodeKind.MAP_VALUES, NodeKind.FLAT_MAP, NodeKind.FLAT_MAP_VALUES, NodeKind.SELECT_KEY, NodeKind.PEEK,
    NodeKind.FOREACH, NodeKind.PRINT, NodeKind.BRANCH, NodeKind.BRANCH_CHILD, NodeKind.MERGE, NodeKind.SINK,
    NodeKind.REPARTITION_FILTER, NodeKind.SUPPRESS,
}
_TABLE_STEPS = {NodeKind.TABLE_FILTER, NodeKind.TABLE_MAP_VALUES, NodeKind.SUPPRESS}


def _table_path(sub, node) -> tuple[Any, bool]:
    """``(windows, filtered)`` of the table ``node`` suppresses: the windows of the windowed
    aggregation behind it (None: not windowed), and whether a table filter lies on the way."""
    filtered = False
    while True:
        (parent,) = node.parents or (None,)
        if parent is None:
            return None, filtered
        node = sub.node(parent)
        if node.kind is NodeKind.COGROUP_MERGE:  # a cogroup's table: its aggregates are alike
            node = sub.node(node.parents[0])
        if node.kind is NodeKind.WINDOWED_AGGREGATE:
            return node.params["windows"], filtered
        if node.kind not in _TABLE_STEPS:
            return None, filtered
        filtered = filtered or node.kind is NodeKind.TABLE_FILTER


def _key_serde(factory, ctx, windows):
    """The buffer's key serde: the table's (Kafka Streams serializes the buffered keys with it)."""
    store = ctx.topology.state_stores.get(factory.params["store_name"])
    serde = None if store is None else store.key_serde
    if serde is not None:
        return serde
    if windows is None:
        return ctx.default_key_serde
    if isinstance(windows, SessionWindows):
        return WindowedSerde(ctx.default_key_serde, session=True)
    size = windows.time_difference_ms if isinstance(windows, SlidingWindows) else windows.size_ms
    return WindowedSerde(ctx.default_key_serde, window_size_ms=size)


def _check_downstream(sub, factory) -> None:
    for node in reachable(sub, factory.children, lambda node: node.children):
        if node.kind not in _STATELESS_KINDS or (node.kind is not NodeKind.SUPPRESS and node.stores):
            raise UnsupportedTopologyError(
                f"processor {node.name} ({node.kind.value}) keeps state downstream of the suppression {factory.name} "
                f"in sub-topology {sub.id}; the Spark runner forwards a suppression's records of every key with the "
                "state of the record being processed. Add .repartition() after to_stream()")


def build(factory, ctx) -> Suppress:
    params = factory.params
    config = params["buffer_config"]
    what = f"suppression {factory.name}"
    if config.max_bytes is not None:
        raise UnsupportedTopologyError(
            f"{what}: BufferConfig.max_bytes is not supported by the Spark runner (Kafka Streams sizes its buffer by "
            "each record's bytes plus its record context's topic and headers, which the runner's buffer does not "
            "size); "
            "use max_records or unbounded()")
    if config.shutdown_when_full and config.max_records is not None:
        raise UnsupportedTopologyError(
            f"{what}: a bounded buffer that shuts down when full is not supported by the Spark runner (Kafka Streams "
            "stops the application after whatever its last commit wrote, which micro-batches cannot reproduce); "
            "use emit_early_when_full() or unbounded()")
    sub = ctx.subtopology
    _check_downstream(sub, factory)
    windows, filtered = _table_path(sub, factory)
    filtered_table = None
    if filtered:
        if windows is not None:
            raise UnsupportedTopologyError(
                f"{what}: a filter of the windowed table lies before it; Kafka Streams' filter then drops the updates "
                "whose old and new windows both fail it, and the Spark runner does not carry a window's old value. "
                "Filter after to_stream()")
        (parent,) = factory.parents
        filtered_table = value_getter(ctx, factory, parent)
    until_window_closes = bool(params["until_window_closes"])
    duration = params["grace_ms"] if until_window_closes else params["time_to_wait_ms"]
    return Suppress(factory.name, _key_serde(factory, ctx, windows), until_window_closes, duration,
                    config.max_records, drop_tombstones=until_window_closes, filtered_table=filtered_table)


BUILDERS = {NodeKind.SUPPRESS: build}
