"""The one walk up a table's steps (:func:`~dagster_kstreams.processors.table_behind.table_of`) agrees
with the loops each reader of a table had before it (kept here, as they were, as the reference), on
generated sub-topologies: tables read from a topic, aggregations, windowed ones (time, sliding, session;
emitting on every update or on window close), cogroups, table-table joins of such tables, each behind a
chain of filters, map_values (with a store or not) and suppressions."""

from __future__ import annotations

from datetime import timedelta
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kstreams.processors import (
    session_table_reads, user_dsl_store, windowed_store_keys, windowed_table_reads,
)
from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.table_behind import FILTERS_AND_MAP_VALUES, table_behind, table_of
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.emit_strategy import ON_WINDOW_CLOSE, ON_WINDOW_UPDATE
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.suppressed import BufferConfig, Suppressed
from dagster_kstreams.topology.view import ProcessorNode, Subtopology
from dagster_kstreams.topology.windows import SessionWindows, SlidingWindows, TimeWindows

K = NodeKind
STEP_KINDS = (K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.SUPPRESS)
PLAIN_WRITERS = (K.TABLE_SOURCE, K.TO_TABLE, K.AGGREGATE, K.TABLE_AGGREGATE, K.FK_JOIN_RESULT)
WINDOWS = (TimeWindows(10, 10, 0), TimeWindows(20, 5, 3), SlidingWindows(10, 2), SessionWindows(5, 0),
           SessionWindows(7, 1))
# Drawn more often than the others, so that joins of windowed tables readable by window come up
EMITS = (ON_WINDOW_UPDATE, ON_WINDOW_UPDATE, ON_WINDOW_CLOSE)
STEPS_DRAWN = (K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.SUPPRESS)


# -- the loops the readers had (the reference) -------------------------------------------------------
def old_table_behind(sub, factory):
    steps, node = [], factory
    while True:
        (parent,) = node.parents or (None,)
        if parent is None:
            return tuple(reversed(steps)), ()
        node = sub.node(parent)
        if node.kind not in STEP_KINDS:
            break
        steps.append(node)
    writers = [sub.node(name) for name in node.parents] if node.kind is K.COGROUP_MERGE else [node]
    return tuple(reversed(steps)), tuple(writer for writer in writers if writer.kind is K.WINDOWED_AGGREGATE)


def old_behind_steps(sub, node):  # windowed_table_reads._behind_steps
    while node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES):
        (parent,) = node.parents
        node = sub.node(parent)
    return node


def old_windowed_aggregation(sub, node):  # windowed_table_reads._windowed_aggregation
    node = old_behind_steps(sub, node)
    return node if windowed_table_reads.readable_windows_on_update(node) else None


def old_is_windowed_table(sub, node) -> bool:  # windowed_table_reads.is_windowed_table
    while node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.SUPPRESS):
        (parent,) = node.parents
        node = sub.node(parent)
    if node.kind is K.TABLE_TABLE_JOIN_MERGE:
        return any(old_is_windowed_table(sub, sub.node(sub.node(join).parents[0])) for join in node.parents)
    writers = [sub.node(name) for name in node.parents] if node.kind is K.COGROUP_MERGE else [node]
    return any(writer.kind is K.WINDOWED_AGGREGATE for writer in writers)


def old_session_table(sub, node):  # session_table_reads._session_table
    kept = []
    while node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES):
        if node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES) and bool(node.stores):
            kept.append(node)
        (parent,) = node.parents
        node = sub.node(parent)
    found = session_table_reads.is_session_aggregation_on_update(node) or old_is_session_join(sub, node)
    return (node if found else None), kept


def old_is_session_join(sub, node) -> bool:  # session_table_reads.is_session_join
    if node.kind is not K.TABLE_TABLE_JOIN_MERGE:
        return False
    return all(old_session_table(sub, sub.node(sub.node(join).parents[0]))[0] is not None for join in node.parents)


def old_table_step_writer(sub, step):  # the walk of user_dsl_store._check_table_step
    node = step
    while node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.SUPPRESS):
        (parent,) = node.parents
        node = sub.node(parent)
    if node.kind is K.COGROUP_MERGE:
        node = sub.node(node.parents[0])
    return node


def old_keyed_by_sessions(sub, node) -> bool:  # windowed_store_keys.keyed_by_sessions
    while node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.SUPPRESS, K.COGROUP_MERGE, K.TABLE_TABLE_JOIN_MERGE,
                        K.TABLE_TABLE_JOIN):
        node = sub.node(node.parents[0])
    return isinstance(node.params.get("windows"), SessionWindows)


