"""Aggregations and tables on Spark: count/reduce/aggregate, to_table, state carried across runs."""

from __future__ import annotations

from collections import Counter

import pytest

from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import final_values, produce, read_topic
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes

pytestmark = pytest.mark.integration

COUNTRIES = ["fr"] * 6 + ["de"] * 3 + ["it", "es", "pt"]  # skewed


def _users(count: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [
        (f"user{i}".encode(), f"user{i},{COUNTRIES[(i * 7) % len(COUNTRIES)]},{i % 50}".encode())
        for i in range(start, start + count)
    ]


def _long(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)


def test_count_per_country_over_a_repartition_topic_keeps_counting_across_runs(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    users, per_country = unique_topic("users"), unique_topic("users-per-country")
    kafka_admin.create_topics({users: 3, per_country: 2})
    builder = StreamsBuilder()
    builder.stream(users).group_by(lambda key, value: value.split(",")[1]) \
        .count(Materialized.as_("users-per-country-store")).to_stream().to(per_country)
    app_id = unique_topic("app")
    # The repartition purge after every batch (30 s by default).
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark,
                        repartition_purge_interval_s=0.0)
    repartition = f"{app_id}-users-per-country-store-repartition"
    assert runner.application.repartition_topics == [repartition]
    assert runner.task_ids() == ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]

    first = _users(120)
    produce(kafka_bootstrap, users, first)
    results = runner.run_all(parallelism=2)  # tasks of one sub-topology as concurrent queries
    assert [result.task_id for result in results] == runner.task_ids()
    # The library created the repartition topic with the upstream task count.
    assert kafka_admin.partition_count(repartition) == 3
    expected = Counter(value.decode().split(",")[1] for _, value in first)
    output = read_topic(kafka_bootstrap, per_country)
    assert final_values(output, bytes.decode, _long) == dict(expected)
    for record in output:
        assert record.partition == default_partition(record.key, 2)
    # Kafka Streams with its record cache: one update per key per batch (each run is one batch here).
    downstream = [result for result in results if result.subtopology == 1]
    assert sum(sum(result.records_out.values()) for result in downstream) == len(expected)
    assert runner.read_store("users-per-country-store") == dict(expected)
    # source -> count -> to_stream -> to: Spark's own aggregation, no Python.
    assert runner.compiled.program(1).jvm_count() is not None
    # Every source partition, external and internal, is committed to its end.
    for topic in (users, repartition):
        assert kafka_admin.committed_offsets(app_id, topic) == kafka_admin.end_offsets(topic)
    after_first = kafka_admin.committed_offsets(app_id, repartition)

    # No new input: nothing to do, no new output.
    before = kafka_admin.end_offsets(per_country)
    assert sum(result.records_in for result in runner.run_all()) == 0
    assert kafka_admin.end_offsets(per_country) == before

    # More input: counts continue from the stored state.
    more = _users(45, start=120)
    produce(kafka_bootstrap, users, more)
    runner.run_all()
    expected.update(value.decode().split(",")[1] for _, value in more)
    assert final_values(read_topic(kafka_bootstrap, per_country), bytes.decode, _long) == dict(expected)
    assert runner.read_store("users-per-country-store") == dict(expected)
    # The repartition topic as Kafka Streams keeps one: no record lost to the broker's retention,
    # whatever its age, and purged below where each counting task's last batch began (one batch
    # behind its commit: a batch may be read again when its run dies before Spark's checkpoint).
    # (The counting tasks start while the re-keying ones still write: one batch or several.)
    assert kafka_admin.topic_config([repartition], "retention.ms") == {repartition: "-1"}
    log_start = kafka_admin.beginning_offsets(repartition)
    committed = kafka_admin.committed_offsets(app_id, repartition)
    counted_again = [tp for tp in committed if committed[tp] > after_first[tp]]
    assert counted_again and all(after_first[tp] <= log_start[tp] < committed[tp] for tp in counted_again)


