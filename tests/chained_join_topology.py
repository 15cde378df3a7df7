"""Chained table-table joins, the Python twin of kstreams.oracle.ChainedJoinExamples (Java): keep the
two in step. Its functions are self-contained: Spark's Python workers cannot import modules of tests/.

Three tables a, b, c and a stream s, every store without the record cache (every update reaches
the outputs):

* ``a.join(b)`` (no store) left-joined with c: ``out-left``;
* c outer-joined with ``a.left_join(b)`` (no store; the joined table on the *other* side), into the
  store ``outer-store``: ``out-outer``;
* ``a.outer_join(b)`` into the store ``ab-store``, joined (inner) with c: ``out-inner``;
* s left-joined with ``a.left_join(b)``, through ``map_values``: ``out-stream``;
* ``a.join(b)`` re-grouped by its b part and counted (repartition topic ``pairs``): ``out-counts``.

Filtered tables (kept: the value's number is not a multiple of 3), where Kafka Streams' ``KTableFilter``
drops an update whose new and old values both fail when old values are sent, and forwards it as a
tombstone when they are not:

* ``a.filter`` (old values sent from the start: a's store is materialized) left-joined with c:
  ``out-filter-left``; ``b.filter_not`` outer-joined with it: ``out-filter-outer``; its ``to_stream``:
  ``out-filter-stream``; ``a.filter`` materialized into ``kept-store``: ``out-filter-store``;
* ``s.to_table`` (unnamed, uncached; no store until the join below asks for one) filtered, then
  left-joined with c: ``out-s-left``; that filter's ``to_stream`` (old values sent, as the join
  asks): ``out-s-kept``; the same table's ``filter_not`` (old values never sent): ``out-s-dropped``.
"""

from __future__ import annotations

from dagster_kstreams.topology import Grouped, Materialized, Serdes, StreamsBuilder

INPUTS = ("a", "b", "c", "s")
OUTPUTS = ("out-left", "out-outer", "out-inner", "out-stream", "out-counts", "out-filter-left", "out-filter-outer",
           "out-filter-stream", "out-filter-store", "out-s-left", "out-s-kept", "out-s-dropped")
STORES = ("a-store", "b-store", "c-store", "ab-store", "outer-store", "counts", "kept-store")


def chained_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ChainedJoinExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()

    def text(value):  # as Java's string concatenation writes it
        return "null" if value is None else value

    def uncached(store):
        return Materialized.as_(store).with_caching_disabled()

    a = builder.table(topics["a"], uncached("a-store"))
    b = builder.table(topics["b"], uncached("b-store"))
    c = builder.table(topics["c"], uncached("c-store"))
    inner = a.join(b, lambda x, y: f"({text(x)}+{text(y)})")
    inner.left_join(c, lambda ab, z: f"{text(ab)}*{text(z)}").to_stream().to(topics["out-left"])
    left = a.left_join(b, lambda x, y: f"({text(x)}/{text(y)})")
    c.outer_join(left, lambda z, ab: f"{text(z)}%{text(ab)}", uncached("outer-store")) \
        .to_stream().to(topics["out-outer"])
    outer = a.outer_join(b, lambda x, y: f"({text(x)}~{text(y)})", uncached("ab-store"))
    outer.join(c, lambda ab, z: f"{text(ab)}^{text(z)}").to_stream().to(topics["out-inner"])
    ts = builder.stream(topics["s"])
    ts.left_join(left.map_values(lambda v: v.upper()), lambda v, ab: f"{text(v)}|{text(ab)}").to(topics["out-stream"])
    inner.group_by(lambda key, value: (value.split("+")[1], key), Grouped.as_("pairs")) \
        .count(uncached("counts")).to_stream().map_values(str).to(topics["out-counts"])

    def kept(key, value):  # the value's number (after the table's letter) is not a multiple of 3
        return int(value[1:]) % 3 != 0

    # a's filters send old values from the start (a-store is materialized)
    a_kept = a.filter(kept)
    a_kept.left_join(c, lambda x, z: f"{text(x)}<{text(z)}").to_stream().to(topics["out-filter-left"])
    b.filter_not(kept).outer_join(a_kept, lambda y, x: f"{text(y)}>{text(x)}").to_stream() \
        .to(topics["out-filter-outer"])
    a_kept.to_stream().to(topics["out-filter-stream"])
    a.filter(kept, uncached("kept-store")).to_stream().to(topics["out-filter-store"])
    # s's table has no store when its filters are made: they send old values only if asked to
    st = ts.to_table(Materialized.with_(Serdes.String(), Serdes.String()).with_caching_disabled())
    s_kept = st.filter(kept)
    s_dropped = st.filter_not(kept)
    s_kept.left_join(c, lambda x, z: f"{text(x)}<{text(z)}").to_stream().to(topics["out-s-left"])
    s_kept.to_stream().to(topics["out-s-kept"])
    s_dropped.to_stream().to(topics["out-s-dropped"])
    return builder
