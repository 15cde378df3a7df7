"""A model of Kafka Streams 4.3.1's versioned store and a way to run a compiled program over records
in micro-batches: what the versioned-table logic tests share (tests/test_versioned_tables_logic.py,
tests/test_versioned_join_grace_logic.py)."""

from __future__ import annotations

from hypothesis import strategies as st

from dagster_kstreams.processors.records import RecordContext

RETENTION = 100


class ModelStore:
    """Kafka Streams' versioned store as its javadoc states it: every version kept forever; a put
    older than observed time minus the history retention is refused; a lookup older than that sees
    only the latest version."""

    def __init__(self, retention: int):
        self.retention = retention
        self.observed = -1
        self.versions: dict[str, dict[int, object]] = {}

    def put(self, key, value, timestamp) -> str:
        """"expired", "latest" or "history"."""
        if timestamp < self.observed - self.retention:
            return "expired"
        self.observed = max(self.observed, timestamp)
        history = self.versions.setdefault(key, {})
        history[timestamp] = value
        return "latest" if timestamp == max(history) else "history"

    def latest(self, key):
        history = self.versions.get(key)
        return None if not history else history[max(history)]

    def as_of(self, key, timestamp):
        history = self.versions.get(key, {})
        if not history:
            return None
        if timestamp < self.observed - self.retention:
            latest_time = max(history)
            return history[latest_time] if latest_time <= timestamp else None
        valid = [t for t in history if t <= timestamp]
        return history[max(valid)] if valid else None


def java_string(value) -> str:
    """A value as Java's string concatenation writes it (null for None)."""
    return "null" if value is None else value


def run_batches(program, records, cuts) -> list[tuple]:
    """``records`` (topic, key, value, timestamp) through ``program``, cut into micro-batches at ``cuts``."""
    contexts = []
    for offset, (topic, key, value, timestamp) in enumerate(records):
        raw_key = None if key is None else key.encode()
        contexts.append((RecordContext(topic, 0, offset, timestamp=timestamp, position=offset, raw_key=raw_key),
                         raw_key, None if value is None else value.encode()))
    out_records, stored, start = [], None, 0
    for end in sorted(set(cuts)) + [len(contexts)]:
        out, stored = program.run_task_batch(contexts[start:end], stored)
        decode = lambda data: None if data is None else data.decode()  # noqa: E731
        out_records += [(topic, decode(key), decode(value), timestamp)
                        for topic, key, value, timestamp in zip(out.topic, out.key, out.value,
                                                                timestamps(contexts[start:end], out))]
        start = end
    return out_records


def timestamps(contexts, out) -> list[int]:
    """Each output record's timestamp: its source record's (to_stream and the joins keep it)."""
    by_position = {context.position: context.timestamp for context, _, _ in contexts}
    return [by_position[order] for order in out.emit_order()]


table_and_stream_records = st.lists(st.one_of(
    st.tuples(st.just("t"), st.sampled_from(["a", "b", None]), st.sampled_from(["x", "y", None]),
              st.integers(0, 500)),
    st.tuples(st.just("s"), st.sampled_from(["a", "b"]), st.sampled_from(["o", None]), st.integers(0, 500)),
), max_size=40)

