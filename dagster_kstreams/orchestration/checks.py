"""The health of each sub-topology, as Dagster's catalog shows it: two asset checks.

* ``lag_within_bound``: the consumer group's lag on the sub-topology's input topics stays within
  the app's ``lag_bound`` (a stream falling behind its input). Its run also observes the external
  input topics (end offset and lag per partition), so the UI plots how fast input arrives next to
  how fast the tasks take it.
* ``freshness``: every task with input waiting (lag > 0) has reported a batch (a materialization
  of its partition) within the app's ``freshness_seconds`` (a stream that stalled). A task with no
  lag is fresh however long ago it last ran: an idle stream has nothing to report. That is why this
  is a check and not one of Dagster's freshness policies, which see materialization times only.

Both fail with a verdict naming the tasks at fault. They run when asked (the UI's "Execute
checks", a job) and, with elastic workers, the lag sensor evaluates them from the lag it reads on
each tick (:func:`health_evaluations`), so the catalog's health stays current with no run at all.
One function computes each verdict, whoever asks.
"""


import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

import dagster as dg
from dagster import AssetCheckExecutionContext

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["FRESHNESS_CHECK_NAME", "LAG_CHECK_NAME", "CheckVerdict", "freshness_verdict", "health_evaluations",
           "kstreams_asset_checks", "lag_verdict", "last_report_times"]

LAG_CHECK_NAME = "lag_within_bound"
FRESHNESS_CHECK_NAME = "freshness"


@dataclass(frozen=True)
class CheckVerdict:
    """One check's outcome, the same whether a check run or the lag sensor evaluates it."""

    passed: bool
    description: str
    metadata: dict[str, dg.MetadataValue] = field(default_factory=dict)
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.WARN

    def result(self) -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=self.passed, severity=self.severity, description=self.description,
                                   metadata=self.metadata)

    def evaluation(self, asset_key: dg.AssetKey, check_name: str) -> dg.AssetCheckEvaluation:
        return dg.AssetCheckEvaluation(asset_key=asset_key, check_name=check_name, passed=self.passed,
                                       severity=self.severity, description=self.description, metadata=self.metadata)


def _task_names(app: KStreamsApp, subtopology_id: int) -> list[str]:
    return [str(task) for task in app.application.tasks(subtopology_id)]


def lag_verdict(app: KStreamsApp, subtopology_id: int, lag_by_task: Mapping[str, int]) -> CheckVerdict:
    """Passes while the sub-topology's total lag is within ``app.lag_bound``."""
    mine = {task: lag_by_task.get(task, 0) for task in _task_names(app, subtopology_id)}
    total = sum(mine.values())
    passed = total <= app.lag_bound
    return CheckVerdict(
        passed=passed,
        description=(f"lag {total} within the bound {app.lag_bound}" if passed else
                     f"lag {total} over the bound {app.lag_bound} (largest: task {max(mine, key=mine.__getitem__)} "
                     f"with {max(mine.values())})"),
        metadata={"total_lag": dg.MetadataValue.int(total),
                  "max_task_lag": dg.MetadataValue.int(max(mine.values(), default=0)),
                  "lag_bound": dg.MetadataValue.int(app.lag_bound),
                  "lag_by_task": dg.MetadataValue.json(mine)})


def freshness_verdict(app: KStreamsApp, subtopology_id: int, lag_by_task: Mapping[str, int],
                      last_reports: Mapping[str, Optional[float]], now: float) -> CheckVerdict:
    """Passes unless a task has lag and no report (``last_reports``: epoch seconds of each task's
    latest materialization, None if it never reported) within ``app.freshness_seconds``. A failure
    is an ERROR: input is waiting and nothing processes it."""
    window = app.freshness_seconds
    stale: dict[str, dict[str, Optional[float]]] = {}
    for task in _task_names(app, subtopology_id):
        lag = lag_by_task.get(task, 0)
        last = last_reports.get(task)
        age = None if last is None else now - last
        if lag > 0 and (age is None or age > window):
            stale[task] = {"lag": lag, "seconds_since_report": None if age is None else round(age, 1)}
    if not stale:
        return CheckVerdict(passed=True, description=f"every task with input waiting reported within {window}s",
                            metadata={"freshness_seconds": dg.MetadataValue.int(window),
                                      "stale_tasks": dg.MetadataValue.json({})})
    parts = [f"{task} (lag {info['lag']}, " + ("never reported)" if info["seconds_since_report"] is None
                                                  else f"last report {info['seconds_since_report']:.0f}s ago)")
             for task, info in stale.items()]
    return CheckVerdict(
        passed=False, severity=dg.AssetCheckSeverity.ERROR,
        description=f"input waiting with no report within {window}s: {', '.join(parts)}",
        metadata={"freshness_seconds": dg.MetadataValue.int(window), "stale_tasks": dg.MetadataValue.json(stale)})


