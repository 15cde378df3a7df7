"""The application's record-cache size, Kafka Streams' ``statestore.cache.max.bytes``
(dagster_kstreams/processors/record_cache.py): its parsing and its two names, the one place that decides
whether a store is cached (``BuildContext.cached``), the refusals it lifts with 0 and keeps with any other
size, and how it reaches the runner (``KStreamsApp``, the ``run`` and ``query`` commands). The comparison
with Kafka Streams running with it at 0: test_equivalence_kstreams_table_scenarios.py."""

from __future__ import annotations

import argparse
from datetime import timedelta

import dagster as dg
import pytest
from dagster.components.testing import create_defs_folder_sandbox
from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.cli import main
from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.component import KStreamsComponent
from dagster_kstreams.processors.record_cache import (
    CACHE_MAX_BYTES_BUFFERING, DEFAULT_CACHE_MAX_BYTES, STATESTORE_CACHE_MAX_BYTES, cache_max_bytes_of,
    check_cache_max_bytes, store_cached,
)
from dagster_kstreams.spark.cache_size_option import add_cache_size_options, cache_size_of
from dagster_kstreams.spark.compile import UnsupportedTopologyError, compile_topology
from dagster_kstreams.topology import BufferConfig, Materialized, StreamsBuilder, Suppressed
from dagster_kstreams.topology.windows import JoinWindows, TimeWindows

_SIZES = st.integers(0, 2 ** 63 - 1)


# -- the setting's value --------------------------------------------------------------------------
@given(_SIZES)
def test_a_size_is_taken_as_a_number_or_its_digits(size):
    assert check_cache_max_bytes(size) == size
    assert check_cache_max_bytes(str(size)) == size
    assert check_cache_max_bytes(f" {size} ") == size


@given(st.integers(max_value=-1))
def test_a_negative_size_is_refused_naming_the_setting(size):
    for value in (size, str(size)):
        with pytest.raises(ValueError, match=r"^statestore\.cache\.max\.bytes must be >= 0 .*got -\d+$"):
            check_cache_max_bytes(value)


@pytest.mark.parametrize("value", [True, False, None, 1.5, 0.0, "", "ten", "1e6", "10MB", "+-1", "١٢", [0]])
def test_what_is_no_number_of_bytes_is_refused_in_one_line_naming_the_setting(value):
    with pytest.raises(ValueError, match=r"^cache\.max\.bytes\.buffering must be a number of bytes .*got ") as error:
        check_cache_max_bytes(value, CACHE_MAX_BYTES_BUFFERING)
    assert "\n" not in str(error.value)


@given(st.one_of(st.none(), _SIZES), st.one_of(st.none(), _SIZES))
def test_the_new_name_wins_then_the_deprecated_one_then_kafka_streams_default(new, deprecated):
    properties = {STATESTORE_CACHE_MAX_BYTES: new, CACHE_MAX_BYTES_BUFFERING: deprecated}
    expected = new if new is not None else deprecated if deprecated is not None else DEFAULT_CACHE_MAX_BYTES
    assert cache_max_bytes_of(properties) == expected
    assert cache_max_bytes_of({name: value for name, value in properties.items() if value is not None}) == expected


def test_a_nonsense_deprecated_size_is_named_by_its_own_name():
    with pytest.raises(ValueError, match=r"^cache\.max\.bytes\.buffering must be >= 0"):
        cache_max_bytes_of({CACHE_MAX_BYTES_BUFFERING: "-1"})
    assert cache_max_bytes_of({STATESTORE_CACHE_MAX_BYTES: "0", CACHE_MAX_BYTES_BUFFERING: "5"}) == 0


@given(st.booleans(), _SIZES)
def test_a_store_is_cached_when_its_own_setting_is_on_and_the_size_above_zero(own, size):
    assert store_cached(own, size) is (own and size > 0)


# -- cached(): the setting decides for every store ---------------------------------------------------
def _counts(builder: StreamsBuilder, own_cache: bool = True) -> None:
    counts = Materialized.as_("counts") if own_cache else Materialized.as_("counts").with_caching_disabled()
    builder.stream("in").group_by_key().count(counts).to_stream().to("out")


def _cached_flags(build, **settings) -> dict[str, bool]:
    builder = StreamsBuilder()
    build(builder)
    program = compile_topology(builder.build(), "app", **settings).program(0)
    return {node.store: node.cached for node in program.nodes if node.stateful and getattr(node, "store", None)}


def _windowed_and_table(builder: StreamsBuilder) -> None:
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=2),
                                                                                  timedelta(seconds=1))) \
        .count(Materialized.as_("windows")).to_stream().to("out")
    builder.stream("in").to_table(Materialized.as_("table")).to_stream().to("out-table")


@pytest.mark.parametrize("settings, cached", [({}, True), ({"statestore_cache_max_bytes": 1}, True),
                                              ({"statestore_cache_max_bytes": 0}, False)])
def test_a_store_with_its_cache_on_is_cached_unless_the_size_is_zero(settings, cached):
    assert _cached_flags(_counts, **settings) == {"counts": cached}
    assert set(_cached_flags(_windowed_and_table, **settings).values()) == {cached}


@pytest.mark.parametrize("size", [0, 1, DEFAULT_CACHE_MAX_BYTES])
def test_a_store_with_its_cache_off_stays_off_whatever_the_size(size):
    assert _cached_flags(lambda builder: _counts(builder, own_cache=False), statestore_cache_max_bytes=size) == {
        "counts": False}


