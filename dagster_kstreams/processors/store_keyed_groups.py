"""Task-grouped state whose stores each keep their keys in their own serde's bytes.

When a sub-topology's sources read keys with different serdes and its stores write keys with
different serdes (:class:`~.state_key_serde.StateKeying` with ``stores``), no one key groups its
state: ``"U7"`` and ``"u7"`` may be one key to a store whose serde writes keys in lower case and two
keys to one that writes them as they are. Kafka Streams keys each store by the bytes its own key
serde writes (``store.put(key)`` serializes the key it is given): two stores with different serdes
keep different keys for one record. The runner does the same in the task's state
(:class:`~.task_state.TaskState`, one group per key bytes, a slot per store): each (processor,
store) pair finds a key's group by the key as that store's serde writes it
(:meth:`~.program.SubtopologyProgram.store_key_serde`). A DSL processor writes or reads stores of
one key serde, so it makes that lookup once, on its way in (:func:`store_keyed_entries`), and
passes the group on downstream; a user processor may name stores of several serdes, and each of
its store views makes the lookup for its own store at every read and write (``looks_up_each_store``:
:mod:`.user_dsl_store`, :mod:`.user_dsl_window_store`). One group of bytes may hold the slots of
several stores: each slot is read and written only for its own store, under its own serde's bytes.

An update's old value (a table's ``Change.oldValue``, read downstream while the update travels)
travels with the record into the next store's group, as Kafka Streams' ``Change`` carries it.
"""

from __future__ import annotations

from typing import Any, Mapping

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.fused_chains import Entry

__all__ = ["store_keyed_entries"]


def store_keyed_entries(nodes: list[Processor], entries: list[Entry], processor_serdes: Mapping[str, Any],
                        store_serdes: Mapping[str, Any], store_slots: Mapping[str, int]) -> list[Entry]:
    """``entries``, changed in place (compiled chains hand records on through that very list): the
    entry of each processor of ``processor_serdes`` (name -> the one key serde of the stores whose
    state it is handed) finds its record's group by that serde's bytes first."""
    for index, node in enumerate(nodes):
        serde = processor_serdes.get(node.name)
        if serde is not None:
            foreign = frozenset(slot for store, slot in store_slots.items() if store_serdes.get(store) != serde)
            entries[index] = _regrouping(node, entries[index], serde.serialize, foreign)
    return entries


def _regrouping(node: Processor, entry: Entry, serialize, foreign_slots: frozenset) -> Entry:
    def enter(key, value, context, out, state) -> None:
        try:
            key_bytes = serialize(key)
        except Exception as cause:  # noqa: BLE001 - Kafka Streams' store fails the task on it too
            raise node.failure(context, cause) from cause
        group = state.task.group(key_bytes)
        if group is not state and state.old_values:
            # old values of other stores' updates travel with the record; this store's own stay its group's
            group.old_values.update((slot, old) for slot, old in state.old_values.items()
                                    if not isinstance(slot, int) or slot in foreign_slots)
        entry(key, value, context, out, group)

    return enter