def test_reduce_and_aggregate_in_one_subtopology_with_several_batches(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    amounts, maxima, histories = unique_topic("amounts"), unique_topic("maxima"), unique_topic("histories")
    tallies = unique_topic("tallies")
    kafka_admin.create_topics({amounts: 2, maxima: 2, histories: 2, tallies: 2})
    builder = StreamsBuilder()
    grouped = builder.stream(amounts).map_values(lambda value: int(value)) \
        .group_by_key(Grouped.with_(Serdes.String(), Serdes.Long()))
    grouped.reduce(lambda aggregate, value: max(aggregate, value)).to_stream().to(maxima)
    grouped.aggregate(
        lambda: "",
        lambda key, value, aggregate: f"{aggregate}|{value}" if aggregate else str(value),
        Materialized.with_(Serdes.String(), Serdes.String()),
    ).to_stream().to(histories)
    # A count followed by Python: runs in the Python pass with the other stores.
    grouped.count().to_stream().map_values(lambda count: f"seen {count}x").to(tallies)
    app_id = unique_topic("app")
    # Small batches: state must carry from batch to batch within a run too.
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark,
                        max_records_per_batch=7)
    assert runner.task_ids() == ["0_0", "0_1"]
    rows = [(f"k{i % 5}".encode(), str((i * 37) % 101).encode()) for i in range(40)]
    produce(kafka_bootstrap, amounts, rows)
    results = runner.run_all()
    assert all(result.batches >= 3 for result in results)

    expected_max: dict[str, int] = {}
    expected_history: dict[str, str] = {}
    for key, value in rows:  # one key lives in one partition, so input order per key is offset order
        key, value = key.decode(), int(value)
        expected_max[key] = max(expected_max.get(key, value), value)
        expected_history[key] = f"{expected_history[key]}|{value}" if key in expected_history else str(value)
    assert final_values(read_topic(kafka_bootstrap, maxima), bytes.decode, _long) == expected_max
    assert final_values(read_topic(kafka_bootstrap, histories), bytes.decode, bytes.decode) == expected_history
    expected_tallies = Counter(key.decode() for key, _ in rows)
    assert final_values(read_topic(kafka_bootstrap, tallies), bytes.decode, bytes.decode) == {
        key: f"seen {count}x" for key, count in expected_tallies.items()}
    assert runner.compiled.program(0).jvm_count() is None
    assert kafka_admin.committed_offsets(app_id, amounts) == kafka_admin.end_offsets(amounts)


def test_key_changing_map_then_to_table_keeps_the_latest_value_per_new_key(
    kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path
):
    events, latest = unique_topic("events"), unique_topic("latest-by-country")
    kafka_admin.create_topics({events: 2, latest: 2})
    builder = StreamsBuilder()
    builder.stream(events).map(lambda key, value: (value.split(",")[1], value.split(",")[0])) \
        .to_table(Materialized.as_("latest-user-by-country")).to_stream().to(latest, Produced.with_(
            Serdes.String(), Serdes.String()))
    app_id = unique_topic("app")
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark)
    # Records of one country all come from one input partition, so "latest" is well defined.
    countries = sorted(set(COUNTRIES))
    rows = []
    for i in range(60):
        country = countries[(i * 5) % len(countries)]
        rows.append((f"user{i}".encode(), f"user{i},{country}".encode(), countries.index(country) % 2))
    produce(kafka_bootstrap, events, rows)
    runner.run_all()
    expected = {}
    for _, value, _ in rows:
        user, country = value.decode().split(",")
        expected[country] = user
    assert final_values(read_topic(kafka_bootstrap, latest), bytes.decode, bytes.decode) == expected
    assert runner.read_store("latest-user-by-country") == expected
    repartition = [t for t in runner.application.repartition_topics]
    assert len(repartition) == 1 and repartition[0].startswith(f"{app_id}-") and repartition[0].endswith("-repartition")
    assert kafka_admin.committed_offsets(app_id, repartition[0]) == kafka_admin.end_offsets(repartition[0])
    assert TopicPartition(events, 0) in kafka_admin.committed_offsets(app_id, events)


def test_a_record_as_large_as_the_input_topic_takes_passes_the_repartition(kafka_bootstrap, kafka_admin, unique_topic,
                                                                            spark, tmp_path):
    """The input topic takes 3 MB records (Kafka's default is 1 MB): the repartition topic the task
    creates and Spark's producer take them too, so the record is counted downstream."""
    source, out = unique_topic("large"), unique_topic("counts")
    kafka_admin.create_topics({source: 1, out: 1}, topic_config={"max.message.bytes": str(4 * 1024 * 1024)})
    large = b"x" * (3 * 1024 * 1024)
    produce(kafka_bootstrap, source, [(b"big", large), (b"small", b"y")], {"message.max.bytes": 5 * 1024 * 1024})
    builder = StreamsBuilder()
    builder.stream(source, Consumed.with_(Serdes.ByteArray(), Serdes.ByteArray())) \
        .select_key(lambda key, value: key) \
        .group_by_key(Grouped.with_(Serdes.ByteArray(), Serdes.ByteArray())).count() \
        .to_stream().to(out, Produced.with_(Serdes.ByteArray(), Serdes.Long()))
    app_id = unique_topic("app")
    runner = TaskRunner(builder, app_id, kafka_bootstrap, state_location=str(tmp_path / "state"), spark=spark)
    results = runner.run_all()
    upstream_batches = sum(result.batches for result in results if result.subtopology == 0)
    # Offsets read downstream: both records, and a commit marker per upstream batch (exactly-once).
    assert 2 <= sum(result.records_in for result in results if result.subtopology == 1) <= 2 + upstream_batches
    repartition = next(iter(runner.application.repartition_topics))
    assert kafka_admin.topic_config([repartition], "max.message.bytes") == {repartition: str(4 * 1024 * 1024)}
    counts = final_values(read_topic(kafka_bootstrap, out), bytes, lambda data: int.from_bytes(data, "big"))
    assert counts == {b"big": 1, b"small": 1}
