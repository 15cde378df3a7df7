"""Kafka Streams' joins of re-keyed streams, the Python twin of kstreams.oracle.RekeyedJoinScenarioExamples
(Java): keep the two in step. tests/test_equivalence_kstreams_rekeyed_joins.py runs them against it.

Each scenario follows ``KStreamRepartitionJoinTest.shouldCorrectlyRepartitionOnJoinOperations`` (its
topologies; its input in ``rekeyed_join_inputs``) on topics of its own, so that its re-keying and its
join are sub-topologies of their own. Stream "one" is keyed by anything and valued by a digit, re-keyed
by its value (``MockMapper.selectValueKeyValueMapper``); stream "two" is keyed by a digit:

* ``map-one``: one ``map``ped, joined with two (``mapStreamOneAndJoin``);
* ``map-both``: one ``map``ped, joined with two ``map``ped by a key-keeping mapper: both sides reach
  the join through a repartition topic (``mapBothStreamsAndJoin``);
* ``map-map``: one ``map``ped to ``key + value`` (null for a null value), then by its value
  (``mapMapJoin``);
* ``mv-select``: one ``map_values`` then ``select_key`` by the mapped value's digit, joined with two
  ``map_values`` then ``select_key`` (the key kept): both re-keyed (``selectKeyAndJoin``);
* ``flat-map``: one ``flat_map``ped to two records of its value's key (``flatMapJoin``);
* ``rhs``: two joined with one ``map``ped, the re-keyed stream on the right (``joinMappedRhsStream``);
* ``left``: one ``map``ped, left-joined with two ``map``ped, unjoined records kept
  (``mapBothStreamsAndLeftJoin`` without its filter);
* ``st-inner``, ``st-left``: one ``map``ped, joined and left-joined with a table of two (the stream
  re-keyed, the table not);
* ``rp-both``: two ``repartition(Repartitioned.as_(...))``ed joined with another ``repartition``ed
  stream keyed alike (``KStreamRepartitionIntegrationTest``
  ``shouldDoProperJoiningWhenNumberOfPartitionsAreValidWhenUsingRepartitionOperation``, there on one side);
* ``reuse``: one ``map``ped, joined with two streams, both joins reading one repartition topic, in one
  sub-topology, to one output (``KStreamKStreamJoinTest.shouldReuseRepartitionTopicWithGeneratedName``);
  ``named-first``, ``named-second``: the same with ``StreamJoined.with_name``, a repartition topic and a
  sub-topology each (``shouldCreateRepartitionTopicsWithUserProvidedName``).

A re-keyed null value is a null key after the re-key. The windows: 3 s, 1 s grace (the tests' day
would never emit a left join's unjoined records, nor drop a late one). Every store runs without the
record cache; every output value ends with ``|t`` and its timestamp.
"""

from __future__ import annotations

import sys
from datetime import timedelta

from pyspark import cloudpickle

from equivalence_io import StampValues, java_string
from dagster_kstreams.topology import Materialized, Repartitioned, StreamJoined, StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows

# The mappers and joiners run in Spark's Python workers, which cannot import modules of tests/.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

# Each scenario's inputs: "<scenario>-1" (one's shape, or two's for rp-both) and "<scenario>-2" (two's).
SCENARIOS = ("map-one", "map-both", "map-map", "mv-select", "flat-map", "rhs", "left", "st-inner", "st-left",
             "rp-both")
# Two joins of one re-keyed stream (one's shape) with two others (two's): "reuse" and "named".
SHARED = ("reuse", "named")
INPUTS = (tuple(f"{scenario}-{side}" for scenario in SCENARIOS for side in (1, 2))
          + tuple(f"{scenario}-{side}" for scenario in SHARED for side in (1, 2, 3)))
OUTPUTS = SCENARIOS + ("reuse", "named-first", "named-second")
# The re-keyed inputs: filled into their repartition topics before the joins run (Kafka Streams' side).
REKEYED = ("map-one-1", "map-both-1", "map-both-2", "map-map-1", "mv-select-1", "mv-select-2", "flat-map-1",
           "rhs-2", "left-1", "left-2", "st-inner-1", "st-left-1", "rp-both-1", "rp-both-2", "reuse-1", "named-1")
