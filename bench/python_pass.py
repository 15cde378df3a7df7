"""The Python pass alone: the word count's first sub-topology (split each line, re-key by word,
write the repartition topic) over Arrow batches, with no Spark and no broker.

    .venv/bin/python -m bench.python_pass [--records 200000] [--batch 10000] [--repeat 3]
        [--floor] [--profile] [--top 20]

The program is built as the runner builds it for task 0_x (``compile_topology(...).program(0)``,
the benchmark's word count written with Python functions); its input is the word-count bench's
generated lines (``equivalence_topologies.skewed_records``, seed 1), cut into Arrow batches of
``--batch`` rows with the columns Spark's Kafka source gives (Spark's default Arrow batch is
10,000 rows). Printed: the best of ``--repeat`` timings of ``process_arrow_batch`` over all
batches, in CPU seconds of this process (steadier than the wall clock on a shared machine; both
are printed) and as lines/s and words/s; with ``--floor`` the same for a hand-written loop doing
only what no runner can skip (:func:`hand_written_pass`), and the difference: the pass's own
cost; with ``--profile`` the top functions under cProfile.
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
from dagster_kstreams.spark.frames import OUTPUT_COLUMNS  # noqa: E402

INPUT, OUTPUT = "pass-words", "pass-counts"
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))  # the output's headers column


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


def hand_written_pass(program, batches: list[pa.RecordBatch], check: bool = False) -> int:
    """What no runner can skip, for the same batches: Arrow to Python lists, UTF-8 decode, the
    user's two functions, UTF-8 encode, the output's Arrow arrays; no record context, no error
    handling, no dead letters. The floor the pass's own cost is measured against (``check``: its
    output is compared with the program's, batch by batch)."""
    split, by_word = program.nodes[1].fn, program.nodes[2].fn  # flat_map_values, select_key
    topic = program.nodes[-1].topic
    rows = 0
    for batch in batches:
        keys, values, stamps = (batch.column(name).to_pylist() for name in ("key", "value", "event_time"))
        out_keys, out_values, out_stamps = [], [], []
        for key, value, stamp in zip(keys, values, stamps):
            key = key.decode()
            for word in split(key, value.decode()):
                new_key = by_word(key, word)
                if new_key is not None:
                    out_keys.append(new_key.encode())
                    out_values.append(word.encode())
                    out_stamps.append(stamp)
        columns = [pa.array([topic] * len(out_keys), type=pa.string()), pa.array(out_keys, type=pa.binary()),
                   pa.array(out_values, type=pa.binary()), pa.nulls(len(out_keys), type=HEADERS),
                   pa.array(out_stamps, type=pa.int64()), pa.nulls(len(out_keys), type=pa.int64())]
        written = pa.RecordBatch.from_arrays(columns, names=list(OUTPUT_COLUMNS))
        rows += written.num_rows
        if check and written.to_pylist() != program.process_arrow_batch(batch).to_pylist():
            raise SystemExit("bench: error: the hand-written pass and the program's differ")
    return rows


def best_cpu_seconds(run, repeat: int) -> tuple[float, list[float], float]:
    """(best CPU seconds, all CPU seconds, best wall-clock seconds) of ``repeat`` calls of ``run``."""
    timings, cpu_times = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        run()
        timings.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - started_cpu)
    return min(cpu_times), cpu_times, min(timings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--floor", action="store_true", help="also time the hand-written loop (hand_written_pass)")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    program = compile_topology(eq.word_count(INPUT, OUTPUT), "bench-pass").program(0)
    batches = source_batches(args.records, args.batch)
    words = run_pass(program, batches)
    best, cpu_times, wall = best_cpu_seconds(lambda: run_pass(program, batches), args.repeat)
    print(f"python pass, word count sub-topology 0: {args.records:,} lines -> {words:,} words in "
          f"{len(batches)} batches; best of {args.repeat}: {best:.3f} CPU s "
          f"({args.records / best:,.0f} lines/s, {words / best:,.0f} words/s), {wall:.3f}s wall clock; "
          f"CPU s: {', '.join(f'{t:.3f}' for t in cpu_times)}; load average {os.getloadavg()[0]:.2f}")
    if args.floor:
        hand_written_pass(program, batches, check=True)
        floor, _, _ = best_cpu_seconds(lambda: hand_written_pass(program, batches), args.repeat)
        print(f"the floor (hand-written loop: Arrow lists, decode, the user's functions, encode, Arrow arrays): "
              f"{floor:.3f} CPU s; the pass's own cost: {best - floor:.3f} CPU s")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        run_pass(program, batches)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
