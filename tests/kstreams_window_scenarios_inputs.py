"""The inputs of the window scenarios (``test_equivalence_kstreams_window_scenarios.py``): Kafka Streams'
own tests' records and ours, ``(key, value, partition, timestamp)``, each key put in its partition by the
default partitioner."""

from __future__ import annotations

import itertools

from dagster_kstreams.kafka.partitioner import default_partition

PARTITIONS = 2


def in_partition(stem: str, partition: int) -> str:
    """``stem``, or ``stem`` with the first suffix that makes it, that the default partitioner puts in
    ``partition``."""
    for suffix in itertools.count():
        name = stem if suffix == 0 else f"{stem}~{suffix}"
        if default_partition(name.encode(), PARTITIONS) == partition:
            return name
    raise AssertionError("unreachable")


# Every table key of a partition starts with one character that the partitioner puts there too: the
# re-grouping by the key's first character keeps each key in its partition.
FIRST = {partition: next(c for c in "ABCDEFGHIJ" if default_partition(c.encode(), PARTITIONS) == partition)
         for partition in range(PARTITIONS)}


def _records(partition: int, stem: str, values_and_times, base: int = 0) -> list[tuple]:
    key = in_partition(f"{stem}{partition}", partition)
    return [(key, value, partition, base + max(1, time)) for value, time in values_and_times]


def _numbered(times) -> list[tuple]:
    return [(str(i + 1), time) for i, time in enumerate(times)]


def events() -> list[tuple]:
    """The stream scenarios, ``(key, value, partition, timestamp)``; partition 0 then 1, each in time ranges."""
    records = []
    # The early records (windows that would start before 0), then the small inputs at 1 s.
    records += _records(0, "early", _numbered([0, 5, 6, 3, 13, 10, 70]))
    records += _records(1, "early", _numbered([0, 2, 4, 0, 2, 2, 0, 7]))
    records += _records(0, "slide", _numbered([10, 10, 14, 15, 20, 22, 30]), 1_000)
    records += [(None, "no-key", 0, 1_016), (in_partition("slide0", 0), None, 0, 1_017)]
    records += _records(1, "slide", _numbered([10, 14, 15, 22, 26, 30, 24, 12, 3]), 1_000)
    records += [(in_partition("slide1", 1), None, 1, 1_028)]
    # Expired windows: a record 100 ms ahead, then records beyond the grace (90 ms).
    records += _records(0, "expire", [(str(t), t) for t in (100, 0, 1, 2, 3, 4, 5, 6, 105, 106)], 2_000)
    records += _records(1, "expire", [("100", 200), *((str(t - 100), t) for t in range(100, 106)), ("6", 15),
                                      ("101", 300)], 2_000)
    # Stores kept 32 ms by their suppliers, less than the windows (10 ms, grace 90 ms) stay open: records late
    # within the grace into windows the stores no longer return, into one they still do (started after the store's
    # time, the last start, minus 32 ms, though not after stream time minus 32 ms), a null value.
    records += _records(0, "short", [(str(t), t) for t in (10, 11, 60, 12, 13, 61)] + [(None, 14)]
                        + [(str(t), t) for t in (63, 33, 36, 36)], 2_500)
    records += _records(1, "short", [(str(t), t) for t in (20, 70, 21, 22, 73)] + [(None, 45)]
                        + [(str(t), t) for t in (44, 105, 46, 100)], 2_500)
    # Sessions: SuppressScenarioTest's (gap 5), the processor test's merges (its gap of 5 minutes made 5 ms)
    # and its late record with a grace of 1 ms.
    for stem, time in (("k1-", 0), ("k1-", 5), ("k1-", 1), ("k2-", 11), ("k1-", 5), ("k1-", 30)):
        records += _records(0, stem, [("v" + str(time), time)], 3_000)
    for stem, time in (("dummy", 0), ("on-time1-", 0), ("dummy", 11), ("on-time2-", 0), ("dummy", 12), ("late1-", 0)):
        records += _records(1, stem, [(stem, time)], 3_000)
    for partition in range(PARTITIONS):
        merges = (("a", 0), ("b", 0), ("c", 0), ("d", 0), ("d", 2), ("a", 6), ("b", 6), ("a", 8), ("c", 8))
        for stem, time in merges:
            records += _records(partition, "merge-" + stem, [(stem + str(time), time)], 3_100)
    records += [(in_partition("merge-a1", 1), None, 1, 3_111)]
    # Ours, for the sessions emitted on window close from stores kept in memory (gap 5 ms): a jump of 89 ms
    # past the merges' sessions, two keys' sessions ending together whose keys and starts go opposite ways
    # (b's [0, 4], a's [2, 4]), then jumps of exactly 20 ms past a session's end and of 19 ms.
    for partition in range(PARTITIONS):
        for stem, time in (("b", 0), ("a", 2), ("a", 4), ("b", 4), ("c", 10), ("d", 30), ("e", 49)):
            records += _records(partition, "order-" + stem, [(stem + str(time), time)], 3_200)
    # KStreamAggregationIntegrationTest: sessions (its gap of 5 minutes made 5 ms; bob's continues, jo's
    # late record bridges nothing), and five keys written at one time, then twice at a time 1 s later.
    for partition in range(PARTITIONS):
        for time, stems_and_values in ((0, (("bob", "start"), ("penny", "start"), ("jo", "pause"), ("emily", "pause"))),
                                       (2, (("emily", "resume"),)), (6, (("bob", "pause"), ("penny", "stop"))),
                                       (8, (("bob", "resume"), ("jo", "resume"))), (7, (("jo", "late"),))):
            for stem, value in stems_and_values:
                records += _records(partition, stem, [(value, time)], 5_000)
        for time in (6_000, 7_000, 7_000):
            for number, value in enumerate("ABCDE", start=1):
                records += _records(partition, f"produced{number}-", [(value, time)])
    # Final results: time windows of 2 ms (grace 1 ms), a large jump (grace 2 ms), sliding windows.
    records += _records(0, "final", _numbered([0, 1, 2, 1, 0, 5, 0]), 4_000)
    records += _records(0, "jump", _numbered([0, 1, 2, 0, 3, 0, 4, 0, 30]), 4_050)
    records += _records(1, "final", _numbered([10, 11, 10, 13, 10, 24, 5, 7, 90]), 4_000)
    # Last, in seconds: emitting on window close from RocksDB suppliers' stores (segments of 60 s). Keys
    # "seg-a" and "seg-b" write alternately around 60 s (one late, one out of order within the grace, a null
    # value, a null key), then a jump to 90 s emits 48 s to 75 s at once: "seg-a"'s windows before
    # "seg-b"'s within a segment, segment 0 before segment 1. Then "seg-a" at 136 s and "seg-b" at 194 s:
    # the store's time (190 s) minus the retention (60 s) is the window at 130 s, which the segmented store
    # no longer returns (the time-ordered one would); the one at 135 s is emitted.
    for partition in range(PARTITIONS):
        a, b = (in_partition(f"seg-{stem}{partition}", partition) for stem in "ab")
        records += [(key, value, partition, time) for key, value, time in (
            (b, "1", 47_000), (a, "2", 52_000), (b, "3", 56_000), (a, "4", 58_000), (b, "5", 61_000),
            (a, "6", 62_000), (a, "late", 45_000), (a, "7", 55_000), (b, None, 60_000), (None, "no-key", 63_000),
            (in_partition(f"seg-c{partition}", partition), "8", 90_000), (a, "9", 136_000), (b, "10", 194_000))]
    return records


