"""Chains of stateless processors compiled into one Python function each: the per-record cost of
the pass is then the user's functions, the serdes and a few list appends.

Why: run processor by processor, a record pays per processor a ``process`` call, a
:meth:`~.program.SubtopologyProgram._forward` call, a :meth:`~.base.Processor.call` wrapper and a
loop over the children; in a word count (split, re-key, write the repartition topic) that was
most of the pass, and the user's functions a few percent. Compiled, a chain is one function with
the processors' steps written out in it.

The rule. A processor is *fusable* when it is exactly (not a subclass of) one of the stateless
record operations of :data:`FUSABLE` (filter, map, map_values, flat_map, flat_map_values,
select_key, peek, foreach, print, merge, branch_child, repartition_filter), or a sink that places
no record itself (no stream partitioner). The chain that starts at a fusable processor takes its
child as long as the processor has exactly one child and that child is fusable (and the function
stays within Python's nesting limits: :data:`MAX_LOOPS`, :data:`MAX_DEPTH`). Where it stops (a
processor with no child, several children, or a child that is not fusable: a branch, a store, a
join, the Processor API, a table operation), the record goes on to each child, in order, through
the program's entry for that child (:func:`compile_entries`): a chain of its own, or the child's
``process``.

What is guaranteed, record for record, against the processors' own ``process`` methods: the same
sink records in the same order (the compiled function is the same depth-first walk: a flat_map's
first result reaches the sink before its second is taken), the same headers and timestamps, the
same errors (:meth:`~.base.Processor.failure`, :func:`~.stateless.not_a_pair` and
:meth:`~.stateless.Sink.serialize_failure`, chained to the user's exception; what the processors
let through unwrapped, such as an error raised while iterating a flat_map's result, goes through
unwrapped here too), and the user's functions called as often and in the same order.
``tests/test_fused_chains.py`` checks it on random chains against the processors run one by one.
"""

from __future__ import annotations

from typing import Callable

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.stateless import (
    BranchChild, Filter, FlatMap, FlatMapValues, Foreach, Map, MapValues, Merge, Peek, Print, RepartitionFilter,
    SelectKey, Sink, not_a_pair,
)
from dagster_kstreams.topology.serdes import serialize_string

__all__ = ["FUSABLE", "MAX_DEPTH", "MAX_LOOPS", "Entry", "compile_entries", "fusable", "chain_at"]

# What the program calls to run a record from a processor on: ``(key, value, context, out, state)``.
Entry = Callable[..., None]

# The record operations a chain may hold (exact classes), besides a sink without placement.
FUSABLE = frozenset({Filter, MapValues, Map, SelectKey, FlatMap, FlatMapValues, Peek, Foreach, Print, Merge,
                     BranchChild, RepartitionFilter})


def fusable(node: Processor) -> bool:
    if type(node) is Sink:
        return node.placement is None
    return type(node) in FUSABLE


# Python refuses a function nested deeper than 20 loops or 100 indentation levels: a chain stops
# before it would nest deeper than these (its next processor then starts a chain of its own).
MAX_LOOPS, MAX_DEPTH = 16, 64
_LOOPING, _NESTING = (FlatMap, FlatMapValues), (FlatMap, FlatMapValues, Filter, RepartitionFilter)


def chain_at(nodes: list[Processor], start: int) -> list[int]:
    """The positions of the chain that starts at the fusable processor ``start`` (see the rule above)."""
    chain = [start]
    loops, depth = 0, 0
    while len(nodes[chain[-1]].children) == 1 and fusable(nodes[nodes[chain[-1]].children[0]]):
        loops += type(nodes[chain[-1]]) in _LOOPING
        depth += type(nodes[chain[-1]]) in _NESTING
        if loops >= MAX_LOOPS or depth >= MAX_DEPTH:
            break
        chain.append(nodes[chain[-1]].children[0])
    return chain


def compile_entries(nodes: list[Processor], fuse: bool = True) -> list[Entry]:
    """Each processor's entry: the compiled chain that starts at it when it is fusable (and
    ``fuse``), else its own ``process``. Chains hand records on through this same list."""
    entries: list[Entry] = [node.process for node in nodes]
    if fuse:
        for index, node in enumerate(nodes):
            if fusable(node):
                entries[index] = _compile(nodes, chain_at(nodes, index), entries)
    return entries


class _Source:
    """The text of one compiled chain, and the objects its names stand for."""

    def __init__(self, entries: list[Entry]):
        self.lines: list[str] = []
        self.bound: dict[str, object] = {"entries": entries, "not_a_pair": not_a_pair}

    def bind(self, prefix: str, obj: object) -> str:
        name = f"{prefix}{len(self.bound)}"
        self.bound[name] = obj
        return name

    def add(self, depth: int, *lines: str) -> None:
        self.lines.extend("    " * depth + line for line in lines)

    def call_user(self, depth: int, node_name: str, target: str, call: str) -> None:
        """``target = call``; a failure raises what ``Processor.call`` raises."""
        self.add(depth, "try:", f"    {target} = {call}", "except Exception as cause:",
                 f"    raise {node_name}.failure(context, cause) from cause")

    def unpack_pair(self, depth: int, node_name: str, result: str, key: str, value: str) -> None:
        """``key, value = result``; anything but a pair raises what ``stateless.pair`` raises."""
        self.add(depth, "try:", f"    {key}, {value} = {result}", "except (TypeError, ValueError) as cause:",
                 f"    raise not_a_pair({node_name}, {result}) from cause")


