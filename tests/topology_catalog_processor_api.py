"""The catalog's Processor API topologies (process, process_values, suppliers with stores, the
low-level Topology, KTable.transform_values).

Entries of tests/topology_catalog.py; their Java twins, under the same names, are in
tests/oracle/src/main/java/kstreams/oracle/ProcessorApiCatalog.java. Keep the two in step.
"""

from __future__ import annotations

from dagster_kstreams import Grouped, Materialized, Named, Produced, StreamsBuilder, Serdes, ValueTransformerWithKey
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Processor, ProcessorSupplier, Stores
from dagster_kstreams.topology import Topology

from processor_api_topology import processor_api_examples, processor_api_low_level
from topology_catalog_entries import CatalogEntries

ENTRIES = CatalogEntries()
topology = ENTRIES.add


# ---- The Processor API -------------------------------------------------------------------


def processor_api_examples_topology():
    # The topology tests/test_equivalence_processor_api.py runs on Spark and with Kafka Streams.
    return processor_api_examples({"events": "events", "out": "out", "processed": "processed",
                                   "punctuated": "punctuated"}).build()


ENTRIES["processor_api_examples"] = processor_api_examples_topology


class _Nothing(Processor):
    def process(self, record):
        pass


class _NothingFixedKey(FixedKeyProcessor):
    def process(self, record):
        pass


@topology
def processor_api_named_then_count():
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("last-seen"), Serdes.String(), Serdes.String()))
    processed = b.stream("orders").process(_Nothing, Named.as_("dedup"), "last-seen")
    processed.process_values(_NothingFixedKey, "last-seen").to("audited")
    processed.group_by_key().count().to_stream().to("order-counts", Produced.with_(Serdes.String(), Serdes.Long()))
    return b.build()


def processor_api_low_level_examples_topology():
    # The low-level twin tests/test_equivalence_processor_api.py also runs on Spark.
    return processor_api_low_level({"events": "events", "out": "out"})


ENTRIES["processor_api_low_level_examples"] = processor_api_low_level_examples_topology


@topology
def processor_api_low_level_wiring():
    strings = Serdes.String()
    t = Topology()
    t.add_source("orders-source", "orders")
    t.add_source("payments-source", "payments", "refunds")
    t.add_processor("match", _Nothing, "orders-source", "payments-source")
    t.add_processor("audit", _Nothing, "match")
    t.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("pending"), strings, strings),
                      "match")
    t.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("audit-log"), strings, strings))
    t.connect_processor_and_state_stores("audit", "audit-log", "pending")
    t.add_sink("matched-sink", "matched", "match")
    t.add_sink("audit-sink", "audited", "audit", "match")
    t.add_source("other-source", "other")
    t.add_processor("lonely", _Nothing, "other-source")
    t.add_sink("lonely-sink", "lonely-out", "lonely")
    return t


class _WithStores(ProcessorSupplier):
    def get(self):
        return _Nothing()

    def stores(self):
        return [Stores.key_value_store_builder(Stores.persistent_key_value_store("own-store"),
                                               Serdes.String(), Serdes.String())]


@topology
def processor_api_supplier_with_stores():
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("shared"), Serdes.String(), Serdes.String()))
    b.stream("events").process(_WithStores(), "shared").to("processed")
    return b.build()


@topology
def processor_api_low_level_supplier_with_stores():
    return Topology().add_source("src", "more-events").add_processor("own", _WithStores(), "src") \
        .add_sink("sink", "more-processed", "own")


class _Same(ValueTransformerWithKey):
    def transform(self, read_only_key, value):
        return value


@topology
def table_transform_values_overloads():
    # Each overload; Materialized.with_ alone draws no store name (map_values' does), so the filter
    # after it is numbered as in Kafka Streams.
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("tv-shared"), Serdes.String(), Serdes.String()))
    prices = b.table("prices", Materialized.as_("prices-store"))
    steps = (prices.transform_values(_Same)
             .transform_values(_Same, Materialized.as_("tv-own"))
             .transform_values(_Same, Materialized.with_(Serdes.String(), Serdes.String()))
             .filter(lambda k, v: True, Materialized.with_(Serdes.String(), Serdes.String()))
             .transform_values(_Same, Named.as_("tv-named"), "tv-shared")
             .transform_values(_Same, Materialized.as_("tv-own-2"), Named.as_("tv-both"), "tv-shared", "prices-store"))
    steps.to_stream().to("transformed-prices")
    steps.group_by(lambda k, v: (v, k), Grouped.as_("tv-regroup")).count().to_stream() \
        .to("price-counts", Produced.with_(Serdes.String(), Serdes.Long()))
    return b.build()


@topology
def table_transform_values_old_values():
    # Without a store of its own, re-grouped, filtered and through a map_values re-grouped: asked for old
    # values, it asks the table behind, whose source is then materialized (its store in describe()).
    b = StreamsBuilder()
    transformed = b.table("rates").transform_values(_Same)
    transformed.group_by(lambda k, v: (v, k), Grouped.as_("rates-regroup")).count().to_stream() \
        .to("rate-counts", Produced.with_(Serdes.String(), Serdes.Long()))
    transformed.filter(lambda k, v: v.startswith("a")).to_stream().to("rates-kept")
    transformed.map_values(lambda v: v[:1]).group_by(lambda k, v: (v, k)).reduce(lambda a, c: a, lambda a, c: a) \
        .to_stream().to("rate-kinds")
    return b.build()
