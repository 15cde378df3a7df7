"""The key a sub-topology's state is kept by: one decision for every keyed stateful DSL operation.

Kafka Streams keeps each store keyed by the key as the store's key serde writes it (the
``Materialized`` key serde, else the ``Grouped``/``StreamJoined`` one or the stream's, else
``default.key.serde``): records whose keys are read as one key update one aggregate, one table
row, one join buffer, whichever topic they came from and however their bytes were written there.

The runner keeps a sub-topology's state by the source record's key bytes. When every source of
the sub-topology reads its keys with one serde, equal keys are equal bytes and that is the same
grouping. When its sources read keys with different serdes (a ``merge``, a ``cogroup``, a stream
joined with a table of another topic), one key may be different bytes on two topics:

* its keyed stores write keys with one serde: the state is kept by the key as that serde writes
  it (:attr:`StateKeying.serde`; the program computes each record's,
  :meth:`~.program.SubtopologyProgram.state_keys`), still key-grouped;
* they write keys with different serdes, which may not agree on which keys are equal (``"U7"`` and
  ``"u7"`` are two keys to one serde and one to another): no one key groups the sub-topology's
  state, so it runs task-grouped and each store keeps its keys in its own serde's bytes
  (:attr:`StateKeying.stores`, :mod:`.store_keyed_groups`), as Kafka Streams' stores do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.topology.node_specs import StoreSpec, StoreType

__all__ = ["KEYED_STORE_TYPES", "StateKeying", "state_keying"]

# The stores of DSL operations, keyed by the record's key. Not a suppression buffer (it holds what
# its table's store emits, under that store's key) nor a store added for the Processor API (keyed by
# whatever the user's processor writes, kept task-level: user_processors.py).
KEYED_STORE_TYPES = frozenset({StoreType.KEY_VALUE, StoreType.WINDOW, StoreType.SESSION, StoreType.JOIN_WINDOW,
                               StoreType.OUTER_JOIN_SHARED})


@dataclass(frozen=True)
class StateKeying:
    """How a sub-topology's state is keyed.

    ``serde``: the serde whose bytes the whole state is kept by, key-grouped (None: the source
    record's key bytes, or ``stores`` decides). ``stores``: when not empty, the sub-topology runs
    task-grouped and each keyed store keeps its keys in its own serde's bytes (store name -> serde);
    ``processors`` then names the serde each processor handed one key's state for the stores it
    writes or reads finds that state by (processor name -> serde). A processor that looks each of its
    stores up itself (a user processor's views) is not among them: it finds each store's state by
    that store's serde (:meth:`~.program.SubtopologyProgram.store_key_serde`)."""

    serde: Optional[Any] = None
    stores: Mapping[str, Any] = field(default_factory=dict)
    processors: Mapping[str, Any] = field(default_factory=dict)

    @property
    def by_store(self) -> bool:
        return bool(self.stores)


def state_keying(subtopology_id: int, source_key_serdes: Iterable[Any], stores: Iterable[StoreSpec],
                 processor_stores: Iterable[tuple[str, Iterable[str]]], default_key_serde: Any) -> StateKeying:
    """How the state of sub-topology ``subtopology_id`` is keyed.

    ``source_key_serdes``: the key serde of each of its sources (as they read); ``stores``: the
    stores of its processors; ``processor_stores``: ``(processor name, names of the stores whose
    state it is handed for a record's key)`` of each processor (none for one that looks each store
    up itself). Raises :class:`UnsupportedTopologyError` for a processor handed the state of keyed
    stores that write keys with different serdes: one group cannot hold both keys' state (no DSL
    operation is connected to such stores; a user processor looks each store up)."""
    if len(set(source_key_serdes)) < 2:
        return StateKeying()
    written = {store.name: store.key_serde or default_key_serde for store in stores
               if store.type in KEYED_STORE_TYPES}
    if len(set(written.values())) < 2:
        return StateKeying(serde=next(iter(written.values()), None))
    processors = {}
    for name, connected in processor_stores:
        serdes = {written[store] for store in connected if store in written}
        if len(serdes) > 1:
            described = ", ".join(f"{store} ({written[store]!r})" for store in sorted(connected) if store in written)
            raise UnsupportedTopologyError(
                f"processor {name} (sub-topology {subtopology_id}): its stores write keys with different serdes "
                f"({described}) while the sub-topology's sources read keys with different serdes; the Spark runner "
                "hands this processor one key's state for all its stores, so give these stores one key serde "
                "(Materialized.with_key_serde)")
        if serdes:
            processors[name] = serdes.pop()
    return StateKeying(stores=written, processors=processors)
