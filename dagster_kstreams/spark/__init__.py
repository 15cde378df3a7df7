"""Running tasks on Spark: :class:`TaskRunner` and what a run reports or raises.

The names below come from :mod:`dagster_kstreams.spark.runner`, imported on first use.
"""

_RUNNER_EXPORTS = ("TaskRunner", "TaskResult", "TaskProgress", "TaskFailedError", "TaskFencedError")

__all__ = list(_RUNNER_EXPORTS)


def __getattr__(name: str):
    if name not in _RUNNER_EXPORTS:
        raise AttributeError(f"module 'dagster_kstreams.spark' has no attribute {name!r}")
    from dagster_kstreams.spark import runner

    value = getattr(runner, name)
    globals()[name] = value
    return value