def test_with_every_cache_off_the_word_counts_count_forwards_every_update_not_through_the_jvm_count():
    """The JVM count (Spark's update mode: one update per key and batch) is a cached count's only."""
    def program(**settings):
        builder = StreamsBuilder()
        _counts(builder)
        return compile_topology(builder.build(), "app", **settings).program(0)

    assert program().jvm_count() is not None
    assert program(statestore_cache_max_bytes=0).jvm_count() is None


def test_a_nonsense_size_is_refused_when_compiled():
    with pytest.raises(ValueError, match=r"^statestore\.cache\.max\.bytes must be >= 0"):
        compile_topology(StreamsBuilder(), "app", statestore_cache_max_bytes=-5)


# -- refusals that hang on a cache --------------------------------------------------------------------
def _suppressed_step_before_a_join(builder: StreamsBuilder) -> None:
    """A map_values' cached store behind a suppression, before a stream-stream join (the runner keeps no
    record cache for a step's store there: refused while a cache is on)."""
    counts = builder.table("t", Materialized.as_("t-store").with_caching_disabled()) \
        .group_by(lambda key, value: (value, key)).count(Materialized.as_("counts").with_caching_disabled())
    counts.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded())) \
        .map_values(lambda count: f"n{count}", Materialized.as_("cached")) \
        .to_stream().join(builder.stream("s"), lambda l, r: f"{l}+{r}", JoinWindows(1000, 1000, 0)).to("out")


@pytest.mark.parametrize("settings", [{}, {"statestore_cache_max_bytes": 1}])
def test_a_cache_not_compared_is_still_refused_naming_it_with_any_size_above_zero(settings):
    builder = StreamsBuilder()
    _suppressed_step_before_a_join(builder)
    with pytest.raises(UnsupportedTopologyError, match=r"KTABLE-MAPVALUES-\d+ \(cached\) comes before the "
                                                       r"stream-stream join .*record cache on"):
        compile_topology(builder.build(), "app", **settings).check()


def test_with_every_cache_off_that_topology_runs():
    builder = StreamsBuilder()
    _suppressed_step_before_a_join(builder)
    compile_topology(builder.build(), "app", statestore_cache_max_bytes=0).check()


# -- where a user sets it ----------------------------------------------------------------------------
def test_an_app_takes_the_setting_at_load_and_refuses_nonsense_naming_it():
    builder = StreamsBuilder()
    _suppressed_step_before_a_join(builder)
    partitions = {"t": 2, "s": 2}
    with pytest.raises(UnsupportedTopologyError, match=r"application 'app' cannot run on Spark: table KTABLE-MAPVALUES"):
        KStreamsApp(builder, "app", partitions)
    assert KStreamsApp(builder, "app", partitions, statestore_cache_max_bytes=0).statestore_cache_max_bytes == 0
    assert KStreamsApp(builder, "app", partitions, statestore_cache_max_bytes="0").statestore_cache_max_bytes == 0
    with pytest.raises(ValueError, match=r"^statestore\.cache\.max\.bytes must be a number of bytes"):
        KStreamsApp(builder, "app", partitions, statestore_cache_max_bytes="off")


def suppressed_step_before_a_join_topology() -> StreamsBuilder:
    """What the component below loads (by reference: ``test_record_cache_setting_logic:...``)."""
    builder = StreamsBuilder()
    _suppressed_step_before_a_join(builder)
    return builder


def test_the_component_takes_the_setting_from_its_yaml():
    def load(**setting) -> dg.Definitions:
        attributes = {"topology": f"{__name__}:suppressed_step_before_a_join_topology", "app_id": "app",
                      "topic_partitions": {"t": 2, "s": 2}, **setting}
        with create_defs_folder_sandbox() as sandbox:
            sandbox.scaffold_component(KStreamsComponent, defs_path="app",
                                       defs_yaml_contents={"type": f"{KStreamsComponent.__module__}.KStreamsComponent",
                                                           "attributes": attributes})
            with sandbox.build_all_defs() as defs:
                return defs

    assert load(statestore_cache_max_bytes=0).assets
    with pytest.raises(Exception) as error:  # Dagster's error of the component, caused by the runner's refusal
        load()
    causes = []
    cause = error.value
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__
    refusal = next(cause for cause in causes if isinstance(cause, UnsupportedTopologyError))
    assert "cannot run on Spark: table KTABLE-MAPVALUES" in str(refusal)


def _options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_cache_size_options(parser)
    return parser.parse_args(list(argv))


def test_the_commands_take_either_name_the_new_one_winning():
    assert cache_size_of(_options()) == DEFAULT_CACHE_MAX_BYTES
    assert cache_size_of(_options("--cache-max-bytes-buffering", "0")) == 0
    assert cache_size_of(_options("--statestore-cache-max-bytes", "0", "--cache-max-bytes-buffering", "7")) == 0


@pytest.mark.parametrize("command", [["run", "--all"], ["query", "--store", "counts"]])
def test_a_command_given_nonsense_says_so_in_one_line_before_anything_starts(command, capsys):
    argv = [command[0], "nowhere:topology", "--app-id", "app", *command[1:], "--statestore-cache-max-bytes", "-1"]
    assert main(argv) == 1
    assert capsys.readouterr().err == ("dagster-kstreams: error: statestore.cache.max.bytes must be >= 0 (0 turns "
                                       "every store's record cache off), got -1\n")
