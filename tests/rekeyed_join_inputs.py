"""The inputs of tests/test_equivalence_kstreams_rekeyed_joins.py: ``KStreamRepartitionJoinTest``'s
records (stream one: any key, a digit as the value; stream two: a digit as the key, a letter as the
value) with null keys, null values, tombstones and records out of order, some late beyond the join
windows' grace, on two partitions.

The order a join task sees is the order of its repartition partitions, merged by timestamp. A
repartition partition that two upstream tasks write interleaves them as they happen to run (in Kafka
Streams as here), so each re-keyed record is written to the input partition of its new key: each
repartition partition is written by one upstream task, in that task's order. Timestamps are distinct
across the two sides (one's end in 1 ms, two's in 2 ms), so the merge never meets a tie (README, "Order
across co-partitioned inputs"). A record whose new key is null (one's null value; two's null key) goes,
in front of a left join, which keeps null keys, to a repartition partition the producer picks, in Kafka
Streams as here: it has the smallest timestamp of its join's input, so that wherever it lands it holds
back no record behind it in the timestamp merge (README, "Order across co-partitioned inputs").
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.kafka.partitioner import default_partition
from rekeyed_joins_topology import SCENARIOS, SHARED

PARTITIONS = 2
# (key, value, milliseconds after the base): KStreamRepartitionJoinTest's stream one (10:1, 5:2, 12:3,
# 15:4, 20:5, 70:null) and more: a null key, a value again, records out of order, later ones.
ONE = [("10", "1", 1000), ("5", "2", 2000), ("12", "3", 3000), ("15", "4", 4000), ("20", "5", 5000),
       ("70", None, 500), (None, "3", 2500), ("33", "1", 8000), ("8", "2", 1500), ("11", "4", 10500),
       ("9", "5", 12000), ("13", "3", 9000)]
# Its stream two (1:A .. 5:E) and more: a tombstone, a null key, updates, one out of order, later ones.
TWO = [("1", "A", 1100), ("2", "B", 2200), ("3", "C", 3300), ("4", "D", 4400), ("5", "E", 5500), ("3", None, 6600),
       (None, "Z", 600), ("1", "A2", 7900), ("2", "B2", 1600), ("5", "E2", 11000), ("4", "D2", 14000),
       ("3", "C2", 9900)]


def _partition(key: Optional[str]) -> int:
    return 0 if key is None else default_partition(key.encode(), PARTITIONS)


def _records(rows: list[tuple], base: int, offset_ms: int, tag: str, new_key) -> list[tuple]:
    """``(key, value, partition, timestamp, headers)``: on the partition of ``new_key(key, value)``."""
    return [(key, value, _partition(new_key(key, value)), base + time + offset_ms, (("h", f"{tag}:{step}".encode()),))
            for step, (key, value, time) in enumerate(rows)]


def _lower(rows: list[tuple]) -> list[tuple]:
    return [(key, None if value is None else value.lower(), time) for key, value, time in rows]


def rekeyed_join_inputs(base: int) -> dict[str, list[tuple]]:
    """Every input of RekeyedJoinScenarioExamples: ``{input: [(key, value, partition, timestamp, headers)]}``."""
    records = {}
    for scenario in SCENARIOS:
        if scenario == "rp-both":  # both keyed by a digit, the keys kept
            records["rp-both-1"] = _records(TWO, base, 1, "rp-both-1", lambda key, value: key)
            records["rp-both-2"] = _records(_lower(TWO), base, 2, "rp-both-2", lambda key, value: key)
            continue
        one_side, two_side = ("2", "1") if scenario == "rhs" else ("1", "2")
        records[f"{scenario}-{one_side}"] = _records(ONE, base, 1, f"{scenario}-{one_side}",
                                                     lambda key, value: value)
        records[f"{scenario}-{two_side}"] = _records(TWO, base, 2, f"{scenario}-{two_side}",
                                                     lambda key, value: key)
    for scenario in SHARED:
        records[f"{scenario}-1"] = _records(ONE, base, 1, f"{scenario}-1", lambda key, value: value)
        records[f"{scenario}-2"] = _records(TWO, base, 2, f"{scenario}-2", lambda key, value: key)
        records[f"{scenario}-3"] = _records(_lower(TWO), base, 3, f"{scenario}-3", lambda key, value: key)
    return records
