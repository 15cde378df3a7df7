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
  the rows u has no value in: ``out-right``;
* c (key -> "user:cN", built first: its sub-topology is 0) joined on its user with u, named
  ``versioned``, into the versioned store ``fk-versioned`` (1 s of history): each result put at its
  answer's time, dropped when expired, forwarded marked not latest when older than the key's latest;
  its ``to_stream`` stamped with each record's timestamp (``out-versioned``) and read by
  :class:`VersionsRead`, a processor reading that store as of times (``out-versions``).
"""

from __future__ import annotations

from datetime import timedelta

from equivalence_io import StampValues
from dagster_kstreams.topology import Materialized, Stores, StreamsBuilder, TableJoined
from dagster_kstreams.topology.processor_api import Processor, Record

INPUTS = ("a", "b", "u", "v", "c")
OUTPUTS = ("out-inner", "out-left", "out-right")
VERSIONED_OUTPUTS = ("out-versioned", "out-versions")
VERSIONED_HISTORY = timedelta(seconds=1)


def _versioned(record) -> str:
    """ProcessorApiExamples.VersionLog.versioned: "value@timestamp~validTo" ("-": no validTo; "null": none)."""
    if record is None:
        return "null"
    valid_to = record.valid_to()
    return f"{record.value()}@{record.timestamp()}~{'-' if valid_to is None else valid_to}"


class VersionsRead(Processor):
    """ChainedForeignKeyJoinExamples.VersionsRead: each update of the versioned foreign-key join's
    result with its timestamp, then what its store ``fk-versioned`` holds for the key: the latest
    version, and the versions valid 1 ms and 600 ms before the update."""

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store("fk-versioned")

    def process(self, record: Record) -> None:
        key, t = record.key, record.timestamp
        value = "null" if record.value is None else record.value
        reads = [self.store.get(key), self.store.get(key, t - 1), self.store.get(key, t - 600)]
        self.context.forward(record.with_value(f"{value}|t{t}|" + "|".join(_versioned(read) for read in reads)))


def chained_fk_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ChainedForeignKeyJoinExamples.java on ``topics`` (``INPUTS``/``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    c = builder.table(topics["c"], Materialized.as_("c-store").with_caching_disabled())

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
    versioned = c.join(u, user, lambda left, right: left + "%" + right, TableJoined.as_("versioned"),
                       Materialized.as_(Stores.persistent_versioned_key_value_store("fk-versioned", VERSIONED_HISTORY)))
    changes = versioned.to_stream()
    changes.process_values(StampValues).to(topics["out-versioned"])
    changes.process(VersionsRead, "fk-versioned").to(topics["out-versions"])
    return builder