def old_stamping_table(sub, factory):  # table_step_stores._stamping_table
    node = factory
    while node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES, K.SUPPRESS):
        (parent,) = node.parents
        node = sub.node(parent)
    return node


# -- generated sub-topologies ------------------------------------------------------------------------
class _Graph:
    """Nodes as they are added: name -> (kind, parents, stores, params)."""

    def __init__(self):
        self.nodes: dict[str, tuple] = {}

    def add(self, kind, parents=(), stores=(), **params) -> str:
        name = f"{kind.value.upper()}-{len(self.nodes):010d}"
        self.nodes[name] = (kind, tuple(parents), tuple(stores), params)
        return name

    def subtopology(self) -> Subtopology:
        children = {name: [] for name in self.nodes}
        for name, (_, parents, _, _) in self.nodes.items():
            for parent in parents:
                children[parent].append(name)
        nodes = tuple(ProcessorNode(name, kind, parents, tuple(children[name]), stores, MappingProxyType(params))
                      for name, (kind, parents, stores, params) in self.nodes.items())
        return Subtopology(0, nodes, (), None, (), (), ())


@st.composite
def tables(draw, graph: _Graph, palette: tuple, depth: int = 2) -> str:
    """A table's last node: a writer (a join of two tables, down to ``depth``) and a chain of steps;
    windowed aggregations take their windows from ``palette`` (a sub-topology's few, so that joined
    tables often share their kind of windows)."""
    choices = ["plain", "windowed", "windowed", "windowed", "cogroup"] + (["join"] * 2 if depth > 0 else [])
    writer = draw(st.sampled_from(choices))
    if writer == "plain":
        kind = draw(st.sampled_from(PLAIN_WRITERS))
        node = graph.add(kind, stores=draw(st.sampled_from([(), (f"store-{len(graph.nodes)}",)])))
    elif writer in ("windowed", "cogroup"):
        windows, emits = draw(st.sampled_from(palette))
        windowed = writer == "windowed" or draw(st.booleans())
        count = 1 if writer == "windowed" else draw(st.integers(1, 3))
        inputs = [graph.add(K.WINDOWED_AGGREGATE, windows=windows, emit_strategy=emits) if windowed
                  else graph.add(K.AGGREGATE) for _ in range(count)]
        node = inputs[0] if writer == "windowed" else graph.add(K.COGROUP_MERGE, inputs)
    else:
        this, other = draw(tables(graph, palette, depth - 1)), draw(tables(graph, palette, depth - 1))
        joins = [graph.add(K.TABLE_TABLE_JOIN, [this], side="this"),
                 graph.add(K.TABLE_TABLE_JOIN, [other], side="other")]
        if draw(st.booleans()):
            joins.reverse()  # the merge's parents in either order
        stored = draw(st.booleans())
        node = graph.add(K.TABLE_TABLE_JOIN_MERGE, joins, stores=("join-store",) if stored else (),
                         store_name="join-store")
    for kind, stored in draw(st.lists(st.tuples(st.sampled_from(STEPS_DRAWN), st.booleans()), max_size=3)):
        node = graph.add(kind, [node], stores=(f"step-{len(graph.nodes)}",) if stored else ())
    return node


@st.composite
def subtopologies(draw):
    """A sub-topology of generated tables, each read by a processor (a re-grouping)."""
    graph = _Graph()
    # one session window emitting on every update in a third of them: joins of session tables come up
    palette = draw(st.one_of(st.just(((SessionWindows(5, 0), ON_WINDOW_UPDATE),)),
                             st.lists(st.tuples(st.sampled_from(WINDOWS), st.sampled_from(EMITS)), min_size=1,
                                      max_size=2).map(tuple)))
    for table in draw(st.lists(tables(graph, palette), min_size=1, max_size=2)):
        graph.add(K.TABLE_GROUP_BY_MAP, [table])
    return graph.subtopology()


TABLE_NODE_KINDS = {*STEP_KINDS, *PLAIN_WRITERS, K.WINDOWED_AGGREGATE, K.COGROUP_MERGE, K.TABLE_TABLE_JOIN_MERGE}


def _table_nodes(sub):
    return [node for node in sub.nodes if node.kind in TABLE_NODE_KINDS]


def _names(nodes) -> list:
    return [node.name for node in nodes]


