"""The Python pass alone: the word count's first sub-topology (split each line, re-key by word,
write the repartition topic) over Arrow batches, with no Spark and no broker.

    .venv/bin/python -m bench.python_pass [--records 200000] [--batch 10000] [--repeat 3]
        [--profile] [--top 20]

The program is built as the runner builds it for task 0_x (``compile_topology(...).program(0)``,
the benchmark's word count written with Python functions); its input is the word-count bench's
generated lines (``equivalence_topologies.skewed_records``, seed 1), cut into Arrow batches of
``--batch`` rows with the columns Spark's Kafka source gives (Spark's default Arrow batch is
10,000 rows). Printed: the best of ``--repeat`` timings of ``process_arrow_batch`` over all
batches, in CPU seconds of this process (steadier than the wall clock on a shared machine; both
are printed) and as lines/s and words/s, and with ``--profile`` the top functions under cProfile.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import equivalence_topologies as eq  # noqa: E402

from bench.wordcount import PARTITIONS  # noqa: E402
from dagster_kstreams.spark.compile import compile_topology  # noqa: E402

INPUT, OUTPUT = "pass-words", "pass-counts"


def source_batches(records: int, batch_size: int) -> list[pa.RecordBatch]:
    """The generated lines as Spark's Kafka source hands them to ``mapInArrow``."""
    rows = list(eq.skewed_records(records, PARTITIONS, seed=1))
    batches = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        offsets = list(range(start, start + len(chunk)))
        batches.append(pa.RecordBatch.from_arrays([
            pa.array([key for key, _, _ in chunk], type=pa.binary()),
            pa.array([value for _, value, _ in chunk], type=pa.binary()),
            pa.array([INPUT] * len(chunk), type=pa.string()),
            pa.array([partition for _, _, partition in chunk], type=pa.int32()),
            pa.array(offsets, type=pa.int64()),
            pa.array([1_700_000_000_000 + offset for offset in offsets], type=pa.timestamp("ms")),
            pa.array([1_700_000_000_000 + offset for offset in offsets], type=pa.int64()),
        ], names=["key", "value", "topic", "partition", "offset", "timestamp", "event_time"]))
    return batches


def run_pass(program, batches: list[pa.RecordBatch]) -> int:
    """Every batch through the program; the number of sink records."""
    return sum(program.process_arrow_batch(batch).num_rows for batch in batches)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    program = compile_topology(eq.word_count(INPUT, OUTPUT), "bench-pass").program(0)
    batches = source_batches(args.records, args.batch)
    timings, cpu_times, words = [], [], 0
    for _ in range(args.repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        words = run_pass(program, batches)
        timings.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - started_cpu)
    best = min(cpu_times)
    print(f"python pass, word count sub-topology 0: {args.records:,} lines -> {words:,} words in "
          f"{len(batches)} batches; best of {args.repeat}: {best:.3f} CPU s "
          f"({args.records / best:,.0f} lines/s, {words / best:,.0f} words/s), {min(timings):.3f}s wall clock; "
          f"CPU s: {', '.join(f'{t:.3f}' for t in cpu_times)}; load average {os.getloadavg()[0]:.2f}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        run_pass(program, batches)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
