"""A task's Spark session settings: the state store, shuffle partitions, polling and checkpoint files."""

from __future__ import annotations

from typing import Optional

from pyspark.sql import SparkSession

from dagster_kstreams.spark.checkpoint import on_local_file_system

__all__ = ["configure_session", "ROCKSDB_PROVIDER"]

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
POLLING_DELAY = "spark.sql.streaming.pollingDelay"
IDLE_POLLING_DELAY = "100ms"
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
FILE_SYSTEM_CHECKPOINTS = ("org.apache.spark.sql.execution.streaming.checkpointing."
                           "FileSystemBasedCheckpointFileManager")


def configure_session(session: SparkSession, state_partitions: int, arrow_batch_size: Optional[int],
                      state_location: str) -> None:
    """A task's session settings: RocksDB state with changelog checkpointing, ``state_partitions``
    state store partitions (Spark's shuffle partitions), no empty batches, an idle query that looks
    for new records every 100 ms and checkpoint files on a local ``state_location`` written through
    Hadoop's ``FileSystem`` API (each unless the Spark configuration says otherwise), and
    ``arrow_batch_size`` records per Arrow batch if set."""
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    # Each batch writes the state's changes, not a whole snapshot: about half the state store's
    # commit time per micro-batch (bench/profile_latency.py); snapshots are still taken now and then.
    session.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    session.conf.set("spark.sql.shuffle.partitions", str(state_partitions))
    # Spark would otherwise add a no-op batch; Kafka Streams has no such thing.
    session.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    if session.conf.get(POLLING_DELAY, None) is None:
        # A query with nothing new asks Kafka for end offsets again after this (Spark: 10 ms). Four
        # idle tasks kept 45% of a core busy in the JVM at 10 ms, 18% at 100 ms (and the broker
        # answered each ask); a record that arrives meanwhile waits at most this much longer.
        session.conf.set(POLLING_DELAY, IDLE_POLLING_DELAY)
    if on_local_file_system(state_location) and session.conf.get(CHECKPOINT_FILE_MANAGER, None) is None:
        # Spark's default manager writes through Hadoop's FileContext, whose local rename looks at
        # the source, the target and its parent through `readlink` processes forked without
        # Hadoop's native library; FileSystem's rename does not: an offset or commit log write in
        # 13 ms against 27 alone (bench/README.md). On a local disk both refuse to overwrite a log file
        # the same way, by looking before the rename (FileContext's local rename is not atomic
        # either); on HDFS or object stores Spark's own choice stays.
        session.conf.set(CHECKPOINT_FILE_MANAGER, FILE_SYSTEM_CHECKPOINTS)
    if arrow_batch_size is not None:
        session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(arrow_batch_size))
