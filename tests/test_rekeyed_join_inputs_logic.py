"""The re-keyed joins' inputs keep what their comparison with Kafka Streams relies on
(tests/rekeyed_join_inputs.py): each re-keyed record on its new key's partition (one upstream task per
repartition partition), no two records of a join's inputs sharing a timestamp, and every null new key
first in time (it lands in a partition the producer picks)."""

from __future__ import annotations

from rekeyed_join_inputs import PARTITIONS, rekeyed_join_inputs
from rekeyed_joins_topology import INPUTS, REKEYED
from dagster_kstreams.kafka.partitioner import default_partition

BASE = 1_700_000_000_000
# re-keyed by the value (the others keep their key, a digit)
ONE_SHAPED = {name for name in REKEYED if name.endswith("-1") and not name.startswith("rp-both")} | {"rhs-2"}


def _scenario(name: str) -> str:
    return name.rsplit("-", 1)[0]


def test_every_input_is_played():
    assert sorted(rekeyed_join_inputs(BASE)) == sorted(INPUTS)


def test_a_record_re_keyed_by_its_value_is_on_the_partition_of_its_value():
    records = rekeyed_join_inputs(BASE)
    for name in ONE_SHAPED:
        for key, value, partition, _, _ in records[name]:
            if value is not None:
                assert partition == default_partition(value.encode(), PARTITIONS), (name, key, value)


def test_no_two_records_of_a_scenario_share_a_timestamp():
    by_scenario: dict[str, list[int]] = {}
    for name, rows in rekeyed_join_inputs(BASE).items():
        by_scenario.setdefault(_scenario(name), []).extend(timestamp for _, _, _, timestamp, _ in rows)
    for scenario, timestamps in by_scenario.items():
        assert len(timestamps) == len(set(timestamps)), scenario


def test_a_null_new_key_comes_first_in_its_scenario():
    records = rekeyed_join_inputs(BASE)
    by_scenario: dict[str, list[int]] = {}
    null_new_keys: dict[str, list[int]] = {}
    for name, rows in records.items():
        for key, value, _, timestamp, _ in rows:
            by_scenario.setdefault(_scenario(name), []).append(timestamp)
            new_key = value if name in ONE_SHAPED else key
            if new_key is None:
                null_new_keys.setdefault(_scenario(name), []).append(timestamp)
    assert null_new_keys
    for scenario, timestamps in null_new_keys.items():
        others = [t for t in by_scenario[scenario] if t not in timestamps]
        assert max(timestamps) < min(others), scenario
