"""The latency bench's figures (pure logic, tests/test_latency_bench_logic.py): which output record
first reflects each input record, and the percentiles over the latencies.

A country's records are counted in the order they were produced (``bench/latency.py``'s docstring):
record k of country c is reflected by the first output record of c with count >= k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Produced:
    country: str
    seq: int  # k: this is the k-th record of its country (from 1)
    at: float  # wall-clock seconds, just before produce()
    measured: bool  # produced after the warm-up


@dataclass
class Output:
    country: str
    count: int
    appended: float  # broker log-append time, seconds
    received: float  # the bench consumer's wall clock when it got the record, seconds
    partition: int
    offset: int


@dataclass
class Match:
    by_append_ms: list = field(default_factory=list)
    by_receive_ms: list = field(default_factory=list)
    produced_at: list = field(default_factory=list)  # wall clock of each measured record's produce()
    missing: int = 0
    overcounted: dict = field(default_factory=dict)  # country -> highest count - records produced


def match(produced: Sequence[Produced], outputs: Sequence[Output]) -> Match:
    """Latency of every measured record: first output of its country, in log order, whose count
    is at least the record's rank in its country."""
    first_reflecting: dict[str, list] = {}  # country -> [(appended, received)] indexed by count - 1
    for output in sorted(outputs, key=lambda o: (o.partition, o.offset)):
        seen = first_reflecting.setdefault(output.country, [])
        while len(seen) < output.count:
            seen.append((output.appended, output.received))
    result = Match()
    produced_per_country: dict[str, int] = {}
    for record in produced:
        produced_per_country[record.country] = max(produced_per_country.get(record.country, 0), record.seq)
        if not record.measured:
            continue
        seen = first_reflecting.get(record.country, [])
        if record.seq > len(seen):
            result.missing += 1
            continue
        appended, received = seen[record.seq - 1]
        result.by_append_ms.append((appended - record.at) * 1000.0)
        result.by_receive_ms.append((received - record.at) * 1000.0)
        result.produced_at.append(record.at)
    for country, seen in first_reflecting.items():
        extra = len(seen) - produced_per_country.get(country, 0)
        if extra > 0:
            result.overcounted[country] = extra
    return result


def percentile(values: Sequence[float], p: float) -> Optional[float]:
    """Nearest-rank percentile (p in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100.0 * len(ordered)) - 1)]


def summary(values: Sequence[float]) -> dict:
    def rounded(value):
        return None if value is None else round(value, 1)

    return {"p50_ms": rounded(percentile(values, 50)), "p99_ms": rounded(percentile(values, 99)),
            "max_ms": rounded(max(values) if values else None), "min_ms": rounded(min(values) if values else None),
            "records": len(values)}


def per_second(produced_at: Sequence[float], latencies_ms: Sequence[float]) -> list[dict]:
    """p50, p99 and max of the records produced in each second of the measured part, in order:
    whether a p99 comes from steady batches or from stalls (a GC, a report, the JIT) shows here."""
    if not produced_at:
        return []
    start = min(produced_at)
    buckets: dict[int, list[float]] = {}
    for at, latency in zip(produced_at, latencies_ms):
        buckets.setdefault(int(at - start), []).append(latency)
    return [{"second": second, "records": len(values), **{key: value for key, value in summary(values).items()
                                                          if key in ("p50_ms", "p99_ms", "max_ms")}}
            for second, values in sorted(buckets.items())]


def table(results: dict) -> str:
    def ms(value):
        return "-" if value is None else f"{value:,.0f} ms"

    header = f"{'system':<48}{'p50':>12}{'p99':>12}{'max':>12}{'records':>10}{'missing':>9}"
    lines = [header, "-" * len(header)]
    for name, result in results.items():
        if "error" in result:
            lines.append(f"{name:<48}  failed: {result['error'][:120]}")
            continue
        figures = result["latency"]
        lines.append(f"{result['label']:<48}{ms(figures['p50_ms']):>12}{ms(figures['p99_ms']):>12}"
                     f"{ms(figures['max_ms']):>12}{figures['records']:>10,}{result['missing']:>9,}")
    return "\n".join(lines)
