"""What a cached table forwards at the flush when another input of its sub-topology reads the same
keys (pure logic, through the compiled program; compared with Kafka Streams itself in
tests/test_equivalence_joins.py, the customers table's repartition topic).

Kafka Streams' record cache keeps, per entry, the record context of the update that last wrote it
(``LRUCacheEntry``) and forwards the entry with it at a commit, in the order the store's keys were
last updated (``NamedCache``). A stream record joined against the table updates nothing in it, so
it changes neither: the flushed update carries the timestamp and headers of the table's own last
update, even when an order of the same key came after it in the micro-batch. A windowed store's
cache keeps one per window (its windowed key).
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings, strategies as st

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Repartitioned
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows, TimeWindows

UPDATES = "app-updates-repartition"

# (topic, key, value, timestamp) in processing order: None keys and values, timestamps out of order
RECORDS = st.lists(st.tuples(st.sampled_from(["orders", "customers"]), st.sampled_from([None, "a", "b", "c"]),
                             st.one_of(st.none(), st.sampled_from(["x", "y", "z"])), st.integers(0, 50)),
                   max_size=30)


def _program():
    builder = StreamsBuilder()
    orders = builder.stream("orders")
    customers = builder.table("customers", Materialized.as_("customers-store"))
    orders.join(customers, lambda order, customer: f"{order}|{customer}").to("joined")
    customers.to_stream().repartition(Repartitioned.as_("updates")).to("out")
    return compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                            default_value_serde=Serdes.String()).program(0)


def _headers(position: int) -> list:
    return [{"key": "src", "value": str(position).encode()}]


def _batches(records: list, batches: int) -> list[list]:
    """``records`` with their positions, cut into ``batches`` consecutive micro-batches."""
    numbered = list(enumerate(records))
    size = max(1, -(-len(numbered) // batches))
    return [numbered[first:first + size] for first in range(0, len(numbered), size)]


def _run(records: list, batches: int) -> list[tuple]:
    """What the program writes to the repartition topic: each micro-batch's key groups run as the
    engine runs them, the batch's rows in emit order."""
    program, stored, written = _program(), {}, []
    for batch in _batches(records, batches):
        rows = []
        for key in dict.fromkeys(record[1] for _, record in batch):
            group = [(RecordContext(topic, 0, position, timestamp=timestamp, position=position,
                                    headers=_headers(position)),
                      None if key is None else key.encode(), None if value is None else value.encode())
                     for position, (topic, record_key, value, timestamp) in batch if record_key == key]
            out, stored[key] = program.run_key_group(group, stored.get(key))
            rows += [(order, key, None if value is None else value.decode(), timestamp, headers)
                     for order, topic, value, timestamp, headers
                     in zip(out.emit_order(), out.topic, out.value, out.timestamp_ms, out.headers) if topic == UPDATES]
        written += [row[1:] for row in sorted(rows, key=lambda row: row[0])]
    return written


def _kafka_streams(records: list, batches: int) -> list[tuple]:
    """Kafka Streams with a commit after each micro-batch: per batch, each key the table updated,
    in the order of its last update, with that update's value, timestamp and headers; nothing for
    a key absent at both commits."""
    table, written = {}, []
    for batch in _batches(records, batches):
        before, last = dict(table), {}
        for position, (topic, key, value, timestamp) in batch:
            if topic == "customers" and key is not None:
                table[key] = value
                last.pop(key, None)
                last[key] = (timestamp, _headers(position))
        written += [(key, table[key], timestamp, headers) for key, (timestamp, headers) in last.items()
                    if table[key] is not None or before.get(key) is not None]
    return written


def test_an_order_after_the_last_update_does_not_restamp_it():
    records = [("customers", "a", "x", 10), ("orders", "a", "o", 30), ("customers", "b", "y", 20),
               ("orders", "b", "p", 5)]
    # a: flushed with its own update (time 10, header 0), not the order at time 30; and before b,
    # whose last update (position 2) came after a's (position 0) though a's last record came later
    assert _run(records, 1) == [("a", "x", 10, _headers(0)), ("b", "y", 20, _headers(2))]


@settings(max_examples=150, deadline=None)
@given(RECORDS, st.integers(1, 3))
def test_the_flush_forwards_each_key_with_its_last_update_in_update_order(records, batches):
    assert _run(records, batches) == _kafka_streams(records, batches)


def _windowed_headers(windowed, key_serde) -> list:
    """The headers of what a cached windowed count of one key forwards for two records, one per
    window (at times 1 and 30): each window's own update's."""
    builder = StreamsBuilder()
    windowed(builder.stream("in").group_by_key()).count().to_stream() \
        .to("out", Produced.with_(key_serde, Serdes.Long()))
    program = compile_topology(builder.build(), "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    group = [(RecordContext("in", 0, position, timestamp=timestamp, stream_time=timestamp,
                            stream_time_before=before, position=position, headers=_headers(position)), b"k", b"v")
             for position, (timestamp, before) in enumerate([(1, -1), (30, 1)])]
    out, _ = program.run_key_group(group, None)
    return [headers for topic, headers in zip(out.topic, out.headers) if topic == "out"]


def test_a_windowed_cache_forwards_each_window_with_its_own_update():
    tumbling = _windowed_headers(lambda grouped: grouped.windowed_by(TimeWindows.of_size_with_no_grace(
        timedelta(milliseconds=10))), WindowedSerde(Serdes.String(), 10))
    sessions = _windowed_headers(lambda grouped: grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(
        timedelta(milliseconds=10))), WindowedSerde(Serdes.String(), session=True))
    assert tumbling == sessions == [_headers(0), _headers(1)]
