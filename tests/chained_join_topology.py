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
"""

from __future__ import annotations

from dagster_kstreams.topology import Grouped, Materialized, StreamsBuilder

INPUTS = ("a", "b", "c", "s")
OUTPUTS = ("out-left", "out-outer", "out-inner", "out-stream", "out-counts")
STORES = ("a-store", "b-store", "c-store", "ab-store", "outer-store", "counts")


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
    builder.stream(topics["s"]).left_join(left.map_values(lambda v: v.upper()),
                                          lambda v, ab: f"{text(v)}|{text(ab)}").to(topics["out-stream"])
    inner.group_by(lambda key, value: (value.split("+")[1], key), Grouped.as_("pairs")) \
        .count(uncached("counts")).to_stream().map_values(str).to(topics["out-counts"])
    return builder
