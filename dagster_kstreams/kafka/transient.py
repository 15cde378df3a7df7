"""Which Kafka errors pass by themselves, so a call is worth making again (after a backoff).

Two kinds, as a broker restart or a leader election produces them: the cluster answers but its
leaders and coordinators are moving or still loading (:data:`MOVING`), or no broker answers at all
(:data:`UNREACHABLE`). librdkafka flags few of them as retriable on every path (an admin call's
result, a consumer's ``committed()``), so they are listed here by code. Everything else (an
unknown topic, a denied ACL, being fenced) is an answer, not a passing state.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

__all__ = ["MOVING", "UNREACHABLE", "LEADERLESS", "error_code"]

# Leaders, replicas and coordinators that are moving, being elected or still loading.
MOVING = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.BROKER_NOT_AVAILABLE,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_CONTROLLER,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._WAIT_COORD,
})

# No broker answers, or not in time: stopped, restarting, or cut off.
UNREACHABLE = frozenset({
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
})

# A restarted broker answers before its partitions have leaders again: librdkafka's admin client
# then fails a list-offsets call with _NOENT ("Failed to query partition leaders: No leaders
# found"), which it also means for other absences, so only a call that waits out a broker's outage
# (a running task's) takes it for one.
LEADERLESS = frozenset({KafkaError._NOENT})


def error_code(error: BaseException) -> int | None:
    """The Kafka error code a ``KafkaException`` carries, else None."""
    if not isinstance(error, KafkaException) or not error.args or not isinstance(error.args[0], KafkaError):
        return None
    return error.args[0].code()
