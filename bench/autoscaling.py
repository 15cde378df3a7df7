"""Autoscaling under a burst: the lag sensor's elastic workers versus one fixed worker (issues 7, 13).

    .venv/bin/python -m bench.autoscaling [--rate 200] [--burst-factor 40] [--burst-seconds 60]
        [--duration 300] [--partitions 4] [--max-workers 2] [--modes autoscale,standby,fixed]
        [--bootstrap HOST:PORT] [--output STEM]

Everything is the real thing: a Kafka broker (a LocalBroker on ports 29100/29101 unless
--bootstrap), a Dagster instance with ``dagster-daemon run`` (sensor daemon, queued run
coordinator, default run launcher), the library's lag sensor deciding with its policy
(``decide_tick``) every ``--sensor-interval`` seconds, and worker runs that are subprocesses,
each with its own SparkSession (``local[1]``: a worker is one core).

The application is the word-count example (``assets/word_count.py``: split lines, repartition
by word, count) over a ``--partitions``-partition input topic, fed by the library's generator
(``text-lines``: 3-14 words per line). Each mode runs alone, one after the other:

* ``autoscale``: ``min_workers=1, max_workers=--max-workers``;
* ``standby``: the same, with one warm standby worker (``standby_workers=1``): scale-up grants
  tasks to it first, then launches a new standby;
* ``fixed``: ``min_workers=max_workers=1``, the same sensor (it only replaces a dead worker).

The default burst (200 x 40 = 8,000 lines/s, about 70,000 words/s through the repartition topic)
is more than one ``local[1]`` worker absorbs, so that a second worker has work to take.

A second worker needs a core to add (``--pin-workers``, on by default with 2+ CPUs,
``bench/cpu_pinning.py``): the bench, its broker, the daemon and the first worker run on CPU 0,
every worker run after the first on the other CPUs, as a worker the sensor adds on a cluster lands
on a machine of its own. Unpinned, on 2 cores, a second worker only shares the cores the first
one, the broker and the generator already fill.

Per mode: once the first worker beats (its SparkSession is up), a few lines give every task its
cold first run; then the generator writes ``--rate`` lines/s, and once every task has run twice
more and one worker is live, the measurement starts (t=0): ``--steady-seconds`` at the steady rate, then
``--burst-seconds`` at ``rate x burst-factor``, then the steady rate until ``--duration``. Every
second the bench reads the application's lag (input and repartition topics, what the sensor sees)
and the worker runs. Reported:

* recovery: seconds from the end of the burst until the lag is back under the target (the
  highest lag of the steady phase before the burst, or ``--lag-target``); also from its start;
* peak lag after the burst began;
* scaling decisions: sensor ticks within the window whose desired worker count differed from the
  running count (from the sensor's lag observations), and worker runs launched;
* worker-seconds: the sum over worker runs of their time alive (created by the sensor until they
  ended, or the end of the window) within the window; a standby's time counts;
* for each elastic mode, whether it beat the fixed worker (issue 13's bar): back under the target
  sooner after the burst and a lower peak lag, at no more than twice the fixed worker's
  worker-seconds.

Results: ``bench/results/autoscaling-<date>.json`` and ``.md`` (a table; ``--output STEM`` names
them), and the table on stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Optional

from bench.autoscaling_figures import table, verdicts
from bench.autoscaling_mode import run_mode
from bench.common import bench_workspace, log
from bench.cpu_pinning import pin_self, split_cpus

REPO = Path(__file__).resolve().parent.parent
BROKER_PORT = 29100


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=200.0, help="steady input, lines/s (3-14 words each)")
    parser.add_argument("--burst-factor", type=float, default=40.0)
    parser.add_argument("--burst-seconds", type=float, default=60.0)
    parser.add_argument("--steady-seconds", type=float, default=30.0, help="steady phase before the burst")
    parser.add_argument("--duration", type=float, default=300.0, help="measurement window per mode, seconds")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-workers", type=int, default=2)
    parser.add_argument("--lag-target", type=int, default=None, help="default: the steady phase's peak lag")
    parser.add_argument("--sensor-interval", type=int, default=5)
    parser.add_argument("--catch-up-seconds", type=float, default=30.0)
    parser.add_argument("--stabilization-seconds", type=float, default=120.0,
                        help="scale-down window; longer than a worker's start (about a minute)")
    parser.add_argument("--default-capacity", type=float, default=3000.0,
                        help="records/s per worker until measured (one local[1] worker drained ~4,600/s here)")
    parser.add_argument("--min-sample-seconds", type=float, default=10.0,
                        help="worker time (backlogged tasks' shares) before capacity counts as measured")
    parser.add_argument("--warmup-timeout", type=float, default=420.0)
    parser.add_argument("--modes", default="autoscale,standby,fixed")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--pin-workers", action=argparse.BooleanOptionalAction, default=len(split_cpus()[1]) > 0,
                        help="the bench, its broker, the daemon and the first worker on CPU 0, every other worker "
                             "on the rest (default: on with 2+ CPUs)")
    parser.add_argument("--output-dir", default=str(REPO / "bench" / "results"))
    parser.add_argument("--output", default=None, help="result stem (default OUTPUT_DIR/autoscaling-<date>)")
    args = parser.parse_args(argv)
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    if not set(modes) <= {"autoscale", "standby", "fixed"}:
        parser.error("--modes: any of autoscale, standby, fixed")

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    code_version = head.strip() + ("+uncommitted changes" if dirty else "")
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    if args.pin_workers:
        first_cpu, spare = split_cpus()  # before pinning this process, which then sees only its first
        pin_self(first_cpu)
        args.cpus = (first_cpu, sorted(spare))
        log(f"CPU {first_cpu}: this process, its broker, the daemon and the first worker; CPUs {sorted(spare)}: "
            "the others")
    results = {}
    with bench_workspace("bench-autoscaling-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        for mode in modes:
            results[mode] = run_mode(mode, args, bootstrap, work)
            log(f"{mode}: {results[mode]['figures']}")
    report = {
        "started": started.isoformat(timespec="seconds"),
        "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "arguments": {k: v for k, v in vars(args).items() if k not in ("output_dir",)},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_before": load_before, "load_after": os.getloadavg()},
        "code_version": code_version,
        "modes": results,
        "verdicts": verdicts(results),
    }
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    stem = Path(args.output) if args.output else output / f"autoscaling-{started.date()}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = (f"Elastic workers vs one fixed worker: {args.rate:g} lines/s, burst x{args.burst_factor:g} for "
                f"{args.burst_seconds:g} s after {args.steady_seconds:g} s, {args.duration:g} s window, "
                f"{args.partitions} partitions, max {args.max_workers} workers"
                f"{'; added workers on CPUs of their own' if args.pin_workers else ''}; {report['started']}, "
                f"{os.cpu_count()} CPUs, load {load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} after.\n\n"
                + table(results) + "\n"
                + "".join(f"\n{name} beats the fixed worker (sooner, lower peak, <= 2x worker-seconds): "
                          f"{verdict['beats_fixed']} ({verdict})" for name, verdict in report["verdicts"].items()) + "\n")
    stem.with_suffix(".md").write_text(markdown)
    print(markdown)
    print(f"written to {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
