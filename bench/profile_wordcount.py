"""Where a word count's time goes in our runner: per batch phase on the driver, and per Python
function inside Spark's Python workers (Spark's UDF profiler, ``spark.sql.pyspark.udf.profiler=perf``).

    .venv/bin/python -m bench.profile_wordcount [--records 200000] [--variant python|columns]
        [--bootstrap HOST:PORT] [--top 25]

One input topic (4 partitions) of ``--records`` word-count lines (the bench's generator); the
application runs with ``TaskRunner.run_all()`` (every task at once, pipelined). Printed:

* wall-clock seconds of the whole run, and per sub-topology the summed task seconds;
* the driver's time per phase of each micro-batch, summed over all tasks (the BatchWriter's
  fence check, write intent, Kafka write (which computes the batch: source, processors, sink),
  offset commit), plus the time spent starting queries;
* the top functions of the Python workers by cumulative time (cProfile through Spark's UDF
  profiler), for the variant with Python functions.

Without --bootstrap a LocalBroker is started on ports 39200/39201.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections import defaultdict
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from pyspark.sql.classic.dataframe import DataFrame  # what a foreachBatch function is given

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import equivalence_topologies as eq  # noqa: E402

from bench.common import bench_workspace, wait_for_group_coordinator  # noqa: E402
from bench.wordcount import PARTITIONS, word_count_columns  # noqa: E402
from dagster_kstreams.kafka.admin import KafkaAdmin  # noqa: E402
from dagster_kstreams.kafka.records import produce  # noqa: E402
from dagster_kstreams.spark import batch_writer, run_state, task_runner, transactional_writer  # noqa: E402
from dagster_kstreams.spark.session import build_spark_session  # noqa: E402
from dagster_kstreams.spark.task_runner import TaskRunner  # noqa: E402

PHASES: dict[str, float] = defaultdict(float)


def timed(owner, name: str, phase: str) -> None:
    """Wrap ``owner.name`` so that its time adds up under ``phase``."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            PHASES[phase] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def instrument() -> None:
    timed(run_state.RunFence, "check", "fence check (abort a transaction)")
    timed(run_state.RunFence, "commit", "offset commit (a transaction)")
    timed(batch_writer.BatchWriter, "_unwritten", "write intent (end offsets of outputs, a file)")
    timed(batch_writer.BatchWriter, "_write", "whole batch (compute + write + the above)")
    timed(transactional_writer.TransactionalBatchWriter, "_write", "whole batch, exactly-once (compute + transaction)")
    timed(DataFrame, "toArrow", "computing a batch to the driver (toArrow)")
    timed(task_runner.TaskRunner, "_start", "starting a task (fence, checkpoint, query start)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--variant", choices=["python", "columns"], default="python")
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    with bench_workspace("bench-profile-", args.bootstrap, 39200) as (bootstrap, work):
        run(args, bootstrap, work)
    return 0


def run(args, bootstrap: str, work: Path) -> None:
    admin = KafkaAdmin(bootstrap)
    tag = uuid.uuid4().hex[:6]
    topic, output = f"profile-words-{tag}", f"profile-out-{tag}"
    admin.create_topics({topic: PARTITIONS, output: PARTITIONS})
    wait_for_group_coordinator(bootstrap, f"profile-{tag}", topic)
    produce(bootstrap, topic, eq.skewed_records(args.records, PARTITIONS, seed=1),
            {"linger.ms": 50, "batch.num.messages": 10000})
    conf = {"spark.ui.enabled": "false"}
    if args.variant == "python":
        conf["spark.sql.pyspark.udf.profiler"] = "perf"
    spark = build_spark_session("local[*]", conf, app_name="bench-profile")
    spark.sparkContext.setLogLevel("ERROR")
    instrument()
    build = eq.word_count if args.variant == "python" else word_count_columns
    runner = TaskRunner(build(topic, output), f"profile-{tag}", bootstrap, state_location=str(work / "state"),
                        spark=spark)
    started = time.perf_counter()
    results = runner.run_all()
    wall = time.perf_counter() - started
    print(f"\nword count ({args.variant}), {args.records:,} lines, {PARTITIONS} partitions: {wall:.1f}s wall clock")
    for sub_id in runner.application.subtopology_ids:
        mine = [r for r in results if r.subtopology == sub_id]
        print(f"  sub-topology {sub_id}: {sum(r.records_in for r in mine):,} records, "
              f"{sum(r.seconds for r in mine):.1f} task-seconds, {sum(r.batches for r in mine)} batches")
    print("driver time per phase, summed over tasks (tasks run concurrently):")
    for phase, seconds in sorted(PHASES.items(), key=lambda item: -item[1]):
        print(f"  {seconds:8.1f}s  {phase}")
    if args.variant == "python":
        text = StringIO()
        with redirect_stdout(text):
            spark.profile.show(type="perf")
        lines = text.getvalue().splitlines()
        print("Python workers (cProfile via spark.sql.pyspark.udf.profiler=perf), first lines per UDF:")
        print("\n".join(lines[: args.top + 12]))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
