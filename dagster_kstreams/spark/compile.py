"""A topology as the Spark runner executes it: one program per sub-topology.

:func:`compile_topology` binds the topology to its application id
(:class:`~dagster_kstreams.topology.application.ApplicationTopology`, the one owner of real topic
names, writers and readers, task counts and execution order) and builds, per sub-topology, a
:class:`~dagster_kstreams.spark.frames.SparkProgram`: the sub-topology's processors
(:mod:`dagster_kstreams.processors`) resolved for execution, plus, when the sub-topology uses
PySpark Column expressions, the plan that runs it in the JVM (:mod:`dagster_kstreams.spark.expressions`).
Whatever the runner cannot execute with Kafka Streams' semantics raises
:class:`UnsupportedTopologyError` when the programs are built (:meth:`CompiledTopology.check`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from dagster_kstreams.kafka.dead_letter import DeadLetterPolicy
from dagster_kstreams.processors.build import BuildContext, build_program
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.record_cache import DEFAULT_CACHE_MAX_BYTES, check_cache_max_bytes
from dagster_kstreams.spark.column_functions import column_function
from dagster_kstreams.spark.column_hand_off import plan_before_state
from dagster_kstreams.spark.expressions import plan as column_plan
from dagster_kstreams.spark.frames import SparkProgram
from dagster_kstreams.topology.application import ApplicationTopology
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.view import ProcessorNode

__all__ = ["CompiledTopology", "compile_topology", "UnsupportedTopologyError"]


def spark_function(factory: ProcessorNode, user_function):
    """A user function as the programs call it; a PySpark Column expression becomes the marker
    the Column plan runs (refused where the runner has no Column form for the operation)."""
    if user_function.is_column:
        return column_function(factory, user_function, UnsupportedTopologyError)
    return user_function


class CompiledTopology:
    """A topology, as the Spark runner sees it, for one application id."""

    def __init__(
        self,
        topology: Any,
        application_id: str,
        dead_letters: DeadLetterPolicy = DeadLetterPolicy(),
        default_key_serde=None,
        default_value_serde=None,
        kafka_config: Optional[Mapping[str, Any]] = None,
        source_partitions: Optional[Mapping[str, int]] = None,
        statestore_cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
    ):
        # Kafka Streams' statestore.cache.max.bytes: 0 turns every store's record cache off (record_cache.py).
        self.cache_max_bytes = check_cache_max_bytes(statestore_cache_max_bytes)
        self.kafka_config = dict(kafka_config or {})  # what a global table's reader connects with
        # With the source partitions, a pattern source's program reads the topics its pattern matched.
        self.application = ApplicationTopology(topology, application_id, source_partitions)
        if self.application.patterns_pending:
            raise ValueError(f"application {application_id!r} has a source subscribed by a pattern: compile it with "
                             "the source partitions, whose topics the pattern matches")
        self.topology = self.application.topology
        self.dead_letters = dead_letters
        # Kafka Streams' default.key.serde / default.value.serde; strings unless configured.
        self.default_key_serde = default_key_serde or Serdes.String()
        self.default_value_serde = default_value_serde or Serdes.String()
        self._programs: dict[int, SparkProgram] = {}

    def store_key_serde(self, subtopology: int, store_name: str):
        """The serde of the keys a store of a sub-topology is kept by: its source's (the source record
        key), or the stores' when its sources read keys differently (``state_key_serde``; each
        store's own when they write keys with different serdes)."""
        return self.program(subtopology).store_key_serde(store_name)

    def check(self) -> "CompiledTopology":
        """Build every sub-topology's program now: an operation the runner cannot run with
        Kafka Streams' semantics raises :class:`UnsupportedTopologyError` here, naming it."""
        for subtopology in self.application.subtopology_ids:
            self.program(subtopology)
        return self

    def program(self, subtopology: int) -> SparkProgram:
        if subtopology not in self._programs:
            self._programs[subtopology] = self._build_program(subtopology)
        return self._programs[subtopology]

    def _build_program(self, subtopology: int) -> SparkProgram:
        context = BuildContext(self.application, self.topology.subtopology(subtopology),
                               self.default_key_serde, self.default_value_serde, spark_function,
                               kafka_config=self.kafka_config, cache_max_bytes=self.cache_max_bytes)
        program = build_program(context, self.dead_letters, SparkProgram)
        # Column expressions: a stateless sub-topology as DataFrame operations, its Python functions in
        # segments; a stateful one's Columns in front of its state, handing their records over (None
        # without any).
        # (After a stateful part, on the way to sinks, the program hands its records back to the JVM,
        # where they run: column_hand_back.py.)
        if not program.stateful:
            program.column_plan = column_plan(program, UnsupportedTopologyError, self.default_key_serde,
                                              self.default_value_serde)
            return program
        program.column_plan, after = plan_before_state(program, UnsupportedTopologyError, self.default_key_serde,
                                                       self.default_value_serde)
        if after is not None:
            program.hand_back(after)
        return program


def compile_topology(
    topology: Any,
    application_id: str,
    dead_letters: DeadLetterPolicy = DeadLetterPolicy(),
    default_key_serde=None,
    default_value_serde=None,
    kafka_config: Optional[Mapping[str, Any]] = None,
    source_partitions: Optional[Mapping[str, int]] = None,
    statestore_cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
) -> CompiledTopology:
    """``topology``: a built ``Topology`` or the ``StreamsBuilder`` (built here). ``source_partitions``:
    the source topics' partition counts, which fix the topics a pattern source reads (needed then).
    ``statestore_cache_max_bytes``: Kafka Streams' setting; 0 turns every store's record cache off."""
    return CompiledTopology(topology, application_id, dead_letters, default_key_serde, default_value_serde,
                            kafka_config, source_partitions, statestore_cache_max_bytes)
