"""The default Spark master: local, two task slots per core this process may run on."""

from __future__ import annotations

import os

from dagster_kstreams.orchestration.resources import KStreamsSparkResource
from dagster_kstreams.spark.session import DEFAULT_MASTER, LOCAL_SLOTS_PER_CORE, check_master, default_master


def test_the_default_master_has_two_task_slots_per_usable_core():
    cores = len(os.sched_getaffinity(0))
    assert default_master() == f"local[{LOCAL_SLOTS_PER_CORE * cores}]" == DEFAULT_MASTER
    assert check_master(DEFAULT_MASTER) == DEFAULT_MASTER


def test_the_spark_resource_defaults_to_it_and_keeps_a_master_given():
    assert KStreamsSparkResource().master == DEFAULT_MASTER
    assert KStreamsSparkResource(master="local[*]").master == "local[*]"
