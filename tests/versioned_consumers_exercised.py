"""What the reference run of tests/test_equivalence_versioned_consumers.py must show before it is compared
(each output on both partitions, and the cases each consumer and each step of its topology is there
for), read from Kafka Streams' own output, so that a change of the input that stops exercising a case
fails rather than passes emptily."""

from __future__ import annotations

import re

from versioned_consumers_topology import OUTPUTS

PARTITIONS = 2
# Kafka Streams' PUT_RETURN_CODE_NOT_PUT, as a processor's put into a versioned store returns it
NOT_PUT = "-9223372036854775808"


def _values(results: dict, output: str) -> list:
    return [value for p in range(PARTITIONS) for _, value, _ in results.get((output, p), [])]


def assert_reference_exercises_it(expected: dict, records: dict[str, list[tuple]]) -> None:
    """Every output on both partitions; out-of-order updates that the marked store took (and the
    kept filter forwarded, and the left join read) while the join and the re-grouping skipped them;
    tombstones through the stores; the re-grouped aggregate's versioned store stamping an addition
    with the aggregate's later time, and dropping some."""
    assert {key for key in expected if key[0] != "subscriptions"} == {
        (name, p) for name in OUTPUTS for p in range(PARTITIONS)}
    assert len({key for key in expected if key[0] == "subscriptions"}) == PARTITIONS * PARTITIONS
    marked = {value[:-1] for value in _values(expected, "out-marked") if value is not None}
    joined = {value.split("&")[0] for value in _values(expected, "out-joined") if value is not None}
    history = "".join(_values(expected, "out-history"))
    skipped = marked - joined
    assert len(skipped) >= 5 and len(marked & joined) > 50
    assert not set(re.findall(r"\+(p\d+)", history)) & skipped
    kept = {value for value in _values(expected, "out-filtered") if value is not None}
    assert kept & skipped
    assert {value.split("<")[1] for value in _values(expected, "out-kept-joined") if value is not None} & skipped
    assert None in _values(expected, "out-filtered") and None in _values(expected, "out-marked")
    assert "-" in history
    price_time = {value: timestamp for _, value, _, timestamp in records["prices"] if value is not None}
    added = [re.fullmatch(r".*\+(p\d+)\|t(\d+)", value) for value in _values(expected, "out-history")]
    assert any(int(match[2]) > price_time[match[1]] for match in added if match)
    latest_kept = {value for value in marked & joined if int(value[1:]) % 5 != 0}
    assert latest_kept - set(re.findall(r"\+(p\d+)", history))  # expired puts of the aggregate
    limits = {value for value in _values(expected, "out-versioned-filtered") if value is not None}
    versioned_joined = {value.split("^")[0] for value in _values(expected, "out-versioned-joined") if value is not None}
    assert len(limits - versioned_joined) >= 2 and len(limits & versioned_joined) > 20
    assert len(_values(expected, "out-orders")) > 40
    _assert_steps_exercised(expected, records)
    _assert_history_versions_exercised(expected)
    _assert_window_steps_exercised(expected)
    _assert_store_reads_exercised(expected)


def _stamped(results: dict, output: str) -> list[tuple]:
    """``(key, value, timestamp)`` of ``output``'s StampValues records, partition by partition."""
    return [(key, *re.fullmatch(r"(.*)\|t(\d+)", value).groups()) for p in range(PARTITIONS)
            for key, value, _ in results.get((output, p), [])]


def _not_latest(stamped: list[tuple]) -> int:
    """How many of ``stamped``'s records are older than an earlier one of their key."""
    last_stamp: dict = {}
    count = 0
    for key, _, t in stamped:
        count += int(t) < last_stamp.get(key, -1)
        last_stamp[key] = max(int(t), last_stamp.get(key, -1))
    return count


def _assert_steps_exercised(expected: dict, records: dict[str, list[tuple]]) -> None:
    """The steps into versioned stores: the join's filter puts updates stamped with the prices' later
    time, out of order (forwarded) and tombstones; the last orders' filter puts orders stamped with an
    earlier order's later time, or drops; the history's tails put the aggregate's stamps."""
    order_time = {value: timestamp for _, value, _, timestamp in records["orders"] if value is not None}
    limit_time = {value: timestamp for _, value, _, timestamp in records["limits"] if value is not None}
    join_steps = _stamped(expected, "out-join-steps")
    assert any(int(t) > limit_time[value.split("~")[0]] for _, value, t in join_steps if value != "null")
    assert any(value == "null" for _, value, _ in join_steps)
    assert _not_latest(join_steps) >= 2
    last_orders = _stamped(expected, "out-last-orders")
    assert any(int(t) > order_time[value] for _, value, t in last_orders if value != "null")
    assert any(value == "null" for _, value, _ in last_orders)
    assert len(_stamped(expected, "out-history-tails")) > 50
    _assert_cogroup_and_suppression_steps_exercised(expected, records)


