"""The health verdicts of a sub-topology (pure: lag and report times in, verdict out), as the checks
and the lag sensor compute them: lag within its bound, and freshness (input waiting is processed)."""

from __future__ import annotations

import dagster as dg
from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.checks import freshness_verdict, lag_verdict

from assets import users_per_country

APP = KStreamsApp(users_per_country.build_topology(), "upc", {"users": 2}, lag_bound=100, freshness_seconds=60)
NOW = 1_000_000.0


def test_an_idle_task_is_fresh_however_long_ago_it_reported():
    verdict = freshness_verdict(APP, 0, {"0_0": 0, "0_1": 0}, {"0_0": None, "0_1": NOW - 86_400}, NOW)
    assert verdict.passed and verdict.metadata["stale_tasks"].value == {}


def test_a_task_with_input_waiting_and_no_recent_report_is_stale_as_an_error():
    verdict = freshness_verdict(APP, 0, {"0_0": 5, "0_1": 7}, {"0_0": NOW - 30, "0_1": NOW - 90}, NOW)
    assert not verdict.passed and verdict.severity is dg.AssetCheckSeverity.ERROR
    assert verdict.metadata["stale_tasks"].value == {"0_1": {"lag": 7, "seconds_since_report": 90.0}}
    assert verdict.description == "input waiting with no report within 60s: 0_1 (lag 7, last report 90s ago)"
    never = freshness_verdict(APP, 1, {"1_0": 3}, {}, NOW)
    assert never.description == "input waiting with no report within 60s: 1_0 (lag 3, never reported)"
    # The check and the sensor report the same verdict.
    result, evaluation = verdict.result(), verdict.evaluation(dg.AssetKey(["upc", "subtopology_0"]), "freshness")
    assert (result.passed, result.severity, result.description) == (
        evaluation.passed, evaluation.severity, evaluation.description)


def test_lag_verdict_names_the_task_with_the_most_lag():
    verdict = lag_verdict(APP, 1, {"1_0": 30, "1_1": 80, "0_0": 1000})  # other sub-topologies do not count
    assert not verdict.passed and verdict.description == "lag 110 over the bound 100 (largest: task 1_1 with 80)"
    assert verdict.metadata["lag_by_task"].value == {"1_0": 30, "1_1": 80}
    assert lag_verdict(APP, 1, {"1_0": 30}).passed


task_state = st.tuples(st.integers(0, 50), st.one_of(st.none(), st.floats(0, 200)))


@given(st.tuples(task_state, task_state))
def test_freshness_fails_exactly_when_some_task_has_lag_and_no_report_within_the_window(states):
    lags = {f"0_{p}": lag for p, (lag, _) in enumerate(states)}
    reports = {f"0_{p}": None if age is None else NOW - age for p, (_, age) in enumerate(states)}
    stale = {task for task, (lag, age) in zip(lags, states) if lag > 0 and (age is None or age > 60)}
    verdict = freshness_verdict(APP, 0, lags, reports, NOW)
    assert verdict.passed == (not stale)
    assert set(verdict.metadata["stale_tasks"].value) == stale
