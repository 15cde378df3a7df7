"""Kafka Streams' own table, cogroup and Processor API scenarios in one topology, the Python twin of
kstreams.oracle.TableScenarioExamples (Java): keep the two in step.

Each scenario follows one of Kafka Streams' own tests (their scenario, not their code):

* ``out-source``: a materialized table source's updates (``KTableSourceTest``: repeated values, an
  out-of-order update, tombstones of keys never written, null keys dropped);
* ``out-filter``, ``out-filter-kept``: a filter without and with a store of its own
  (``KTableFilterTest``: rows dropped and restored; Kafka Streams sends a tombstone for a row the
  filter drops after passing it, nothing for one it never passed or drops again);
* ``out-regrouped``: the same filter re-grouped and reduced (``shouldSkipNullToRepartition...``: a row
  dropped twice subtracts nothing);
* ``out-mapped``, ``out-mapped-regrouped``: ``map_values`` without a store, and with one re-grouped
  (``KTableMapValuesTest``: the re-grouping reads old values from the map_values' store);
* ``out-prices``, ``out-prices-counts``: a table source without a store through a filter
  (``testNotSendingOldValue``), and re-grouped with a count, which gives the source a store
  (``testSendingOldValue``); ``out-self-join``: the rows left-joined with their own filter's
  ``map_values`` (an update reaches both sides of the join);
* ``out-transformed``, ``out-prices-transformed``: ``transform_values`` (``KTableTransformValuesTest``:
  ``shouldTransformValuesWithKey``, a tombstone transformed too; ``shouldTransformOnGetIfNotMaterialized``'s
  stateful transformer with a store named, counting each key's updates in it) of the materialized rows
  and of the prices table without a store, named; ``out-prices-called``, ``out-lookups-joined``,
  ``out-lookups-left``, ``out-lookups-table-joined``: a call-counting one of the prices without a store
  (``shouldTransformOnGetIfNotMaterialized``), read by the lookups' stream-table joins and their table's
  inner join through its value getter, a transformer of the join's; ``out-rows-keyed``: the rows' keyed transformer with a
  store of its own, uncached (``shouldTransformValuesWithKeyMaterialized``), the store read back too, and
  ``out-rows-keyed-regrouped`` that table re-grouped and reduced, its old values read from that store
  (``shouldCalculateCorrectOldValuesIfMaterializedEvenIfStateful``); ``out-prices-recounted``: the prices'
  call-counting one without a store re-grouped and reduced, its old values the same transformer's results
  on the prices' old values, called after the new one's (``KTableTransformValuesProcessor`` sending old values),
  ``out-recounted-kept`` a filter of it (dropping what neither transformed value passes) and
  ``out-recounted-kind-counts`` a map_values of it re-grouped and counted;
* ``out-branches``, ``out-rest``: a ``split`` with named branches, one of them through a function,
  two merged back and peeked, and the default branch (``KStreamImplTest``);
* ``out-evens``, ``out-odds``, ``out-routed-sink``: a processor forwarding to its children by name (a
  sink among them), with changed timestamps and keys (``ProcessorTopologyTest``: ``shouldConsiderModifiedTimeStampsForMultipleProcessors``);
* ``out-cogroup``, ``out-cogroup-join``, ``out-events-joined``: a cogroup of three grouped streams (one
  of them a filter of another's source; null values skipped), its table joined with a second cogroup
  that reuses two of the grouped streams (``CogroupedKStreamImplTest``; ``out-cogroup-outer``: the
  same tables outer-joined), and the events joined with
  its table (each event after its own update of it);
* ``out-prefixed``, ``out-rows-prefixed``: ``prefix_scan`` of a processor's own key-value store and of
  the table source's store (``ProcessorTopologyTest``'s ``testPrefixScan...``), in the serialized keys'
  byte order;
* ``out-shared``: one store written by one processor and read by another of the same source
  (``ProcessorTopologyTest``'s connected stores); ``out-to-table``: ``to_table`` of a stream (null
  values as tombstones, null keys dropped); ``out-merged``: the events merged with the clicks, in
  the task's timestamp order of the two (``KStreamImplTest``); ``out-where-from``: each event's
  partition, offset, the task's stream time and id as a processor's context gives them.

Every store is uncached (the prices table's by the application's ``statestore.cache.max.bytes`` 0, the
others by their ``Materialized`` too, as in the Java twin); every output value carries its record's timestamp (``StampValues``).
Its lambdas are self-contained: Spark's Python workers cannot import modules of tests/, and the
test module ships this one by value.
"""

