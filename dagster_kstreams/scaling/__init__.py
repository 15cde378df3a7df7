"""Elastic workers, pure: how many, which tasks each, and how to get there safely.

Standard library only: no Kafka, Spark or Dagster here, so every decision is unit tested.

* :mod:`.config` — the limits and targets (:class:`ScalingConfig`);
* :mod:`.measurements` — lag snapshots, input rates and capacities from the workers' reports;
* :mod:`.selectivity` — a downstream sub-topology's input rate bounded by its upstreams' (DS2);
* :mod:`.demand` — what each sub-topology asks of the fleet at a tick (lag, rate, capacity);
* :mod:`.policy` — desired worker count from lag, input rate and measured throughput,
  with scale-down stabilization;
* :mod:`.backlog` — whether a backlog is being drained (the count holds, then falls in one step);
* :mod:`.assignment` — sticky balanced assignment of tasks to workers;
* :mod:`.fleet` — the workers' runs as the sensor sees them, and a plan's parts;
* :mod:`.plan` — launch, retag, retire (or cancel), the two-phase task handover, and warm
  standbys (promoted first, replaced, demoted into);
* :mod:`.backoff` — restart backoff for worker ids whose runs keep failing;
* :mod:`.tick` — one lag-sensor tick composing them, with a JSON-able state for the cursor.
"""

from .assignment import assign_tasks, moved_tasks
from .backoff import RunOutcome, failure_streak, relaunch_at, restart_delay
from .ids import lowest_free_worker_ids, subtopology_of, task_sort_key, worker_id, worker_index, worker_sort_key
from .fleet import Handover, ReconciliationPlan, Worker, WorkerLaunch, WorkerRetag, WorkerState
from .plan import plan_reconciliation, replan_handovers
from .config import ScalingConfig
from .measurements import (
    LagSnapshot,
    TaskOffsets,
    ThroughputSample,
    capacity_floor,
    capacity_floors,
    capacity_to_plan_with,
    input_rates,
    measured_capacities,
    measured_capacity,
    smoothed_rates,
)
from .demand import SubtopologyDemand, required_rate, subtopology_demands
from .policy import (
    Recommendation,
    StabilizationState,
    desired_workers,
    recommend,
    rate_is_rising,
    stabilize,
    worker_bounds,
)
from .selectivity import bounded_rates, measured_selectivities, offset_selectivities, rate_bounds
from .tick import ScalingState, TickDecision, decide_tick

__all__ = [
    "Handover",
    "LagSnapshot",
    "Recommendation",
    "ReconciliationPlan",
    "RunOutcome",
    "ScalingConfig",
    "ScalingState",
    "StabilizationState",
    "SubtopologyDemand",
    "TaskOffsets",
    "ThroughputSample",
    "TickDecision",
    "Worker",
    "WorkerLaunch",
    "WorkerRetag",
    "WorkerState",
    "assign_tasks",
    "bounded_rates",
    "capacity_floor",
    "capacity_floors",
    "capacity_to_plan_with",
    "decide_tick",
    "desired_workers",
    "failure_streak",
    "input_rates",
    "smoothed_rates",
    "lowest_free_worker_ids",
    "measured_capacities",
    "measured_capacity",
    "measured_selectivities",
    "moved_tasks",
    "offset_selectivities",
    "plan_reconciliation",
    "replan_handovers",
    "recommend",
    "relaunch_at",
    "required_rate",
    "restart_delay",
    "rate_bounds",
    "rate_is_rising",
    "stabilize",
    "subtopology_demands",
    "subtopology_of",
    "task_sort_key",
    "worker_bounds",
    "worker_id",
    "worker_index",
    "worker_sort_key",
]
