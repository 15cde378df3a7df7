"""A brute-force model of Kafka Streams 4.3.1's stream-stream join, and a driver that runs a compiled
task-grouped program over records without Spark: what the stream-join logic tests compare."""

from __future__ import annotations

import pandas as pd
from hypothesis import strategies as st

from dagster_kstreams.processors import join_buffers as stream_joins

__all__ = ["LONG_MAX", "java_long", "KsJoin", "run_task", "table_rows_and_clicks", "table_table_joined",
           "table_table_update"]


def run_task(program, records, batches=1, stored=None):
    """records: [(side, value, timestamp)] of key "k", or [(key, side, value, timestamp)], in
    processing order, split in batches; returns ``[(topic, key, value)]`` and the task state."""
    records = [r if len(r) == 4 else ("k", *r) for r in records]
    outputs = []
    size = -(-len(records) // batches) if records else 1
    for start in range(0, len(records), size):
        chunk = records[start:start + size]
        rows = []
        for seq, (key, side, value, timestamp) in enumerate(chunk):
            rows.append({"key": None if key is None else key.encode(), "value": None if value is None else value.encode(),
                         "topic": side, "partition": 0, "offset": start + seq, "timestamp": None,
                         "event_time": timestamp, "merge_time": timestamp, "stream_time": timestamp, "seq": seq})
        frame, stored = program.process_task_batch(pd.DataFrame(rows), stored)
        if frame is not None:
            outputs += list(zip(frame["topic"], frame["key"], frame["value"]))
    return outputs, stored


LONG_MAX = (1 << 63) - 1


def java_long(value):
    """``value`` as a Java ``long`` (two's complement overflow)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


class KsJoin:
    """Kafka Streams' KStreamJoinWindow + KStreamKStreamJoin of one join (both sides, shared
    TimeTracker, outer-join store, emit interval 0), brute force over lists. :meth:`process` takes
    one record of a side and returns what the join forwards, in order, as ``(key, value,
    timestamp)``; ``joiner(left, right)`` makes the joined value. ``spurious_result_fix`` False: the
    deprecated ``JoinWindows.of``, a left/outer join without an outer-join store."""

    def __init__(self, before, after, grace, join_type, joiner=lambda left, right: f"{left}+{right}",
                 spurious_result_fix=True):
        self.before, self.after, self.grace, self.joiner = before, after, grace, joiner
        self.retention = before + after + grace
        self.stores = {"left": [], "right": []}  # (key, timestamp, value), arrival order
        self.store_time = {"left": -1, "right": -1}
        self.outer_side = {"left": join_type in ("left", "outer"), "right": join_type == "outer"}
        self.has_outer_store = join_type != "inner" and spurious_result_fix
        self.stream_time, self.min_time = -1, LONG_MAX
        self.pending = []  # (timestamp, side byte (left 1, right 0), key bytes, arrival, key, value)
        self.arrivals = 0

    def process(self, key, side, value, ts):
        before, after, grace, retention = self.before, self.after, self.grace, self.retention
        arrival, self.arrivals = self.arrivals, self.arrivals + 1
        out = []

        def joined(key, left, right, timestamp):
            out.append((key, self.joiner(left, right), timestamp))

        other = "right" if side == "left" else "left"
        this_before, this_after = (before, after) if side == "left" else (after, before)
        self.stream_time = max(self.stream_time, ts)
        pair = (lambda v: (v, None)) if side == "left" else (lambda v: (None, v))
        if self.outer_side[side] and key is None and value is not None:
            joined(key, *pair(value), ts)
        elif key is not None and value is not None:
            if (self.has_outer_store and ts == self.stream_time
                    and java_long(self.min_time + this_after + grace) < self.stream_time):
                self.min_time = LONG_MAX
                open_sides, emitted = set(), []
                for entry in sorted(self.pending, key=lambda e: e[:4]):
                    self.min_time = entry[0]
                    if len(open_sides) == 2:
                        break
                    look_back = after if entry[1] == 1 else before
                    if java_long(entry[0] + look_back + grace) >= self.stream_time:
                        open_sides.add(entry[1])
                        continue
                    emitted.append(entry)
                    joined(entry[4], *((entry[5], None) if entry[1] == 1 else (None, entry[5])), entry[0])
                self.pending = [e for e in self.pending if e not in emitted]
            matches = [(t, v) for k, t, v in self.stores[other]
                       if k == key and max(0, ts - this_before) <= t <= max(0, ts + this_after)
                       and t >= self.store_time[other] - retention + 1]
            for t, v in sorted(matches, key=lambda m: m[0]):
                other_byte = 1 if other == "left" else 0
                self.pending = [e for e in self.pending
                                if not (e[2] == key.encode() and e[0] == t and e[1] == other_byte)]
                if side == "left":
                    joined(key, value, v, max(ts, t))
                else:
                    joined(key, v, value, max(ts, t))
            if self.outer_side[side] and not matches:
                if not self.has_outer_store or max(0, ts + this_after) < self.stream_time:
                    joined(key, *pair(value), ts)
                else:
                    self.min_time = min(self.min_time, ts)
                    self.pending.append((ts, 1 if side == "left" else 0, key.encode(), arrival, key, value))
        if key is not None and value is not None:  # the join window stores it after forwarding
            self.store_time[side] = max(self.store_time[side], ts)
            if stream_joins.segment_live(ts, self.store_time[side], retention):
                self.stores[side].append((key, ts, value))
        return out


def table_table_joined(join_type, new, old, other_value, side):
    """Kafka Streams' join processor of the table ``side`` updated (its ``new`` and ``old`` values)
    against the other table's current value: ``None`` when it forwards nothing, else ``(value,
    stamped)``, whether the result carries the other row's timestamp (KTableKTable{Inner,Left,Right,
    Outer}Join: the larger of both, when the other row is there)."""
    left, right = (new, other_value) if side == "t1" else (other_value, new)
    if join_type == "inner" or (join_type == "left" and side == "t2"):
        if other_value is None:
            return None
    elif other_value is None and new is None and old is None:
        return None
    present = {"inner": left is not None and right is not None, "left": left is not None,
               "outer": left is not None or right is not None}[join_type]
    return (f"{left}&{right}" if present else None), other_value is not None



def table_table_update(rows: dict, join_type: str, key, topic: str, value, ts: int):
    """A row of table ``topic`` (t1 or t2) put into ``rows`` (``{table: {key: (value, ts)}}``; None deletes),
    and what the table-table join of t1 and t2 forwards for it: ``(joined value, its timestamp)`` (the
    larger of both rows' when both stand), or None."""
    old = rows[topic].get(key, (None, None))[0]
    if value is None:
        rows[topic].pop(key, None)
    else:
        rows[topic][key] = (value, ts)
    other_value, other_ts = rows["t2" if topic == "t1" else "t1"].get(key, (None, None))
    result = table_table_joined(join_type, value, old, other_value, topic)
    if result is None:
        return None
    joined_value, stamped = result
    return joined_value, max(ts, other_ts) if stamped else ts

# Rows of two tables (t1, t2: None values are tombstones) and clicks (c), keys a, b or None, timestamps
# within a few windows of each other, so that the other row's later time often decides.
table_rows_and_clicks = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["t1", "t2", "c"]), st.integers(0, 4).map(lambda n: n == 0),
              st.one_of(st.integers(100_000, 115_000), st.integers(100, 115).map(lambda t: t * 1000))),
    max_size=30,
).map(lambda rows: [(k, topic, None if topic != "c" and tombstone else f"{topic}{i}", t)
                    for i, (k, topic, tombstone, t) in enumerate(rows)])
