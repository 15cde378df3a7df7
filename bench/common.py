"""What every benchmark does the same way: log lines, a broker of its own, a ready group coordinator."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from dagster_kstreams.local.broker import LocalBroker

__all__ = ["log", "start_broker", "wait_for_group_coordinator"]

# Answers of a group coordinator that is still being set up on a fresh broker.
_COORDINATOR_NOT_READY = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                          KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def start_broker(port: int, work: Path) -> LocalBroker:
    """A single-node KRaft broker on ``port`` (controller on ``port + 1``), data under ``work``,
    stopped with this process if it dies."""
    broker = LocalBroker(port=port, controller_port=port + 1, state_dir=work / "broker", stop_with_parent=True)
    broker.start()
    log(f"broker started on {broker.bootstrap_servers}")
    return broker


def wait_for_group_coordinator(bootstrap: str, group: str, topic: str, timeout_s: float = 120) -> None:
    """Block until ``group``'s coordinator answers. On a fresh broker it answers
    COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR for a while (``__consumer_offsets`` is being
    created); the admin client's list_consumer_group_offsets then crashed a process (SIGSEGV,
    confluent-kafka 2.16), and a consumer's committed() gives up with NOT_COORDINATOR: those are
    retried until the deadline."""
    deadline = time.monotonic() + timeout_s
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        while True:
            try:
                consumer.committed([TopicPartition(topic, 0)], timeout=max(1.0, deadline - time.monotonic()))
                return
            except KafkaException as error:
                code = error.args[0].code() if error.args else None
                if code not in _COORDINATOR_NOT_READY or time.monotonic() > deadline:
                    raise
                log(f"group coordinator not ready yet ({error.args[0].name()}); retrying")
                time.sleep(1.0)
    finally:
        consumer.close()
