"""The topology layer: Kafka Streams' DSL in Python (pure: no Spark, no broker, no Dagster).

The DSL's configuration objects are named as in Java (``as`` is ``as_``), one module per family
(:mod:`.consumed_produced`, :mod:`.grouped_repartitioned`, :mod:`.materialized`, :mod:`.joined`,
:mod:`.suppressed`, :mod:`.branched_printed`, :mod:`.named`); each is immutable: the ``with_*``
methods return a copy, as Java's fluent setters do in effect.

See :mod:`.view` for the read-only contract other layers consume.
"""
from .branched_printed import Branched, Printed
from .cogrouped import CogroupedKStream, SessionWindowedCogroupedKStream, TimeWindowedCogroupedKStream
from .consumed_produced import AutoOffsetReset, Consumed, Produced
from .emit_strategy import EmitStrategy
from .errors import TopologyException
from .functions import FunctionForm, UserFunction
from .global_ktable import GlobalKTable
from .grouped import KGroupedStream
from .grouped_repartitioned import Grouped, Repartitioned
from .joined import Joined, StreamJoined, TableJoined
from .branched_kstream import BranchedKStream
from .kstream import KStream
from .ktable import KGroupedTable, KTable
from .materialized import Materialized
from .named import Named
from .node_specs import NodeKind, StoreSpec, StoreType
from .headers import Header, Headers
from .processor_api import (
    FixedKeyProcessor, KeyValue, Processor, ProcessorSupplier, PunctuationType, Record, RecordMetadata, Stores,
    ValueAndTimestamp,
)
from .serdes import Serde, Serdes, Window, Windowed, WindowedSerde
from .streams_builder import StreamsBuilder
from .streams_config import StreamsConfig
from .suppressed import BufferConfig, Suppressed
from .task_id import TaskId
from .topology_config import TopologyConfig
from .versioned import VersionedRecord
from .value_transformer import ValueTransformerWithKey
from .timestamp_extractors import (
    ConsumerRecord, FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from .topic_name_extractor import RecordContext, TopicNameExtractor
from .partition_counts import CopartitionError
from .view import (
    ProcessorNode, Subtopology, TopicRef, Topology, as_topology, changelog_topic_name,
    internal_topic_name,
)
from .windowed import SessionWindowedKStream, TimeWindowedKStream
from .windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "AutoOffsetReset", "Branched", "BufferConfig", "Consumed", "EmitStrategy", "Grouped", "Joined", "Materialized",
    "GlobalKTable", "ConsumerRecord", "FailOnInvalidTimestamp", "LogAndSkipOnInvalidTimestamp",
    "UsePartitionTimeOnInvalidTimestamp", "WallclockTimestampExtractor",
    "Named", "Printed", "Produced", "Repartitioned", "StreamJoined", "Suppressed", "TableJoined", "TopologyException",
    "BranchedKStream", "KGroupedStream", "KGroupedTable", "KStream", "KTable", "SessionWindowedKStream",
    "StreamsBuilder", "StreamsConfig", "TopologyConfig",
    "TimeWindowedKStream", "FunctionForm", "UserFunction", "NodeKind", "StoreSpec",
    "StoreType", "Serde", "Serdes", "Window", "Windowed", "WindowedSerde", "CopartitionError",
    "ProcessorNode", "Subtopology", "TaskId", "TopicRef", "Topology", "changelog_topic_name",
    "internal_topic_name", "as_topology", "JoinWindows", "SessionWindows", "SlidingWindows", "TimeWindows",
    "FixedKeyProcessor", "Header", "Headers", "Processor", "ProcessorSupplier", "PunctuationType", "Record", "RecordMetadata", "Stores",
    "KeyValue", "ValueAndTimestamp", "ValueTransformerWithKey", "RecordContext", "TopicNameExtractor", "VersionedRecord", "CogroupedKStream", "SessionWindowedCogroupedKStream", "TimeWindowedCogroupedKStream",
]
