"""Scaling at scale, by simulation (issue 13): the library's policy and plan against KEDA's Kafka
scaler and a Flink-autoscaler-style rule, on 64, 128 and 256 partitions and up to 64 workers.

    .venv/bin/python -m bench.simulate_scaling [--sizes 64,128,256] [--workloads burst,ramp,diurnal,failure,pipeline]
        [--output bench/results/simulation-<date>]

The workers, tasks and reports are a model (``bench/scaling_model.py``, whose docstring says where
each of its figures was measured: a cold worker ready 6.1 s after launch, a fresh session's first
queries 5.9 s more, 0.65 s per task started on a warm session, 2,431.6 records/s per worker core);
everything the sensor decides is the library's own code (``decide_tick``, the sticky assignment,
the two-phase handover). The rules (``bench/scaling_rules.py``) tick every 30 s (the lag sensor's
default ``sensor_interval_seconds`` and KEDA's default polling interval) and all reconcile through
the same plan, so only the count differs. ``ours+standby`` is the library with one warm standby;
``ours-calibrated`` has its ``default_worker_records_per_second`` set to the measured 2,431.6 (what
an operator who ran ``bench.autoscaling`` would configure) instead of the library's 1,000.

The workloads (a 10x burst, a slow ramp, a diurnal wave, a failed worker, and a pipeline of two
sub-topologies whose upstream drains a backlog) and the start of each
run are described in ``bench/scaling_workloads.py``; the figures in ``bench/scaling_metrics.py``.
Every configuration is the library's default apart from ``max_workers=64`` (so the policy plans
with its default capacity, 1,000 records/s, until it measures one).
Results: ``<output>.json`` and ``.md`` (the table), ``<output>-<workload>.png`` (lag and active
workers over time, one column per size).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

try:  # the bench extra (pyproject.toml); without it the .json and .md are written, the plots skipped
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # (after the backend is chosen)
except ImportError:
    plt = None

from bench.scaling_metrics import RunSummary  # noqa: E402
from bench.scaling_model import ModelParameters  # noqa: E402
from bench.scaling_workloads import (  # noqa: E402
    RECORDS_PER_PARTITION, RULES, SENSOR_INTERVAL_SECONDS, WORKLOADS, Trace, Workload, scaling_settings, simulate)
from dagster_kstreams.scaling import ScalingConfig  # noqa: E402

def goal_verdicts(summaries: Sequence[RunSummary]) -> list[dict]:
    """Issue 13's goal for each of our variants against KEDA on the same workload and size:
    converged in at most 2 decisions per change (``bench/scaling_metrics.py``: a phase's decisions
    over its changes of need), no flap, fewer worker-seconds, a peak lag no higher."""
    keda = {(s.workload, s.partitions): s for s in summaries if s.rule == "keda"}
    verdicts = []
    for s in summaries:
        other = keda.get((s.workload, s.partitions))
        if not s.rule.startswith("ours") or other is None:
            continue
        checks = {"converged_within_2": s.decisions_per_change <= 2, "no_flaps": s.flaps == 0,
                  "fewer_worker_seconds_than_keda": s.worker_seconds < other.worker_seconds,
                  "peak_lag_at_most_keda": s.peak_lag <= other.peak_lag}
        verdicts.append({"rule": s.rule, "workload": s.workload, "partitions": s.partitions, **checks,
                         "met": all(checks.values())})
    return verdicts


def table(summaries: Sequence[RunSummary]) -> str:
    lines = ["| workload | partitions | rule | decisions | per phase (changes of need) | decisions per change | flaps "
             "| peak workers (overshoot) | peak lag (after the first change) | lag-seconds (M) | worker-seconds "
             "| tasks moved | lag growth at the end (records/s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        lines.append(f"| {s.workload} | {s.partitions} | {s.rule} | {s.decisions} | "
                     f"{' / '.join(f'{d} ({c})' for d, c in zip(s.converged, s.need_changes))} | "
                     f"{s.decisions_per_change:.2f} | {s.flaps} | {s.peak_workers} ({s.overshoot}) | "
                     f"{s.peak_lag:,} ({s.peak_lag_after_change:,}) | {s.lag_seconds / 1e6:,.1f} | "
                     f"{s.worker_seconds:,.0f} | {s.tasks_moved:,} | {s.end_lag_growth:,.0f} |")
    return "\n".join(lines)


def plot(workload: Workload, sizes: Sequence[int], traces: dict[tuple[int, str], Trace], path: Path) -> None:
    figure, axes = plt.subplots(2, len(sizes), figsize=(5 * len(sizes), 6.5), squeeze=False, sharex=True)
    for column, size in enumerate(sizes):
        for rule in RULES:
            trace = traces.get((size, rule))
            if trace is None:
                continue
            axes[0][column].plot(trace.times, [lag / 1e6 for lag in trace.lags], label=rule, linewidth=1)
            axes[1][column].step(trace.times, trace.active, where="post", label=rule, linewidth=1)
        axes[0][column].set_title(f"{workload.name}, {size} partitions")
        axes[0][column].set_ylabel("lag (M records)")
        axes[1][column].set_ylabel("active workers")
        axes[1][column].set_xlabel("seconds")
        for event in workload.events:
            for row in (0, 1):
                axes[row][column].axvline(event, color="grey", linestyle=":", linewidth=0.8)
    axes[0][0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128,256", help="partition counts, comma-separated")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="of: " + ", ".join(WORKLOADS))
    parser.add_argument("--rules", default=",".join(RULES), help="of: " + ", ".join(RULES))
    parser.add_argument("--max-workers", type=int, default=64)
    parser.add_argument("--sensor-interval", type=float, default=SENSOR_INTERVAL_SECONDS,
                        help="seconds between ticks, every rule (KEDA's lagThreshold follows it)")
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a ScalingConfig setting (repeatable), e.g. whole_task_workers=false: the configuration "
                             "every rule is given (ours in full, flink-style its targets, keda max_workers)")
    parser.add_argument("--output", default=f"bench/results/simulation-{dt.date.today().isoformat()}",
                        help="path stem of the .json, .md and .png files")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    rules = args.rules.split(",")
    config = ScalingConfig(max_workers=args.max_workers, **scaling_settings(args.set))
    params = ModelParameters()
    summaries, plots = [], []
    started = time.monotonic()
    for name in args.workloads.split(","):
        workload = WORKLOADS[name]
        traces = {}
        for size in sizes:
            for rule in rules:
                summary, traces[(size, rule)] = simulate(workload, size, rule, config, params, args.sensor_interval)
                summaries.append(summary)
                print(f"{name:8} {size:4} {rule:13} decisions {summary.decisions:3} flaps {summary.flaps} "
                      f"peak lag {summary.peak_lag:>10,} worker-s {summary.worker_seconds:>9,.0f}", flush=True)
        png = Path(f"{args.output}-{name}.png")
        if plt is None:
            print(f"no plot {png}: matplotlib is not installed (pip install -e '.[bench]')", flush=True)
            continue
        plot(workload, sizes, traces, png)
        plots.append(str(png))
    verdicts = goal_verdicts(summaries)
    result = {"created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "seconds": round(time.monotonic() - started, 1), "sensor_interval_seconds": args.sensor_interval,
              "records_per_partition": RECORDS_PER_PARTITION, "parameters": asdict(params), "config": asdict(config),
              "runs": [s.to_dict() for s in summaries], "goals": verdicts, "plots": plots}
    Path(f"{args.output}.json").write_text(json.dumps(result, indent=1) + "\n")
    text = table(summaries)
    Path(f"{args.output}.md").write_text(text + "\n")
    print(text)
    print(f"goal met: {sum(v['met'] for v in verdicts)} of {len(verdicts)}; {result['seconds']} s")


if __name__ == "__main__":
    main()
