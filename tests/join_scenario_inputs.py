"""The inputs of tests/test_equivalence_kstreams_join_scenarios.py: Kafka Streams' join test sequences
(``AbstractJoinIntegrationTest``'s inputs and the join unit tests' window edges), played for several
keys on two partitions.

A sequence is a list of ``(side, value, time)`` steps (``side`` "l", "r" or "c", a value None for a
null value or a tombstone, ``time`` in seconds after the base); a fourth item, "null-key", marks a
step played with a null key. Each key plays it with its own values (the key's index after the value's
first comma-separated part) and its own timestamps (plus 10 ms per key index, and a few ms per side
except at the windows' edges): no two records of two topics in one task share a timestamp (README,
"Order across co-partitioned inputs"). Keys after the first leave out some steps, so that keys differ.
"""

from __future__ import annotations

from typing import Optional

from dagster_kstreams.kafka.partitioner import default_partition

PARTITIONS = 2
KEYS = ("k0", "k3", "k1", "k4")  # two keys on each partition
SIDE_OFFSET_MS = {"l": 0, "r": 3, "c": 6}

# AbstractJoinIntegrationTest.input: nulls, then out-of-order records with a null or a value as the latest.
WITH_OUT_OF_ORDER = [
    ("l", None, 1), ("r", None, 2), ("l", "A", 3), ("r", "a", 4), ("l", "B", 5), ("r", "b", 6), ("l", None, 7),
    ("r", None, 8), ("l", "C", 9), ("r", "c", 10), ("r", None, 11), ("l", None, 12), ("r", None, 13),
    ("r", "d", 7), ("l", "D", 6), ("l", None, 2), ("r", None, 3), ("r", "e", 14), ("l", "E", 15), ("l", None, 10),
    ("r", None, 9), ("l", "F", 4), ("r", "f", 3),
]
# The stream-table scenarios: the same, with stream records of a null key (a left join joins them with
# null, KIP-962; an inner join drops them), one out of order.
STREAM_TABLE = WITH_OUT_OF_ORDER + [("l", "N", 9.5, "null-key"), ("l", "M", 5.5, "null-key")]
# AbstractJoinIntegrationTest.inputWithoutOutOfOrderData: its last two records have a null key.
IN_ORDER = [
    ("l", None, 1), ("r", None, 2), ("l", "A", 3), ("r", "a", 4), ("l", "B", 5), ("r", "b", 6), ("l", None, 7),
    ("r", None, 8), ("l", "C", 9), ("r", "c", 10), ("r", None, 11), ("l", None, 12), ("r", None, 13),
    ("r", "d", 14), ("l", "D", 15), ("l", "E", 16, "null-key"), ("r", "e", 17, "null-key"),
]
# AbstractJoinIntegrationTest's leftInput (the self-join's), with one record out of order after it.
ONE_STREAM = [("l", None, 1), ("l", "A", 2), ("l", "B", 3), ("l", None, 4), ("l", "C", 5), ("l", None, 6),
              ("l", "D", 7), ("l", "E", 4.5)]
# The self-joins' second stream: several records per key, out of order within the windows, beyond
# them, one behind the asymmetric join's retention (1.7 s: not joined, not even with itself), null
# values and a null key.
SELF = [("l", "A", 1), ("l", "B", 1.5), ("l", None, 2), ("l", "C", 1.2), ("l", "D", 3), ("l", "E", 0.5),
        ("l", "F", 3.4), ("l", "N", 3.2, "null-key"), ("l", "G", 2.9), ("l", "A", 3.1), ("l", "H", 5),
        ("l", "I", 4.2), ("l", None, 4.4)]
# The chains of three: a third stream beside the tests' two, null keys on both of theirs, and a record
# 25 s on that closes every window of the chains' 3 s (1 s grace): the left and outer joins emit what
# found no partner.
THREE_STREAMS = WITH_OUT_OF_ORDER + [("c", "x", 2), ("c", "y", 5.5), ("c", None, 8.5), ("c", "z", 12),
                                     ("c", "w", 4), ("l", "N", 8.2, "null-key"), ("r", "n", 8.4, "null-key"),
                                     ("l", "G", 40)]
# The windows' edges (KStreamKStreamJoinTest.testWindowing and the asymmetric tests): a left record,
# right records exactly at 100 ms either side, 1 ms beyond, out of order, late ones, and a left record
# twice (KStreamKStreamLeftJoinTest.testLeftJoinDuplicates).
EDGES = [("l", "A", 10), ("r", "a+", 10.1), ("r", "a-", 9.9), ("l", "B", 20), ("r", "b+", 20.101),
         ("r", "b-", 19.899), ("l", "C", 30), ("r", "c-", 29.999), ("r", "c+", 30.001), ("l", "D", 40),
         ("r", "d+", 40.05), ("l", "late", 39.8), ("r", "late", 39.97), ("l", "dup", 45), ("l", "dup", 45),
         ("r", "dup", 44.95), ("l", "E", 50), ("r", "e", 60)]