from __future__ import annotations

from equivalence_io import StampValues
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.branched_printed import Branched
from dagster_kstreams.topology.consumed_produced import Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology.named import Named
from dagster_kstreams.topology.processor_api import Processor, Stores
from dagster_kstreams.topology.serdes import Serdes
from dagster_kstreams.topology.value_transformer import ValueTransformerWithKey

INPUTS = ("rows", "prices", "events", "clicks", "lookups")
OUTPUTS = ("out-source", "out-filter", "out-filter-kept", "out-regrouped", "out-mapped", "out-mapped-regrouped",
           "out-prices", "out-prices-counts", "out-branches", "out-rest", "out-evens", "out-odds",
           "out-cogroup", "out-cogroup-join", "out-events-joined", "out-prefixed", "out-rows-prefixed",
           "out-shared", "out-to-table", "out-merged", "out-routed-sink", "out-cogroup-outer",
           "out-where-from", "out-self-join", "out-transformed", "out-prices-transformed", "out-rows-keyed",
           "out-rows-keyed-regrouped", "out-prices-called", "out-lookups-joined", "out-lookups-left",
           "out-lookups-table-joined", "out-prices-recounted", "out-recounted-kept", "out-recounted-kind-counts")
# Their values carry a transformer instance's call count, which lives for a micro-batch here (README, "The
# Processor API"), for the task's run in Kafka Streams: a rerun after a kill compares them without it.
CALL_COUNTED = ("out-prices-called", "out-lookups-joined", "out-lookups-left",
           "out-lookups-table-joined", "out-prices-recounted", "out-recounted-kept")


class CountingTransformer(ValueTransformerWithKey):
    """TableScenarioExamples.CountingTransformer: the value (a tombstone's: "null"), "#" and how many
    updates of its key the store ``transform-seen`` has counted, "@" and the update's time as the
    transformer's context gives it."""

    def init(self, context) -> None:
        self.context, self.seen = context, context.get_state_store("transform-seen")

    def transform(self, read_only_key, value):
        count = (self.seen.get(read_only_key) or 0) + 1
        self.seen.put(read_only_key, count)
        return f"{'null' if value is None else value}#{count}@{self.context.timestamp()}"


class KeyedTransformer(ValueTransformerWithKey):
    """TableScenarioExamples.KeyedTransformer: the key, ":" and the value (a tombstone's: "null")."""

    def transform(self, read_only_key, value):
        return f"{read_only_key}:{'null' if value is None else value}"


class CallCounter(ValueTransformerWithKey):
    """TableScenarioExamples.CallCounter: the value (a missing row's: "null"), "#" and how many times this
    instance was called, "@" the time and "~p" the partition "o" the offset its context gives: a
    transform_values' processor calls one instance, a stream-table join's value getter another
    (``shouldTransformOnGetIfNotMaterialized``), on a row's time, partition and offset -1, no row's too."""

    def init(self, context) -> None:
        self.context, self.calls = context, 0

    def transform(self, read_only_key, value):
        self.calls += 1
        metadata = self.context.record_metadata()
        return (f"{'null' if value is None else value}#{self.calls}@{self.context.timestamp()}"
                f"~p{metadata.partition}o{metadata.offset}")


class Router(Processor):
    """TableScenarioExamples.Router: a value ending in 0 goes to the sink ``routed-sink``; one ending in
    another even digit to the child ``evens`` 5 ms later; one ending in an odd digit to ``odds`` 3 ms
    earlier, its key marked; any other (a null value too) to every child, unchanged."""

    def process(self, record) -> None:
        last = record.value[-1] if record.value else ""
        if last == "0":
            self.context.forward(record, "routed-sink")
        elif last.isdigit() and int(last) % 2 == 0:
            self.context.forward(record.with_timestamp(record.timestamp + 5), "evens")
        elif last.isdigit():
            key = "null" if record.key is None else record.key  # Java's string concatenation
            self.context.forward(record.with_key(key + "~").with_timestamp(record.timestamp - 3), "odds")
        else:
            self.context.forward(record)


