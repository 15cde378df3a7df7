"""``TopologyConfig``: the settings a ``StreamsBuilder`` reads while the DSL is defined (Kafka Streams'
``new StreamsBuilder(new TopologyConfig(new StreamsConfig(props)))``); here
``StreamsBuilder(TopologyConfig(props))``. Of them, the kind of store the DSL builds where no
supplier or store type is given: ``default.dsl.store`` (``rocksDB`` or ``in_memory``), or
``dsl.store.suppliers.class`` (Kafka Streams' built-in RocksDB or in-memory suppliers), which wins
when both are set, as in ``TopologyConfig.resolveDslStoreSuppliers``. The kind names no store and
changes no ``describe()``; the Spark runner keeps every store in Spark's state store either way and
reads it in the order the kind gives (see ``dagster_kstreams.processors.store_suppliers``)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from .errors import TopologyException
from .materialized import IN_MEMORY, ROCKS_DB
from .node_specs import StoreSpec
from .streams_config import StreamsConfig

__all__ = ["TopologyConfig", "apply_default_dsl_store"]

_BUILT_IN_SUPPLIERS = {
    "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers": True,
    "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers": False,
}


class TopologyConfig:
    """``persistent``: whether the DSL's stores without a supplier or store type of their own are
    RocksDB's (the default) or in memory."""

    def __init__(self, props: Optional[Mapping[str, Any]] = None):
        props = dict(props or {})
        self.persistent = True
        store = props.get(StreamsConfig.DEFAULT_DSL_STORE_CONFIG)
        if store is not None:
            if store not in (ROCKS_DB, IN_MEMORY):
                raise TopologyException(f"{StreamsConfig.DEFAULT_DSL_STORE_CONFIG} must be {ROCKS_DB} or {IN_MEMORY}, "
                                        f"got {store!r}")
            self.persistent = store == ROCKS_DB
        suppliers = props.get(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG)
        if suppliers is not None:
            if suppliers not in _BUILT_IN_SUPPLIERS:
                raise TopologyException(
                    f"{StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG} must name one of Kafka Streams' built-in "
                    f"suppliers ({', '.join(_BUILT_IN_SUPPLIERS)}), got {suppliers!r}")
            self.persistent = _BUILT_IN_SUPPLIERS[suppliers]


def apply_default_dsl_store(stores: Iterable[StoreSpec], config: TopologyConfig) -> None:
    """Settle the kind of each DSL store that has none of its own (no supplier, no store type)."""
    for store in stores:
        if store.persistent is None:
            store.persistent = config.persistent
