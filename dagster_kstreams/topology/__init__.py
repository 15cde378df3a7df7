"""The topology layer: Kafka Streams' DSL in Python (pure: no Spark, no broker, no Dagster).

See :mod:`.view` for the read-only contract other layers consume.
"""
from .config import (
    AutoOffsetReset, Branched, BufferConfig, Consumed, Grouped, Joined, Materialized, Named, Printed,
    Produced, Repartitioned, StreamJoined, Suppressed, TopologyException,
)
from .functions import FunctionForm, UserFunction
from .graph import NodeKind, StoreSpec, StoreType
from .grouped import KGroupedStream
from .kstream import BranchedKStream, KStream
from .ktable import KGroupedTable, KTable
from .serdes import Serde, Serdes, Window, Windowed, WindowedSerde
from .streams_builder import StreamsBuilder
from .view import (
    CopartitionError, ProcessorNode, Subtopology, TaskId, TopicRef, Topology, as_topology, changelog_topic_name,
    internal_topic_name,
)
from .windowed import SessionWindowedKStream, TimeWindowedKStream
from .windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "AutoOffsetReset", "Branched", "BufferConfig", "Consumed", "Grouped", "Joined", "Materialized", "Named",
    "Printed", "Produced", "Repartitioned", "StreamJoined", "Suppressed", "TopologyException",
    "BranchedKStream", "KGroupedStream", "KGroupedTable", "KStream", "KTable", "SessionWindowedKStream",
    "StreamsBuilder", "TimeWindowedKStream", "FunctionForm", "UserFunction", "NodeKind", "StoreSpec",
    "StoreType", "Serde", "Serdes", "Window", "Windowed", "WindowedSerde", "CopartitionError",
    "ProcessorNode", "Subtopology", "TaskId", "TopicRef", "Topology", "changelog_topic_name",
    "internal_topic_name", "as_topology", "JoinWindows", "SessionWindows", "SlidingWindows", "TimeWindows",
]
