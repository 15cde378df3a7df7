"""The limits and targets of one application's elastic workers: :class:`ScalingConfig`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScalingConfig:
    """Limits and targets of one application's elastic workers.

    ``default_worker_records_per_second`` stands in for a sub-topology's measured capacity
    until workers have reported a warm batch of one of its tasks (past the first
    ``warmup_batches`` runs of the task in its worker) of at least ``min_sample_seconds``;
    ``throughput_window_seconds`` is how far back measurements count.

    ``restart_backoff_seconds`` / ``max_restart_backoff_seconds``: a worker id whose runs keep
    failing is relaunched after a delay that doubles with each consecutive failure, up to the
    maximum (the first failure is replaced at once); see :mod:`.backoff`.

    ``rate_smoothing_seconds``: the time constant of the input rate's exponential average. End
    offsets move in steps (producers send in batches), so the rate between two ticks a few seconds
    apart swings around the true one; averaged over about this long it does not (0: no averaging).

    ``standby_workers``: warm standbys, worker runs kept up with a SparkSession and no tasks
    (Kafka Streams' idle instances beyond the task count). Scale-up and failover grant tasks to a
    standby first, which starts them at once, and a new standby is launched in its place
    (:mod:`.plan`). ``min_workers`` and ``max_workers`` bound the *active* workers only: standbys
    come on top, so an application runs at most ``max_workers + standby_workers`` worker runs, and
    keeps its standbys even while it has no active worker (``min_workers=0``), which is what makes
    its first scale-up instant. An application with no tasks keeps none.

    ``scale_down_follows_latest_rate`` and ``scale_down_dead_band``: how a scale-down is made in one
    step rather than a staircase (:mod:`.policy`'s docstring); the dead band is a fraction of the
    current count (0: any scale-down the window allows is made). ``scale_up_dead_band``: how far
    beyond the current count, as a fraction of it, the workers needed must be before a scale-up (0:
    any shortfall scales up), so that a steady stream read a little high does not flap.
    ``scale_down_waits_while_rate_rises``: no scale-down on a tick whose input rate over the last
    interval is above the averaged one (a scale-down then is undone by the rise, :mod:`.policy`).
    ``whole_task_workers``: a count whose busiest worker holds tasks whose lightest input alone
    exceeds one worker is raised to the fewest workers whose busiest does not (:mod:`.granularity`);
    off by default: it lowers lag at a cost in worker-seconds (``bench/README.md``, session 11).
    ``catch_up_at_full_capacity`` (off): the lag is drained within ``catch_up_seconds`` at full
    capacity, the headroom of ``target_utilization`` kept for the input alone
    (:func:`.demand.required_rate`); fewer worker-seconds, more lag (``bench/README.md``, session 15).
    ``lag_waits_for_measured_capacity``: a sub-topology's lag adds workers only once its capacity is
    known (measured, remembered, or a lower bound from warm reports), not on the bare default: a
    backlog that piled up while the first worker started is drained by that worker, whose reports
    then measure how fast it does it (:mod:`.policy`).
    ``bound_downstream_rates``: the input rate of a sub-topology fed only by others of the app is
    capped at what they produce at their own input rate (their input rate times their measured
    selectivity, records out per record in): an upstream draining a backlog writes at its catch-up
    pace, which is backlog moved downstream, not a rate to provision for (:mod:`.selectivity`;
    ``bench/README.md``, "Simulated again (session 16)").
    ``scale_down_after_backlog_drains``: while a backlog is being drained (its catch-up term still
    adds workers to what the input alone needs, and the lag fell since the last tick) no scale-down is
    made, and the window remembers the tick at the input's count; once drained, the count falls to
    it in one step rather than a staircase with the shrinking lag (:mod:`.backlog`; ``bench/README.md``,
    "Simulated again (session 17)").
    ``burst_end_window_seconds`` and ``burst_end_fall``: a burst's end. Once every count asked for
    over the last ``burst_end_window_seconds`` is at most the stabilization window's highest over
    ``burst_end_fall`` (the input fell to a third, say), a scale-down goes to their highest without
    waiting out the rest of the window; a dip to half still waits the whole window, and a fall seen on
    one tick only changes nothing (0: off; :func:`.policy.stabilize`; ``bench/README.md``, "Simulated
    again (session 26)").
    """

    min_workers: int = 1
    max_workers: int = 8
    catch_up_seconds: float = 300.0
    target_utilization: float = 0.9
    scale_down_stabilization_seconds: float = 300.0
    default_worker_records_per_second: float = 1000.0
    throughput_window_seconds: float = 900.0
    min_sample_seconds: float = 10.0
    warmup_batches: int = 1
    restart_backoff_seconds: float = 15.0
    max_restart_backoff_seconds: float = 600.0
    backoff_reset_seconds: float = 600.0
    rate_smoothing_seconds: float = 20.0
    standby_workers: int = 0
    scale_down_follows_latest_rate: bool = True
    scale_down_dead_band: float = 0.1
    scale_up_dead_band: float = 0.1
    scale_down_waits_while_rate_rises: bool = True
    whole_task_workers: bool = False
    catch_up_at_full_capacity: bool = False
    lag_waits_for_measured_capacity: bool = True
    bound_downstream_rates: bool = True
    scale_down_after_backlog_drains: bool = True
    burst_end_window_seconds: float = 120.0
    burst_end_fall: float = 3.0

    def __post_init__(self) -> None:
        if self.min_workers < 0:
            raise ValueError(f"min_workers must be >= 0, got {self.min_workers}")
        if self.max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {self.max_workers}")
        if self.min_workers > self.max_workers:
            raise ValueError(f"min_workers ({self.min_workers}) exceeds max_workers ({self.max_workers})")
        if not self.catch_up_seconds > 0:
            raise ValueError(f"catch_up_seconds must be > 0, got {self.catch_up_seconds}")
        if not 0 < self.target_utilization <= 1:
            raise ValueError(f"target_utilization must be in (0, 1], got {self.target_utilization}")
        if not self.scale_down_stabilization_seconds >= 0:
            raise ValueError(
                f"scale_down_stabilization_seconds must be >= 0, got {self.scale_down_stabilization_seconds}"
            )
        if not self.default_worker_records_per_second > 0:
            raise ValueError(
                f"default_worker_records_per_second must be > 0, got {self.default_worker_records_per_second}"
            )
        if not self.throughput_window_seconds > 0:
            raise ValueError(f"throughput_window_seconds must be > 0, got {self.throughput_window_seconds}")
        if not self.min_sample_seconds >= 0:
            raise ValueError(f"min_sample_seconds must be >= 0, got {self.min_sample_seconds}")
        if self.warmup_batches < 0:
            raise ValueError(f"warmup_batches must be >= 0, got {self.warmup_batches}")
        if not 0 <= self.restart_backoff_seconds <= self.max_restart_backoff_seconds:
            raise ValueError("restart_backoff_seconds must be >= 0 and at most max_restart_backoff_seconds, got "
                             f"{self.restart_backoff_seconds} and {self.max_restart_backoff_seconds}")
        if not self.backoff_reset_seconds > 0:
            raise ValueError(f"backoff_reset_seconds must be > 0, got {self.backoff_reset_seconds}")
        if not self.rate_smoothing_seconds >= 0:
            raise ValueError(f"rate_smoothing_seconds must be >= 0, got {self.rate_smoothing_seconds}")
        if not 0 <= self.scale_down_dead_band < 1:
            raise ValueError(f"scale_down_dead_band must be in [0, 1), got {self.scale_down_dead_band}")
        if not 0 <= self.scale_up_dead_band < 1:
            raise ValueError(f"scale_up_dead_band must be in [0, 1), got {self.scale_up_dead_band}")
        if not self.burst_end_window_seconds >= 0:
            raise ValueError(f"burst_end_window_seconds must be >= 0, got {self.burst_end_window_seconds}")
        if not self.burst_end_fall > 1:
            raise ValueError(f"burst_end_fall must be > 1, got {self.burst_end_fall}")
        if self.standby_workers < 0:
            raise ValueError(f"standby_workers must be >= 0, got {self.standby_workers}")
