"""``KTable.transform_values`` keeping its results in a store of its own with the record cache on, without
Spark: the runner's program batch by batch (the task state pickled in between, as a checkpoint would),
against a model of Kafka Streams' ``CachingKeyValueStore`` flushed at each batch's end (its commit), and
what stays refused. The broker-backed comparison with Kafka Streams committing once is
test_equivalence_aggregation_joins.py (``out-cached-transformed``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors.task_state import TaskState
from dagster_kstreams.processors.user_processors import user_store_content
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import Grouped, Materialized, Named, StreamsBuilder, ValueTransformerWithKey
from dagster_kstreams.topology.serdes import Serdes

from task_frames import batched_outputs, decoded, refusal
from test_table_transform_values_logic import ROWS


class _Deleting(ValueTransformerWithKey):
    """A tombstone stays one (the store's key is deleted); a value is upper-cased."""

    def transform(self, read_only_key, value):
        return None if value is None else value.upper()


class _Stamping(ValueTransformerWithKey):
    """The value (a tombstone's: a value too, kept in the store) and the update's time from the context."""

    def init(self, context) -> None:
        self.context = context

    def transform(self, read_only_key, value):
        return f"{value}@{self.context.timestamp()}"


def _program(transformer, materialized=None, cache_max_bytes: int = 10 * 1024 * 1024):
    builder = StreamsBuilder()
    builder.table("in").transform_values(transformer, materialized or Materialized.as_("own")).to_stream().to("out")
    return compile_topology(builder, "app", default_key_serde=Serdes.String(), default_value_serde=Serdes.String(),
                            statestore_cache_max_bytes=cache_max_bytes).program(0)


def _run(program, rows, batches: int) -> tuple[list, dict]:
    """The outputs batch by batch, and the store ``own`` after the last (as ``read_store`` reads it)."""
    outputs, stored = batched_outputs(program, rows, batches)
    outputs = decoded(outputs)
    if "own" not in program.store_slots:  # uncached: one of the task's user stores
        return outputs, user_store_content(program, stored, "own")
    content = TaskState.store_content(stored, program.store_slots["own"])
    return outputs, {raw_key.decode(): value for raw_key, value in content.items()}


def _cached_model(rows, batches: int, transform) -> list:
    """Kafka Streams' cache flushed at each batch's end: each key put in the batch once, in the order of
    its last put, with its last value; nothing for a key absent now and at the last flush."""
    store, outputs, size = {}, [], max(1, -(-len(rows) // batches))
    for first in range(0, len(rows), size):
        flushed, last_put = dict(store), {}
        for key, value, _ in rows[first:first + size]:
            if key is None:
                continue  # the table skips a null key
            new = transform(key, value)
            store.pop(key, None) if new is None else store.__setitem__(key, new)
            last_put.pop(key, None)
            last_put[key] = True
        outputs += [(key, store.get(key)) for key in last_put if key in store or key in flushed]
    return outputs


def test_each_keys_last_result_goes_on_once_per_batch_in_the_order_of_its_last_update():
    """ROWS: a put, deleted, put again out of order; b twice the same; c a tombstone of a key never held
    (nothing to forward: absent now and at the last flush); a null key, skipped."""
    outputs, content = _run(_program(_Deleting), ROWS, 1)
    assert outputs == [("a", "W"), ("b", "Y")]
    assert content == {"a": "W", "b": "Y"}


def test_a_key_deleted_after_a_flush_goes_on_as_a_tombstone_and_one_put_and_deleted_in_a_batch_not_at_all():
    rows = [("a", "x", 1000), ("b", "y", 2000), ("b", None, 2100), ("a", None, 3000), ("c", "z", 3100)]
    outputs, content = _run(_program(_Deleting), rows, 2)  # batches: a x, b y, b None | a None, c z
    assert outputs == [("a", "X"), ("a", None), ("c", "Z")]
    assert content == {"c": "Z"}


def test_the_flush_forwards_the_last_updates_value_with_its_time():
    """The cache entry keeps its update's record context: the value made with the time of a's third update
    (out of order, 900) goes on last among the keys, as a's last update came last; a tombstone transformed
    into a value is kept."""
    outputs, content = _run(_program(_Stamping), ROWS, 1)
    assert outputs == [("c", "None@2500"), ("a", "w@900"), ("b", "y@5000")]
    assert content == {"a": "w@900", "b": "y@5000", "c": "None@2500"}


def test_behind_a_cached_table_the_tables_flush_goes_through_it_then_its_own():
    """Two caches in series: at the commit the table's cache forwards each key's last row (a, deleted and put
    again, as a row of its own) into the transformer, whose cache then forwards each once; Kafka Streams
    flushes its stores in the order it registered them, the table's first."""
    builder = StreamsBuilder()
    builder.table("in", Materialized.as_("rows")).transform_values(_Stamping, Materialized.as_("own")) \
        .to_stream().to("out")
    program = compile_topology(builder, "app", default_key_serde=Serdes.String(),
                               default_value_serde=Serdes.String()).program(0)
    outputs, content = _run(program, ROWS, 1)
    assert outputs == [("a", "w@900"), ("b", "y@5000")]  # c: a tombstone of a row the table never held
    assert content == {"a": "w@900", "b": "y@5000"}


_UPDATES = st.lists(st.tuples(st.one_of(st.none(), st.sampled_from("abc")),
                              st.one_of(st.none(), st.sampled_from(["x", "y"])), st.integers(0, 5_000)), max_size=25)


# One program each, for every example (a program keeps nothing between batches but the state it is given).
_CACHED, _UNCACHED = _program(_Deleting), _program(_Deleting, cache_max_bytes=0)


@settings(deadline=None)  # a busy machine
@given(rows=_UPDATES, batches=st.integers(1, 4))
def test_the_cached_store_forwards_as_kafka_streams_cache_flushed_at_each_batch(rows, batches):
    outputs, content = _run(_CACHED, rows, batches)
    assert outputs == _cached_model(rows, batches, lambda key, value: None if value is None else value.upper())
    last = {}
    for key, value, _ in rows:
        if key is not None:
            last[key] = None if value is None else value.upper()
    assert content == {key: value for key, value in last.items() if value is not None}


@settings(deadline=None)
@given(rows=_UPDATES, batches=st.integers(1, 4))
def test_without_a_cache_size_each_update_goes_on_at_once(rows, batches):
    """``statestore.cache.max.bytes`` 0 turns the store's cache off, as ``with_caching_disabled()`` does."""
    outputs, _ = _run(_UNCACHED, rows, batches)
    assert outputs == [(key, None if value is None else value.upper()) for key, value, _ in rows if key is not None]


def test_a_regrouping_of_one_with_a_cached_store_is_refused_naming_the_regrouping():
    def build(b):
        b.table("in").transform_values(_Deleting, Materialized.as_("own"), Named.as_("tv")) \
            .group_by(lambda key, value: (value, key), Grouped.as_("rg")).count()
    message = refusal(build)
    assert message.startswith("processor rg (table_group_by_map) re-groups the table of processor tv "
                              "(transform_values), which keeps its results in a cached store (own)")
