"""The ``lag_within_bound`` asset check of each sub-topology.

The check reads the consumer group's lag on the sub-topology's input topics and passes while the
total stays within the app's ``lag_bound``. It also observes the external input topics (end
offset and lag per partition), so the UI plots how fast input arrives next to how fast the tasks
take it.
"""

import dagster as dg
from dagster import AssetCheckExecutionContext

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.topology.task_id import TaskId

__all__ = ["LAG_CHECK_NAME", "kstreams_asset_checks"]

LAG_CHECK_NAME = "lag_within_bound"


def kstreams_asset_checks(app: KStreamsApp) -> list[dg.AssetChecksDefinition]:
    """One ``lag_within_bound`` check per sub-topology."""
    return [_lag_check(app, sub_id) for sub_id in app.application.subtopology_ids]


def _lag_check(app: KStreamsApp, subtopology_id: int) -> dg.AssetChecksDefinition:
    application = app.application
    topics = application.source_topics(subtopology_id)
    repartition_topics = {topic for topic in topics if application.is_repartition_topic(topic)}
    external_source_topics = application.external_source_topics

    @dg.asset_check(
        asset=app.subtopology_key(subtopology_id),
        name=LAG_CHECK_NAME,
        description=(f"Records of {', '.join(topics)} not yet processed by the tasks of sub-topology {subtopology_id} "
                     f"(consumer group {app.app_id!r}) stay within {app.lag_bound}."),
        required_resource_keys={app.kafka_resource_key},
    )
    def lag_within_bound(context: AssetCheckExecutionContext) -> dg.AssetCheckResult:
        admin = getattr(context.resources, app.kafka_resource_key).admin()
        existing = admin.list_topics()
        # A repartition topic that does not exist yet holds nothing to process; an input topic must exist.
        missing = [topic for topic in topics if topic not in existing and topic not in repartition_topics]
        topics_present = [topic for topic in topics if topic in existing]
        if missing:
            return dg.AssetCheckResult(
                passed=False, severity=dg.AssetCheckSeverity.WARN,
                description=f"topic(s) {', '.join(missing)} do not exist yet", metadata={"missing_topics": missing})
        lag_by_task: dict[str, int] = {}
        lags = admin.lag(app.app_id, topics_present) if topics_present else {}
        for tp, lag in lags.items():
            task = str(TaskId(subtopology_id, tp.partition))
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
        total = sum(lag_by_task.values())
        # The input topics are external assets: observe them (end offset and lag per partition),
        # so the UI plots how fast input arrives next to how fast the tasks take it.
        external = [topic for topic in topics_present if topic in external_source_topics]
        for tp, end_offset in (admin.end_offsets(external) if external else {}).items():
            context.op_execution_context.log_event(dg.AssetObservation(
                app.topic_key(tp.topic), partition=str(tp.partition),
                metadata={"end_offset": dg.MetadataValue.int(end_offset),
                          "lag": dg.MetadataValue.int(lags.get(tp, 0)),
                          "consumer_group": dg.MetadataValue.text(app.app_id)}))
        return dg.AssetCheckResult(
            passed=total <= app.lag_bound,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "total_lag": dg.MetadataValue.int(total),
                "max_task_lag": dg.MetadataValue.int(max(lag_by_task.values(), default=0)),
                "lag_bound": dg.MetadataValue.int(app.lag_bound),
                "lag_by_task": dg.MetadataValue.json(dict(sorted(lag_by_task.items()))),
            },
        )

    return lag_within_bound
