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
* then, while the buffer is over its bounds (more than ``BufferConfig.max_records(n)`` records, or
  more than ``max_bytes(b)`` bytes as Kafka Streams counts them, :mod:`.suppress_size`): with
  ``emit_early_when_full()`` the oldest is evicted and forwarded the same way; with
  ``shut_down_when_full()`` the task fails at this record with a :class:`ProcessingError` (Kafka
  Streams' ``StreamsException``, which stops the application), so nothing of its batch is committed.

A tombstone (a deleted window or row) is buffered like any update; at eviction it is forwarded
by ``until_time_limit`` and dropped by ``until_window_closes`` (Kafka Streams' "safe to drop
tombstones": a final result was never emitted for the key). A suppression makes the tables before
it send their old values, so a table ``filter`` on the way drops an update whose new and old
values both fail it (or are absent): such an update never reaches the suppression (it neither
advances its stream time nor enters the buffer; :mod:`.table_old_values`). With ``max_bytes`` the
processor reads the old value behind each update to size it, where Kafka Streams' ``Change`` carries
it from (:func:`~.table_old_values.old_value_getter`): the table's store, or that of a materialized
filter/map_values on the way that keeps its own (:class:`~.value_getters.ValueGetter`;
:mod:`.table_step_stores`), the one a windowed aggregation sends with the update, once the
suppression asks it to (:class:`~.windowed_tables.WindowedOldValue`), or the one a suppression on the
way sends (:class:`~.table_old_values.SentOldValue`). A suppression keeps the old value of each
buffered update, and emits it with the update, when a reader below it needs it (a filter that sends
old values, a suppression bounded in bytes).

State: the buffer and the stream time of each suppress processor are task-level values of the
task's state (:mod:`.task_state`), so the sub-topology runs task-grouped: an update of one key
evicts the records of other keys, in one order across keys. Both survive restarts with the
task's checkpoint, where Kafka Streams restores the buffer from its changelog but starts the
stream time over (the runner's result is Kafka Streams' when it does not restart).

Read as a table (:mod:`.suppressed_table_reads`): a re-grouping of a suppressed plain table subtracts
the old value the suppression sends with each update; a table-table join reads it through the buffer
(a buffered key's prior value, else the table behind), for which the buffer keeps each key's prior.

Downstream: an evicted record goes on with the state of its own key (:mod:`.own_groups`), so an
aggregation, a table or a join after the suppression in its sub-topology keeps and reads that key's
values, as in Kafka Streams.
"""

from __future__ import annotations

import dataclasses
import heapq
from typing import Any, Iterator, NamedTuple, Optional

from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.own_groups import own_group
from dagster_kstreams.processors.suppress_size import buffered_record_size
from dagster_kstreams.processors.suppressed_table_reads import keeps_old_values
from dagster_kstreams.processors.table_behind import table_behind
from dagster_kstreams.processors.value_getters import ValueGetter
from dagster_kstreams.processors.table_old_values import (
    old_value_getter, sent_old_value_key, serialize_for, table_key_serde,
)
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["BufferedUpdate", "SuppressionBuffer", "Suppress", "BUILDERS"]


_NOT_KEPT = object()  # no old value kept with a buffered update


class BufferedUpdate(NamedTuple):
    """A buffered key's latest update with its record context, as Kafka Streams' ``BufferValue`` keeps it
    (its ``ProcessorRecordContext``): what the suppression emits it with. An older version of the runner
    pickled ``(key, value, timestamp[, headers[, old]])``: the fields it did not keep take their defaults."""

    key: Any
    value: Any
    timestamp: int
    headers: Optional[list] = None
    old: Any = None  # its old value, when the suppression keeps them (None otherwise)
    # (topic, partition, offset, from_punctuator) of the record that brought it; None: an older version
    # buffered it, and it goes out with the context of the record whose arrival evicts it
    source: Optional[tuple] = None


class SuppressionBuffer:
    """Kafka Streams' time-ordered suppression buffer: the latest update of each buffered key,
    ordered by ``(buffer time, serialized key)``, and its size in Kafka Streams' bytes
    (:mod:`.suppress_size`; counted when the processor sizes its updates). Pure logic, pickled into
    the task's state."""

    def __init__(self) -> None:
        self._order: list[tuple[int, bytes]] = []  # a heap: one entry per buffered key
        # serialized key -> its latest update (a BufferedUpdate; a shorter tuple in older checkpoints)
        self._records: dict[bytes, tuple] = {}
        # serialized key -> (its size in bytes, its serialized prior value: the old value when it was first buffered)
        self._sizes: dict[bytes, tuple[int, Optional[bytes]]] = {}
        self.size_bytes = 0
        # serialized key -> the old value of its first buffered update, when old values are kept (the
        # suppressed table's value before it, which its value getter reads: suppressed_table_reads.py)
        self._priors: dict[bytes, Any] = {}

    def __setstate__(self, state: dict) -> None:
        # A buffer pickled before sizes were kept: its records count 0 bytes until updated.
        self.__dict__.update(state)
        self.__dict__.setdefault("_sizes", {})
        self.__dict__.setdefault("size_bytes", 0)
        self.__dict__.setdefault("_priors", {})

    def __len__(self) -> int:
        return len(self._records)

    def prior_value(self, key_bytes: bytes, old: Optional[bytes]) -> Optional[bytes]:
        """The prior value an update of ``key_bytes`` with serialized old value ``old`` is buffered
        with: the buffered one's, else ``old`` (Kafka Streams' ``InMemoryTimeOrderedKeyValueChangeBuffer.put``)."""
        sized = self._sizes.get(key_bytes)
        return old if sized is None else sized[1]

    def put(self, buffer_time: int, key_bytes: bytes, key, value, timestamp: int, headers=None,
            size: int = 0, prior: Optional[bytes] = None, old=_NOT_KEPT, source: Optional[tuple] = None) -> None:
        """Buffer an update (``headers`` and ``source``: its record context's, which it is emitted with, as
        Kafka Streams' buffer keeps the record context; ``size``: its bytes, ``prior``: its prior value;
        ``old``: its old value, emitted with it, when the suppression keeps them); a key already
        buffered keeps its buffer time and place."""
        if key_bytes not in self._records:
            heapq.heappush(self._order, (buffer_time, key_bytes))
            if old is not _NOT_KEPT:
                self._priors[key_bytes] = old
        self._records[key_bytes] = BufferedUpdate(key, value, timestamp, headers,
                                                  None if old is _NOT_KEPT else old, source)
        replaced = self._sizes.get(key_bytes)
        self.size_bytes += size - (replaced[0] if replaced is not None else 0)
        self._sizes[key_bytes] = (size, prior)

    def prior_for(self, key_bytes: bytes) -> tuple[bool, Any]:
        """``(buffered, prior value)``: whether ``key_bytes`` is buffered, and the old value of its first
        buffered update (None when old values are not kept), Kafka Streams' ``priorValueForBuffered``."""
        return key_bytes in self._records, self._priors.get(key_bytes)

    def min_time(self) -> Optional[int]:
        """The oldest buffer time (None: the buffer is empty)."""
        return self._order[0][0] if self._order else None

    def evict_oldest(self) -> BufferedUpdate:
        """Remove the first record in buffer order: its latest update, with what an older version
        did not keep at its defaults."""
        _, key_bytes = heapq.heappop(self._order)
        self._priors.pop(key_bytes, None)
        sized = self._sizes.pop(key_bytes, None)
        if sized is not None:
            self.size_bytes -= sized[0]
        return BufferedUpdate(*self._records.pop(key_bytes))

    def expired(self, expiry_time: int) -> Iterator[BufferedUpdate]:
        """Evict, in order, every record whose buffer time is at most ``expiry_time``."""
        while self._order and self._order[0][0] <= expiry_time:
            yield self.evict_oldest()

    def over_capacity(self, max_records: Optional[int], max_bytes: Optional[int] = None) -> bool:
        """Kafka Streams' ``overCapacity``: more than ``max_records`` records or ``max_bytes`` bytes
        buffered (None: no bound)."""
        return (max_records is not None and len(self._records) > max_records) or \
            (max_bytes is not None and self.size_bytes > max_bytes)

    def over(self, max_records: Optional[int], max_bytes: Optional[int] = None) -> Iterator[BufferedUpdate]:
        """Evict, in order, while the buffer is over capacity (:meth:`over_capacity`)."""
        while self._order and self.over_capacity(max_records, max_bytes):
            yield self.evict_oldest()


@dataclasses.dataclass
class _SuppressState:
    stream_time: int = -1  # Kafka's ConsumerRecord.NO_TIMESTAMP
    buffer: SuppressionBuffer = dataclasses.field(default_factory=SuppressionBuffer)


@register
class Suppress(Processor):
    """``KTableSuppressProcessor``: buffers table updates, forwards them when their time is up, and
    when the buffer is over its bounds emits the oldest early or (``shutdown_when_full``) fails the
    task at the record that overfilled it."""

    kind = "suppress"
    task_grouped = True
    forwards_other_keys = True  # its buffer evicts records of any key (own_groups.py)

    def __init__(self, name: str, key_serde, window_end_time: bool, duration_ms: int, max_records: Optional[int],
                 drop_tombstones: bool, max_bytes: Optional[int] = None,
                 shutdown_when_full: bool = False, value_serde=None, table: Optional[ValueGetter] = None,
                 old_values: Optional[ValueGetter] = None):
        super().__init__(name)
        self.key_serde = key_serde
        self.window_end_time = window_end_time
        self.duration_ms, self.max_records, self.drop_tombstones = duration_ms, max_records, drop_tombstones
        # with max_bytes: the buffer's value serde and the table whose old value each update is sized with
        self.max_bytes, self.value_serde, self.table = max_bytes, value_serde, table
        self.shutdown_when_full = shutdown_when_full
        # when a filter after it sends old values: the old value behind each update it buffers
        self.old_values = old_values
        self._state_key = f"suppress.{name}"

    def init(self, program) -> None:
        super().init(program)
        for table in {id(t): t for t in (self.table, self.old_values) if t is not None}.values():
            table.bind(program)

    def process(self, key, value, context, out, state) -> None:
        task = task_state_of(self, state)
        suppress = task.values.get(self._state_key)
        if suppress is None:
            suppress = task.values[self._state_key] = _SuppressState()
        timestamp = context.timestamp
        if timestamp is None:
            raise ValueError(f"processor {self.name} needs record timestamps")
        suppress.stream_time = max(suppress.stream_time, timestamp)
        buffer_time = key.window.end if self.window_end_time else timestamp
        key_bytes = serialize_for(self, self.key_serde, key, "key")
        size, prior = 0, None
        if self.max_bytes is not None:
            size, prior = self._size(key, key_bytes, value, context, state, suppress.buffer)
        old = _NOT_KEPT if self.old_values is None else self.old_values.get_old(self, key, state, context)
        source = (context.topic, context.partition, context.offset, context.from_punctuator)
        suppress.buffer.put(buffer_time, key_bytes, key, value, timestamp, context.headers, size, prior, old, source)
        for evicted in suppress.buffer.expired(suppress.stream_time - self.duration_ms):
            self._emit(evicted, context, out, state)
        if not suppress.buffer.over_capacity(self.max_records, self.max_bytes):
            return
        if self.shutdown_when_full:
            raise ProcessingError(self._full_message(suppress.buffer, context))
        for evicted in suppress.buffer.over(self.max_records, self.max_bytes):
            self._emit(evicted, context, out, state)

    def prior_value_for(self, key, state) -> tuple[bool, Any]:
        """For the suppressed table's value getter: ``(buffered, prior value)`` of ``key`` in this
        task's buffer (``state``: the reader's, in the task's state)."""
        suppress = task_state_of(self, state).values.get(self._state_key)
        if suppress is None:
            return False, None
        return suppress.buffer.prior_for(serialize_for(self, self.key_serde, key, "key"))

    def _size(self, key, key_bytes: bytes, value, context, state, buffer: SuppressionBuffer) -> tuple[int, Any]:
        """``(bytes, prior value)`` of the update as Kafka Streams' buffer counts them (:mod:`.suppress_size`):
        its old value is the table's before this update, through the same filter/map_values."""
        old = self.table.get_old(self, key, state, context)
        old_bytes = None if old is None else serialize_for(self, self.value_serde, old, "old value")
        new_bytes = None if value is None else serialize_for(self, self.value_serde, value, "value")
        prior = buffer.prior_value(key_bytes, old_bytes)
        return buffered_record_size(key_bytes, prior, old_bytes, new_bytes, context.topic, context.headers), prior

    def _full_message(self, buffer: SuppressionBuffer, context) -> str:
        """One line, as Kafka Streams' StreamsException says it, with the record that overfilled the buffer."""
        records = f"[{len(buffer)}/{'unbounded' if self.max_records is None else self.max_records}] records"
        sizes = "" if self.max_bytes is None else f" and [{buffer.size_bytes}/{self.max_bytes}] bytes"
        return (f"suppression {self.name} buffer exceeded its max capacity (shut_down_when_full). Currently {records}"
                f"{sizes}, at the record at {context.describe()}; nothing of this batch is committed: raise the "
                "bound (BufferConfig.max_records / max_bytes) and run the task again")

    def _emit(self, evicted: BufferedUpdate, context, out, state) -> None:
        if evicted.value is None and self.drop_tombstones:
            return
        # Kafka Streams forwards it in its buffered record context (KTableSuppressProcessor.emit sets it):
        # what comes after (a processor's record_metadata(), a sink's topic-name extractor) sees that record
        emitted = dataclasses.replace(context, timestamp=evicted.timestamp, headers=evicted.headers)
        if evicted.source is not None:
            topic, partition, offset, from_punctuator = evicted.source
            emitted = dataclasses.replace(emitted, topic=topic, partition=partition, offset=offset,
                                          from_punctuator=from_punctuator)
        group = own_group(self, evicted.key, state)
        if self.old_values is not None:  # the old value of its latest update, emitted with it
            group.old_values[sent_old_value_key(self.name)] = evicted.old
        self.forward(evicted.key, evicted.value, emitted, out, group)


# -- definition time -------------------------------------------------------------------------
def _value_serde(factory, ctx):
    """The buffer's value serde (what Kafka Streams sizes the old and new values with): the table's."""
    store = ctx.topology.state_stores.get(factory.params["store_name"])
    serde = None if store is None else store.value_serde
    return serde if serde is not None else ctx.default_value_serde


def build(factory, ctx) -> Suppress:
    params = factory.params
    config = params["buffer_config"]
    sub = ctx.subtopology
    suppressed = table_behind(sub, factory)
    # the old value behind each update: sized with it when bounded in bytes, emitted with it when read below
    table = None if config.max_bytes is None else old_value_getter(ctx, factory, suppressed)
    old_values = None
    # read below (a re-grouping subtracts it), or read as the prior value by a join's getter (of a
    # suppression after this one too)
    if keeps_old_values(sub, factory):
        # a join's result through its tables' getters, a suppressed one's through its buffer
        old_values = old_value_getter(ctx, factory, suppressed, through_joins=True, suppressions=True)
    until_window_closes = bool(params["until_window_closes"])
    duration = params["grace_ms"] if until_window_closes else params["time_to_wait_ms"]
    return Suppress(factory.name, table_key_serde(ctx, params["store_name"], suppressed.windows),
                    until_window_closes, duration,
                    config.max_records, drop_tombstones=until_window_closes,
                    max_bytes=config.max_bytes, shutdown_when_full=config.shutdown_when_full,
                    value_serde=_value_serde(factory, ctx), table=table, old_values=old_values)


BUILDERS = {NodeKind.SUPPRESS: build}
