"""``cogroup`` without Spark: what Kafka Streams refuses when the topology is defined, and the
cogrouped processors run as programs batch by batch (their state pickled in between, as a
checkpoint would). The broker-backed comparison with Kafka Streams is test_equivalence_cogroup.py;
describe() is compared in test_describe_oracle.py (the cogroup_* entries of the catalog)."""

from __future__ import annotations

import pytest

from dagster_kstreams.topology import StreamsBuilder, TopologyException
from dagster_kstreams.topology.materialized import Materialized


def test_two_inputs_repartitioned_under_the_stores_name_collide_as_in_kafka_streams():
    # Both repartition topics would be named after the one store (Kafka Streams 4.3.1 says the same).
    builder = StreamsBuilder()
    first = builder.stream("a").group_by(lambda key, value: value)
    second = builder.stream("c").group_by(lambda key, value: value)
    first.cogroup(lambda key, value, agg: agg).cogroup(second, lambda key, value, agg: agg) \
        .aggregate(lambda: "").to_stream().to("out")
    with pytest.raises(TopologyException, match="COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter "
                                                "is already added"):
        builder.build()


def test_two_cogroups_on_one_store_name_are_refused_as_in_kafka_streams():
    builder = StreamsBuilder()
    grouped = builder.stream("a").group_by_key()
    grouped.cogroup(lambda key, value, agg: agg).aggregate(lambda: "", Materialized.as_("s"))
    grouped.cogroup(lambda key, value, agg: agg).aggregate(lambda: "", Materialized.as_("s"))
    with pytest.raises(TopologyException, match="A different StateStore has already been added with the name s"):
        builder.build()
