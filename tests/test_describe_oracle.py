"""Differential test: dagster_kstreams' describe() against Kafka Streams' own, byte for byte.

Every topology in tests/topology_catalog.py is built a second time, under the same name, with
Kafka Streams 4.3.1 (tests/oracle, run once per session for all names at once).
"""

from __future__ import annotations

import difflib

import pytest

import oracle_harness
from dagster_kstreams import TopologyException
from topology_catalog import CATALOG
from topology_catalog_store_suppliers import REFUSED


@pytest.fixture(scope="session")
def kafka_streams_descriptions() -> dict[str, str]:
    return oracle_harness.describe_topologies(["all"])


def test_both_catalogs_name_the_same_topologies(kafka_streams_descriptions):
    python_names = set(CATALOG)
    java_names = set(kafka_streams_descriptions)
    assert python_names == java_names, (
        f"only in topology_catalog.py: {sorted(python_names - java_names)}; "
        f"only in TopologyCatalog.java: {sorted(java_names - python_names)}"
    )


def test_catalog_is_large_enough_to_mean_something():
    assert len(CATALOG) >= 30


def _readable_diff(expected: str, actual: str) -> str:
    return "\n".join(
        difflib.unified_diff(
            expected.splitlines(),
            actual.splitlines(),
            fromfile="Kafka Streams describe()",
            tofile="dagster_kstreams describe()",
            lineterm="",
        )
    )


@pytest.mark.parametrize("name", list(CATALOG))
def test_describe_is_byte_identical_to_kafka_streams(name, kafka_streams_descriptions):
    expected = kafka_streams_descriptions.get(name)
    assert expected is not None, f"{name} is missing from TopologyCatalog.java"
    assert not expected.startswith("!error"), f"Kafka Streams could not build {name}: {expected}"

    actual = str(CATALOG[name]().describe())

    if actual != expected:
        pytest.fail(
            f"describe() of {name} differs from Kafka Streams'\n"
            f"{_readable_diff(expected, actual)}\n\n"
            f"Kafka Streams, repr: {expected!r}\n"
            f"ours,          repr: {actual!r}",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def kafka_streams_refusals() -> dict[str, str]:
    return oracle_harness.describe_topologies(list(REFUSED))


@pytest.mark.parametrize("name", list(REFUSED))
def test_store_settings_kafka_streams_refuses_are_refused(name, kafka_streams_refusals):
    """A supplier or retention Kafka Streams refuses when the topology is built is refused when it is
    defined here, with Kafka Streams' reason (its message, naming the store)."""
    expected = kafka_streams_refusals[name]
    assert expected.startswith("!error"), f"Kafka Streams built {name}"
    with pytest.raises(TopologyException) as refused:
        REFUSED[name]()
    kafka_streams_reason = expected.split(": ", 2)[2]
    ours = str(refused.value).removeprefix("Invalid topology: ")
    assert ours.split(" ")[:3] == kafka_streams_reason.split(" ")[:3], (ours, kafka_streams_reason)
