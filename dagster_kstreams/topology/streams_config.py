"""Names of Kafka Streams' settings that the DSL reads (``StreamsConfig``'s constants), so that
``builder.build({StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG: StreamsConfig.OPTIMIZE})`` reads as in Java."""
from __future__ import annotations

__all__ = ["StreamsConfig"]


class StreamsConfig:
    TOPOLOGY_OPTIMIZATION_CONFIG = "topology.optimization"
    NO_OPTIMIZATION = "none"
    OPTIMIZE = "all"
    REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
    MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
    SINGLE_STORE_SELF_JOIN = "single.store.self.join"
    DEFAULT_DSL_STORE_CONFIG = "default.dsl.store"
    ROCKS_DB = "rocksDB"
    IN_MEMORY = "in_memory"
    DSL_STORE_SUPPLIERS_CLASS_CONFIG = "dsl.store.suppliers.class"
