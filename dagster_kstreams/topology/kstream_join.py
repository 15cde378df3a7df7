"""The stream-stream join's graph (Kafka Streams' ``KStreamImplJoin``): two window stores, a windowed
node on each side, the two join processors and their merge, with names drawn from the counter in
Kafka Streams' order. ``KStream.join``/``left_join``/``outer_join`` repartition and co-partition
both sides first, then add this.
"""
from __future__ import annotations

from .abstract_stream import (
    JOINOTHER_NAME, JOINTHIS_NAME, MERGE_NAME, OUTEROTHER_NAME, OUTERSHARED_NAME, OUTERTHIS_NAME, WINDOWED_NAME,
    _suffix_or_generate,
)
from .errors import TopologyException
from .functions import UserFunction
from .graph import GraphNode, InternalStreamsBuilder, ProcessorGraphNode, StreamStreamJoinNode
from .joined import StreamJoined
from .node_specs import NodeKind, ProcessorSpec, StoreSpec, StoreType
from .windows import JoinWindows, join_store_retention_ms

__all__ = ["add_stream_stream_join", "check_join_store_suppliers"]


def add_stream_stream_join(builder: InternalStreamsBuilder, this_node: GraphNode, other_node: GraphNode,
                           joiner: UserFunction, windows: JoinWindows, stream_joined: StreamJoined,
                           left_outer: bool, right_outer: bool) -> StreamStreamJoinNode:
    """Add the join below ``this_node`` and ``other_node``; the returned node is the merge, named
    ``<name>-merge`` or ``KSTREAM-MERGE-<n>``."""
    named = stream_joined.name
    join_this_suffix = "-outer-this-join" if right_outer else "-this-join"
    join_other_suffix = "-outer-other-join" if left_outer else "-other-join"
    this_windowed_name = _suffix_or_generate(builder, named, "-this-windowed", WINDOWED_NAME)
    other_windowed_name = _suffix_or_generate(builder, named, "-other-windowed", WINDOWED_NAME)
    join_this_generated = builder.new_processor_name(OUTERTHIS_NAME if right_outer else JOINTHIS_NAME)
    join_other_generated = builder.new_processor_name(OUTEROTHER_NAME if left_outer else JOINOTHER_NAME)
    join_this_name = named + join_this_suffix if named is not None else join_this_generated
    join_other_name = named + join_other_suffix if named is not None else join_other_generated
    join_merge_name = _suffix_or_generate(builder, named, "-merge", MERGE_NAME)

    base = stream_joined.store_name
    retention = join_store_retention_ms(windows)
    this_supplier, other_supplier = stream_joined.this_store_supplier, stream_joined.other_store_supplier
    check_join_store_suppliers(this_supplier, other_supplier, windows)
    this_store = StoreSpec(_join_store_name(this_supplier, base, join_this_suffix, join_this_generated),
                           StoreType.JOIN_WINDOW, stream_joined.logging_enabled, stream_joined.key_serde,
                           stream_joined.value_serde, windows, retention,
                           persistent=this_supplier.persistent if this_supplier else None)
    other_store = StoreSpec(_join_store_name(other_supplier, base, join_other_suffix, join_other_generated),
                            StoreType.JOIN_WINDOW, stream_joined.logging_enabled, stream_joined.key_serde,
                            stream_joined.other_value_serde, windows, retention,
                            persistent=other_supplier.persistent if other_supplier else None)
    this_windowed = ProcessorGraphNode(this_windowed_name, ProcessorSpec(
        NodeKind.JOIN_WINDOW, {"store_name": this_store.name, "windows": windows, "side": "this"}, [this_store]))
    builder.add_graph_node(this_node, this_windowed)
    other_windowed = ProcessorGraphNode(other_windowed_name, ProcessorSpec(
        NodeKind.JOIN_WINDOW, {"store_name": other_store.name, "windows": windows, "side": "other"},
        [other_store]))
    builder.add_graph_node(other_node, other_windowed)

    # Without the spurious-result fix (JoinWindows.of) Kafka Streams adds no outer-join store: a record
    # without partner is joined with null at once (StreamStreamJoinNode).
    outer_store = None
    if left_outer and windows.spurious_result_fix:
        suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
        if this_supplier is not None:  # OuterStreamJoinStoreFactory: named, and kept, as this side's store
            outer_name = this_supplier.name + suffix
        elif base:
            outer_name = base + suffix
        else:
            prefix = OUTERTHIS_NAME if right_outer else JOINTHIS_NAME
            outer_name = OUTERSHARED_NAME + join_this_generated[len(prefix):]
        outer_store = StoreSpec(outer_name + "-store", StoreType.OUTER_JOIN_SHARED, stream_joined.logging_enabled,
                                stream_joined.key_serde, None, windows, retention,
                                persistent=this_supplier.persistent if this_supplier else None)
    join_type = "outer" if right_outer else ("left" if left_outer else "inner")
    common = {"joiner": joiner, "windows": windows, "join_type": join_type,
              "this_store_name": this_store.name, "other_store_name": other_store.name,
              "outer_store_name": outer_store.name if outer_store else None}
    this_spec = ProcessorSpec(NodeKind.STREAM_STREAM_JOIN, {**common, "side": "this", "outer": left_outer},
                              [other_store] + ([outer_store] if outer_store else []))
    other_spec = ProcessorSpec(NodeKind.STREAM_STREAM_JOIN, {**common, "side": "other", "outer": right_outer},
                               [this_store] + ([outer_store] if outer_store else []))
    merge_spec = ProcessorSpec(NodeKind.STREAM_STREAM_JOIN_MERGE, dict(common))
    # KStreamKStreamSelfJoin: named as the merge, reading the left window store only
    self_join_spec = ProcessorSpec(NodeKind.STREAM_STREAM_SELF_JOIN, dict(common), [this_store])
    join_node = StreamStreamJoinNode(join_merge_name, join_this_name, join_other_name, this_spec, other_spec,
                                     merge_spec, this_windowed_name, other_windowed_name, self_join_spec)
    if left_outer or right_outer:
        join_node.labels.add("NULL_KEY_RELAXED_JOIN")
    builder.add_graph_node([this_node, other_node], join_node)
    return join_node


