"""What the processor graph is made of: a node's :class:`NodeKind`, a processor's
:class:`ProcessorSpec` (its kind and parameters, the Python analogue of a ``ProcessorSupplier``)
and the state stores it owns (:class:`StoreSpec`).

:mod:`.topology_builder` wires these into the physical graph; :mod:`dagster_kstreams.topology.view`
exposes the read-only result.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["NodeKind", "StoreType", "StoreSpec", "ProcessorSpec", "KTableSourceSpec"]


class NodeKind(enum.Enum):
    """What a processor node does (see the contract in :mod:`.view`)."""

    SOURCE = "source"
    SINK = "sink"
    # stateless KStream processors
    FILTER = "filter"
    MAP = "map"
    MAP_VALUES = "map_values"
    FLAT_MAP = "flat_map"
    FLAT_MAP_VALUES = "flat_map_values"
    SELECT_KEY = "select_key"
    PEEK = "peek"
    FOREACH = "foreach"
    PRINT = "print"
    MERGE = "merge"
    BRANCH = "branch"
    BRANCH_CHILD = "branch_child"
    REPARTITION_FILTER = "repartition_filter"
    # KStream -> KTable and aggregations
    TO_TABLE = "to_table"
    TABLE_SOURCE = "table_source"
    AGGREGATE = "aggregate"
    WINDOWED_AGGREGATE = "windowed_aggregate"
    COGROUP_MERGE = "cogroup_merge"  # the pass-through after a cogroup's aggregates
    # joins
    JOIN_WINDOW = "join_window"
    STREAM_STREAM_JOIN = "stream_stream_join"
    STREAM_STREAM_JOIN_MERGE = "stream_stream_join_merge"
    STREAM_STREAM_SELF_JOIN = "stream_stream_self_join"  # topology.optimization's single-store self-join
    STREAM_TABLE_JOIN = "stream_table_join"
    TABLE_TABLE_JOIN = "table_table_join"
    TABLE_TABLE_JOIN_MERGE = "table_table_join_merge"
    # foreign-key table-table joins (KTable.join(other, foreign_key_extractor, joiner))
    FK_SUBSCRIPTION_SEND = "fk_subscription_send"
    FK_SUBSCRIPTION_RECEIVE = "fk_subscription_receive"
    FK_SUBSCRIPTION_JOIN = "fk_subscription_join"
    FK_FOREIGN_TABLE_JOIN = "fk_foreign_table_join"
    FK_RESPONSE_JOIN = "fk_response_join"
    FK_JOIN_RESULT = "fk_join_result"
    # KTable processors
    TABLE_FILTER = "table_filter"
    TABLE_MAP_VALUES = "table_map_values"
    TABLE_TRANSFORM_VALUES = "table_transform_values"
    TABLE_TO_STREAM = "table_to_stream"
    TABLE_GROUP_BY_MAP = "table_group_by_map"
    TABLE_AGGREGATE = "table_aggregate"
    SUPPRESS = "suppress"
    # the Processor API (user processors, processor_api.py)
    PROCESS = "process"
    PROCESS_VALUES = "process_values"
    # global tables: the global store's table source (no task runs it) and a stream's lookup join
    GLOBAL_TABLE_SOURCE = "global_table_source"
    STREAM_GLOBAL_TABLE_JOIN = "stream_global_table_join"


class StoreType(enum.Enum):
    KEY_VALUE = "key_value"             # timestamped key-value store (aggregations, tables)
    WINDOW = "window"                   # time/sliding windowed aggregation store
    SESSION = "session"                 # session windowed aggregation store
    JOIN_WINDOW = "join_window"         # stream-stream join buffer (retains duplicates)
    OUTER_JOIN_SHARED = "outer_join_shared"  # left/outer stream-stream join's pending non-joined records
    SUPPRESSION_BUFFER = "suppression_buffer"
    JOIN_GRACE_BUFFER = "join_grace_buffer"  # a stream-table join's grace-period buffer (versioned tables)
    USER_KEY_VALUE = "user_key_value"   # a key-value store added with StreamsBuilder.add_state_store
    USER_WINDOW = "user_window"         # a window store added with StreamsBuilder.add_state_store
    USER_SESSION = "user_session"       # a session store added with StreamsBuilder.add_state_store
    USER_VERSIONED = "user_versioned"   # a versioned key-value store added with StreamsBuilder.add_state_store


@dataclass
class StoreSpec:
    """A state store. ``changelog`` is True when Kafka Streams would back it with a
    ``<application_id>-<name>-changelog`` topic."""

    name: str
    type: StoreType
    changelog: bool = True
    key_serde: Any = None
    value_serde: Any = None
    window: Any = None
    retention_ms: Optional[int] = None
    queryable: bool = False
    caching: bool = True  # Materialized.with_caching_disabled(): forward every update (windowed stores read it)
    # a versioned store's history retention (None: not versioned); see topology/versioned.py
    history_retention_ms: Optional[int] = None
    # RocksDB's (True) or in memory (False): a window, session or join store's supplier's (or with_store_type's),
    # else StreamsBuilder's default.dsl.store. A key-value store's supplier is not followed here: in memory
    # or RocksDB, it iterates by the key's bytes (processors/store_suppliers.py)
    persistent: Optional[bool] = None
    # the window or session store's supplier a windowed aggregation is given (Materialized.as_(supplier))
    supplier: Any = None


@dataclass
class ProcessorSpec:
    """What a processor does: a kind and its parameters (the Python analogue of a
    ``ProcessorSupplier``). ``own_stores`` are created with the processor and connected to it."""

    kind: NodeKind
    params: dict = field(default_factory=dict)
    own_stores: list = field(default_factory=list)

    def stores(self) -> list:
        return list(self.own_stores)


class KTableSourceSpec(ProcessorSpec):
    """A table source's store is created only if something needs it (a join, a groupBy, a
    name given with ``Materialized.as_``) — decided lazily, as Kafka's ``KTableSource``."""

    def __init__(self, kind: NodeKind, params: dict, store: StoreSpec, queryable: bool):
        super().__init__(kind, params, [])
        self.store = store
        self.materialized = queryable

    def materialize(self) -> None:
        self.materialized = True

    def stores(self) -> list:
        return [self.store] if self.materialized else []
