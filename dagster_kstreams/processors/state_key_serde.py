"""The key a sub-topology's state is kept by: one decision for every keyed stateful DSL operation.

Kafka Streams keeps each store keyed by the key as the store's key serde writes it (the
``Materialized`` key serde, else the ``Grouped``/``StreamJoined`` one or the stream's, else
``default.key.serde``): records whose keys are read as one key update one aggregate, one table
row, one join buffer, whichever topic they came from and however their bytes were written there.

The runner keeps a sub-topology's state by the source record's key bytes. When every source of
the sub-topology reads its keys with one serde, equal keys are equal bytes and that is the same
grouping. When its sources read keys with different serdes (a ``merge``, a ``cogroup``, a stream
joined with a table of another topic), one key may be different bytes on two topics: the state is
then kept by the key as the sub-topology's stores write it (:func:`state_key_serde`; the program
computes each record's, :meth:`~.program.SubtopologyProgram.state_keys`). That needs one key
serde for all its keyed stores; stores that write keys with different serdes are refused.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.topology.node_specs import StoreSpec, StoreType

__all__ = ["KEYED_STORE_TYPES", "state_key_serde"]

# The stores of DSL operations, keyed by the record's key. Not a suppression buffer (it holds what
# its table's store emits, under that store's key) nor a store added for the Processor API (keyed by
# whatever the user's processor writes, kept task-level: user_processors.py).
KEYED_STORE_TYPES = frozenset({StoreType.KEY_VALUE, StoreType.WINDOW, StoreType.SESSION, StoreType.JOIN_WINDOW,
                               StoreType.OUTER_JOIN_SHARED})


def state_key_serde(subtopology_id: int, source_key_serdes: Iterable[Any], stores: Iterable[StoreSpec],
                    default_key_serde: Any) -> Optional[Any]:
    """The serde whose bytes a sub-topology's state is kept by, or None: the source record's key
    bytes (its sources read keys with one serde, or it keeps no keyed store).

    ``source_key_serdes``: the key serde of each of its sources (as they read); ``stores``: the
    stores of its processors. Raises :class:`UnsupportedTopologyError` when its sources read keys
    with different serdes and its keyed stores write them with different serdes: the runner keeps
    a sub-topology's state by one key format."""
    if len(set(source_key_serdes)) < 2:
        return None
    written = {store.name: store.key_serde or default_key_serde for store in stores
               if store.type in KEYED_STORE_TYPES}
    serdes = set(written.values())
    if len(serdes) > 1:
        described = ", ".join(f"{name} ({serde!r})" for name, serde in sorted(written.items()))
        raise UnsupportedTopologyError(
            f"sub-topology {subtopology_id}: its sources read keys with different serdes and its stores write them "
            f"with different ones ({described}); the Spark runner keeps a sub-topology's state by one key format, "
            "so give these stores one key serde (Materialized.with_key_serde)")
    return next(iter(serdes), None)