def _join_store_name(supplier, base, suffix: str, generated: str) -> str:
    """A side's store: its supplier's name, else the ``StreamJoined`` store name with the side's suffix,
    else the join processor's generated name; the last two end in ``-store``."""
    if supplier is not None:
        return supplier.name
    return (base + suffix if base else generated) + "-store"


def check_join_store_suppliers(this_supplier, other_supplier, windows: JoinWindows) -> None:
    """``KStreamImplJoin``'s checks of the suppliers given (``assertUniqueStoreNames``, then
    ``assertWindowSettings`` of this side's, then the other's): distinct names, duplicates retained
    (a key may meet several records at one time), and exactly the join's window size and retention
    (its size plus grace)."""
    if this_supplier is not None and other_supplier is not None and this_supplier.name == other_supplier.name:
        raise TopologyException(f"Both StoreSuppliers have the same name ({this_supplier.name}). "
                                "StoreSuppliers must provide unique names")
    for supplier in (this_supplier, other_supplier):
        if supplier is None:
            continue
        if not supplier.retain_duplicates:
            raise TopologyException(f"The StoreSupplier must set retainDuplicates=true, found retainDuplicates=false "
                                    f"(store {supplier.name})")
        retention = join_store_retention_ms(windows)
        if supplier.retention_ms != retention or supplier.window_size_ms != windows.size():
            raise TopologyException(
                f"Window settings mismatch. The StoreSupplier of store {supplier.name} "
                f"(retention=[{supplier.retention_ms}], windowSize=[{supplier.window_size_ms}]) must match the "
                f"JoinWindows' (retention: size plus grace =[{retention}], size=[{windows.size()}])")
