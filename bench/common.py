"""What every benchmark does the same way: log lines, a broker of its own, a ready group coordinator."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from dagster_kstreams.local.broker import LocalBroker

__all__ = ["log", "start_broker", "bench_workspace", "wait_for_group_coordinator"]

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


@contextmanager
def bench_workspace(prefix: str, bootstrap: Optional[str], port: int) -> Iterator[tuple[str, Path]]:
    """``(bootstrap servers, work directory)`` for one benchmark run: the given broker, else one
    of its own on ``port``; the broker is stopped and the directory removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    broker = None
    try:
        if bootstrap is None:
            broker = start_broker(port, work)
            bootstrap = broker.bootstrap_servers
        yield bootstrap, work
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


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
