"""Fault injection under exactly-once (issue 16): two processes on one task, and random SIGKILLs.

    .venv/bin/python -m bench.exactly_once_faults --pairs 50 --kills 20 [--bootstrap HOST:PORT]

A word count (split, repartition by word, count) of ``--lines`` lines on 2 partitions, run with
``dagster-kstreams run --processing-guarantee exactly_once_v2`` in subprocesses:

* **pairs**: each round on a fresh application, ``run --task 0_0 --task 0_1`` twice, the second
  started a random 0-12 s after the first (either may be fenced: that is the point), then
  ``run --all`` to finish.
* **kills**: one application, ``run --all`` SIGKILLed at a random moment 2-15 s after it starts,
  ``--kills`` times, then run to the end.

After each, read ``read_committed`` as any downstream reader would: the repartition topic must
hold exactly one record per word of the input (a duplicate batch would add records, a lost one
remove them), and the final counts must equal the input's. Prints one line per round and a
summary; the exit code is 1 if any round was not exact. Results go to
``bench/results/exactly-once-faults-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from bench.common import bench_workspace, log
from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.kafka.records import final_values, produce, read_topic

REPO = Path(__file__).resolve().parent.parent
BROKER_PORT = 39400
TOPOLOGY = '''
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.serdes import Serdes

def build():
    builder = StreamsBuilder()
    (builder.stream({source!r}, Consumed.with_(Serdes.String(), Serdes.String()))
     .flat_map_values(lambda line: line.split())
     .group_by(lambda _key, word: word, Grouped.with_(Serdes.String(), Serdes.String()))
     .count().to_stream().to({sink!r}, Produced.with_(Serdes.String(), Serdes.Long())))
    return builder
'''


class Round:
    """One application: its topics, its topology module and the input's expected counts."""

    def __init__(self, bootstrap: str, work: Path, lines: int, name: str):
        tag = uuid.uuid4().hex[:6]
        self.bootstrap, self.work = bootstrap, work / f"{name}-{tag}"
        self.work.mkdir(parents=True)
        self.source, self.sink, self.app_id = f"eosf-in-{tag}", f"eosf-out-{tag}", f"eosf-{name}-{tag}"
        self.admin = KafkaAdmin(bootstrap)
        self.admin.create_topics({self.source: 2, self.sink: 2})
        rng = random.Random(tag)
        records = [(f"k{i}".encode(), " ".join(f"w{rng.randrange(300)}" for _ in range(rng.randint(1, 8))).encode(),
                    i % 2) for i in range(lines)]
        produce(bootstrap, self.source, records)
        self.expected = Counter(word for _, value, _ in records for word in value.decode().split())
        (self.work / "faults_topology.py").write_text(TOPOLOGY.format(source=self.source, sink=self.sink))

    def command(self, *tasks: str) -> list[str]:
        which = [arg for task in tasks for arg in ("--task", task)] or ["--all"]
        return [sys.executable, "-m", "dagster_kstreams.cli", "run", "faults_topology:build", "--app-id", self.app_id,
                *which, "--bootstrap-servers", self.bootstrap, "--state-location", str(self.work / "state"),
                "--master", "local[1]", "--max-records-per-batch", "2000",
                "--processing-guarantee", "exactly_once_v2"]

    def start(self, *tasks: str) -> subprocess.Popen:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(self.work), str(REPO), os.environ.get("PYTHONPATH")]))}
        return subprocess.Popen(self.command(*tasks), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=str(self.work), start_new_session=True)

    def finish(self) -> None:
        process = self.start()
        _, stderr = process.communicate(timeout=900)
        if process.returncode != 0:
            raise RuntimeError(f"the finishing run failed: {stderr.strip().splitlines()[-1:]}")

    def verdict(self) -> dict:
        [repartition] = [t for t in self.admin.list_topics() if t.startswith(self.app_id) and t.endswith("-repartition")]
        words = len(read_topic(self.bootstrap, repartition))
        counts = final_values(read_topic(self.bootstrap, self.sink), bytes.decode, lambda v: struct.unpack(">q", v)[0])
        expected_words = sum(self.expected.values())
        wrong = {word: (counts.get(word), n) for word, n in self.expected.items() if counts.get(word) != n}
        return {"repartition_records": words, "input_words": expected_words, "wrong_counts": len(wrong),
                "exact": words == expected_words and not wrong}


def pair_round(bootstrap: str, work: Path, lines: int, index: int, rng: random.Random) -> dict:
    round_ = Round(bootstrap, work, lines, f"pair{index}")
    delay = rng.uniform(0, 12)
    first = round_.start("0_0", "0_1")
    time.sleep(delay)
    second = round_.start("0_0", "0_1")
    outcomes = []
    for process in (first, second):
        _, stderr = process.communicate(timeout=900)
        last = stderr.strip().splitlines()[-1:] if process.returncode else []
        outcomes.append({"exit": process.returncode, "last_line": last[0][:600] if last else ""})
    round_.finish()
    return {"round": index, "delay_s": round(delay, 2), "processes": outcomes, **round_.verdict()}


def kill_round(bootstrap: str, work: Path, lines: int, kills: int, rng: random.Random) -> dict:
    round_ = Round(bootstrap, work, lines, "kills")
    done_kills = []
    while len(done_kills) < kills:
        process = round_.start()
        after = rng.uniform(2, 15)
        try:
            process.wait(timeout=after)
            break  # finished before the kill: the input is processed
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
            done_kills.append(round(after, 2))
    round_.finish()
    return {"kills_at_s": done_kills, **round_.verdict()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    started = dt.datetime.now(dt.timezone.utc)
    result: dict = {"date": started.isoformat(timespec="seconds"), "lines": args.lines, "pairs": [], "kills": None,
                    "load_average_1m_before": round(os.getloadavg()[0], 1)}
    output = Path(args.output or REPO / "bench" / "results" / f"exactly-once-faults-{started:%Y-%m-%d}.json")

    def record() -> bool:  # after every round, so a run cut short still leaves its rounds
        exact = all(p["exact"] for p in result["pairs"]) and (result["kills"] is None or result["kills"]["exact"])
        result["all_exact"] = exact
        output.write_text(json.dumps(result, indent=1) + "\n")
        return exact

    with bench_workspace("bench-eos-faults-", args.bootstrap, BROKER_PORT) as (bootstrap, work):
        if args.kills:
            result["kills"] = kill_round(bootstrap, work, args.lines * 5, args.kills, rng)
            log(f"kills: {result['kills']}")
            record()
        for index in range(args.pairs):
            outcome = pair_round(bootstrap, work, args.lines, index, rng)
            result["pairs"].append(outcome)
            log(f"pair {index}: second started {outcome['delay_s']} s later, exits "
                f"{[p['exit'] for p in outcome['processes']]}, exact={outcome['exact']} "
                f"({outcome['repartition_records']} of {outcome['input_words']} words)")
            record()
    exact = record()
    log(f"{sum(p['exact'] for p in result['pairs'])} of {len(result['pairs'])} pairs exact; kills exact: "
        f"{result['kills']['exact'] if result['kills'] else '-'}; written to {output}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
