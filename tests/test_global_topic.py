"""A global table's replica on a real broker (dagster_kstreams.kafka.global_topic) and the join's
table (dagster_kstreams.processors.global_joins.GlobalTable): every partition read, one after
another in partition order (as Kafka Streams restores a global store), the latest value per key,
tombstones and null keys, and a table shipped to another process (unpickled) caught up to the
topic's end again before its first lookup, so each micro-batch sees what was written before it."""

from __future__ import annotations

import pickle

import pytest

from dagster_kstreams.kafka.global_topic import GlobalTopicReplica
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.processors.global_joins import GlobalTable
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration


def test_replica_holds_the_latest_value_of_every_partition_and_catches_up(kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("global-replica")
    kafka_admin.create_topics({topic: 3})
    # a key stays in its partition, as the default partitioner places it
    produce(kafka_bootstrap, topic, [(b"u1", b"a", 0), (b"u2", b"b", 1), (b"u1", b"c", 0), (None, b"x", 1),
                                     (b"u3", b"d", 2), (b"u3", None, 2)])
    replica = GlobalTopicReplica({"bootstrap.servers": kafka_bootstrap}, topic)
    try:
        assert replica.catch_up() == 6
        assert replica.values == {b"u1": b"c", b"u2": b"b"}
        assert replica.get(b"u3") is None  # deleted; the null-key record is skipped
        produce(kafka_bootstrap, topic, [(b"u2", None, 1), (b"u4", b"e", 0)])
        assert replica.catch_up() == 2
        assert replica.get(b"u2") is None and replica.get(b"u4") == b"e"
        assert replica.catch_up() == 0
    finally:
        replica.close()


def test_a_key_written_to_several_partitions_ends_with_the_highest_partitions_value(
    kafka_bootstrap, kafka_admin, unique_topic
):
    """Kafka Streams restores a global store one partition after another, in partition order: the
    copy must not depend on which partition's fetch arrives first (it did, and failed CI once)."""
    topic = unique_topic("global-order")
    kafka_admin.create_topics({topic: 3})
    produce(kafka_bootstrap, topic, [(b"u1", b"from-2", 2), (b"u2", b"from-1", 1), (b"u1", b"from-1", 1)]
            + [(f"k{i}".encode(), b"filler", i % 3) for i in range(3000)]
            + [(b"u2", b"from-0", 0), (b"u1", b"from-0", 0)])
    replica = GlobalTopicReplica({"bootstrap.servers": kafka_bootstrap}, topic)
    try:
        assert replica.catch_up() == 3005
        assert replica.get(b"u1") == b"from-2" and replica.get(b"u2") == b"from-1"
        # later catch-ups read in the same order
        produce(kafka_bootstrap, topic, [(b"u3", b"from-1", 1), (b"u3", b"from-0", 0)])
        assert replica.catch_up() == 2
        assert replica.get(b"u3") == b"from-1"
    finally:
        replica.close()


def test_an_unpickled_table_catches_up_before_its_first_lookup(kafka_bootstrap, kafka_admin, unique_topic):
    topic = unique_topic("global-shipped")
    kafka_admin.create_topics({topic: 2})
    produce(kafka_bootstrap, topic, [(b"u1", b"first", 0)])
    table = GlobalTable({"bootstrap.servers": kafka_bootstrap}, topic, Serdes.String(), Serdes.String())
    assert table.get("u1") == "first"
    produce(kafka_bootstrap, topic, [(b"u1", b"second", 1), (b"u2", b"new", 0)])
    assert table.get("u2") is None  # the same batch: no catch-up in the middle of it
    shipped = pickle.loads(pickle.dumps(table))  # the next micro-batch's copy of the program
    assert shipped.get("u1") == "second" and shipped.get("u2") == "new"


def test_a_table_without_kafka_settings_says_so():
    table = GlobalTable({}, "profiles", Serdes.String(), Serdes.String())
    with pytest.raises(ValueError, match="global table of topic 'profiles' needs the Kafka settings"):
        table.get("u1")
