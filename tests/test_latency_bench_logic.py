"""The latency bench's matching of outputs to inputs and its per-second figures (pure logic)."""

from __future__ import annotations

from bench.latency_records import Output, Produced, match, per_second


def output(country: str, count: int, appended: float, received: float, offset: int) -> Output:
    return Output(country=country, count=count, appended=appended, received=received, partition=0, offset=offset)


def test_a_record_is_reflected_by_the_first_output_whose_count_includes_it():
    produced = [Produced("fr", 1, 10.0, True), Produced("fr", 2, 10.5, True), Produced("de", 1, 11.0, True)]
    outputs = [output("fr", 2, 11.0, 11.1, 0), output("de", 1, 12.0, 12.2, 1), output("fr", 3, 13.0, 13.0, 2)]
    matched = match(produced, outputs)
    assert matched.by_append_ms == [1000.0, 500.0, 1000.0]
    assert [round(ms) for ms in matched.by_receive_ms] == [1100, 600, 1200]
    assert matched.produced_at == [10.0, 10.5, 11.0]
    assert matched.missing == 0
    assert matched.overcounted == {"fr": 1}  # a count of 3 for 2 records produced


def test_warm_up_records_are_not_measured_and_unreflected_ones_are_missing():
    produced = [Produced("fr", 1, 1.0, False), Produced("fr", 2, 2.0, True), Produced("fr", 3, 3.0, True)]
    matched = match(produced, [output("fr", 2, 2.5, 2.5, 0)])
    assert matched.by_append_ms == [500.0]
    assert matched.missing == 1


def test_per_second_groups_records_by_the_second_they_were_produced_in():
    figures = per_second([100.0, 100.4, 100.9, 101.2, 103.0], [10.0, 30.0, 20.0, 700.0, 5.0])
    assert [(f["second"], f["records"], f["max_ms"]) for f in figures] == [(0, 3, 30.0), (1, 1, 700.0), (3, 1, 5.0)]
    assert figures[0]["p50_ms"] == 20.0
    assert per_second([], []) == []