def last_report_times(instance: dg.DagsterInstance, app: KStreamsApp, subtopology_id: int,
                      tasks: list[str]) -> dict[str, Optional[float]]:
    """When each of ``tasks`` last reported (its latest materialization), None if never."""
    key = app.subtopology_key(subtopology_id)
    times: dict[str, Optional[float]] = {}
    for task in tasks:
        partition = str(TaskId.parse(task).partition)
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1).records
        times[task] = records[0].timestamp if records else None
    return times


def _freshness(instance: dg.DagsterInstance, app: KStreamsApp, subtopology_id: int,
               lag_by_task: Mapping[str, int], now: float) -> CheckVerdict:
    lagging = [task for task in _task_names(app, subtopology_id) if lag_by_task.get(task, 0) > 0]
    return freshness_verdict(app, subtopology_id, lag_by_task,
                             last_report_times(instance, app, subtopology_id, lagging), now)


def health_evaluations(instance: dg.DagsterInstance, app: KStreamsApp, lag_by_task: Mapping[str, int],
                       now: float) -> list[dg.AssetCheckEvaluation]:
    """Both checks of every sub-topology, from a lag reading (``"s_p"`` -> lag): what the lag sensor reports."""
    evaluations = []
    for sub_id in app.application.subtopology_ids:
        key = app.subtopology_key(sub_id)
        evaluations.append(lag_verdict(app, sub_id, lag_by_task).evaluation(key, LAG_CHECK_NAME))
        evaluations.append(_freshness(instance, app, sub_id, lag_by_task, now).evaluation(key, FRESHNESS_CHECK_NAME))
    return evaluations


def kstreams_asset_checks(app: KStreamsApp) -> list[dg.AssetChecksDefinition]:
    """The ``lag_within_bound`` and ``freshness`` checks of every sub-topology."""
    return [check for sub_id in app.application.subtopology_ids
            for check in (_lag_check(app, sub_id), _freshness_check(app, sub_id))]


def _read_lag(context: AssetCheckExecutionContext, app: KStreamsApp, subtopology_id: int,
              observe: bool) -> tuple[dict[str, int], list[str]]:
    """Lag per task of the sub-topology from the broker, and the input topics that do not exist yet.
    With ``observe``, also logs an observation of each external input topic partition."""
    application = app.application
    topics = application.source_topics(subtopology_id)
    admin = getattr(context.resources, app.kafka_resource_key).admin()
    existing = admin.list_topics()
    # A repartition topic that does not exist yet holds nothing to process; an input topic must exist.
    missing = [topic for topic in topics if topic not in existing and not application.is_repartition_topic(topic)]
    present = [topic for topic in topics if topic in existing]
    lags = admin.lag(app.app_id, present) if present and not missing else {}
    lag_by_task: dict[str, int] = {}
    for tp, lag in lags.items():
        task = str(TaskId(subtopology_id, tp.partition))
        lag_by_task[task] = lag_by_task.get(task, 0) + lag
    external = [topic for topic in present if topic in application.external_source_topics]
    if observe and lags and external:
        for tp, end_offset in admin.end_offsets(external).items():
            context.op_execution_context.log_event(dg.AssetObservation(
                app.topic_key(tp.topic), partition=str(tp.partition),
                metadata={"end_offset": dg.MetadataValue.int(end_offset),
                          "lag": dg.MetadataValue.int(lags.get(tp, 0)),
                          "consumer_group": dg.MetadataValue.text(app.app_id)}))
    return lag_by_task, missing


def _missing_topics(missing: list[str]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.WARN,
                               description=f"topic(s) {', '.join(missing)} do not exist yet",
                               metadata={"missing_topics": missing})


def _lag_check(app: KStreamsApp, subtopology_id: int) -> dg.AssetChecksDefinition:
    topics = app.application.source_topics(subtopology_id)

    @dg.asset_check(
        asset=app.subtopology_key(subtopology_id),
        name=LAG_CHECK_NAME,
        description=(f"Records of {', '.join(topics)} not yet processed by the tasks of sub-topology {subtopology_id} "
                     f"(consumer group {app.app_id!r}) stay within {app.lag_bound}."),
        required_resource_keys={app.kafka_resource_key},
    )
    def lag_within_bound(context: AssetCheckExecutionContext) -> dg.AssetCheckResult:
        lag_by_task, missing = _read_lag(context, app, subtopology_id, observe=True)
        return _missing_topics(missing) if missing else lag_verdict(app, subtopology_id, lag_by_task).result()

    return lag_within_bound


def _freshness_check(app: KStreamsApp, subtopology_id: int) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=app.subtopology_key(subtopology_id),
        name=FRESHNESS_CHECK_NAME,
        description=(f"Every task of sub-topology {subtopology_id} with input waiting has reported a batch within "
                     f"{app.freshness_seconds}s (a task with no lag is fresh)."),
        required_resource_keys={app.kafka_resource_key},
    )
    def freshness(context: AssetCheckExecutionContext) -> dg.AssetCheckResult:
        lag_by_task, missing = _read_lag(context, app, subtopology_id, observe=False)
        if missing:
            return _missing_topics(missing)
        return _freshness(context.instance, app, subtopology_id, lag_by_task, time.time()).result()

    return freshness