def _compile(nodes: list[Processor], chain: list[int], entries: list[Entry]) -> Entry:
    source = _Source(entries)
    key, value, depth = "key", "value", 1
    for index in chain:
        node = nodes[index]
        me = source.bind("node", node)
        kind = type(node)
        if kind is Sink:
            _sink(source, depth, node, me, key, value)
            continue
        fn = None if node.fn is None else source.bind("fn", node.fn)
        new_key, new_value = f"key{index}", f"value{index}"
        if kind is Filter:
            source.call_user(depth, me, f"kept{index}", f"{fn}({key}, {value})")
            source.add(depth, f"if {'not ' if node.negate else ''}kept{index}:")
            depth += 1
        elif kind is MapValues:
            source.call_user(depth, me, new_value, f"{fn}({key}, {value})")
            value = new_value
        elif kind is SelectKey:
            source.call_user(depth, me, new_key, f"{fn}({key}, {value})")
            key = new_key
        elif kind is Map:
            source.call_user(depth, me, f"result{index}", f"{fn}({key}, {value})")
            source.unpack_pair(depth, me, f"result{index}", new_key, new_value)
            key, value = new_key, new_value
        elif kind is FlatMap:
            source.call_user(depth, me, f"results{index}", f"{fn}({key}, {value})")
            source.add(depth, f"for result{index} in results{index} or ():")
            source.unpack_pair(depth + 1, me, f"result{index}", new_key, new_value)
            key, value, depth = new_key, new_value, depth + 1
        elif kind is FlatMapValues:
            source.call_user(depth, me, f"results{index}", f"{fn}({key}, {value})")
            source.add(depth, f"for {new_value} in results{index} or ():")
            value, depth = new_value, depth + 1
        elif kind in (Peek, Foreach, Print):
            if fn is not None:
                source.call_user(depth, me, "_", f"{fn}({key}, {value})")
        elif kind is RepartitionFilter:
            source.add(depth, f"if {key} is not None:")
            depth += 1
        # Merge, BranchChild: the record passes on as it is
    last = nodes[chain[-1]]
    if type(last) is not Sink:
        for child in last.children:  # where the chain stops: each child's own entry, in order
            source.add(depth, f"entries[{child}]({key}, {value}, context, out, state)")
    source.add(depth, "pass")
    text = "\n".join(["def chain(key, value, context, out, state):", *source.lines])
    names = "/".join(nodes[index].name for index in chain)
    namespace = dict(source.bound)
    exec(compile(text, f"<fused chain {names}>", "exec"), namespace)  # noqa: S102 - our own template
    chain_function = namespace["chain"]
    chain_function.source = text  # what the chain runs, for a reader (and the tests)
    return chain_function


def _sink(source: _Source, depth: int, sink: Sink, me: str, key: str, value: str) -> None:
    """The sink's ``process`` written out: topic, serialized key and value, one row of each column."""
    if sink.topic is None and sink.extractor.takes_context:  # the context is built by the sink, as unfused
        source.add(depth, f"topic = {source.bind('pick_topic', sink.pick_topic)}({key}, {value}, context)")
    elif sink.topic is None:
        extractor = source.bind("extract", sink.extractor.call)
        source.call_user(depth, me, "topic", f"{extractor}({key}, {value})")
    else:
        source.add(depth, f"topic = {source.bind('topic', sink.topic)}")
    source.add(depth, "try:", f"    key_bytes = {_serialized(source, 'serialize_key', sink.key_serde, key)}",
               f"    value_bytes = {_serialized(source, 'serialize_value', sink.value_serde, value)}",
               "except Exception as cause:", f"    raise {me}.serialize_failure(topic, context, cause) from cause")
    columns = ("topic", "key", "value", "headers", "timestamp_ms")
    cells = ("topic", "key_bytes", "value_bytes", "context.headers", "context.timestamp")
    # ``out.topic.append(...)`` as written: Python 3.11 calls a method looked up so faster than
    # an ``append`` bound once per call (measured: 15% slower bound)
    for column, cell in zip(columns, cells):
        source.add(depth, f"out.{column}.append({cell})")


def _serialized(source: _Source, prefix: str, serde, variable: str) -> str:
    """The expression of ``variable`` serialized with ``serde``: its fastest equal form
    (``Serde.serializer``; a serde of the user's: its serialize), and for the String serde an
    exact ``str`` encoded right there, with no call."""
    serializer = getattr(serde, "serializer", None)
    serializer = serializer() if callable(serializer) else serde.serialize
    name = source.bind(prefix, serializer)
    if serializer is serialize_string:
        return f'{variable}.encode() if {variable}.__class__ is str else {name}({variable})'
    return f"{name}({variable})"
