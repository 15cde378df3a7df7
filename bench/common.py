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

from dagster_kstreams.kafka.admin import KafkaAdminError
from dagster_kstreams.local.broker import LocalBroker

__all__ = ["BenchError", "bench_workspace", "log", "start_broker", "wait_for_group_coordinator"]

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


class BenchError(RuntimeError):
    """The benchmark cannot go on for a reason outside it (a broker that does not get ready)."""


@contextmanager
def bench_workspace(prefix: str, bootstrap: Optional[str], port: int) -> Iterator[tuple[str, Path]]:
    """``(bootstrap servers, work directory)`` for one benchmark run: the given broker, else one
    of its own on ``port``; the broker is stopped and the directory removed afterwards. A
    :class:`BenchError` or a :class:`KafkaAdminError` ends the run with its message as one line
    on stderr (exit status 1), not a stack trace."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    broker = None
    try:
        if bootstrap is None:
            broker = start_broker(port, work)
            bootstrap = broker.bootstrap_servers
        yield bootstrap, work
    except (BenchError, KafkaAdminError) as error:
        raise SystemExit(f"bench: error: {error}") from None
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def wait_for_group_coordinator(bootstrap: str, group: str, topic: str, timeout_s: float = 120) -> None:
    """Block until ``group``'s coordinator answers, or raise :class:`BenchError` after ``timeout_s``.

    On a fresh broker the coordinator answers NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
    COORDINATOR_NOT_AVAILABLE for a while (``__consumer_offsets`` is being created), and a
    consumer's committed() gives up with those at once (the admin client's
    list_consumer_group_offsets even crashed a process, SIGSEGV, confluent-kafka 2.16): they, and
    a request that timed out, are retried until the deadline; any other error is raised as is."""
    deadline = time.monotonic() + timeout_s
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "log_level": 0})  # its connection errors would repeat ours
    try:
        while True:
            remaining = deadline - time.monotonic()
            try:
                consumer.committed([TopicPartition(topic, 0)], timeout=max(0.5, min(remaining, 10.0)))
                return
            except KafkaException as error:
                kafka_error = error.args[0] if error.args and isinstance(error.args[0], KafkaError) else None
                if kafka_error is None or kafka_error.code() not in _COORDINATOR_NOT_READY:
                    raise
                if time.monotonic() >= deadline:
                    raise BenchError(
                        f"the group coordinator of {group!r} on {bootstrap} was not ready after {timeout_s:.0f}s "
                        f"(last answer: {kafka_error.name()})") from None
                log(f"group coordinator not ready yet ({kafka_error.name()}); retrying")
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    finally:
        consumer.close()