# -- agreement -----------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(subtopologies())
def test_table_behind_a_reader_is_the_one_of_its_old_walk(sub):
    for reader in (node for node in sub.nodes if node.kind is K.TABLE_GROUP_BY_MAP):
        steps, aggregations = old_table_behind(sub, reader)
        table = table_behind(sub, reader)
        assert (_names(table.steps), _names(table.aggregations)) == (_names(steps), _names(aggregations))
        # the writer a re-grouping of a session table names (session_table_reads.check_session_regrouping)
        assert table.writer == sub.node((steps[0] if steps else reader).parents[0])


@settings(max_examples=100, deadline=None)
@given(subtopologies())
def test_windowed_table_reads_walk_as_before(sub):
    for node in _table_nodes(sub):
        assert table_of(sub, node, FILTERS_AND_MAP_VALUES).writer == old_behind_steps(sub, node)
        assert windowed_table_reads._windowed_aggregation(sub, node) == old_windowed_aggregation(sub, node)
        assert windowed_table_reads.is_windowed_table(sub, node) == old_is_windowed_table(sub, node)


@settings(max_examples=100, deadline=None)
@given(subtopologies())
def test_session_table_reads_walk_as_before(sub):
    for node in _table_nodes(sub):
        table, kept = session_table_reads._session_table(sub, node)
        old_table, old_kept = old_session_table(sub, node)
        assert (table, _names(kept)) == (old_table, _names(old_kept))
        assert session_table_reads.is_session_join(sub, node) == old_is_session_join(sub, node)


def _refusal(check) -> str:
    try:
        check()
    except UnsupportedTopologyError as error:
        return str(error)
    return ""


@settings(max_examples=100, deadline=None)
@given(subtopologies())
def test_dsl_store_and_versioned_step_walks_as_before(sub):
    for node in _table_nodes(sub):
        if node.kind in (K.TABLE_FILTER, K.TABLE_MAP_VALUES):
            refusal = _refusal(lambda: user_dsl_store._check_table_step("where", node, sub))
            writer = old_table_step_writer(sub, node)
            stamped = writer.kind in user_dsl_store._STAMPED_AS_KAFKA_STREAMS
            assert (refusal == "") == stamped
            assert stamped or f"over the table of {writer.name} ({writer.kind.value})" in refusal
        if old_is_windowed_table(sub, node):  # check_dsl_store asks it of windowed tables only
            assert windowed_store_keys.keyed_by_sessions(sub, node) == old_keyed_by_sessions(sub, node)
        # the table and writers table_step_stores._check_own_timestamps checks, as its walk found them
        table, old = table_of(sub, node), old_stamping_table(sub, node)
        old_writers = [sub.node(name) for name in old.parents] if old.kind is K.COGROUP_MERGE else [old]
        assert (table.writer, list(table.writers)) == (old, old_writers)


def test_a_step_over_a_non_step_refuses_naming_the_writer():
    """The reference's refusal, by hand: a filter's store over a suppression of a foreign-key join's
    result (whose updates a processor's view does not get with Kafka Streams' stamps) is refused naming
    that writer, past the suppression."""
    graph = _Graph()
    writer = graph.add(K.FK_JOIN_RESULT)
    step = graph.add(K.TABLE_FILTER, [graph.add(K.SUPPRESS, [writer])], stores=("s",))
    sub = graph.subtopology()
    with pytest.raises(UnsupportedTopologyError, match=f"over the table of {writer} \\(fk_join_result\\)"):
        user_dsl_store._check_table_step("where", sub.node(step), sub)


def test_a_windowed_read_stops_at_a_suppression():
    """Why the windowed reads walk through filters/map_values only: a join of a time-windowed table
    behind a suppression and a filter with a store of its own stays refused, naming the join, at the
    suppression the runner reads no value through (passing it, the filter's store would be read as one
    keyed by windows, and the join admitted)."""
    builder = StreamsBuilder()
    windows = TimeWindows.of_size_with_no_grace(timedelta(seconds=1))
    suppressed = builder.stream("s").group_by_key().windowed_by(windows).count() \
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    counts = builder.stream("s").group_by_key().windowed_by(windows).count()
    kept = suppressed.filter(lambda windowed, n: n > 1, Materialized.as_("kept"))
    kept.join(counts, lambda this, other: this).to_stream().to("out")
    with pytest.raises(UnsupportedTopologyError, match=r"processor KTABLE-JOINTHIS-\d+ \(table_table_join\) reads the "
                       r"table 'KTABLE-FILTER-\d+', whose values come from KTABLE-SUPPRESS-\d+ \(suppress\)"):
        compile_topology(builder.build(), "app").check()
