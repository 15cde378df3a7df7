"""Foreign-key joins of table-table joins' results, the Python twin of
kstreams.oracle.ChainedForeignKeyJoinExamples (Java): keep the two in step. Its functions are
self-contained: Spark's Python workers cannot import modules of tests/.

Tables a (key -> "user:aN"; an empty user is a null foreign key), b (key -> "bN"), u (user ->
"uN") and v (user -> "vN"), every store without the record cache:

* ``a.join(b)`` (no store) joined on its user with ``u.left_join(v)`` (no store): the joined table
  on both sides: ``out-inner``;
* ``a.join(b)`` through a filter (rows of the user "frozen" dropped) left-joined with u, named
  ``chained-left``, materialized into ``fk-store``: ``out-left``;
* a left-joined with ``u.outer_join(v)`` (materialized into ``uv-store``) through a filter that drops
  the rows u has no value in: ``out-right``.
"""

from __future__ import annotations

from dagster_kstreams.topology import Materialized, StreamsBuilder, TableJoined

INPUTS = ("a", "b", "u", "v")
OUTPUTS = ("out-inner", "out-left", "out-right")


def chained_fk_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ChainedForeignKeyJoinExamples.java on ``topics`` (``INPUTS``/``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()

    def text(value):  # as Java's string concatenation writes it
        return "null" if value is None else value

    def uncached(store):
        return Materialized.as_(store).with_caching_disabled()

    def user(value):
        return value.split(":")[0] or None

    a = builder.table(topics["a"], uncached("a-store"))
    b = builder.table(topics["b"], uncached("b-store"))
    u = builder.table(topics["u"], uncached("u-store"))
    v = builder.table(topics["v"], uncached("v-store"))
    ab = a.join(b, lambda x, y: x + "+" + y)
    uv = u.left_join(v, lambda x, y: x + "/" + text(y))
    ab.join(uv, user, lambda left, right: left + "@" + right).to_stream().to(topics["out-inner"])
    ab.filter(lambda key, value: not value.startswith("frozen")) \
        .left_join(u, lambda key, value: user(value), lambda left, right: left + "@" + text(right),
                   TableJoined.as_("chained-left"), uncached("fk-store")) \
        .to_stream().to(topics["out-left"])
    uv_outer = u.outer_join(v, lambda x, y: text(x) + "~" + text(y), uncached("uv-store"))
    a.left_join(uv_outer.filter(lambda key, value: not value.startswith("null")), user,
                lambda left, right: left + "#" + text(right)) \
        .to_stream().to(topics["out-right"])
    return builder
