"""A user processor's session stores and window stores that retain duplicates, without Spark: the
orders, retention and quirks read from Kafka Streams 4.3.1's ``RocksDBSessionStore`` /
``InMemorySessionStore`` and ``RocksDBWindowStore`` / ``InMemoryWindowStore`` (sequence numbers).
The broker-backed comparison with Kafka Streams is test_equivalence_processor_api.py."""

from __future__ import annotations

import pickle

import pytest

from dagster_kstreams.processors.user_session_store import SessionStore
from dagster_kstreams.processors.user_window_store import WindowStore
from dagster_kstreams.spark.query_cli import format_entries, store_entries
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.node_specs import StoreType
from dagster_kstreams.topology.processor_api import Stores
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed


def _session_store(persistent: bool, retention: int = 1_000, content=None) -> SessionStore:
    factory = Stores.persistent_session_store if persistent else Stores.in_memory_session_store
    return SessionStore("s", Serdes.String(), Serdes.String(), factory("s", retention), {} if content is None else content)


def _keys(entries) -> list[tuple]:
    return [(entry.key.key, entry.key.window.start, entry.key.window.end, entry.value) for entry in entries]


@pytest.mark.parametrize("persistent", [True, False])
def test_session_store_put_fetch_session_remove_and_retention(persistent):
    store = _session_store(persistent)
    store.put(Windowed("a", Window(10, 20)), "x")
    assert store.fetch_session("a", 10, 20) == "x" and store.fetch_session("a", 10, 21) is None
    store.put(Windowed("a", Window(10, 20)), None)
    assert store.fetch_session("a", 10, 20) is None
    store.put(Windowed("a", Window(0, 500)), "old")
    store.put(Windowed("b", Window(1_400, 1_500)), "new")  # observed 1500: ends <= 500 are gone
    assert store.fetch_session("a", 0, 500) is None and _keys(store.fetch("a")) == []
    store.put(Windowed("a", Window(100, 400)), "late")  # expired: skipped
    assert _keys(store.fetch(None, None)) == [("b", 1_400, 1_500, "new")]
    store.remove(Windowed("b", Window(1_400, 1_500)))
    assert _keys(store.fetch("b")) == []
    with pytest.raises(ValueError, match="session store s: the key cannot be null"):
        store.put(Windowed(None, Window(0, 1)), "v")


def test_a_remove_moves_the_rocksdb_stores_time_and_not_the_in_memory_ones():
    for persistent, visible in ((True, []), (False, [("a", 0, 100, "x")])):
        store = _session_store(persistent)
        store.put(Windowed("a", Window(0, 100)), "x")
        store.remove(Windowed("z", Window(5_000, 5_000)))
        assert _keys(store.fetch("a")) == visible


def test_session_orders_rocksdb_by_segment_then_store_key_bytes_and_in_memory_by_end_key_start_descending():
    rocks, memory = _session_store(True, 200_000), _session_store(False, 200_000)
    sessions = [("b", 0, 50), ("ab", 10, 50), ("a", 5, 50), ("a", 20, 50), ("b", 0, 150_000), ("a", 0, 10)]
    for store in (rocks, memory):
        for key, start, end in sessions:
            store.put(Windowed(key, Window(start, end)), f"{key}{start}-{end}")
    # RocksDB: segment 0 (ends < 100000) by key bytes + end + start, then segment 1 (interval 100000)
    assert [entry.value for entry in rocks.fetch(None, None)] == ["a0-10", "a5-50", "a20-50", "ab10-50", "b0-50",
                                                                   "b0-150000"]
    assert [entry.value for entry in memory.fetch(None, None)] == ["a0-10", "a20-50", "a5-50", "ab10-50", "b0-50",
                                                                    "b0-150000"]
    assert [entry.value for entry in memory.backward_fetch("a")] == ["a5-50", "a20-50", "a0-10"]
    assert [entry.value for entry in rocks.backward_fetch("a")] == ["a20-50", "a5-50", "a0-10"]
    # overlap search: end >= 40 and start <= 10
    for store in (rocks, memory):
        assert {entry.value for entry in store.find_sessions("a", 40, 10)} == {"a5-50"}
        assert [entry.value for entry in store.find_sessions("a", "ab", 40, 10)] == ["a5-50", "ab10-50"]
    assert [entry.value for entry in memory.find_sessions(40, 60)] == ["a20-50", "a5-50", "ab10-50", "b0-50"]
    with pytest.raises(NotImplementedError, match="persistent session store"):
        rocks.find_sessions(40, 60)


