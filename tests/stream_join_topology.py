"""Stream-stream joins, the Python twin of kstreams.oracle.StreamJoinExamples (Java): keep the two in
step. tests/test_equivalence_stream_joins.py runs them against it; the killed runs import them from
here (a module of tests/)."""

from __future__ import annotations

import sys
from datetime import timedelta

from pyspark import cloudpickle

from equivalence_io import java_string
from dagster_kstreams.topology import Materialized, Stores, StreamJoined, StreamsBuilder
from dagster_kstreams.topology.windows import JoinWindows

# The joiners run in Spark's Python workers, which cannot import modules of tests/.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

CHAIN_INPUTS = ("a6", "b6", "c6")  # one task: their timestamps are distinct among them


def stream_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The Python twin of StreamJoinExamples.streamJoinExamples (Java); keep the two in step."""
    builder = StreamsBuilder()
    left1, right1 = builder.stream(topics["a1"]), builder.stream(topics["b1"])
    left1.join(right1, lambda x, y: f"{java_string(x)}+{java_string(y)}",
               JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=10))).to(topics["out1"])
    left2, right2 = builder.stream(topics["a2"]), builder.stream(topics["b2"])
    left2.join(right2, lambda k, x, y: f"{k}:{java_string(x)}+{java_string(y)}",
               JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=20))
               .after(timedelta(seconds=30))).to(topics["out2"])
    left3 = builder.stream(topics["a3"]).select_key(lambda k, v: None if k is None else "r" + k[1:])
    right3 = builder.stream(topics["b3"])
    right3.join(left3, lambda x, y: f"{java_string(x)}*{java_string(y)}",
                JoinWindows.of_time_difference_and_grace(timedelta(seconds=3), timedelta(seconds=5))
                .before(timedelta(seconds=8))).to(topics["out3"])
    left4, right4 = builder.stream(topics["a4"]), builder.stream(topics["b4"])
    left4.left_join(right4, lambda x, y: f"{java_string(x)}+{java_string(y)}",
                    JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=3))
                    .after(timedelta(seconds=6))).to(topics["out4"])
    left5, right5 = builder.stream(topics["a5"]), builder.stream(topics["b5"])
    left5.outer_join(right5, lambda k, x, y: f"{java_string(k)}:{java_string(x)}+{java_string(y)}",
                     JoinWindows.of_time_difference_and_grace(timedelta(seconds=4), timedelta(seconds=5))
                     ).to(topics["out5"])
    left6, right6, third6 = (builder.stream(topics[name]) for name in CHAIN_INPUTS)
    # The chain's stores come from suppliers (the inner join's both, one in memory; the left join's this
    # side in memory, so its outer-join store too, the other side named by the StreamJoined's store name).
    seconds = timedelta(seconds=1)
    left6.join(right6, lambda x, y: f"{java_string(x)}+{java_string(y)}",
               JoinWindows.of_time_difference_and_grace(5 * seconds, 2 * seconds),
               StreamJoined.with_(Stores.in_memory_window_store("chain-left", 12 * seconds, 10 * seconds, True),
                                  Stores.persistent_window_store("chain-right", 12 * seconds, 10 * seconds, True))
               ).left_join(
        third6, lambda k, x, y: f"{java_string(k)}:{java_string(x)}/{java_string(y)}",
        JoinWindows.of_time_difference_and_grace(3 * seconds, 4 * seconds).after(6 * seconds),
        StreamJoined.as_("chain-joined").with_this_store_supplier(
            Stores.in_memory_window_store("chain-joined-this", 13 * seconds, 9 * seconds, True)),
    ).to(topics["out6"])
    add_table_fed_join(builder, topics)
    return builder


def add_table_fed_join(builder: StreamsBuilder, topics: dict[str, str]) -> StreamsBuilder:
    """Join 7 of StreamJoinExamples.streamJoinExamples (Java): a stream-stream join whose sides come
    from a table's to_stream and from a stream-table join, in one sub-topology."""
    table7 = builder.table(topics["a7"], Materialized.as_("t7-store").with_caching_disabled())
    enriched7 = builder.stream(topics["b7"]).left_join(table7, lambda x, y: f"{java_string(x)}<{java_string(y)}>")
    builder.table(topics["c7"]).filter(lambda k, v: not v.endswith("0")).map_values(lambda v: v.upper()) \
        .to_stream().outer_join(
            enriched7, lambda k, x, y: f"{java_string(k)}:{java_string(x)}+{java_string(y)}",
            JoinWindows.of_time_difference_and_grace(timedelta(seconds=4), timedelta(seconds=3))
            .after(timedelta(seconds=6))).to(topics["out7"])
    return builder


def table_fed_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """Join 7 alone (the killed run of it)."""
    return add_table_fed_join(StreamsBuilder(), topics)
