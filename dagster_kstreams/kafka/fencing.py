"""One process per task, enforced by Kafka: a transactional producer per task fences the others.

Kafka's zombie fencing: every producer that calls ``init_transactions`` with a given
``transactional.id`` gets a new epoch from the transaction coordinator, which from then on
rejects the transactional requests of every older producer with the same id (and aborts a
transaction such a producer left open). :class:`TaskFence` uses one transactional id per task
(:func:`task_transactional_id`), and routes the task's offset commits through it:

* :meth:`TaskFence.start` (when a run starts the task) bumps the epoch: an older holder of the
  task is fenced from then on;
* :meth:`TaskFence.check` (before a batch writes anything) opens a transaction, adds the batch's
  offsets to it and aborts it: a fenced holder fails here, before writing;
* :meth:`TaskFence.commit` (after the batch's output is in Kafka) commits the batch's offsets to
  the consumer group in a transaction of their own (``send_offsets_to_transaction`` with the
  metadata of a consumer that carries the group id and never joins the group): a holder fenced
  while it wrote fails here, and its offsets are not committed.

Under exactly-once (:mod:`dagster_kstreams.spark.transactional_writer`) there is no check: the
batch's records are sent inside the commit's transaction (``commit(..., produce=...)``), so a
fenced holder fails at its first send or at the commit, and the coordinator aborts what it sent.
This producer then writes the task's records: Java-compatible partitioning (murmur2) always.
A transaction that fails for any other reason is aborted before the failure is raised: left
open, it would hold back every ``read_committed`` reader of the partitions it wrote until
``transaction.timeout.ms`` (only a producer that is fatal, stuck or cut off cannot abort).

Both transactions are short (a few milliseconds): holding one open while a batch writes would
leave the group's offsets pending for the whole write, and readers that ask for stable offsets
(librdkafka's default ``isolation.level=read_committed``) would wait on them; a write longer
than ``transaction.timeout.ms`` would also be aborted by the coordinator, which librdkafka
reports exactly as it reports fencing. The committed offsets are ordinary group offsets once a
transaction commits: ``kafka-consumer-groups --describe`` and :meth:`KafkaAdmin.lag` see them.

A fenced producer fails with librdkafka's fatal ``_FENCED`` error, raised here as
:class:`ProducerFencedError`, at once. That error also follows a transaction left open longer
than ``transaction.timeout.ms`` (the process stalled between the two calls of one transaction).
Any other failure is a :class:`FenceError`.

A broker restart, a coordinator that moves or still loads, a request that times out: these are
retried, with backoff, until the call's deadline (``timeout_s``, two minutes by default), so a
broker that is back within a minute costs a pause; past the deadline the call fails with a
:class:`FenceTimeoutError` that names the bootstrap servers. librdkafka does not always return:
its ``send_offsets_to_transaction`` can wait for ever on a group coordinator it stopped looking
for (librdkafka #5456, seen on a broker whose ``__consumer_offsets`` did not exist yet; #5511,
a coordinator "decommissioned" when every broker was down at once and the client re-bootstrapped).
So every call runs with a hard deadline, :meth:`TaskFence.start` first waits for the group
coordinator, and the fence's clients do not re-bootstrap (``metadata.recovery.strategy=none``
unless configured): after a restart they reconnect to the brokers they knew.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable, Optional

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as _KafkaTopicPartition

from dagster_kstreams.kafka.transient import MOVING, UNREACHABLE

__all__ = ["FenceError", "FenceTimeoutError", "ProducerFencedError", "TRANSACTIONAL_PRODUCER_DEFAULTS",
           "TaskFence", "classify_transaction_error",
           "task_transactional_id"]

log = logging.getLogger(__name__)

# KafkaError.PRODUCER_FENCED (90) exists only in newer confluent-kafka builds; librdkafka turns it
# (and INVALID_PRODUCER_EPOCH on a fenced producer) into the local fatal error _FENCED.
_FENCED_CODES = frozenset(
    code for code in (getattr(KafkaError, "_FENCED", None), getattr(KafkaError, "PRODUCER_FENCED", None))
    if code is not None
)


# Coordinators and leaders that move or still load (a new cluster, a broker restart), brokers
# that are down or do not answer in time (:mod:`dagster_kstreams.kafka.transient`); and a
# transaction of this producer's still being completed.
_TRANSIENT_CODES = MOVING | UNREACHABLE | {KafkaError.CONCURRENT_TRANSACTIONS}

# The fence's clients reconnect to the brokers they knew rather than re-bootstrap when all were
# down at once: re-bootstrapping "decommissions" the known brokers, and a transaction's offset
# commit then waits for ever on the decommissioned group coordinator (librdkafka #5511).
_CLIENT_DEFAULTS = {"metadata.recovery.strategy": "none"}
_MAX_BACKOFF_S = 1.0
# How long an abort after a failed transaction is tried: the coordinator aborts it anyway after
# transaction.timeout.ms, or at the task's next start.
_ABORT_AFTER_FAILURE_S = 10.0


# The producer also writes a task's records under exactly-once: batch the sends of a whole
# micro-batch (the commit flushes, so lingering costs no latency) and queue one at once.
TRANSACTIONAL_PRODUCER_DEFAULTS = {"linger.ms": 20, "queue.buffering.max.messages": 1_000_000,
                                   "queue.buffering.max.kbytes": 1_048_576,
                                   # A failed delivery makes the transaction abortable, so its commit
                                   # fails: reports of the millions delivered would be served for nothing.
                                   "delivery.report.only.error": True}
# Records are placed as Java's default partitioner places them (murmur2 of the key bytes), so a
# topic this producer writes is co-partitioned with one any Kafka client writes; never overridden.
_JAVA_COMPATIBLE_PARTITIONING = {"partitioner": "murmur2_random"}


def task_transactional_id(application_id: str, task_id: str) -> str:
    """The transactional id that stands for task ``task_id`` of an application."""
    return f"{application_id}-task-{task_id}"


class FenceError(RuntimeError):
    """A transactional request of a task's fence failed for a reason other than fencing."""


