"""The one line a failed task reports: the cause, never a source line or a wrapper."""

import pytest

from dagster_kstreams.spark.checkpoint import start_on_checkpoint
from dagster_kstreams.spark.errors import failure_reason, lost_work

RECORD_TOO_LARGE = """An error occurred while calling o123.save.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2898)
Caused by: org.apache.kafka.common.errors.RecordTooLargeException: The message is 5242968 bytes when \
serialized which is larger than 1048576, which is the value of the max.request.size configuration.
\tat org.apache.kafka.clients.producer.KafkaProducer.doSend(KafkaProducer.java:1080)
"""

FENCED_IN_PYTHON = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/x/dagster_kstreams/spark/run_state.py", line 120, in commit
    raise FenceError(
dagster_kstreams.kafka.fencing.FenceError: committing offsets for transactional id 'app-task-0_0': \
Kafka's client gave no answer within 45s
"""

# What a query ends with when the batch's commit gave up waiting for Kafka (FenceTimeoutError, raised
# again as the TaskFailedError that names the task): the reason, said once.
COMMIT_TIMED_OUT = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function.
  File "/x/dagster_kstreams/kafka/fencing.py", line 256, in _bounded
    raise FenceTimeoutError(self._unanswered(
dagster_kstreams.kafka.fencing.FenceTimeoutError: committing offsets for transactional id 'app-task-0_0' \
(group 'app'): Kafka at 127.0.0.1:9092 was unavailable for 120s (Local: Broker transport failure)

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/x/dagster_kstreams/spark/run_state.py", line 81, in _guard
    raise TaskFailedError(self.task, self.application_id, f"{error}; a task waits task_timeout_s "
dagster_kstreams.spark.errors.TaskFailedError: task 0_0 of application 'app' failed: committing offsets for \
transactional id 'app-task-0_0' (group 'app'): Kafka at 127.0.0.1:9092 was unavailable for 120s (Local: Broker \
transport failure); a task waits task_timeout_s for Kafka to come back
 SQLSTATE: 39000
\tat org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink.callBatchWriter(ForeachBatchSink.scala:60)
"""

# Two `run --task 0_0` started at the same moment on a new checkpoint: the slower to write its metadata.
METADATA_RACE = """An error occurred while calling o278.start.
: org.apache.spark.SparkConcurrentModificationException: Multiple streaming queries are concurrently using metadata.
\tat org.apache.spark.sql.execution.streaming.runtime.StreamExecution.<init>(StreamExecution.scala:152)
Caused by: org.apache.hadoop.fs.FileAlreadyExistsException: Rename destination file:/s/app/tasks/0_0/checkpoint/metadata \
already exists.
"""

PYTHON_WORKER = """org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/x/user_code.py", line 3, in shout
    return value.upper()
AttributeError: 'NoneType' object has no attribute 'upper'
"""


# A word-count batch whose collected result Spark could not read back: the failed job's message
# prints the query plan, whose raise_error text names DeserializationError without any record at fault.
RESULT_LOST = """org.apache.spark.SparkException: Exception thrown in awaitResult:
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 229.0 failed 1 times, \
most recent failure: Lost task 0.0 in stage 229.0 (TID 228) (localhost executor driver): TaskResultLost (result lost \
from block manager)
dagster_kstreams.spark.errors.TaskFailedError: task 0_2 of application 'bench' failed: DeserializationError: , CASE WHEN \
_key_bad#2070 THEN concat(cannot deserialize the key of the record at topic ', topic#2054, ' partition , \
cast(partition#2055 as string),  offset , cast(offset#2056L as string),  with Serdes.String(): UnicodeDecodeError: \
invalid UTF-8) ELSE concat(cannot deserialize the value of the record at topic ', topic#2054, ' END as boolean), true)
"""

# A Python worker killed while it ran a batch (tests/test_lost_work.py kills one): Spark's innermost
# cause is the socket's, its own line a hint about a traceback there is none of.
WORKER_CRASHED = """py4j.protocol.Py4JJavaError: An error occurred while calling o678.save.
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times, \
most recent failure: Lost task 0.0 in stage 0.0 (TID 0) (localhost executor driver): org.apache.spark.SparkException: \
Python worker exited unexpectedly (crashed). Consider setting 'spark.sql.execution.pyspark.udf.faulthandler.enabled' \
or'spark.python.worker.faulthandler.enabled' configuration to 'true' for the better Python traceback.
Caused by: java.net.SocketException: Connection reset
"""

# A Python worker Spark started that did not connect back within its 10 s: a local-mode batch's, or
# (CI, under a load of 20 on 2 cores) the one a Spark Connect server starts for a query's foreachBatch.
WORKER_LATE = """org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times, \
most recent failure: Lost task 0.0 in stage 3.0 (TID 3) (localhost executor driver): java.net.SocketTimeoutException: \
Timed out while waiting for the Python worker to connect back
Caused by: java.net.SocketTimeoutException: Timed out while waiting for the Python worker to connect back
"""
CONNECT_WORKER_LATE = ("pyspark.errors.exceptions.connect.SparkConnectGrpcException: (java.net.SocketTimeoutException) "
                       "Timed out while waiting for the Python worker to connect back")

EXECUTOR_LOST = """org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage 7.0 failed 4 \
times, most recent failure: Lost task 3.3 in stage 7.0 (TID 41) (10.0.0.7 executor 2): ExecutorLostFailure \
(executor 2 exited caused by one of the running tasks) Reason: Remote RPC client disassociated."""


@pytest.mark.parametrize("text, lost", [
    (RESULT_LOST, "the batch's result (TaskResultLost)"),
    (WORKER_CRASHED, "the Python worker that ran the batch (it exited unexpectedly)"),
    (EXECUTOR_LOST, "the executor that ran the batch (ExecutorLostFailure)"),
    (WORKER_LATE, "the Python worker started for the batch (it did not connect back within 10 s)"),
    (RECORD_TOO_LARGE, None),
    (PYTHON_WORKER, None),  # the user's function raised: running it again raises again
    (METADATA_RACE, None),  # another process: the fence decides, not a retry
    ("DeserializationError: cannot deserialize the value of the record at topic 't' partition 0 offset 3", None),
])
def test_work_spark_lost_is_told_from_a_record_or_the_code_failing(text, lost):
    assert lost_work(RuntimeError(text)) == lost


@pytest.mark.parametrize("text, expected", [
    (WORKER_LATE, "a Spark Python worker did not connect back within the 10 s Spark waits for one (the machine was "
                  "too busy to start it): the batch was not committed: the task's next run processes it again"),
    (WORKER_CRASHED, "a Spark Python worker running the batch exited unexpectedly (killed, out of memory, or crashed "
                     "in native code): the batch was not committed: the task's next run processes it again"),
    (RESULT_LOST, "Spark lost a batch's result (TaskResultLost: result lost from block manager): increase "
                  "spark.driver.memory or spark.task.maxDirectResultSize, or lower max_records_per_batch; the batch "
                  "was not committed: the task's next run processes it again"),
    ("[USER_RAISED_EXCEPTION] DeserializationError: cannot deserialize the key of the record at topic 'w' partition "
     "2 offset 9 with Serdes.String(): UnicodeDecodeError: invalid UTF-8 SQLSTATE: P0001\n\tat raise_error(concat("
     "DeserializationError: , CASE WHEN _key_bad#1 THEN concat(cannot deserialize",
     "DeserializationError: cannot deserialize the key of the record at topic 'w' partition 2 offset 9 with "
     "Serdes.String(): UnicodeDecodeError: invalid UTF-8 SQLSTATE: P0001"),
    (RECORD_TOO_LARGE, "RecordTooLargeException: The message is 5242968 bytes when serialized which is larger than "
                       "1048576, which is the value of the max.request.size configuration. (increase the producer's "
                       "max.request.size (kafka_config / --kafka-config) and the topic's max.message.bytes)"),
    (FENCED_IN_PYTHON, "FenceError: committing offsets for transactional id 'app-task-0_0': Kafka's client gave no "
                       "answer within 45s"),
    (COMMIT_TIMED_OUT, "committing offsets for transactional id 'app-task-0_0' (group 'app'): Kafka at "
                       "127.0.0.1:9092 was unavailable for 120s (Local: Broker transport failure); a task waits "
                       "task_timeout_s for Kafka to come back"),
    (METADATA_RACE, "another process started or ran this task's checkpoint at the same moment (Spark: concurrently "
                    "using metadata); the process that started the task last owns it: run the task again if that "
                    "one stopped"),
    ("org.apache.spark.SparkException: [CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple "
     "streaming jobs detected for 0.", "another process started or ran this task's checkpoint at the same moment "
                                       "(Spark: CONCURRENT_STREAM_LOG_UPDATE); the process that started the task "
                                       "last owns it: run the task again if that one stopped"),
    ("org.apache.spark.SparkRuntimeException: [STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY] The checkpoint location "
     "file:/s/app/tasks/0_0/checkpoint/offsets should be empty on batch 0",
     "another process started or ran this task's checkpoint at the same moment (Spark: "
     "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY); the process that started the task last owns it: run the task "
     "again if that one stopped"),
    ("py4j.protocol.Py4JJavaError: An error occurred while calling o85.awaitTermination.\n"
     ": java.util.ConcurrentModificationException: Multiple streaming queries are concurrently using "
     "file:/s/app/tasks/0_0/checkpoint/offsets.\n\tat org.apache.spark.sql.execution.streaming.checkpointing."
     "HDFSMetadataLog.write(HDFSMetadataLog.scala:210)",
     "another process started or ran this task's checkpoint at the same moment (Spark: Multiple streaming queries "
     "are concurrently using file:/s/app/tasks/0_0/checkpoint/offsets); the process that started the task last "
     "owns it: run the task again if that one stopped"),
    ("Caused by: org.apache.kafka.common.errors.TimeoutException: Timeout of 120000ms expired before the position "
     "for partition t-0 could be determined", "TimeoutException: Timeout of 120000ms expired before the position for "
                                              "partition t-0 could be determined (Kafka did not answer in time: is the "
                                              "broker up? a running task waits task_timeout_s (--task-timeout) for it)"),
    (PYTHON_WORKER, "AttributeError: 'NoneType' object has no attribute 'upper'"),
    ("DeserializationError: cannot deserialize the value of the record at topic 't' partition 0 offset 3\n"
     "  raise DeserializationError(", "DeserializationError: cannot deserialize the value of the record at topic "
                                      "'t' partition 0 offset 3"),
    ("org.apache.spark.SparkException: Job aborted", "SparkException: Job aborted"),  # nothing better to say
    ("the broker went away", "the broker went away"),
])
def test_the_cause_in_one_line(text, expected):
    reason = failure_reason(RuntimeError(text))
    assert reason == expected
    assert "\n" not in reason and "raise " not in reason


class _Writer:
    """A DataStreamWriter whose first starts fail as Spark's do."""

    def __init__(self, *failures: str):
        self.failures, self.starts = list(failures), 0

    def start(self):
        self.starts += 1
        if self.failures:
            raise RuntimeError(self.failures.pop(0))
        return "query"


def test_a_checkpoint_started_by_another_process_at_the_same_moment_is_started_again():
    raced = _Writer(METADATA_RACE)
    assert start_on_checkpoint(raced, "task 0_0", 120) == "query" and raced.starts == 2
    twice = _Writer(METADATA_RACE, METADATA_RACE)  # once is what a simultaneous start needs
    with pytest.raises(RuntimeError, match="concurrently using"):
        start_on_checkpoint(twice, "task 0_0", 120)
    assert twice.starts == 2
    other = _Writer("org.apache.spark.sql.AnalysisException: checkpointLocation must be specified")
    with pytest.raises(RuntimeError, match="checkpointLocation"):  # anything else is not retried
        start_on_checkpoint(other, "task 0_0", 120)
    assert other.starts == 1


class _Clock:
    """time.monotonic and time.sleep, sleeping without waiting."""

    def __init__(self):
        self.now, self.pauses = 0.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.pauses.append(seconds)
        self.now += seconds


def test_a_query_whose_python_worker_was_late_is_started_again_for_the_task_timeout(monkeypatch, caplog):
    clock = _Clock()
    monkeypatch.setattr("dagster_kstreams.spark.checkpoint.time", clock)
    late = _Writer(CONNECT_WORKER_LATE, CONNECT_WORKER_LATE)
    with caplog.at_level("WARNING"):
        assert start_on_checkpoint(late, "task 0_0 of application 'wc'", 120) == "query" and late.starts == 3
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["task 0_0 of application 'wc'"] * 2
    assert clock.pauses == [2.0, 4.0]
    clock = _Clock()
    monkeypatch.setattr("dagster_kstreams.spark.checkpoint.time", clock)
    never = _Writer(*[CONNECT_WORKER_LATE] * 100)
    with pytest.raises(RuntimeError, match="connect back"):
        start_on_checkpoint(never, "task 0_0", 120)
    assert clock.pauses == [2.0, 4.0, 8.0, 15.0, 15.0, 15.0, 15.0, 15.0, 15.0, 15.0, 15.0]  # 119 s, then a last try
    assert never.starts == 12
