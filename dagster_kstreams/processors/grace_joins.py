"""A stream-table join with a grace period (``Joined.with_grace_period``, against a versioned
table), as Kafka Streams 4.3.1's ``KStreamKTableJoinProcessor`` runs it with its
``RocksDBTimeOrderedKeyValueBuffer`` (KIP-923).

The buffer holds stream records of all keys, so it is a task-level value and the sub-topology runs
task-grouped (the versioned table already makes it so). Its clock is its own: the largest timestamp
ever put into the buffer. A record (that the join does not drop: null value, or null key in an
inner join) older than that clock minus the grace is joined at once; any other is put into the
buffer, and then every buffered record at or before the clock minus the grace is taken out, in
timestamp order (ties: by serialized key, then arrival), and joined with its own record context
(timestamp, headers) against the table as of its timestamp, so that table updates that arrived
within the grace are seen. Records still buffered when the input ends wait for later records, in
Kafka Streams as here.

One difference: a left join's record with a null key is joined at once here; Kafka Streams 4.3.1
puts it into the buffer, which refuses a null key (the task fails).
"""
from __future__ import annotations

from bisect import insort

from dagster_kstreams.processors import version_history
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.table_joins import BUILDERS as JOIN_BUILDERS
from dagster_kstreams.processors.table_joins import StreamTableJoin
from dagster_kstreams.processors.task_state import task_state_of
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["GraceStreamTableJoin", "BUILDERS"]


class GraceStreamTableJoin(StreamTableJoin):
    """``KStreamKTableJoinProcessor`` with its buffer (not registered: it runs the stream-table join kind)."""

    def __init__(self, name: str, joiner, join_type: str, table, grace_ms: int):
        super().__init__(name, joiner, join_type, table)
        self.grace_ms = grace_ms
        self.task_grouped = True
        # Task-level value names: the names a task's checkpoint holds, keep them.
        self._buffer_key = f"grace.buffer.{name}"
        self._time_key = f"grace.time.{name}"
        self._seq_key = f"grace.seq.{name}"

    def process(self, key, value, context, out, state) -> None:
        if value is None or key is None:
            super().process(key, value, context, out, state)  # dropped, or a left join's null key
            return
        values = task_state_of(self, state).values
        buffer_time = values.get(self._time_key, version_history.NO_TIME)
        if buffer_time - self.grace_ms > context.timestamp:
            super().process(key, value, context, out, state)
            return
        buffer_time = max(buffer_time, context.timestamp)
        values[self._time_key] = buffer_time
        seq = values.get(self._seq_key, 0)
        values[self._seq_key] = seq + 1
        raw_key = state.raw_key if state.raw_key is not None else b""
        insort(values.setdefault(self._buffer_key, []), (context.timestamp, raw_key, seq, state.raw_key, key, value,
                                                         context))
        self._evict(values, buffer_time - self.grace_ms, out, state)

    def _evict(self, values: dict, horizon: int, out, state) -> None:
        buffer = values[self._buffer_key]
        count = 0
        while count < len(buffer) and buffer[count][0] <= horizon:
            count += 1
        evicted, buffer[:] = buffer[:count], buffer[count:]
        task = task_state_of(self, state)
        for _, _, _, raw_key, key, value, context in evicted:
            super().process(key, value, context, out, task.group(raw_key))


def _stream_table_join(factory, ctx):
    join = JOIN_BUILDERS[NodeKind.STREAM_TABLE_JOIN](factory, ctx)
    grace_ms = factory.params.get("grace_ms")
    if grace_ms is None:
        return join
    if join.table.versioned is None:  # Kafka Streams fails the task's start with this line
        raise UnsupportedTopologyError(f"processor {factory.name} (stream_table_join): KTable must be versioned "
                                       "to use a grace period in a stream table join.")
    return GraceStreamTableJoin(factory.name, join.fn, join.join_type, join.table, grace_ms)


BUILDERS = {NodeKind.STREAM_TABLE_JOIN: _stream_table_join}