WINDOW = JoinWindows.of_time_difference_and_grace(timedelta(seconds=3), timedelta(seconds=1))


def joined(x, y) -> str:
    """The tests' ``MockValueJoiner.instance(":")``."""
    return f"{java_string(x)}:{java_string(y)}"


def value_as_key(key, value):
    """``MockMapper.selectValueKeyValueMapper``: the value as the key."""
    return value, value


def same_key(key, value):
    """``MockMapper.noOpKeyValueMapper``: a key change that keeps the key."""
    return key, value


def key_plus_value(key, value):
    """``mapMapJoin``'s first mapper: ``key + value`` as the key (both null for a null value)."""
    return (None, None) if value is None else (f"{java_string(key)}{value}", value)


def tagged(value):
    return None if value is None else f"v{value}"


def untagged_digit(key, value):
    """``mv-select``'s key: the tagged value's digit (null for a null value)."""
    return None if value is None else value[1:]


def value_twice(key, value):
    return [(value, value), (value, f"{java_string(value)}x")]


def uncached(store: str) -> Materialized:
    return Materialized.as_(store).with_caching_disabled()


def rekeyed_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of RekeyedJoinScenarioExamples.java on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()

    def sides(scenario):
        return builder.stream(topics[f"{scenario}-1"]), builder.stream(topics[f"{scenario}-2"])

    def out(stream, name):
        stream.process_values(StampValues).to(topics[name])

    one, two = sides("map-one")
    out(one.map(value_as_key).join(two, joined, WINDOW), "map-one")
    one, two = sides("map-both")
    out(one.map(value_as_key).join(two.map(same_key), joined, WINDOW), "map-both")
    one, two = sides("map-map")
    out(one.map(key_plus_value).map(value_as_key).join(two, joined, WINDOW), "map-map")
    one, two = sides("mv-select")
    out(one.map_values(tagged).select_key(untagged_digit)
        .join(two.map_values(tagged).select_key(lambda key, value: key), joined, WINDOW), "mv-select")
    one, two = sides("flat-map")
    out(one.flat_map(value_twice).join(two, joined, WINDOW), "flat-map")
    digits, one = sides("rhs")  # the stream keyed by a digit on the left, one re-keyed on the right
    out(digits.join(one.map(value_as_key), joined, WINDOW), "rhs")
    one, two = sides("left")
    out(one.map(value_as_key).left_join(two.map(same_key), joined, WINDOW), "left")
    one = builder.stream(topics["st-inner-1"])
    out(one.map(value_as_key).join(builder.table(topics["st-inner-2"], uncached("st-inner-store")), joined),
        "st-inner")
    one = builder.stream(topics["st-left-1"])
    out(one.map(value_as_key).left_join(builder.table(topics["st-left-2"], uncached("st-left-store")), joined),
        "st-left")
    left, right = sides("rp-both")
    out(left.repartition(Repartitioned.as_("rp-both-left"))
        .join(right.repartition(Repartitioned.as_("rp-both-right").with_number_of_partitions(2)), joined, WINDOW),
        "rp-both")
    one, two, three = (builder.stream(topics[f"reuse-{side}"]) for side in (1, 2, 3))
    rekeyed = one.map(value_as_key)
    out(rekeyed.join(two, joined, WINDOW), "reuse")
    out(rekeyed.join(three, joined, WINDOW), "reuse")
    one, two, three = (builder.stream(topics[f"named-{side}"]) for side in (1, 2, 3))
    rekeyed = one.map(value_as_key)
    out(rekeyed.join(two, joined, WINDOW, StreamJoined.with_().with_name("first-join")), "named-first")
    out(rekeyed.join(three, joined, WINDOW, StreamJoined.with_().with_name("second-join")), "named-second")
    return builder
