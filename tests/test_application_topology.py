"""ApplicationTopology: the one owner of an application's facts (names, writers, order, tasks)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dagster_kstreams
from dagster_kstreams import Consumed, Repartitioned, Serdes, StreamsBuilder, TopologyException
from dagster_kstreams.topology.application import ApplicationTopology, check_application_id
from dagster_kstreams.topology.task_id import TaskId
from topology_catalog import CATALOG
from topology_random_programs import random_program


def word_count() -> StreamsBuilder:
    b = StreamsBuilder()
    b.stream("text-lines").flat_map_values(lambda line: line.split()).group_by(lambda _, word: word) \
        .count().to_stream().to("word-counts")
    return b


def test_real_names_writers_readers_and_tasks_of_a_word_count():
    app = ApplicationTopology(word_count(), "wc", {"text-lines": 3})
    repartition = "wc-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    assert app.repartition_topics == [repartition]
    assert app.source_topics(0) == ["text-lines"] and app.sink_topics(0) == [repartition]
    assert app.source_topics(1) == [repartition] and app.sink_topics(1) == ["word-counts"]
    assert app.writers(repartition) == [0] and app.readers(repartition) == [1]
    assert app.external_source_topics == ["text-lines"]
    assert app.graph_topic_name(repartition) == "KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    # The repartition topic inherits the writer's task count; an undeclared output topic the
    # largest task count of its writers.
    assert app.partition_counts == {"text-lines": 3, repartition: 3, "word-counts": 3}
    assert app.tasks() == [TaskId(0, 0), TaskId(0, 1), TaskId(0, 2), TaskId(1, 0), TaskId(1, 1), TaskId(1, 2)]
    assert app.assigned_partitions(TaskId(1, 2)) == [(repartition, 2)]


def test_upstreams_are_named_only_for_a_sub_topology_fed_wholly_by_others():
    app = ApplicationTopology(word_count(), "wc")
    assert app.upstreams(0) == [] and app.upstreams(1) == [0]
    b = StreamsBuilder()  # a join of a repartitioned stream with an outside table: fed in part from outside
    table = b.table("countries")
    b.stream("users").select_key(lambda _, v: v).join(table, lambda u, c: c).to("joined")
    joined = ApplicationTopology(b, "j")
    assert len(joined.subtopology_ids) == 2 and all(joined.upstreams(sub) == [] for sub in joined.subtopology_ids)


def test_declared_output_and_fixed_repartition_counts_win():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())) \
        .repartition(Repartitioned.number_of_partitions_(5)).to("out")
    app = ApplicationTopology(b, "fixed", {"in": 2, "out": 7})
    assert app.task_counts == {0: 2, 1: 5}
    assert app.partition_counts["out"] == 7


def test_facts_that_need_partition_counts_say_so_until_given():
    app = ApplicationTopology(word_count(), "wc")
    assert app.execution_order() == [0, 1]  # needs no counts
    with pytest.raises(ValueError, match="partition counts are not known"):
        app.tasks()
    assert app.with_source_partitions({"text-lines": 1}).task_count(1) == 1


def test_unknown_tasks_and_stores_are_named():
    app = ApplicationTopology(word_count(), "wc", {"text-lines": 2})
    with pytest.raises(ValueError, match=r"task 1_2: sub-topology 1 has 2 tasks"):
        app.check_task(TaskId(1, 2))
    with pytest.raises(ValueError, match="no sub-topology 4"):
        app.check_task(TaskId(4, 0))
    with pytest.raises(KeyError, match="no state store 'nope'"):
        app.subtopology_of_store("nope")


@pytest.mark.parametrize("bad", ["", "a b", "ü", "x/y"])
def test_application_ids_follow_kafka_streams_rule(bad):
    with pytest.raises(ValueError, match="application_id"):
        check_application_id(bad)
    with pytest.raises(ValueError, match="application_id"):
        ApplicationTopology(word_count(), bad)


def test_a_built_topology_and_its_builder_give_the_same_facts():
    builder = word_count()
    assert ApplicationTopology(builder, "a").sink_topics(0) == ApplicationTopology(builder.build(), "a").sink_topics(0)
    with pytest.raises(TypeError, match="expected a Topology"):
        ApplicationTopology(object(), "a")


def _check_facts(topology, counts: dict[str, int]) -> None:
    app = ApplicationTopology(topology, "app-1", counts)
    order = app.execution_order()
    assert sorted(order) == app.subtopology_ids
    for position, sub_id in enumerate(order):
        for topic in app.source_topics(sub_id):
            for writer in app.writers(topic):
                if writer != sub_id and not _on_a_cycle(app, writer, sub_id):
                    assert order.index(writer) < position, (topic, writer, sub_id)
    for topic in app.repartition_topics:
        assert topic.startswith("app-1-") and topic.endswith(("-repartition", "-topic"))  # -topic: a foreign-key join's
        assert app.writers(topic) and app.readers(topic)
    partitions = app.partition_counts
    for sub_id in app.subtopology_ids:
        assert app.task_count(sub_id) == max(partitions[t] for t in app.source_topics(sub_id))
    assert len(app.tasks()) == sum(app.task_counts.values())
    assert sorted(app.tasks()) == sorted(topology.tasks(counts))


def _on_a_cycle(app: ApplicationTopology, writer: int, reader: int) -> bool:
    """Whether ``reader`` also feeds ``writer`` through topics (then no order satisfies both)."""
    seen, frontier = set(), [reader]
    while frontier:
        sub_id = frontier.pop()
        for topic in app.sink_topics(sub_id):
            for downstream in app.readers(topic):
                if downstream == writer:
                    return True
                if downstream not in seen:
                    seen.add(downstream)
                    frontier.append(downstream)
    return False


def _external_counts(topology, partitions: int) -> dict[str, int]:
    """Every input's count: source topics and global tables' topics."""
    return {topic: partitions for topic in [*topology.source_topics(), *(g.topic for g in topology.global_stores)]}


def _built(name: str):
    topology = CATALOG[name]()
    return topology.build() if hasattr(topology, "build") else topology


# A pattern subscription's topics are those it matches among the counts given, which these facts do
# not make up: tests/test_pattern_subscriptions.py checks them.
_NAMED_TOPICS = sorted(name for name in CATALOG if not any(sub.source_pattern for sub in _built(name).subtopologies))


def test_the_catalog_is_mostly_named_topics():
    assert len(_NAMED_TOPICS) >= len(CATALOG) - 3


@pytest.mark.parametrize("name", _NAMED_TOPICS)
def test_catalog_topologies_have_consistent_facts(name):
    topology = _built(name)
    _check_facts(topology, _external_counts(topology, 2))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), partitions=st.integers(1, 4))
def test_random_programs_have_consistent_facts(seed, partitions):
    namespace = dict(vars(dagster_kstreams), timedelta=timedelta)
    try:
        exec(random_program(seed).python_source(), namespace)  # noqa: S102 - the random DSL program
        topology = namespace["b"].build()
        counts = _external_counts(topology, partitions)
        topology.partition_counts(counts)
    except TopologyException:
        # Kafka Streams rejects these too (test_topology_random_oracle): a program it refuses,
        # or a Repartitioned count that cannot be co-partitioned with these counts.
        assume(False)
    _check_facts(topology, counts)


def test_task_ids_round_trip_through_their_text():
    assert TaskId.parse(str(TaskId(12, 3))) == TaskId(12, 3)
    assert re.fullmatch(r"\d+_\d+", str(TaskId(0, 0)))
