"""End-to-end latency at a steady rate: dagster-kstreams (one worker under dagster-daemon) and
Kafka Streams 4.3.1 on the users-per-country topology (issue 12).

    .venv/bin/python -m bench.latency [--rate 1000] [--seconds 120] [--warmup-seconds 30]
        [--systems dagster-kstreams,kafka-streams] [--partitions 2] [--bootstrap HOST:PORT]

The application is the users-per-country example (``assets/users_per_country.py``: ``users`` ->
``group_by(country)`` -> ``count`` -> ``users-per-country``; two sub-topologies joined by a
repartition topic). Each system gets its own fresh input topic (2 partitions, or ``--partitions``), output
topic (as many) and application id, and runs alone, one after the other, on one broker (a
LocalBroker on ports 29300/29301 unless --bootstrap):

* ``dagster-kstreams``: a code location written to a temp dir (``build_defs`` of the example,
  ``ElasticWorkers(min_workers=1, max_workers=1)``, sensor RUNNING, ``KStreamsSparkResource``
  with ``--master``), a Dagster instance (``deploy/dagster.yaml``) and ``dagster-daemon run``;
  the lag sensor launches the one worker run.
* ``kafka-streams``: ``kstreams.oracle.LatencyApp`` (tests/oracle), the same topology in Java,
  record cache off (``statestore.cache.max.bytes=0``), at_least_once, one stream thread,
  ``commit.interval.ms`` = ``--ks-commit-interval-ms`` (100 by default).

Per system: start it; write one probe record per country and wait until the output shows them all
(the system is up end to end: JVM, SparkSession, worker run, first queries); then write records at
``--rate`` for ``--warmup-seconds`` + ``--seconds``; then wait (at most ``--drain-timeout``) until
every record is reflected in the output; stop the system.

What is measured, per input record: its produce time is the wall clock (``time.time()``) just
before ``Producer.produce`` (also written as the record's timestamp). Its output time is the
broker's log-append timestamp of the first output record (``country -> count``) whose count
includes it: the output topics are created with ``message.timestamp.type=LogAppendTime`` (both
systems would otherwise copy the input record's timestamp), so the output time is when the
broker appended the result, independent of the bench's consumer. The consumer's receive time is
recorded too (``latency_by_receive_time`` in the JSON). Same machine, same clock.

"Includes it": the bench writes every record of one country to the same input partition (an
explicit partition per country; the key stays the user id), so a country's records are counted
in the order they were produced, and record k of country c (k-th produced) is reflected by the
first output record of c with count >= k. A record never reflected when the system is stopped is
*missing*. Counts above the records produced (duplicates: at-least-once replays) are reported as
``overcounted``; they would make latencies look shorter, so they must be 0 as well.

Reported over the records produced after the warm-up: p50, p99 (nearest rank) and max, in ms.
Results: ``bench/results/latency-<date>.json`` and the table on stdout, with the 1-minute load
average before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Optional

from bench.common import bench_workspace, log, wait_for_group_coordinator
from bench.latency_kafka import COUNTRY_WEIGHTS, OutputReader, UserWriter, create_topics
from bench.latency_records import match, per_second, summary, table
from bench.latency_systems import DAGSTER, SYSTEMS, DagsterSystem, KafkaStreamsSystem
from dagster_kstreams.spark.session import DEFAULT_MASTER

REPO = Path(__file__).resolve().parent.parent
BROKER_PORT = 29300
PARTITIONS = 2  # as assets/users_per_country.py TOPIC_PARTITIONS (--partitions for another count)


def run_system(name: str, args, bootstrap: str, work: Path) -> dict:
    suffix = uuid.uuid4().hex[:6]
    short = "dk" if name == DAGSTER else "ks"
    names = {"input": f"bench-latency-users-{short}-{suffix}", "output": f"bench-latency-upc-{short}-{suffix}",
             "app_id": f"bench-latency-{short}-{suffix}"}
    directory = work / name
    directory.mkdir(parents=True)
    create_topics(bootstrap, {names["input"]: {}, names["output"]: {"message.timestamp.type": "LogAppendTime"}},
                  args.partitions)
    wait_for_group_coordinator(bootstrap, names["app_id"], names["input"])
    system = DagsterSystem(args, bootstrap, directory, names) if name == DAGSTER \
        else KafkaStreamsSystem(args, bootstrap, directory, names)
    reader = OutputReader(bootstrap, names["output"], args.partitions)
    writer = UserWriter(bootstrap, names["input"], args.partitions, seed=args.seed)
    reader.start()
    load_before = os.getloadavg()
    timings: dict = {}
    produced_summary: dict = {}
    stopped: dict = {}
    drained = False
    started = time.monotonic()
    try:
        system.start()
        log(f"{name}: started; waiting until one probe record per country comes out (at most {args.ready_timeout:g} s)")
        for country in COUNTRY_WEIGHTS:
            writer.write(country, measured=False)
        writer.flush()
        deadline = time.monotonic() + args.ready_timeout
        while not all(reader.highest_counts().get(c, 0) >= writer.per_country[c] for c in COUNTRY_WEIGHTS):
            system.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: probes not reflected within {args.ready_timeout:g} s; "
                                   f"highest counts {reader.highest_counts()}\n{system.tail()}")
            time.sleep(0.5)
        timings["ready_after_s"] = round(time.monotonic() - started, 1)
        log(f"{name}: ready after {timings['ready_after_s']} s; {args.rate:g} records/s for "
            f"{args.warmup_seconds:g} s warm-up + {args.seconds:g} s measured")
        produced_summary = writer.steady(args.rate, args.warmup_seconds, args.seconds)
        system.check()
        log(f"{name}: wrote {produced_summary['records']:,} records in {produced_summary['seconds']} s; draining")
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < args.drain_timeout:
            highest = reader.highest_counts()
            if all(highest.get(c, 0) >= n for c, n in writer.per_country.items()):
                drained = True
                break
            system.check()
            time.sleep(0.2)
        timings["drain_s"] = round(time.monotonic() - drain_started, 1)
        time.sleep(1.0)  # late duplicates, if any, show up as overcounted
    except Exception as error:
        log(f"{name}: failed: {error}")
        return {"label": system.label, "error": str(error), "names": names}
    finally:
        reader.stop()
        stopped = system.stop()
    matched = match(writer.produced, reader.outputs)
    return {
        "label": system.label,
        "names": names,
        # Under exactly-once an output record is appended before its transaction commits and is
        # seen only after: its receive time is the honest one (a few ms of polling later).
        "latency": summary(matched.by_receive_ms if system.reads_at_commit else matched.by_append_ms),
        "latency_by_receive_time": summary(matched.by_receive_ms),
        "latency_per_second": per_second(
            matched.produced_at, matched.by_receive_ms if system.reads_at_commit else matched.by_append_ms),
        "missing": matched.missing,
        "overcounted": matched.overcounted,
        "drained": drained,
        "output_records": len(reader.outputs),
        "reader_errors": reader.errors[:10],
        "produced": produced_summary,
        "timings": timings,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "system": stopped,
    }


def _key_value(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    if not key or not _:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0, help="input records/s")
    parser.add_argument("--seconds", type=float, default=120.0, help="measured seconds (after the warm-up)")
    parser.add_argument("--warmup-seconds", type=float, default=30.0, help="seconds at --rate not measured")
    parser.add_argument("--drain-timeout", type=float, default=120.0,
                        help="after the last record, wait this long at most for every record to come out")
    parser.add_argument("--ready-timeout", type=float, default=600.0,
                        help="wait this long at most for the probe records (system start)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--master", default=DEFAULT_MASTER,
                        help=f"the worker's Spark master (default: the resource's, {DEFAULT_MASTER})")
    parser.add_argument("--spark-conf", default=None, help="JSON object of extra spark.* settings for the worker")
    parser.add_argument("--sensor-interval", type=int, default=5)
    parser.add_argument("--code-location", choices=["server", "daemon"], default="server",
                        help="serve the code location from its own gRPC server the daemon connects to, as "
                             "deployments and `dagster dev` do (server), or let the daemon spawn one from the "
                             "Python file, which it replaces every 60 s (daemon)")
    parser.add_argument("--worker-option", type=_key_value, action="append", default=[],
                        help="extra ElasticWorkers field, KEY=VALUE (JSON value), e.g. trigger_seconds=0.1")
    parser.add_argument("--processing-guarantee", default="exactly_once_v2", choices=["at_least_once", "exactly_once_v2"],
                        help="ours (under exactly_once_v2 an output record counts once its transaction commits: "
                             "read the receive-time latency, the log-append time is before the commit)")
    parser.add_argument("--ks-commit-interval-ms", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--partitions", type=int, default=PARTITIONS,
                        help="of the input and output topics, so the tasks per sub-topology (default: the example's)")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--output-dir", default=str(REPO / "bench" / "results"))
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not systems or not set(systems) <= set(SYSTEMS):
        parser.error(f"--systems: some of {', '.join(SYSTEMS)}")

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    code_version = head.strip() + ("+uncommitted changes" if dirty else "")
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    results: dict = {}
    with bench_workspace("bench-latency-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        for name in systems:
            results[name] = run_system(name, args, bootstrap, work)
            log(f"{name}: {results[name].get('latency', results[name].get('error'))}, "
                f"missing {results[name].get('missing')}")
    load_after = os.getloadavg()
    report = {
        "started": started.isoformat(timespec="seconds"),
        "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "arguments": {k: v for k, v in vars(args).items() if k != "output_dir"},
        "measure": "latency = broker log-append time of the first output record whose count includes the input "
                   "record - wall clock just before the input record's produce(); ms; nearest-rank percentiles "
                   "over the records produced after the warm-up",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_before": load_before, "load_after": load_after},
        "code_version": code_version,
        "systems": results,
    }
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    path = output / f"latency-{started.date()}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"Latency, produce -> output (broker log-append time), users-per-country, {args.rate:g} records/s, "
          f"{args.seconds:g} s measured after {args.warmup_seconds:g} s warm-up; {os.cpu_count()} CPUs, load average "
          f"(1/5/15 min) {' '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{' '.join(f'{x:.2f}' for x in load_after)} after")
    print(table(results))
    print(f"written to {path}")
    failed = any("error" in r or r["missing"] or r["overcounted"] for r in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