# The global-table tests: a stream whose values name a global table's key after a comma, or none; the
# table ("g" side) written whole before the stream, with updates and a tombstone. Null record keys
# with a mapped key join (KIP-962).
GLOBAL = [("g", "FKey0=Y0", 0), ("g", "FKey1=Y1", 0), ("g", "FKey2=Y2", 0), ("g", "FKey1=Y1b", 0),
          ("g", "FKey2=", 0), ("l", "X,FKey0", 1), ("l", "X,FKey1", 2), ("l", "X", 3), ("l", "X,FKey2", 4),
          ("l", "X,FKey3", 5), ("l", None, 6), ("l", "X,FKey0", 7, "null-key"), ("l", "X", 8, "null-key")]


def played(sequence: list[tuple], topics: dict[str, str], base: int,
           side_offsets_ms: dict[str, int] = SIDE_OFFSET_MS) -> dict[str, list[tuple]]:
    """``sequence`` played for every key: ``{topic: [(key, value, partition, timestamp, headers)]}`` (a
    header ``h`` naming the topic, step and key index of each record), ``topics``
    naming each side's topic (a side without one is not played). Raises if records of two topics in one
    task (one partition of the sides' topics) share a timestamp (ties within a partition go by offset)."""
    records: dict[str, list[tuple]] = {topic: [] for topic in topics.values()}
    for step, (side, value, time, *null_key) in enumerate(sequence):
        if side not in topics:
            continue
        for index, key in enumerate(KEYS):
            if index and (step + index) % 5 == 4:
                continue
            timestamp = base + round(time * 1000) + 10 * index + side_offsets_ms[side]
            partition = default_partition(key.encode(), PARTITIONS)
            headers = (("h", f"{topics[side]}:{step}:{index}".encode()),)
            record_key = None if null_key else key  # a null key stays on the key's partition
            records[topics[side]].append((record_key, _valued(value, index), partition, timestamp, headers))
    for partition in range(PARTITIONS):
        topics_at: dict[int, set[str]] = {}
        for topic, rows in records.items():
            for row in rows:
                if row[2] == partition:
                    topics_at.setdefault(row[3], set()).add(topic)
        if any(len(at) > 1 for at in topics_at.values()):
            raise ValueError(f"two records of task {partition} of {sorted(topics.values())} share a timestamp")
    return records


def _valued(value: Optional[str], index: int) -> Optional[str]:
    """The value with the key's index after its first comma-separated part (a global key stays)."""
    if value is None:
        return None
    head, comma, rest = value.partition(",")
    return f"{head}{index}{comma}{rest}"


def scenario_inputs(base: int) -> dict[str, list[tuple]]:
    """Every input of JoinScenarioExamples: ``{input name: [(key, value, partition, timestamp, headers)]}``."""
    plays = [
        (ONE_STREAM, {"l": "alone"}),
        (IN_ORDER, {"l": "mi-l", "r": "mi-r"}),
        (THREE_STREAMS, {"l": "i3-a", "r": "i3-b", "c": "i3-c"}),
        (THREE_STREAMS, {"l": "l3-a", "r": "l3-b", "c": "l3-c"}),
        (THREE_STREAMS, {"l": "o3-a", "r": "o3-b", "c": "o3-c"}),
        (EDGES, {"l": "edge-l", "r": "edge-r"}, {"l": 0, "r": 0}),  # exactly at the edges
        (STREAM_TABLE, {"l": "st-s", "r": "st-t"}),
        (IN_ORDER, {"l": "tt-l", "r": "tt-r"}),
        (WITH_OUT_OF_ORDER, {"l": "v-l", "r": "v-r"}),
        # Not STREAM_TABLE: Kafka Streams 4.3.1 fails the task at a null-keyed record of a left join with a
        # grace period (its buffer refuses a null key), where the runner joins it with null at once
        # (README, "Versioned tables").
        (WITH_OUT_OF_ORDER, {"l": "sg-s", "r": "sg-t"}),
        (WITH_OUT_OF_ORDER, {"l": "vo-l", "r": "vo-r"}),
        (GLOBAL, {"l": "gs"}),
        (SELF, {"l": "self-in"}),
    ]
    records: dict[str, list[tuple]] = {"gt": _global_table(base)}
    for sequence, topics, *offsets in plays:
        records.update(played(sequence, topics, base, *offsets))
    return records


def _global_table(base: int) -> list[tuple]:
    """GLOBAL's table steps: ``FKeyN=value`` (an empty value: a tombstone), on the key's partition."""
    rows = []
    for step, (side, entry, time, *_) in enumerate(GLOBAL):
        if side == "g":
            key, value = entry.split("=")
            rows.append((key, value or None, default_partition(key.encode(), PARTITIONS), base + time * 1000,
                         (("h", f"gt:{step}".encode()),)))
    return rows
