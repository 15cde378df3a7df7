"""One tick of an application's lag sensor, as the sensor daemon runs it (for the tests that drive
the sensor by hand)."""

from __future__ import annotations

import dagster as dg


def tick_sensor(defs, instance, cursor):
    """Evaluate the lag sensor of ``defs`` (its only sensor) once on ``instance`` from ``cursor``."""
    repository = defs.get_repository_def()
    (sensor,) = repository.sensor_defs
    context = dg.build_sensor_context(instance=instance, cursor=cursor, repository_def=repository,
                                      resources={"kafka": repository.get_top_level_resources()["kafka"]})
    return sensor.evaluate_tick(context)
