"""The worker-count rules ``bench/simulate_scaling.py`` compares, each as a sensor tick.

Every rule sees the same inputs (the model's :class:`LagSnapshot`, its fleet as :class:`Worker`
values, the workers' :class:`ThroughputSample` reports) and reaches its count through the library's
own reconciliation (:func:`plan_reconciliation`: sticky balanced assignment, two-phase handover,
tasks kept until the receiver is ready), so only the count differs between them:

* :class:`OursRule`: the library's :func:`decide_tick`, unchanged (DS2/Flink-style count,
  scale-down stabilization, standbys when configured);
* :class:`KedaRule`: KEDA's Kafka scaler: ``replicas = ceil(total lag / lag_threshold)``, at least
  one (``minReplicaCount`` 1), capped at the partitions (and ``max_workers``), each tick; below
  the current count only as far as the highest recommendation of the last 300 s (the HPA's
  downscale stabilization, which is what holds replicas between 1 and N; KEDA's own
  ``cooldownPeriod``, also 300 s, only applies to scaling to zero, which ``min_workers=1`` rules out);
* :class:`FlinkStyleRule`: the Flink Kubernetes autoscaler's rule: target rate = input rate
  (averaged over ``metrics_window_seconds``) + lag / ``catch_up_seconds``; no change while the
  utilization the current count would have stays within ``target_utilization +- 0.3`` (its
  ``target.utilization.boundary``); otherwise ``ceil(target rate / (target_utilization x
  capacity))``; after a change no decision for ``stabilization_seconds``; down only once it has watched
  ``scale_down_delay_seconds`` since the last change, and then to the highest recommendation of that
  delay. Capacity is the true processing rate
  from busy time, as Flink's ``busyTimeMsPerSecond`` gives it whether or not a task is behind:
  records over worker-seconds of the warm reports in the throughput window
  (:func:`busy_time_capacity`), the configured default until there is one.

Flink restarts the whole job on a rescale; that is not modelled (its tasks move like ours).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dagster_kstreams.scaling import (LagSnapshot, ReconciliationPlan, ScalingConfig, ScalingState, ThroughputSample,
                                      Worker, WorkerState, decide_tick, plan_reconciliation)


def running_count(workers: Sequence[Worker]) -> int:
    return sum(1 for worker in workers if worker.state is WorkerState.RUNNING)


def keda_replicas(total_lag: int, lag_threshold: float, partitions: int, max_replicas: int,
                  min_replicas: int = 1) -> int:
    """KEDA's Kafka scaler before the HPA: ``ceil(lag / lagThreshold)``, capped at the partition
    count (``allowIdleConsumers: false``) and ``max_replicas``, at least ``min_replicas``."""
    wanted = math.ceil(total_lag / lag_threshold)
    return max(min_replicas, min(wanted, partitions, max_replicas))


def busy_time_capacity(samples: Sequence[ThroughputSample], now: float, config: ScalingConfig) -> float | None:
    """Records per second of busy time over the warm worker reports of the throughput window."""
    records = seconds = 0.0
    for sample in samples:
        if sample.time >= now - config.throughput_window_seconds and sample.is_warm(config) and sample.worker_seconds:
            records += sample.records
            seconds += sample.worker_seconds
    return records / seconds if records and seconds else None


def highest_recent(history: list[tuple[float, int]], now: float, window: float) -> int:
    """The highest recommendation of the last ``window`` seconds (the HPA's downscale stabilization)."""
    return max(count for time, count in history if time > now - window)


@dataclass
class OursRule:
    """The library's sensor tick, state carried between ticks as the cursor does."""

    config: ScalingConfig
    name: str = "ours"
    state: ScalingState = ScalingState()
    upstreams: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # the sensor's, from the topology

    def tick(self, snapshot: LagSnapshot, workers: Sequence[Worker],
             samples: Sequence[ThroughputSample]) -> tuple[int, ReconciliationPlan]:
        decision = decide_tick(snapshot, workers, self.config, self.state, samples, upstreams=self.upstreams)
        self.state = decision.state
        return decision.recommendation.desired_workers, decision.plan


@dataclass
class KedaRule:
    """KEDA's Kafka scaler with the HPA's default downscale stabilization (module docstring)."""

    lag_threshold: float
    max_workers: int
    stabilization_seconds: float = 300.0
    name: str = "keda"

    initial_workers: int = 1
    started_at: float = 0.0

    def __post_init__(self) -> None:
        # The count the run starts with stands for the HPA's earlier recommendations.
        self.history: list[tuple[float, int]] = [(self.started_at, self.initial_workers)]

    def desired(self, snapshot: LagSnapshot, current: int) -> int:
        wanted = keda_replicas(snapshot.total_lag, self.lag_threshold, len(snapshot.tasks), self.max_workers)
        self.history = [(t, n) for t, n in self.history if t > snapshot.time - self.stabilization_seconds]
        self.history.append((snapshot.time, wanted))
        if wanted >= current:
            return wanted
        return min(current, highest_recent(self.history, snapshot.time, self.stabilization_seconds))

    def tick(self, snapshot: LagSnapshot, workers: Sequence[Worker],
             samples: Sequence[ThroughputSample]) -> tuple[int, ReconciliationPlan]:
        count = self.desired(snapshot, running_count(workers))
        return count, plan_reconciliation(snapshot.tasks.keys(), workers, count, task_weights=snapshot.lags())


@dataclass
class FlinkStyleRule:
    """The Flink Kubernetes autoscaler's rule (module docstring)."""

    config: ScalingConfig
    metrics_window_seconds: float = 300.0
    stabilization_seconds: float = 300.0
    scale_down_delay_seconds: float = 300.0
    utilization_boundary: float = 0.3
    name: str = "flink-style"

    def __post_init__(self) -> None:
        self.end_offsets: list[tuple[float, int]] = []
        self.last_change: float | None = None
        self.capacity = self.config.default_worker_records_per_second
        self.recommended: list[tuple[float, int]] = []
        self.watching_since = math.inf  # set on the first tick

    def input_rate(self, snapshot: LagSnapshot) -> float:
        total_end = sum(offsets.end_offset for offsets in snapshot.tasks.values())
        self.end_offsets = [(t, e) for t, e in self.end_offsets if t >= snapshot.time - self.metrics_window_seconds]
        self.end_offsets.append((snapshot.time, total_end))
        (first_time, first_end) = self.end_offsets[0]
        return (total_end - first_end) / (snapshot.time - first_time) if snapshot.time > first_time else 0.0

    def desired(self, snapshot: LagSnapshot, current: int, samples: Sequence[ThroughputSample]) -> int:
        config = self.config
        rate = self.input_rate(snapshot)
        self.watching_since = min(self.watching_since, snapshot.time)
        measured = busy_time_capacity(samples, snapshot.time, config)
        if measured is not None:
            self.capacity = measured
        target_rate = rate + snapshot.total_lag / config.catch_up_seconds
        upper = min(config.max_workers, len(snapshot.tasks))
        if current == 0:
            return max(config.min_workers, 1)
        if self.last_change is not None and snapshot.time - self.last_change < self.stabilization_seconds:
            return current
        utilization = target_rate / (current * self.capacity)
        low = config.target_utilization - self.utilization_boundary
        high = config.target_utilization + self.utilization_boundary
        wanted = current
        if not low <= utilization <= high:
            wanted = math.ceil(target_rate / (config.target_utilization * self.capacity))
            wanted = max(config.min_workers, 1, min(upper, wanted))
        self.recommended = [(t, n) for t, n in self.recommended if t > snapshot.time - self.scale_down_delay_seconds]
        self.recommended.append((snapshot.time, wanted))
        if wanted < current:
            # Down only to the highest recommendation of a whole delay watched since the last change.
            if snapshot.time - self.watching_since < self.scale_down_delay_seconds:
                wanted = current
            else:
                wanted = min(current, highest_recent(self.recommended, snapshot.time, self.scale_down_delay_seconds))
        if wanted != current:
            self.last_change = self.watching_since = snapshot.time
        return wanted

    def tick(self, snapshot: LagSnapshot, workers: Sequence[Worker],
             samples: Sequence[ThroughputSample]) -> tuple[int, ReconciliationPlan]:
        count = self.desired(snapshot, running_count(workers), samples)
        return count, plan_reconciliation(snapshot.tasks.keys(), workers, count, task_weights=snapshot.lags())