def _assert_cogroup_and_suppression_steps_exercised(expected: dict, records: dict[str, list[tuple]]) -> None:
    """The cogroup's tails put updates stamped with the aggregate's later time than their record's, and
    drop some as expired; the suppressed limits' filter puts evicted updates out of order (forwarded),
    tombstones, and drops some; the processor reads versions of both stores other than the latest, and
    the prices' filter's plain store holding an out-of-order price."""
    record_time = {value: timestamp for topic in ("orders", "limits") for _, value, _, timestamp in records[topic]
                   if value is not None}
    tails = _stamped(expected, "out-cogroup-tails")
    added = [(re.search(r"[+-]([ol]\d+)$", value), int(t)) for _, value, t in tails]
    assert any(t > record_time[match[1]] for match, t in added if match)
    taken = sum(1 for topic in ("orders", "limits") for key, value, _, _ in records[topic]
                if key is not None and value is not None)
    assert 20 < len(tails) < taken
    suppressed = _stamped(expected, "out-suppressed-limits")
    assert _not_latest(suppressed) >= 2 and any(value == "null" for _, value, _ in suppressed)
    kept_limits = {value for key, value, _, _ in records["limits"] if key is not None and value is not None
                   and int(value[1:]) % 3 != 0}
    assert len(kept_limits - {value for _, value, _ in suppressed}) >= 5
    reads = [value.split("|") for value in _values(expected, "out-step-versions")]
    assert any(parts[2] != parts[3] for parts in reads) and any(parts[4] != parts[5] for parts in reads)
    assert any(parts[4] != "null" for parts in reads)
    # The prices' filter's plain store, read: an out-of-order price taken as the key's latest, its time
    # going back
    stored_time: dict = {}
    went_back = 0
    for key, value in ((key, value) for p in range(PARTITIONS) for key, value, _ in expected[("out-step-versions", p)]):
        stored = value.split("|")[6]
        if stored != "null":
            went_back += int(stored.split("@")[1]) < stored_time.get(key, -1)
            stored_time[key] = int(stored.split("@")[1])
    assert went_back >= 1
    _assert_fk_steps_exercised(expected, records)


def _assert_fk_steps_exercised(expected: dict, records: dict[str, list[tuple]]) -> None:
    """The foreign-key join's result, filtered into a versioned store: every answer stamped with its
    order's time (the owners are older), put out of order (forwarded), dropped as expired, and failing
    the filter (a tombstone)."""
    steps = _stamped(expected, "out-fk-steps")
    order_times = {(key, timestamp) for key, value, _, timestamp in records["orders"] if value is not None}
    assert {(key, int(t)) for key, _, t in steps} <= order_times
    answered = sum(1 for key, _ in order_times if key is not None)  # one answer per order
    assert _not_latest(steps) >= 2 and 30 < len(steps) < answered
    assert any(value == "null" for _, value, _ in steps)  # u15's (no owner), as the filter's: no old values sent


def _assert_history_versions_exercised(expected: dict) -> None:
    """HistoryVersions put versions into both stores, read versions as of the change other than the
    latest, and the aggregation added a later change to what it put."""
    versions = [value.split("|") for value in _values(expected, "out-history-versions")]
    not_put = NOT_PUT
    assert any(parts[2].startswith("put=") and parts[2] != f"put={not_put}" for parts in versions)
    assert any(parts[2].startswith("tail=") and parts[2] != f"tail={not_put}" for parts in versions)
    assert any(parts[3] != parts[4] for parts in versions) and any(parts[5] != parts[6] for parts in versions)
    assert any("w" in value for value in _values(expected, "out-history") if value)




def _window_step_reads(results: dict, output: str) -> list[list[str]]:
    """WindowVersions' records of ``output``: [window, value, "t" time, written, latest, as of before]."""
    return [value.split("|") for value in _values(results, output)]


def _assert_window_steps_exercised(expected: dict) -> None:
    """Windowed tables' versioned steps: counts failing the filter put as tombstones; the processor's
    versions put ahead taken, so that later updates of their windows are forwarded out of order (the
    store's latest is not the update); merged sessions (a session's start before its end), their
    tombstones; sliding windows' counts mapped; both re-grouped, their old values subtracted."""
    windows = _window_step_reads(expected, "out-window-steps")
    assert len(windows) > 40 and any(parts[1] == "null" for parts in windows)
    assert any(parts[3].startswith("put=") and parts[3] != f"put={NOT_PUT}" for parts in windows)
    assert any(parts[1] != "null" and parts[4] != f"{parts[1]}@{parts[2][1:]}~-" for parts in windows)
    assert any(parts[4] != parts[5] for parts in windows)
    sliding = _window_step_reads(expected, "out-sliding-steps")
    assert len(sliding) > 40 and all(int(parts[1]) % 10 == 0 for parts in sliding if parts[1] != "null")
    # Re-grouped: a window's value subtracted when its next latest update comes, a version the processor put
    # ahead (100 and more) among them.
    assert any(re.search(r"-\d+:1\d\d", value) for value in _values(expected, "out-window-step-groups") if value)
    assert any(re.search(r"-\d+:\d+", value) for value in _values(expected, "out-sliding-step-groups") if value)
    sessions = _window_step_reads(expected, "out-session-steps")
    assert any(parts[1] == "null" for parts in sessions)
    assert any(parts[0].split("-")[0] != parts[0].split("-")[1] and parts[1] != "null" for parts in sessions)


def _assert_store_reads_exercised(expected: dict) -> None:
    """Beside the foreign-key join: each order's flag read back at the order's time, a null order reading
    an earlier flag; owners' rows and tombstones read as the table holds them."""
    flag_reads = [value.split("|") for value in _values(expected, "out-flag-reads")]
    assert all(read[2] == f"o@{read[1][1:]}" for read in flag_reads if read[0] != "null")
    assert any(read[0] == "null" and read[2].startswith("o@") for read in flag_reads)
    owner_reads = [value.split("|") for value in _values(expected, "out-owner-reads")]
    assert any(read[2] == "null" for read in owner_reads) and any(read[2].startswith("w") for read in owner_reads)