def test_session_store_content_survives_pickling_as_a_checkpoint_would():
    content: dict = {}
    _session_store(True, content=content).put(Windowed("a", Window(1, 2)), "x")
    assert _session_store(True, content=pickle.loads(pickle.dumps(content))).fetch_session("a", 1, 2) == "x"


def _window_store(persistent: bool, content=None) -> WindowStore:
    factory = Stores.persistent_window_store if persistent else Stores.in_memory_window_store
    return WindowStore("w", Serdes.String(), Serdes.String(), factory("w", 1_000, 100, True),
                       {} if content is None else content)


@pytest.mark.parametrize("persistent", [True, False])
def test_window_store_with_duplicates_keeps_every_put_in_order_and_ignores_deletes(persistent):
    content: dict = {}
    store = _window_store(persistent, content)
    for value in ("x", "y", "x"):
        store.put("a", value, 100)
    store.put("a", None, 100)  # a no-op with duplicates
    store.put("ab", "z", 100)
    store.put("a", "w", 0)
    assert [(entry.key, entry.value) for entry in store.fetch("a", 0, 100)] == [(0, "w"), (100, "x"), (100, "y"),
                                                                                 (100, "x")]
    ranged = [(entry.key.key, entry.key.window.start, entry.value) for entry in store.fetch_all(0, 100)]
    assert ranged == [("a", 0, "w"), ("a", 100, "x"), ("a", 100, "y"), ("a", 100, "x"), ("ab", 100, "z")]
    # fetch(key, start) finds the RocksDB entry under the current sequence number; in memory none
    assert store.fetch("a", 0) == ("w" if persistent else None)
    rerun = _window_store(persistent, pickle.loads(pickle.dumps(content)))
    rerun.put("a", "v", 100)  # numbering continues after a checkpoint
    assert [entry.value for entry in rerun.fetch("a", 100, 100)] == ["x", "y", "x", "v"]


def test_duplicates_number_an_expired_put_in_rocksdb_only_and_time_a_null_put_in_memory_only():
    for persistent, seqnum, time in ((True, 2, 5_000), (False, 1, 6_000)):
        store = _window_store(persistent)
        store.put("a", "x", 5_000)
        store.put("a", "late", 10)  # expired
        store.put("a", None, 6_000)
        assert (store._content["seqnum"], store._content["time"]) == (seqnum, time)


def test_session_store_builder_gives_a_user_session_store_spec():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.session_store_builder(Stores.persistent_session_store("sessions", 30_000),
                                                         Serdes.String(), Serdes.Long()))
    spec = builder.build().state_stores["sessions"]
    assert spec.type is StoreType.USER_SESSION and spec.retention_ms == 30_000 and spec.window.persistent
    with pytest.raises(TypeError, match="session_store_builder expects a session store supplier"):
        Stores.session_store_builder(Stores.persistent_key_value_store("kv"))


def test_query_shows_a_user_session_stores_windows_closed_on_both_ends():
    store = _session_store(True)
    store.put(Windowed("a", Window(0, 1_000)), "2")
    content = {entry.key: entry.value for entry in store.fetch(None, None)}
    lines = format_entries(store_entries(content), StoreType.USER_SESSION)
    assert lines[1] == "a    [1970-01-01T00:00:00.000Z, 1970-01-01T00:00:01.000Z]  2"


def test_a_negative_window_start_is_put_and_read_back_by_its_key_only():
    """Kafka Streams' window store takes a put at a negative start; a key's fetch returns it by start,
    a read that returns windows fails building it (``Window`` refuses a negative start)."""
    store = WindowStore("w", Serdes.String(), Serdes.String(), Stores.persistent_window_store("w", 200_000, 100, False), {})
    for value, start in (("near", -5), ("pos", 10), ("far", -100_001)):
        store.put("a", value, start)
    assert list(store.fetch("a", -200_000, -1)) == [(-100_001, "far"), (-5, "near")]
    assert [entry.value for entry in store.fetch_all(0, 100)] == ["pos"]
    with pytest.raises(ValueError, match="Window startMs time cannot be negative"):
        list(store.fetch_all(-10, 100))
