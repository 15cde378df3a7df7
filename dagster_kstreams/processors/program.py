"""The processors of one sub-topology, run record by record in one Python pass.

A :class:`SubtopologyProgram` is what a task ships to its Python workers (pickled with the
user's functions). It holds the sub-topology's processors (:mod:`.base`), in topological order,
and runs a whole batch or a whole key group through all of them in one pass: consecutive
processors are fused, never one Python call per operator per row through the engine; and within
the pass, each chain of stateless processors is one compiled function (:mod:`.fused_chains`).

Three ways to run, one per kind of sub-topology (the engine feeds them; see
:mod:`dagster_kstreams.spark.frames` for Spark's Arrow batches and pandas groups):

* :meth:`SubtopologyProgram.process_record` with no state — stateless sub-topologies: source
  records in, sink records out (:meth:`SubtopologyProgram.process_columns`: a batch of them).
* :meth:`SubtopologyProgram.run_key_group` — sub-topologies with state (aggregations, tables):
  all records of one source key in a micro-batch, in processing order, with that key's stored
  values of every store of the sub-topology (one state row per source key, see :mod:`.state`;
  per key as the store writes it when the sources read keys differently:
  :attr:`SubtopologyProgram.state_key_serde`).
* :meth:`SubtopologyProgram.run_task_batch` — sub-topologies whose semantics span keys
  (stream-stream joins, suppress, emit-on-window-close: :attr:`SubtopologyProgram.task_grouped`),
  and those whose stores write keys with different serdes while their sources read keys with
  different serdes (each store keyed by its own serde's bytes: :mod:`.store_keyed_groups`):
  the task's whole micro-batch in processing order, with one state value holding every key's
  slots and the task-level state (:mod:`.task_state`).

Aggregations emit like Kafka Streams with its record cache: after the group's records are
applied, each updated store forwards its final value for the key downstream once, upstream
stores first, with the record context of its own last update of the key
(``caching_enabled=False`` in ``Materialized`` forwards every update instead).

A record whose key or value cannot be deserialized goes to the dead-letter policy: the task
fails (naming the record), or the record is skipped and, with a dead-letter topic, written
there raw with Kafka Streams' dead-letter headers.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Iterable, Optional

from dagster_kstreams.kafka.dead_letter import (
    DeadLetterPolicy,
    DeserializationError,
    DeserializationHandler,
    dead_letter_headers,
)
from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.fused_chains import compile_entries
from dagster_kstreams.processors.hand_offs import HandOff
from dagster_kstreams.processors.own_groups import WindowKeys, reads_state_downstream
from dagster_kstreams.processors.punctuation import run_between_punctuations
from dagster_kstreams.processors.records import FLUSH_ORDER, Output, RecordContext, header_column
from dagster_kstreams.processors.state import GroupState
from dagster_kstreams.processors.state_key_serde import StateKeying
from dagster_kstreams.processors.store_keyed_groups import store_keyed_entries
from dagster_kstreams.processors.task_state import TaskState

__all__ = ["SubtopologyProgram"]

log = logging.getLogger(__name__)


class SubtopologyProgram:
    """All processors of one sub-topology, ready to run in a Python worker.

    ``nodes`` are in topological order (a processor's children follow it); each stateful one
    has its ``state_slot`` already (its column in the key's state row).
    """

    def __init__(self, subtopology_id: int, nodes: list[Processor],
                 dead_letters: DeadLetterPolicy = DeadLetterPolicy(), fuse_chains: bool = True,
                 state_keying: StateKeying = StateKeying(), window_keys: WindowKeys = WindowKeys()):
        self.subtopology_id = subtopology_id
        self.window_keys = window_keys  # how windowed keys' groups are kept (own_groups.py)
        self.nodes = nodes
        self.dead_letters = dead_letters
        self.source_by_topic: dict[str, int] = {}
        for index, node in enumerate(nodes):
            if node.kind == "source":
                for topic in node.topics:
                    self.source_by_topic[topic] = index
        # one stateful processor per state slot: the first of those sharing a store (a cogroup's)
        first_of_slot: dict[int, int] = {}
        for index, node in enumerate(nodes):
            if node.stateful:
                first_of_slot.setdefault(node.state_slot, index)
        self.stateful_nodes = list(first_of_slot.values())
        self.store_slots = {nodes[i].store: nodes[i].state_slot for i in self.stateful_nodes}
        # Where records an engine hands over part way in enter (hand_offs.py; set by the engine when
        # it runs the first processors itself): a record given with hand-off ``i`` enters at
        # ``hand_offs[i]`` instead of at its topic's source.
        self.hand_offs: tuple[HandOff, ...] = ()
        self._last_raw_key = self._last_key = self._last_key_node = None
        # Partition counts of the topics its sinks place records on themselves (a stream
        # partitioner's ``num_partitions``), as the broker has them: set by the engine before a run
        # (None: not given, as in the processors' own tests; windowed keys then go by Kafka's default).
        self.sink_partition_counts: Optional[dict[str, int]] = None
        # The sink topics whose records may go to a partition chosen here rather than by Kafka's
        # default partitioner (a stream partitioner; a foreign-key join's answers): the output then
        # carries a ``partition`` column (Output.partition_column), and the engine sets their
        # sink_partition_counts. Empty: nothing is added to the output. Fixed with the nodes, so
        # found once here rather than on every batch and key group.
        self.placed_topics: list[str] = [node.topic for node in nodes if getattr(node, "placement", None) is not None]
        # How the state is keyed (its sources read keys with different serdes: decided by
        # state_key_serde.py). ``state_key_serde``: the serde whose bytes group the state instead of
        # the source record's key bytes, or None; the engine groups records by :meth:`state_keys`
        # then, and gives each record's as ``context.raw_key``. With ``keying.stores``, each store
        # keeps its keys in its own serde's bytes, task-grouped (store_keyed_groups.py).
        self.keying = state_keying
        self.state_key_serde = state_keying.serde
        self._check()
        task_grouped = self.task_grouped
        for node in nodes:
            # what it forwards under other keys goes on with those keys' groups (own_groups.py)
            node.regroups = node.forwards_other_keys and task_grouped and reads_state_downstream(self, node)
            node.init(self)
        # Where a record goes on from each processor: the compiled chain of stateless processors
        # that starts there (fused_chains.py), else the processor's process. Compiled in each
        # process that runs the program, never pickled (__getstate__).
        self.fuse_chains = fuse_chains
        self._entries = self._compile_entries()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_entries"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._entries = self._compile_entries()

    def _compile_entries(self) -> list:
        entries = compile_entries(self.nodes, self.fuse_chains)
        if not self.keying.by_store:
            return entries
        return store_keyed_entries(self.nodes, entries, self.keying.processors, self.keying.stores, self.store_slots)

    def _check(self) -> None:
        for index, node in enumerate(self.nodes):
            for child in node.children:
                if not index < child < len(self.nodes):
                    raise ValueError(f"processor {node.name}: children must follow it in topological order")
            if node.stateful and (node.store is None or node.state_slot is None):
                raise ValueError(f"processor {node.name}: a stateful processor needs a store and a state slot")

    # -- what the engine needs to know ----------------------------------------------------
    @property
    def stateful(self) -> bool:
        """Whether the sub-topology keeps state: a store, or task-level state (:attr:`task_grouped`)."""
        return bool(self.stateful_nodes) or self.task_grouped

    @property
    def uses_stream_time(self) -> bool:
        return any(node.uses_stream_time for node in self.nodes)

    @property
    def drops_late_records(self) -> bool:
        """Whether the output may hold rows on ``DROPPED_LATE_TOPIC`` (counted, never written)."""
        return any(node.drops_late_records for node in self.nodes)

    @property
    def stream_time_skips_null_values(self) -> bool:
        """Whether stream time advances only on records with a key and a value (sliding windows)."""
        return any(node.stream_time_skips_null_values for node in self.nodes)

    @property
    def needs_processing_order(self) -> bool:
        """Whether the task must order its records across partitions (Kafka Streams' timestamp
        merge, whatever the sub-topology: its output goes out in that order) or track stream time
        before grouping them by key (:func:`dagster_kstreams.spark.event_time.with_processing_order`)."""
        return len(self.source_by_topic) > 1 or (self.stateful and self.uses_stream_time)

    def partition_count(self, topic: str) -> int:
        """The partition count of a placed sink topic (:attr:`placed_topics`)."""
        try:
            return self.sink_partition_counts[topic]
        except (KeyError, TypeError):
            raise ValueError(f"sub-topology {self.subtopology_id}: the partition count of topic {topic!r} was not "
                             "given to the program (its stream partitioner needs it)") from None

    def state_keys(self, keys: list, topics: list) -> list:
        """The bytes each record's state is kept by when :attr:`state_key_serde` is set: its key as
        its source reads it, written with that serde (None for a null key). A key its source cannot
        read, or the store's serde cannot write, keeps its own bytes: :meth:`process_record` judges
        that record (the dead-letter policy) before any processor sees it."""
        serialize = self.state_key_serde.serialize
        grouped = []
        for key, topic in zip(keys, topics):
            if key is None:
                grouped.append(None)
                continue
            key = bytes(key)
            try:
                index = self.source_by_topic[topic]
                grouped.append(serialize(self.nodes[index].key_serde.deserialize(key)))
            except Exception:  # noqa: BLE001 - the record's own processing reports it
                grouped.append(key)
        return grouped

    @property
    def task_grouped(self) -> bool:
        """Whether the sub-topology runs task-grouped (:meth:`run_task_batch`): it has a
        processor whose semantics span keys, or its stores keep keys in different serdes' bytes."""
        return self.keying.by_store or any(node.task_grouped for node in self.nodes)

    @property
    def group_key_serde(self) -> Any:
        """The serde of the keys the state is kept by: the store's when :attr:`state_key_serde` is
        set, else the sources' one key serde (the source record's key bytes)."""
        if self.state_key_serde is not None:
            return self.state_key_serde
        return next(node.key_serde for node in self.nodes if node.kind == "source")

    def store_key_serde(self, store: str) -> Any:
        """The serde whose bytes ``store``'s keys are kept by in the state: the store's own when the
        stores keep their keys in their own serdes' bytes (:mod:`.store_keyed_groups`), else
        :attr:`group_key_serde`. Every lookup of one store's state for a key goes by it: a processor
        handed one key's state for all its stores, a user processor's view of each store it names,
        ``read_store``."""
        return self.keying.stores.get(store, self.group_key_serde)

    def store_owner(self, store: str) -> Processor:
        """The processor that keeps ``store`` in its slot (the first, of a cogroup's)."""
        for index in self.stateful_nodes:
            if self.nodes[index].store == store:
                return self.nodes[index]
        raise KeyError(f"no processor of sub-topology {self.subtopology_id} keeps the store {store!r}")

    def store_processors(self, store: str) -> list[Processor]:
        """Every processor that keeps ``store`` in its slot (a cogroup's: one per input)."""
        return [node for node in self.nodes if node.stateful and node.store == store]

    @property
    def store_names(self) -> list[str]:
        return [self.nodes[i].store for i in sorted(self.stateful_nodes, key=lambda i: self.nodes[i].state_slot)]

    # -- running ------------------------------------------------------------------------
    def run_key_group(self, records: Iterable[tuple[RecordContext, Any, Any]],
                      stored: Optional[tuple]) -> tuple[Output, Optional[tuple]]:
        """Run all records of one source key (``(context, raw key, raw value)`` in processing
        order, or ``(context, raw key, raw value, hand-off)``: :attr:`hand_offs`) through a stateful
        sub-topology.

        ``stored`` is the key's state row (:meth:`GroupState.row`, or None). Returns the
        sink records and the new state row (``stored`` itself when nothing changed; None:
        nothing stored any more).
        """
        state = GroupState.of_row(stored, len(self.stateful_nodes))
        out = Output(ordered=True)
        for context, key, value, *hand_off in records:
            self.process_record(context, key, value, out, state, *hand_off)
        self._flush(lambda: [state], out)
        if not state.changed:
            return out, stored
        return out, state.row()

    def run_task_batch(self, records: Iterable[tuple[RecordContext, Any, Any]],
                       stored: Optional[bytes]) -> tuple[Output, Optional[bytes]]:
        """Run a whole micro-batch of one task (all keys, in processing order) through a
        task-grouped sub-topology with the task's state (one pickled value, or None; see
        :mod:`.task_state`). Each record runs with its source key's group (as in
        :meth:`run_key_group`); keys are flushed at the end of the batch. Returns the sink
        records and the new task state."""
        task = TaskState.load(stored, len(self.stateful_nodes), self.window_keys.by_start)
        out = Output(ordered=True)
        punctuating = [node for node in self.nodes if node.punctuates]
        records = iter(records)
        first = next(records, None)
        if first is not None:
            records = itertools.chain([first], records)
            for node in self.nodes:
                node.start_task_batch(task, out, first[0])
        if punctuating:  # the Processor API's punctuators, between records
            run_between_punctuations(records, task, punctuating, lambda group, context, key, value, *hand_off:
                                     self.process_record(context, key, value, out, group, *hand_off))
        else:
            for context, key, value, *hand_off in records:
                self.process_record(context, key, value, out, task.group(context.raw_key), *hand_off)
        # the groups a store's flush made dirty downstream count too (own_groups.py: other keys)
        self._flush(lambda: [group for group in task.touched() if group.dirty], out)
        for node in self.nodes:
            node.end_task_batch(task)
        return out, task.dump()

    # -- record flow ------------------------------------------------------------------
    def process_record(self, context: RecordContext, raw_key, raw_value, out: Output,
                       state: Optional[GroupState], hand_off: Optional[int] = None) -> Optional[RecordContext]:
        """Deserialize one source record and run it through the processors (from its topic's
        source, or from :attr:`hand_offs` ``[hand_off]``, with its serdes). Returns its context, or
        None when the dead-letter policy skipped it. What it emits is marked with its position (an
        ordered ``out``: :meth:`Output.mark`)."""
        if out.marks is not None:
            out.marks.append((len(out.topic), context.position))
        topic, partition, offset = context.topic, context.partition, context.offset
        node = self.nodes[self._source_of(context)] if hand_off is None else self.hand_offs[hand_off]
        raw_key = None if raw_key is None else bytes(raw_key)
        raw_value = None if raw_value is None else bytes(raw_value)
        try:
            part = "key"
            if raw_key is not None and raw_key == self._last_raw_key and node is self._last_key_node:
                key = self._last_key  # a key group (and a skewed batch) repeats the same key
            else:
                key = node.key_serde.deserialize(raw_key)
                self._last_raw_key, self._last_key, self._last_key_node = raw_key, key, node
            part = "value"
            value = node.value_serde.deserialize(raw_value)
        except Exception as cause:  # noqa: BLE001 - any serde failure is the handler's to judge
            serde = node.key_serde if part == "key" else node.value_serde
            error = DeserializationError(topic, partition, offset, part, repr(serde), cause)
            if self.dead_letters.handler is DeserializationHandler.FAIL:
                raise error from cause
            log.warning("skipping a record: %s", error)
            if self.dead_letters.dead_letter_topic:
                out.append(
                    self.dead_letters.dead_letter_topic, raw_key, raw_value,
                    header_column(dead_letter_headers(topic, partition, offset, error)),
                    context.timestamp,  # the record's, as Kafka Streams' dead-letter record has it
                )
            return None
        entries = self._entries
        for child in node.children:
            entries[child](key, value, context, out, state)
        return context

    def process_columns(self, keys: list, values: list, topics: list, partitions: list, offsets: list,
                        timestamps: list, headers: Iterable, out: Output) -> None:
        """:meth:`process_record` for each record of a stateless batch given column by column (raw
        keys and values as bytes or None), with the source's serdes and entries looked up once per
        run of records from one topic rather than per record. A record of a topic that is no source
        is the same error (:meth:`_source_of`); a record a serde fails on goes through
        :meth:`process_record` itself, so errors and dead letters are exactly its."""
        last_topic = node = None
        entries = self._entries
        children = ()
        marks = out.marks
        for key, value, topic, partition, offset, timestamp, header in zip(
                keys, values, topics, partitions, offsets, timestamps, headers):
            # positional (the hot loop): topic, partition, offset, timestamp, stream_time,
            # stream_time_before, raw_key, position, headers
            context = RecordContext(topic, partition, offset, timestamp, None, None, None, None, header)
            if topic != last_topic:
                node = self.nodes[self._source_of(context)]
                key_of, value_of = node.key_serde.deserialize, node.value_serde.deserialize
                children = [entries[child] for child in node.children]
                last_topic = topic
            try:
                record_key, record_value = key_of(key), value_of(value)
            except Exception:  # noqa: BLE001 - the general path judges it (dead letters, the error)
                self.process_record(context, key, value, out, None)
                continue
            if marks is not None:
                marks.append((len(out.topic), None))
            for entry in children:
                entry(record_key, record_value, context, out, None)

    def _source_of(self, context: RecordContext) -> int:
        """The index of the source that reads the record's topic. A record of any other topic was
        given to the wrong sub-topology: an error naming its topic, partition and offset."""
        index = self.source_by_topic.get(context.topic)
        if index is None:
            raise ValueError(
                f"record at {context.describe()}: topic is not a source of sub-topology {self.subtopology_id}")
        return index

    def _forward(self, index: int, key, value, context: RecordContext, out: Output, state) -> None:
        """The one path a record takes from a processor to its child ``index``: the child's entry
        (its process, or the compiled chain that starts at it)."""
        self._entries[index](key, value, context, out, state)

    def _flush(self, groups: Callable[[], list[GroupState]], out: Output) -> None:
        """Forward each updated store's final value per key downstream, as Kafka Streams' record
        cache does at a commit: store by store, upstream first (a downstream store also holds what
        the upstream flush forwarded to it); a store's keys in the order of its own last update of
        each (NamedCache keeps its dirty keys in that order), each forwarded with the context of
        that update (its timestamp, headers and position: LRUCacheEntry keeps it), whatever
        records of other inputs or stores came after it (a windowed store's windows each by its own
        last update, interleaved across keys: ``StoreProcessor.flush_entries``). Emit order: after
        every record's own output (:data:`FLUSH_ORDER`), by store, then by the position of that
        update. ``groups()`` is asked again for each store: an upstream flush may reach the groups
        of other keys (a windowed table's windows, a suppression's evictions: :mod:`.own_groups`)."""
        for rank, index in enumerate(self.stateful_nodes):  # topological order: a downstream store is flushed later
            node = self.nodes[index]
            slot = node.state_slot
            held = [entry for group in groups() if slot in group.dirty
                    for entry in node.flush_entries(group, group.dirty.pop(slot))]
            # stable: entries of one position (closed join records of several keys) keep the groups' order
            for position, forward in sorted(held, key=lambda entry: entry[0] or 0):
                out.mark(None if position is None else FLUSH_ORDER + (rank << 48) + position)
                forward(out)
