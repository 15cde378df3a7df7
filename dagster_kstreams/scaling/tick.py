"""One lag-sensor tick, pure: snapshot and fleet in, recommendation and plan out.

The sensor keeps :class:`ScalingState` in its cursor (``to_json``/``from_json``) so that
scale-down stabilization and the input rate survive between ticks.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field

from .backoff import relaunch_at
from .fleet import ReconciliationPlan, Worker, WorkerState
from .plan import plan_reconciliation
from .config import ScalingConfig
from .measurements import LagSnapshot, ThroughputSample, smoothed_rates
from .policy import Recommendation, StabilizationState, recommend

_STATE_VERSION = 2
# Version 1 kept one capacity for the whole application (lines and words alike); a cursor of
# that version is read without it, and the capacities are measured again.
_READABLE_VERSIONS = (1, _STATE_VERSION)


@dataclass(frozen=True)
class ScalingState:
    """What a tick needs from the ticks before it."""

    stabilization: StabilizationState = StabilizationState()
    last_snapshot: LagSnapshot | None = None
    measured_capacities: Mapping[str, float] = field(default_factory=dict)
    # the averaged input rate of each sub-topology (records/s) as of last_snapshot, and the
    # average's weight (policy.smoothed_rates); empty and 0 until measured
    input_rates: Mapping[str, float] = field(default_factory=dict)
    input_rate_weight: float = 0.0

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": _STATE_VERSION,
                "stabilization": self.stabilization.to_dict(),
                "last_snapshot": None if self.last_snapshot is None else self.last_snapshot.to_dict(),
                "measured_capacities": dict(self.measured_capacities),
                "input_rates": dict(self.input_rates),
                "input_rate_weight": self.input_rate_weight,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | None) -> ScalingState:
        """Parse a cursor; no cursor yet (None or empty) is a fresh state."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
            if data.get("version") not in _READABLE_VERSIONS:
                raise ValueError(f"unknown scaling state version {data.get('version')!r}")
            snapshot = data.get("last_snapshot")
            capacities = data.get("measured_capacities") or {}
            rates = data.get("input_rates") or {}  # absent from cursors written before it was kept
            return cls(
                stabilization=StabilizationState.from_dict(data["stabilization"]),
                last_snapshot=None if snapshot is None else LagSnapshot.from_dict(snapshot),
                measured_capacities={str(sub): float(capacity) for sub, capacity in capacities.items()},
                input_rates={str(sub): float(rate) for sub, rate in rates.items()},
                input_rate_weight=float(data.get("input_rate_weight") or 0.0),
            )
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as error:
            raise ValueError(f"malformed scaling state: {error}") from error


@dataclass(frozen=True)
class TickDecision:
    recommendation: Recommendation
    plan: ReconciliationPlan
    state: ScalingState

    def summary(self) -> dict:
        """Plain values for logs and run metadata."""
        standby_launches = self.plan.standby_launches
        return {
            **asdict(self.recommendation),
            "action": self.recommendation.action,
            "launch": [launch.worker_id for launch in self.plan.launch if launch.worker_id not in standby_launches],
            "launch_standby": list(standby_launches),
            "promote": list(self.plan.promoted),
            "demote": list(self.plan.demoted),
            "retag": [change.worker_id for change in self.plan.retag],
            "retire": list(self.plan.retire),
            "cancel": list(self.plan.cancel),
            "deferred": list(self.plan.deferred),
            "pending_handovers": len(self.plan.handovers),
        }


def decide_tick(
    snapshot: LagSnapshot,
    workers: Iterable[Worker],
    config: ScalingConfig,
    state: ScalingState | None = None,
    throughput: Iterable[ThroughputSample] = (),
    upstreams: Mapping[str, Collection[str]] | None = None,
) -> TickDecision:
    """Desired worker count (policy) and the plan to reach it (assignment, handovers).

    The tasks are the snapshot's tasks; their lag weighs where moved tasks go. ``workers``
    has the newest run of each worker id, failed ones included so that their replacements
    inherit their tasks; a failed worker id in restart backoff (its ``failures`` and
    ``failed_at``, see :mod:`.backoff`) is not relaunched before ``snapshot.time`` reaches
    its relaunch time. Standbys (``config.standby_workers``) are not running workers to the
    policy: the desired count is of active workers, and the plan fills it from the standbys first.
    ``upstreams``: for each sub-topology fed only by others of the app, their ids; with the
    workers' ``records_out`` it bounds that sub-topology's input rate (:mod:`.selectivity`).
    """
    state = state or ScalingState()
    workers = list(workers)
    running = sum(1 for worker in workers if worker.state is WorkerState.RUNNING)
    recommendation, stabilization = recommend(
        snapshot,
        running,
        config,
        previous_snapshot=state.last_snapshot,
        throughput=throughput,
        state=state.stabilization,
        last_measured_capacities=state.measured_capacities,
        last_input_rates=state.input_rates,
        last_input_rate_weight=state.input_rate_weight,
        upstreams=upstreams,
    )
    plan = plan_reconciliation(
        snapshot.tasks.keys(),
        workers,
        recommendation.desired_workers,
        task_weights=snapshot.lags(),
        deferred=[
            worker.worker_id for worker in workers
            if worker.state is WorkerState.FAILED
            and snapshot.time < relaunch_at(worker.failures, worker.failed_at, config)
        ],
        standby_workers=config.standby_workers,
    )
    capacities = {**state.measured_capacities, **recommendation.measured_capacities}
    # A rate is measured from the second snapshot on; before that there is nothing to average.
    rates, weight = {}, 0.0
    if state.last_snapshot is not None:
        rates = {sub: demand.input_rate for sub, demand in recommendation.demands.items()}
        _, weight = smoothed_rates({}, {}, snapshot.time - state.last_snapshot.time, config, state.input_rate_weight)
    return TickDecision(recommendation, plan, ScalingState(stabilization, snapshot, capacities, rates, weight))