class PrefixScanner(Processor):
    """TableScenarioExamples.PrefixScanner: puts each record with a key and a value under
    "<key>:<the value's last two characters>" into its store ``prefixed``, then forwards the store's
    entries under "<key>:" and under "<key>" (a1's include a10's; "0" sorts before ":")."""

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store("prefixed")

    def process(self, record) -> None:
        if record.key is None or record.value is None:
            return
        self.store.put(f"{record.key}:{record.value[-2:]}", record.value)
        scans = [",".join(f"{entry.key}={entry.value}" for entry in self.store.prefix_scan(prefix, Serdes.String()))
                 for prefix in (record.key + ":", record.key)]
        self.context.forward(record.with_value("|".join(scans)))


class RowsPrefixScanner(Processor):
    """TableScenarioExamples.RowsPrefixScanner: after each update of the rows table, the rows of
    ``rows-store`` (the table source's store) whose key starts with the updated key's family letter."""

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store("rows-store")

    def process(self, record) -> None:
        entries = self.store.prefix_scan(record.key[:1], Serdes.String())
        self.context.forward(record.with_value(",".join(f"{entry.key}={entry.value.value()}" for entry in entries)))


class SharedWriter(Processor):
    """TableScenarioExamples.SharedWriter: puts each record with a key and a value into the store
    ``shared`` it shares with :class:`SharedReader`; forwards nothing."""

    def init(self, context) -> None:
        self.store = context.get_state_store("shared")

    def process(self, record) -> None:
        if record.key is not None and record.value is not None:
            self.store.put(record.key, record.value)


class SharedReader(Processor):
    """TableScenarioExamples.SharedReader: the value, then what ``shared`` holds for the key (written
    by :class:`SharedWriter`, the source's earlier child, for this very record) and its entry count."""

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store("shared")

    def process(self, record) -> None:
        held = "none" if record.key is None else self.store.get(record.key)
        value = "null" if record.value is None else record.value  # Java's string concatenation
        self.context.forward(record.with_value(
            f"{value}<{'null' if held is None else held}#{self.store.approximate_num_entries()}"))


class WhereFrom(Processor):
    """TableScenarioExamples.WhereFrom: the value, then the record's partition and offset, the task's
    stream time and the task's id as the processor's context gives them."""

    def init(self, context) -> None:
        self.context = context

    def process(self, record) -> None:
        metadata = self.context.record_metadata()
        value = "null" if record.value is None else record.value  # Java's string concatenation
        self.context.forward(record.with_value(
            f"{value}|p{metadata.partition}o{metadata.offset}|st{self.context.current_stream_time_ms()}"
            f"|task{self.context.task_id()}"))


