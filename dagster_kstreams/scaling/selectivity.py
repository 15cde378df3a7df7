"""A downstream sub-topology's input rate, bounded by what its upstreams produce at their own input
rate (DS2's selectivity, Kalavri et al., OSDI'18).

A sub-topology fed by another (through a repartition topic) sees as its input whatever its upstream
writes. While the upstream drains a backlog it writes at its catch-up pace, several times the rate
of the application's own input: read from the topic's end offsets, that pace looks like a rate the
downstream must keep up with for good, and it gets workers it loses a scale-down window later.
DS2 instead derives each operator's rate from its upstream's: ``rate(d) = sum over u of rate(u) x
selectivity(u -> d)``, the selectivity being records out per record in, measured. Here the measured
rate of ``d`` is capped at that sum, so what arrives beyond it counts as what it is (backlog the
upstream moved downstream, drained at the measured capacity through the lag term), not as input
to provision for. Only a cap: a downstream whose measured rate is lower keeps its own.

Guarantees: a sub-topology is bounded only when every topic it reads is written by sub-topologies
of the application (``upstreams``, given by the caller), none of them itself, and the selectivity
of every one of them is measured (from the reports, :func:`measured_selectivities`, else the offsets,
:func:`offset_selectivities`); otherwise its measured rate stands as it did before the bound. With no measurement the upstream's output per input is unknown
(a ``flat_map`` writes several records per record, a filter fewer), so any cap would be a guess
that could starve the downstream; and the first reports of an upstream worker carry the
measurement within ``report_interval_seconds`` of its work.

Before those reports (the ticks between an upstream's first batch and its first report, which are
when a backlog starts to drain), a sub-topology with a single upstream has its selectivity read
from the offsets instead (:func:`offset_selectivities`): what its topics grew by per record the
upstream committed, between the last two snapshots. An upstream writes a batch's output before it
commits the batch's input offsets, so a snapshot in mid-batch reads it high (a looser cap, toward
the measured rate), and transaction markers count as records downstream (high again).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from .config import ScalingConfig
from .ids import subtopology_of
from .measurements import LagSnapshot, ThroughputSample

# Fewer records in than this in the throughput window measure no selectivity: a handful of records
# of a filter or a flat_map says little about the next thousand.
SELECTIVITY_MIN_RECORDS = 100


def measured_selectivities(samples: Iterable[ThroughputSample], upstreams: Mapping[str, Collection[str]],
                           now: float, config: ScalingConfig) -> dict[tuple[str, str], float]:
    """Records written for ``d`` per record read, of each upstream ``u`` of each ``d`` in
    ``upstreams``, keyed ``(u, d)``: over the reports of ``u``'s tasks within the throughput window
    that say what they wrote (cold ones too: a ratio does not depend on speed). Measured once those
    reports read at least :data:`SELECTIVITY_MIN_RECORDS` records."""
    wanted = {(up, down) for down, ups in upstreams.items() for up in ups}
    feeding = {up for up, _ in wanted}
    oldest = now - config.throughput_window_seconds
    records_in: dict[str, int] = {}
    records_out: dict[tuple[str, str], int] = {}
    for sample in samples:
        up = subtopology_of(sample.task_id)
        if sample.time < oldest or sample.records_out is None or up not in feeding:
            continue
        records_in[up] = records_in.get(up, 0) + max(0, sample.records)
        for down, count in sample.records_out.items():
            if (up, down) in wanted:
                records_out[(up, down)] = records_out.get((up, down), 0) + max(0, count)
    return {(up, down): records_out.get((up, down), 0) / records_in[up] for up, down in wanted
            if records_in.get(up, 0) >= SELECTIVITY_MIN_RECORDS}


def offset_selectivities(previous: LagSnapshot | None, snapshot: LagSnapshot,
                         upstreams: Mapping[str, Collection[str]]) -> dict[tuple[str, str], float]:
    """For each sub-topology of ``upstreams`` with one upstream ``u`` (another than itself): the growth
    of its end offsets per record ``u``'s committed offsets moved on between the two snapshots, keyed
    ``(u, d)``, once ``u`` committed at least :data:`SELECTIVITY_MIN_RECORDS` (the module docstring:
    a fallback for the ticks before the upstream's reports say)."""
    if previous is None:
        return {}
    committed: dict[str, int] = {}
    grown: dict[str, int] = {}
    for task, offsets in snapshot.tasks.items():
        before = previous.tasks.get(task)
        if before is None:
            continue
        sub = subtopology_of(task)
        committed[sub] = committed.get(sub, 0) + max(0, offsets.committed_offset - before.committed_offset)
        grown[sub] = grown.get(sub, 0) + max(0, offsets.end_offset - before.end_offset)
    found = {}
    for down, ups in upstreams.items():
        if len(ups) != 1:
            continue
        (up,) = ups
        if up != down and committed.get(up, 0) >= SELECTIVITY_MIN_RECORDS:
            found[(up, down)] = grown.get(down, 0) / committed[up]
    return found


def rate_bounds(rates: Mapping[str, float], upstreams: Mapping[str, Collection[str]],
                selectivities: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """What each sub-topology of ``upstreams`` can receive at its upstreams' input rates: the sum of
    each upstream's rate (capped at its own bound when it has one) times its selectivity. None for a
    sub-topology on a cycle through topics (its rate cannot be derived from itself), or with an
    upstream unknown to ``rates`` or not measured (the module docstring)."""
    cyclic = {sub for sub in upstreams if _reaches(sub, sub, upstreams)}
    bounds: dict[str, float] = {}

    def bound(down: str) -> float | None:
        if down not in bounds and down in upstreams and down not in cyclic:
            ups = upstreams[down]
            if ups and all(up in rates and (up, down) in selectivities for up in ups):
                total = 0.0
                for up in ups:
                    upstream_bound = bound(up)
                    rate = rates[up] if upstream_bound is None else min(rates[up], upstream_bound)
                    total += rate * selectivities[(up, down)]
                bounds[down] = total
        return bounds.get(down)

    for down in upstreams:
        bound(down)
    return bounds


def _reaches(start: str, target: str, upstreams: Mapping[str, Collection[str]]) -> bool:
    """Whether ``target`` is upstream of ``start`` (through one or more topics)."""
    seen: set[str] = set()
    stack = list(upstreams.get(start, ()))
    while stack:
        sub = stack.pop()
        if sub == target:
            return True
        if sub not in seen:
            seen.add(sub)
            stack.extend(upstreams.get(sub, ()))
    return False


def bounded_rates(rates: Mapping[str, float], bounds: Mapping[str, float]) -> dict[str, float]:
    """``rates`` with each one that has a bound capped at it."""
    return {sub: min(rate, bounds[sub]) if sub in bounds else rate for sub, rate in rates.items()}
