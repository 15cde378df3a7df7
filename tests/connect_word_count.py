"""The word count that :mod:`test_spark_connect` runs through Spark Connect and in local mode.

pyspark runs a process in one mode (classic or Connect), and the test session runs a classic one
(the ``spark`` fixture), so the Connect side runs here, in a process of its own:
``python connect_word_count.py SC_URL BOOTSTRAP SOURCE [SINK APP_ID STATE GUARANTEE]...`` runs the
word count once per group of four arguments, every task one after another (``run_all(parallelism=1)``),
on one Connect session, and prints their results as one JSON line (a list, in that order).
"""

from __future__ import annotations

import json
import math
import sys
import time

from dagster_kstreams.spark.jvm import is_connect
from dagster_kstreams.spark.session import build_spark_session
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.serdes import Serdes

LINES = 600
BATCH = 150
# Within the broker's retention (7 days by default) of now: older records, on the input topic
# and the repartition topic alike, are deleted by the broker's retention check (every 5 minutes)
# whenever it falls during the test, and a reader from offset 0 then finds none of them.
BASE_TIME = int(time.time() * 1000) - 3_600_000


def split_words(line: str) -> list[str]:
    return line.split()


def by_word(_key: str, word: str) -> str:
    return word


def word_count(source: str, sink: str) -> StreamsBuilder:
    builder = StreamsBuilder()
    (builder.stream(source, Consumed.with_(Serdes.String(), Serdes.String()))
     .flat_map_values(split_words)
     .group_by(by_word, Grouped.with_(Serdes.String(), Serdes.String()))
     .count()
     .to_stream()
     .to(sink, Produced.with_(Serdes.String(), Serdes.Long())))
    return builder


def lines(count: int = LINES) -> list[tuple[bytes, bytes, int, int]]:
    return [(f"k{i}".encode(), f"w{i % 7} w{i % 11} w{i % 13}".encode(), i % 2, BASE_TIME + i) for i in range(count)]


def run(spark, bootstrap: str, source: str, sink: str, app_id: str, state: str, guarantee: str) -> dict:
    # No repartition purge: the test compares the repartition topic whole, and a run through Connect on a
    # busy machine lasts past the 30 s after which the counting tasks delete what they consumed.
    runner = TaskRunner(word_count(source, sink), app_id, bootstrap, state_location=state, spark=spark,
                        max_records_per_batch=BATCH, processing_guarantee=guarantee,
                        repartition_purge_interval_s=math.inf)
    started = time.monotonic()
    results = runner.run_all(parallelism=1)  # one task after another: the same batches on any session
    return {"seconds": time.monotonic() - started, "results": [result.as_dict() for result in results],
            "repartition": runner.application.repartition_topics[0]}


if __name__ == "__main__":
    url, bootstrap, source, *runs = sys.argv[1:]
    session = build_spark_session(url)
    assert is_connect(session)
    groups = [runs[start:start + 4] for start in range(0, len(runs), 4)]
    print(json.dumps([run(session, bootstrap, source, *group) for group in groups]), flush=True)