def table_scenarios(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of TableScenarioExamples.java on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    rows = builder.table(topics["rows"], Materialized.as_("rows-store").with_caching_disabled())
    rows.to_stream().process_values(StampValues).to(topics["out-source"])
    rows.filter(lambda key, value: value.startswith("acc")) \
        .to_stream().process_values(StampValues).to(topics["out-filter"])
    rows.to_stream().process(RowsPrefixScanner, "rows-store").to(topics["out-rows-prefixed"])
    accepted = rows.filter(lambda key, value: value.startswith("acc"),
                           Materialized.as_("accepted-store").with_caching_disabled())
    accepted.to_stream().process_values(StampValues).to(topics["out-filter-kept"])
    rows.filter(lambda key, value: value.startswith("acc")) \
        .group_by(lambda key, value: (key[0], value), Grouped.as_("accepted-by-family")) \
        .reduce(lambda total, value: total + "+" + value, lambda total, value: total + "-" + value,
                Materialized.as_("accepted-reduced").with_caching_disabled()) \
        .to_stream().process_values(StampValues).to(topics["out-regrouped"])
    rows.map_values(lambda value: value.upper()).to_stream().process_values(StampValues).to(topics["out-mapped"])
    rows.map_values(lambda value: value[:3], Materialized.as_("verdicts").with_caching_disabled()) \
        .group_by(lambda key, verdict: (key[0] + verdict, key), Grouped.as_("by-verdict")) \
        .reduce(lambda keys, key: keys + "+" + key, lambda keys, key: keys + "-" + key,
                Materialized.as_("keys-by-verdict").with_caching_disabled()) \
        .to_stream().process_values(StampValues).to(topics["out-mapped-regrouped"])

    # A table joined with a table derived from it (each update reaches both sides of the join).
    rows.left_join(rows.filter(lambda key, value: value.startswith("acc")).map_values(lambda value: value[3:]),
                   lambda full, number: full + "/" + ("null" if number is None else number)) \
        .to_stream().process_values(StampValues).to(topics["out-self-join"])

    builder.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store("transform-seen"), Serdes.String(), Serdes.Long()))
    rows.transform_values(CountingTransformer, "transform-seen") \
        .to_stream().process_values(StampValues).to(topics["out-transformed"])

    # No Materialized: its store is uncached by the application's statestore.cache.max.bytes 0 alone.
    prices = builder.table(topics["prices"])
    prices.transform_values(KeyedTransformer, Named.as_("prices-keyed")) \
        .to_stream().process_values(StampValues).to(topics["out-prices-transformed"])
    prices.filter(lambda key, value: not value.startswith("x")) \
        .to_stream().process_values(StampValues).to(topics["out-prices"])
    prices.group_by(lambda key, value: (key[0] + value[:1], value), Grouped.as_("prices-by-kind")) \
        .count(Materialized.as_("price-counts").with_caching_disabled()) \
        .to_stream().map_values(lambda count: str(count)).process_values(StampValues).to(topics["out-prices-counts"])
    # KTableTransformValuesTest's shouldTransformOnGetIfNotMaterialized: no store of its own, so the
    # lookups' joins read it through its value getter, a transformer of their own on the prices' rows.
    called = prices.transform_values(CallCounter, Named.as_("prices-called"))
    called.to_stream().process_values(StampValues).to(topics["out-prices-called"])
    lookups = builder.stream(topics["lookups"])
    lookups.join(called, lambda lookup, price: lookup + ">" + price) \
        .process_values(StampValues).to(topics["out-lookups-joined"])
    lookups.left_join(called, lambda lookup, price: lookup + ">" + ("null" if price is None else price)) \
        .process_values(StampValues).to(topics["out-lookups-left"])
    # An inner table-table join: the lookups table's updates read it through the join's getter, the prices'
    # come through its processor's transformer (a tombstone's too).
    lookups.to_table(Materialized.as_("lookups-table").with_caching_disabled()) \
        .join(called, lambda lookup, price: lookup + "&" + price) \
        .to_stream().process_values(StampValues).to(topics["out-lookups-table-joined"])

    events = builder.stream(topics["events"])
    routes = events.split(Named.as_("route-")) \
        .branch(lambda key, value: value is not None and value.endswith("1"), Branched.as_("ones")) \
        .branch(lambda key, value: value is not None and value.endswith("2"),
                Branched.with_function(lambda stream: stream.map_values(lambda value: value.upper()), "twos")) \
        .default_branch(Branched.as_("rest"))
    routes["route-ones"].merge(routes["route-twos"], Named.as_("ones-and-twos")) \
        .peek(lambda key, value: None, Named.as_("looked-at")) \
        .process_values(StampValues).to(topics["out-branches"])
    routes["route-rest"].process_values(StampValues).to(topics["out-rest"])
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store("prefixed"), Serdes.String(), Serdes.String()))
    events.process(PrefixScanner, "prefixed").process_values(StampValues).to(topics["out-prefixed"])
    # One store, two processors (ProcessorTopologyTest: a store connected to processors of one task).
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("shared"), Serdes.String(), Serdes.String()))
    events.process(SharedWriter, "shared")
    events.process_values(SharedReader, "shared").process_values(StampValues).to(topics["out-shared"])
    events.to_table(Materialized.as_("events-table").with_caching_disabled()) \
        .to_stream().process_values(StampValues).to(topics["out-to-table"])
    routed = events.process(Router, Named.as_("router"))
    routed.process_values(StampValues, Named.as_("evens")).to(topics["out-evens"])
    routed.process_values(StampValues, Named.as_("odds")).to(topics["out-odds"])
    routed.to(topics["out-routed-sink"], Produced.as_("routed-sink"))

    clicks = builder.stream(topics["clicks"])
    events.process_values(WhereFrom).to(topics["out-where-from"])
    events.merge(clicks).process_values(StampValues).to(topics["out-merged"])
    events_by_key = events.group_by_key()
    clicks_by_key = clicks.group_by_key()
    ones_by_key = events.filter(lambda key, value: value is not None and value.endswith("1")).group_by_key()
    activity = events_by_key.cogroup(lambda key, value, total: (total + "e" + ("null" if value is None else value))[-60:]) \
        .cogroup(clicks_by_key, lambda key, value, total: (total + "c" + ("null" if value is None else value))[-60:]) \
        .cogroup(ones_by_key, lambda key, value, total: (total + "1")[-60:]) \
        .aggregate(lambda: "", Named.as_("activity"), Materialized.as_("activity-store").with_caching_disabled())
    activity.to_stream().process_values(StampValues).to(topics["out-cogroup"])
    clicked = clicks_by_key.cogroup(lambda key, value, total: (total + "C" + ("null" if value is None else value))[-40:]) \
        .cogroup(ones_by_key, lambda key, value, total: (total + "O")[-40:]) \
        .aggregate(lambda: "", Materialized.as_("clicked-store").with_caching_disabled())
    activity.join(clicked, lambda all_, click_total: all_[-20:] + "&" + click_total[-20:]) \
        .to_stream().process_values(StampValues).to(topics["out-cogroup-join"])
    activity.outer_join(clicked, lambda all_, click_total: ("null" if all_ is None else all_)[-20:] + "|"
                        + ("null" if click_total is None else click_total)[-20:]) \
        .to_stream().process_values(StampValues).to(topics["out-cogroup-outer"])
    events.join(activity, lambda event, all_: event + "@" + all_[-20:]) \
        .process_values(StampValues).to(topics["out-events-joined"])
    # shouldTransformValuesWithKeyMaterialized: a store of its own, uncached, read back by an interactive query;
    # shouldCalculateCorrectOldValuesIfMaterializedEvenIfStateful: re-grouped, its old values read from that store.
    keyed = rows.transform_values(KeyedTransformer, Materialized.as_("rows-keyed").with_caching_disabled())
    keyed.to_stream().process_values(StampValues).to(topics["out-rows-keyed"])
    keyed.group_by(lambda key, value: (key[:1] + value.split(":", 1)[1][:3], key), Grouped.as_("keyed-by-verdict")) \
        .reduce(lambda keys, key: keys + "+" + key, lambda keys, key: keys + "-" + key,
                Materialized.as_("keyed-keys-by-verdict").with_caching_disabled()) \
        .to_stream().process_values(StampValues).to(topics["out-rows-keyed-regrouped"])
    # Without a store of its own and re-grouped (TransformValuesOldValuesExamples): the re-grouping's old
    # values are the same transformer's results on the prices' old values, each called after the new one's.
    recounted = prices.transform_values(CallCounter, Named.as_("prices-recounted"))
    recounted.group_by(lambda key, value: (key[:1] + value[:1], value), Grouped.as_("recounted-by-kind")) \
        .reduce(lambda total, value: (total + "+" + value)[-160:], lambda total, value: (total + "-" + value)[-160:],
                Materialized.as_("recounted-reduced").with_caching_disabled()) \
        .to_stream().process_values(StampValues).to(topics["out-prices-recounted"])
    # A filter of it (its constructor asks it for old values: the prices are materialized) drops an update
    # neither of whose transformed values passes; a map_values of it re-grouped subtracts the mapped old one
    # (a missing row's transformed into "null#...": subtracted from a group never added to, whose count is then
    # a tombstone, String.valueOf(null) in the Java twin).
    recounted.filter(lambda key, value: not value.startswith("x"), Named.as_("recounted-kept")) \
        .to_stream().process_values(StampValues).to(topics["out-recounted-kept"])
    recounted.map_values(lambda value: value[:1], Named.as_("recounted-kinds")) \
        .group_by(lambda key, kind: (key[:1] + kind, key), Grouped.as_("recounted-kinds-by-kind")) \
        .count(Materialized.as_("recounted-kind-counts").with_caching_disabled()) \
        .to_stream().map_values(lambda count: "null" if count is None else str(count)).process_values(StampValues) \
        .to(topics["out-recounted-kind-counts"])
    return builder