def _table_key(stem: str, partition: int) -> str:
    return in_partition(FIRST[partition] + stem, partition)


def tables() -> list[tuple]:
    """The table scenarios: re-grouped counts suppressed (SuppressScenarioTest), and an update that stays
    in its group (KTableAggregateTest.testRemoveOldBeforeAddNew)."""
    records = []
    for partition in range(PARTITIONS):
        def row(stem, value, time):
            value = None if value is None else in_partition(f"{value}{partition}", partition)
            return (_table_key(stem, partition), value, partition, time)

        records += [row(*update) for update in (
            ("k1", "v1", 1_000), ("k1", "v2", 1_001), ("k2", "v1", 1_002), ("tick", "tick", 1_003),
            ("tick", "tock", 1_004), ("x", "x", 1_005), ("x", "y", 1_006), ("k1", None, 1_007),
            ("tick", "tick", 1_010), ("k2", None, 1_014), ("tick", "tock", 1_020))]
        records += [row(*update) for update in (
            ("1", "A", 2_010), ("2", "B", 2_008), ("1", None, 2_012), ("2", "C", 2_006), ("3", "D", 2_015),
            ("2", None, 2_020))]
    return records


def joined_tables() -> list[tuple]:
    """SuppressScenarioTest.shouldWorkBeforeJoinRight/Left's updates of the right table then the left (each
    test suppresses one side; here both topologies read the same two topics), at 10 s, then ours: out of
    order, tombstones of buffered and emitted keys, a key the other table never held, a null key."""
    records = []
    for partition in range(PARTITIONS):
        def row(side, stem, value, time):
            key = None if stem is None else in_partition(f"{stem}{partition}", partition)
            return (side, key, value, partition, 10_000 + time)

        records += [row(*update) for update in (
            ("right", "B", "1", 1), ("right", "A", "1", 2), ("right", "tick", "tick", 12), ("right", "A", "2", 13),
            ("left", "A", "a", 14), ("left", "B", "b", 15), ("left", "A", "b", 16), ("right", "tick", "tick1", 23),
            # ours: out of order in each topic, a buffered key deleted and written again, deletes of emitted
            # keys, a key only one table holds, a null key
            ("left", "C", "c", 30), ("right", "A", None, 33), ("left", "B", None, 28), ("right", "C", "3", 31),
            ("left", "A", "d", 36), ("right", "A", "4", 35), (("left", None, "no-key", 37)), ("right", "B", None, 40),
            ("left", "tick", "tick", 41), ("right", "tick", "tick2", 52), ("left", "tick", "tock", 70),
            ("left", "A", "e", 71), ("right", "A", "5", 73), ("left", "C", "g", 80), ("right", "tick", "tick3", 90),
            # a late left update while the right key is buffered again: a join through the filter's own store
            # stamps it with that store's time (what the filter last forwarded), not the buffer's unknown one
            ("left", "A", "f", 34))]
    return records
