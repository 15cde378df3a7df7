"""How long Spark's Kafka source and sink wait for a broker: a running task's ``task_timeout_s``
said in the Java clients' own settings.

A broker restart costs a running task a pause, not a failure, when every client it uses waits
for the broker at least as long as the task does. The Java clients' defaults are shorter than a
restart can take: the consumer gives up on an offset lookup after ``default.api.timeout.ms``
(60 s: "Timeout of 60000ms expired before the position for partition ... could be determined"),
the producer blocks on metadata for ``max.block.ms`` (60 s). Spark's source gives up on a fetch
after ``kafkaConsumer.pollTimeoutMs`` (``spark.network.timeout``, 120 s). The task's own clients
(librdkafka: its fence, its admin calls) wait the same ``task_timeout_s``.

Each wait is ``task_timeout_s`` or the client's default, the longer (a short ``task_timeout_s``
never makes the Java clients fail sooner than they would by default). A setting given in the
runner's Kafka config (``kafka.<name>``) wins over these.
"""

from __future__ import annotations

__all__ = ["DEFAULT_TASK_TIMEOUT_S", "source_timeouts", "sink_timeouts"]

# How long a running task waits for an unavailable broker by default (as Kafka Streams'
# task.timeout.ms bounds a task's stall): TaskRunner, KStreamsApp and `run --task-timeout`.
DEFAULT_TASK_TIMEOUT_S = 120.0


def _at_least(seconds: float, default_ms: int) -> str:
    return str(max(int(seconds * 1000), default_ms))


def source_timeouts(task_timeout_s: float) -> dict[str, str]:
    """Options of Spark's Kafka source (its driver's admin client, its executors' consumers)."""
    return {
        "kafka.default.api.timeout.ms": _at_least(task_timeout_s, 60_000),
        "kafkaConsumer.pollTimeoutMs": _at_least(task_timeout_s, 120_000),
    }


def sink_timeouts(task_timeout_s: float) -> dict[str, str]:
    """Options of Spark's Kafka sink (its producers): a record is retried until it is delivered
    or ``task_timeout_s`` have passed, and sending waits as long for the topic's metadata."""
    return {
        "kafka.max.block.ms": _at_least(task_timeout_s, 60_000),
        "kafka.delivery.timeout.ms": _at_least(task_timeout_s, 120_000),
    }