class FenceTimeoutError(FenceError):
    """Kafka gave no usable answer before the call's deadline: the brokers or the coordinator
    stayed unreachable or unavailable for longer than the fence's ``timeout_s``."""


class ProducerFencedError(FenceError):
    """A newer producer with the same transactional id started: this one may not commit."""

    def __init__(self, transactional_id: str, detail: str):
        self.transactional_id = transactional_id
        super().__init__(f"transactional id {transactional_id!r} was fenced by a newer producer: {detail}")


def classify_transaction_error(error: KafkaError) -> str:
    """What to do after a transactional call failed with ``error``.

    ``"fenced"``: a newer producer took the id over (fatal); ``"fatal"``: the producer is unusable;
    ``"abort"``: abort the transaction and start it again; ``"retry"``: call the same method again.
    """
    if error.code() in _FENCED_CODES:
        return "fenced"
    if error.fatal():
        return "fatal"
    if error.txn_requires_abort():
        return "abort"
    if error.retriable() or error.code() in _TRANSIENT_CODES:
        return "retry"
    return "fatal"


class TaskFence:
    """The transactional producer of one task in one run (see the module docstring).

    ``config`` holds any librdkafka client setting (``security.protocol``, ``sasl.*`` ...).
    Every call retries transient errors (brokers down, coordinators moving, timeouts) with backoff
    and gives up after ``timeout_s`` with a :class:`FenceTimeoutError`; being fenced fails at once.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str,
        group_id: str,
        config: Optional[Mapping[str, Any]] = None,
        timeout_s: float = 120.0,
    ):
        self.transactional_id = transactional_id
        self.group_id = group_id
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        client = {"bootstrap.servers": bootstrap_servers, **_CLIENT_DEFAULTS,
                  **{str(k): v for k, v in (config or {}).items()}}
        self._producer_config = {**TRANSACTIONAL_PRODUCER_DEFAULTS, **client, **_JAVA_COMPATIBLE_PARTITIONING,
                                 "transactional.id": transactional_id, "logger": _LIBRDKAFKA_LOG}
        self._consumer_config = {**client, "group.id": group_id, "enable.auto.commit": False,
                                 "isolation.level": "read_uncommitted", "logger": _LIBRDKAFKA_LOG}
        self._producer: Optional[Producer] = None
        self._group_metadata: Any = None
        self._stuck: Optional[str] = None  # a librdkafka call that never returned (see _bounded)
        self._fenced = False
        self.grace_s = 15.0  # beyond a call's own timeout, before _bounded gives up on it

    def start(self) -> "TaskFence":
        """Take the task: from now on every older producer of this task is fenced."""
        if self._producer is not None:
            raise FenceError(f"the fence of {self.transactional_id!r} is already started")
        # The metadata of a consumer that never joins: generation -1, no member id, as accepted
        # from a producer that commits for a group nobody joins (Kafka's "simple" group).
        consumer = Consumer(self._consumer_config)
        try:
            self._group_metadata = consumer.consumer_group_metadata()
            self._wait_for_group_coordinator(consumer)
        finally:
            consumer.close()
        self._producer = Producer(self._producer_config)
        self._call(self._producer.init_transactions, "initializing transactions")
        return self

    def check(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Fail with :class:`ProducerFencedError` if another producer took the task over.

        Adds ``offsets`` to a transaction and aborts it: the coordinator checks the producer's
        epoch on the way, nothing is committed.
        """
        self._transaction(offsets, commit=False)

    def commit(self, offsets: Mapping[tuple[str, int], int], metadata: Optional[str] = None,
               produce: Optional[Callable[[Producer], None]] = None) -> None:
        """Commit ``offsets`` (``{(topic, partition): next offset}``) to the group, unless fenced.

        ``metadata`` is committed with each offset. ``produce(producer)`` sends records in the
        same transaction (exactly-once: they become visible to ``read_committed`` readers together
        with the offsets, or never); after an abortable error it is called again in a new one."""
        self._transaction(offsets, commit=True, metadata=metadata, produce=produce)

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is None:
            return
        _serve_logs(producer)
        # Closed now, not when the last reference (an exception's frame) goes; but not a producer
        # that a stuck call still uses, nor a fenced one (its close warns that it cannot abort).
        if self._stuck is None and not self._fenced:
            try:
                producer.close()
            except (KafkaException, RuntimeError):
                pass

    def __enter__(self) -> "TaskFence":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- transactions ---------------------------------------------------------------
    def _transaction(self, offsets: Mapping[tuple[str, int], int], commit: bool, metadata: Optional[str] = None,
                     produce: Optional[Callable[[Producer], None]] = None) -> None:
        if self._producer is None:
            raise FenceError(f"the fence of {self.transactional_id!r} is not started")
        if not offsets:
            # librdkafka sends nothing for no offsets, so nothing would be checked.
            raise ValueError("a fenced commit needs at least one offset")
        partitions = [_KafkaTopicPartition(topic, partition, offset, **({"metadata": metadata} if metadata else {}))
                      for (topic, partition), offset in offsets.items()]
        producer = self._producer
        deadline = time.monotonic() + self.timeout_s
        what = "committing offsets" if commit else "checking the fence"
        while True:
            try:
                self._call(lambda remaining: producer.begin_transaction(), what, deadline)
                try:
                    if produce is not None:
                        self._produce(produce, producer, what)
                    self._call(lambda remaining: producer.send_offsets_to_transaction(
                        partitions, self._group_metadata, remaining), what, deadline)
                    end = producer.commit_transaction if commit else producer.abort_transaction
                    self._call(end, what, deadline)
                except (_AbortAndRetry, ProducerFencedError):
                    raise  # aborted below; or by the coordinator, when the newer producer started
                except BaseException:
                    self._abort_after_failure(producer, what)
                    raise
                return
            except _AbortAndRetry as abortable:
                self._call(producer.abort_transaction, f"{what} (aborting)", deadline)
                if time.monotonic() >= deadline:
                    raise FenceTimeoutError(self._unanswered(what, abortable.detail)) from abortable
            finally:
                _serve_logs(producer)

    def _abort_after_failure(self, producer: Producer, what: str) -> None:
        """Abort the open transaction after a failure (a send, a Kafka error, the produce function's
        own exception): left open, it would hold the last stable offset of every partition it wrote
        (``read_committed`` readers, downstream tasks among them, wait) until the coordinator's
        ``transaction.timeout.ms`` or the task's next start. Best effort: a fatal, stuck or
        unreachable producer cannot abort, and the failure being raised says more."""
        try:
            self._call(producer.abort_transaction, f"{what} (aborting after a failure)",
                       time.monotonic() + min(self.timeout_s, _ABORT_AFTER_FAILURE_S))
        except Exception as error:  # the caller raises the first failure
            log.info("%s for %r: the transaction could not be aborted: %s", what, self.transactional_id, error)

    def _produce(self, produce: Callable[[Producer], None], producer: Producer, what: str) -> None:
        """``produce(producer)`` inside the open transaction, its Kafka errors classified as the
        transactional calls' are (a fenced producer fails at its first send)."""
        try:
            produce(producer)
        except KafkaException as exception:
            error = exception.args[0] if exception.args and isinstance(exception.args[0], KafkaError) else None
            if error is not None and error.code() == KafkaError._FATAL:
                error = _fatal_cause(producer) or error
            if error is not None and classify_transaction_error(error) == "fenced":
                self._fenced = True
                raise ProducerFencedError(self.transactional_id, error.str()) from exception
            if error is not None and classify_transaction_error(error) == "abort":
                raise _AbortAndRetry(error.str()) from exception
            raise FenceError(f"{what} for transactional id {self.transactional_id!r}: "
                             f"sending the batch's records failed: {exception}") from exception

    def _wait_for_group_coordinator(self, consumer: Consumer) -> None:
        """Until the group's coordinator answers (a new cluster creates ``__consumer_offsets`` on
        first use). librdkafka's ``send_offsets_to_transaction`` gives up looking for it after
        three quick tries and then never returns (librdkafka #5456)."""
        probe = [_KafkaTopicPartition("__dagster_kstreams_coordinator_probe", 0)]
        self._call(lambda remaining: consumer.committed(probe, timeout=remaining),
                   f"finding the coordinator of group {self.group_id!r}")

    def _call(self, attempt: Callable[[float], Any], what: str, deadline: Optional[float] = None) -> Any:
        deadline = deadline if deadline is not None else time.monotonic() + self.timeout_s
        backoff = 0.05
        while True:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                return self._bounded(lambda: attempt(remaining), remaining, what)
            except KafkaException as exception:
                error = exception.args[0] if exception.args and isinstance(exception.args[0], KafkaError) else None
                if error is None:
                    raise FenceError(f"{what} for {self.transactional_id!r} failed: {exception}") from exception
                action = classify_transaction_error(error)
                if action == "fenced":
                    self._fenced = True
                    raise ProducerFencedError(self.transactional_id, error.str()) from exception
                if action == "abort":
                    raise _AbortAndRetry(error.str()) from exception
                if action == "fatal":
                    raise FenceError(
                        f"{what} for transactional id {self.transactional_id!r} (group {self.group_id!r}) "
                        f"failed: {error.str()}"
                    ) from exception
                if time.monotonic() >= deadline:
                    raise FenceTimeoutError(self._unanswered(what, error.str())) from exception
                log.info("%s for %r: %s; retrying", what, self.transactional_id, error.str())
            time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(2 * backoff, _MAX_BACKOFF_S)

    def _unanswered(self, what: str, detail: str) -> str:
        return (f"{what} for transactional id {self.transactional_id!r} (group {self.group_id!r}): Kafka at "
                f"{self.bootstrap_servers} was unavailable for {self.timeout_s:.0f}s ({detail})")

    def _bounded(self, call: Callable[[], Any], timeout_s: float, what: str) -> Any:
        """``call()``, but a FenceError instead of waiting for ever: librdkafka's transactional
        calls can ignore their timeout when a coordinator stays unavailable (librdkafka #5456).
        The stuck call keeps its thread and the producer; this fence is unusable afterwards."""
        if self._stuck is not None:
            raise FenceError(f"{what} for {self.transactional_id!r}: an earlier call ({self._stuck}) never returned")
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = call()
            except BaseException as error:  # handed to the calling thread
                outcome["error"] = error

        thread = threading.Thread(target=run, name=f"fence-{self.transactional_id}", daemon=True)
        thread.start()
        thread.join(timeout_s + self.grace_s)
        if thread.is_alive():
            self._stuck = what
            raise FenceTimeoutError(self._unanswered(
                what, f"its client gave no answer within {timeout_s + self.grace_s:.0f}s"))
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")


def _fatal_cause(producer: Producer) -> Optional[KafkaError]:
    """Why a producer is in its fatal state: its sends then fail with a bare ``_FATAL``, while a
    transactional call raises the cause (being fenced, say)."""
    try:
        producer.abort_transaction(5)
    except KafkaException as exception:
        if exception.args and isinstance(exception.args[0], KafkaError):
            return exception.args[0]
    return None


class _LibrdkafkaLog:
    """librdkafka's log lines into Python logging. Being fenced is this module's normal way to
    learn that a task moved: librdkafka's fatal-error lines about it are demoted to INFO."""

    def log(self, level: int, message: str, *args: Any) -> None:
        text = message % args if args else message
        if "fenced" in text.lower():
            level = min(level, logging.INFO)
        log.log(level, "librdkafka: %s", text)


_LIBRDKAFKA_LOG = _LibrdkafkaLog()


def _serve_logs(producer: Producer) -> None:
    """Hand librdkafka's queued log lines to Python logging (``poll`` serves them)."""
    try:
        producer.poll(0)
    except KafkaException:
        pass  # a fatal error (being fenced) is raised by poll too; the caller has seen it


class _AbortAndRetry(Exception):
    """The transaction hit an abortable error: abort it and run it again."""

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(detail)
