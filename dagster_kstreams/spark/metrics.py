"""Records written per sink topic, counted by Spark as each batch runs (observed metrics)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["observe_outputs", "records_written_since"]

_METRICS = "records_out"
_ALL = "__all__"


def observe_outputs(output: DataFrame, topics: list[str]) -> DataFrame:
    """``output`` counting its rows per ``topic`` column value in ``topics`` (reported per batch)."""
    metrics = [F.count(F.lit(1)).alias(_ALL)] + [
        F.sum(F.when(F.col("topic") == topic, 1).otherwise(0)).alias(topic) for topic in dict.fromkeys(topics)
    ]
    return output.observe(_METRICS, *metrics)


def records_written_since(query: Any, after_batch: int) -> tuple[dict[str, int], int]:
    """``({topic: records}, last batch id)`` over the batches after ``after_batch`` that the
    query still remembers (``spark.sql.streaming.numRecentProgressUpdates``, 100 by default)."""
    totals: dict[str, int] = {}
    last = after_batch
    for report in query.recentProgress:
        batch_id = int(getattr(report, "batchId", -1))
        if batch_id <= after_batch:
            continue
        last = max(last, batch_id)
        for topic, count in _observed(report).items():
            totals[topic] = totals.get(topic, 0) + count
    return totals, last


def _observed(report: Any) -> dict[str, int]:
    metrics = getattr(report, "observedMetrics", None) or {}
    row = metrics.get(_METRICS)
    if row is None:
        return {}
    values = row.asDict() if hasattr(row, "asDict") else dict(row)
    if set(values) == {"values", "schema"}:
        # A Spark Connect client gets the row as Spark's JSON of it: its values beside its schema.
        values = dict(zip((field["name"] for field in values["schema"]["fields"]), values["values"]))
    return {topic: int(count or 0) for topic, count in values.items() if topic != _ALL and count}
