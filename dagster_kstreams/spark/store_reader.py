"""A state store's content across all of an application's tasks (``TaskRunner.read_store``).

Read with Spark's state data source (``format("statestore")``) from each task's checkpoint, at its
last committed batch: what the tasks' runs left, whatever process ran them.
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.spark.checkpoint import CheckpointReader
from dagster_kstreams.spark.strategies import strategy_for

__all__ = ["read_store"]


def read_store(runner: Any, store_name: str) -> dict[Any, Any]:
    """The content of a state store across all tasks: ``{key: value}``, deserialized; a
    windowed or session store's keys are ``Windowed(key, Window(start, end))``.

    Read with Spark's state data source (``format("statestore")``) from each task's
    checkpoint, at its last committed batch; tasks that never ran contribute nothing.
    """
    subtopology = runner.application.subtopology_of_store(store_name)
    program = runner.compiled.program(subtopology)
    strategy = strategy_for(program)
    if store_name in program.store_slots:
        slot, key_serde = program.store_slots[store_name], runner.compiled.store_key_serde(subtopology, store_name)
        content = lambda rows: strategy.store_content(rows, program, slot, key_serde)  # noqa: E731
    else:  # a user processor's store (the Processor API): task-level state
        content = lambda rows: strategy.user_store_content(rows, program, store_name)  # noqa: E731
    # The RocksDB provider reports to the driver's StateStoreCoordinator, which Spark creates
    # with the session's StreamingQueryManager: make sure it exists in a fresh session.
    runner.spark.streams.active
    table: dict[Any, Any] = {}
    for task in runner.partitioned().tasks(subtopology):
        checkpoint = runner.checkpoint_location(task)
        if CheckpointReader(runner.spark, checkpoint).last_committed_batch() is None:
            continue
        rows = runner.spark.read.format("statestore").load(checkpoint).collect()
        table.update(content(rows))
    return table
