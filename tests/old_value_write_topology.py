"""Tables whose own stores a user processor writes while their updates travel on to a re-grouping and a
table-table join, the Python twin of kstreams.oracle.OldValueWriteExamples (Java): keep the two in step.
Part of :func:`dsl_store_processor_topology.dsl_store_processor_examples` (its first sub-topologies).

Kafka Streams fixes each update's old value before it forwards the ``Change`` to the table's children,
so a processor's write into the table's store becomes the old value of the key's next update only,
whichever child comes first. The owners table's ``StoreRewriter`` is its first child (before the
re-grouping's ``reduce`` and the outer join, whose filter sends old values); the pets table's is its
last (after the join and the re-grouping's ``count``). The rewriter puts ``value + "!"`` (stamped 1 ms
later) at a timestamp that is a multiple of 3 and deletes the key at one past it. Groups are the key's
parity (``odd``, ``even``) and the value's first letter, so each group's updates come from one task (and
the groups of either parity fall on both partitions of the repartition topic).

Its classes are self-contained: Spark's Python workers cannot import modules of tests/, and the test
ships this module by value.
"""

from __future__ import annotations

from dagster_kstreams.topology import Materialized, StreamsBuilder
from dagster_kstreams.topology.processor_api import Processor, Record, ValueAndTimestamp


def text(value) -> str:
    """A value as Java's string concatenation writes it."""
    return "null" if value is None else str(value)


def tagged(context, name: str, body: str, record: Record) -> str:
    return f"p{context.record_metadata().partition}|{name}|{body}|t{record.timestamp}"


class StoreRewriter(Processor):
    """Writes the table's store per update (see the module docstring) and forwards what it did."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def init(self, context) -> None:
        self.context, self.store = context, context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        did = "kept"
        if record.value is not None and record.timestamp % 3 == 0:
            self.store.put(record.key, ValueAndTimestamp.make(record.value + "!", record.timestamp + 1))
            did = "put"
        elif record.timestamp % 3 == 1:
            self.store.delete(record.key)
            did = "deleted"
        self.context.forward(record.with_value(tagged(self.context, self.store_name, f"{did}|{text(record.value)}",
                                                      record)))


class Tagger(Processor):
    """Forwards each update tagged with its task, a name and (``stamped``) its timestamp."""

    def __init__(self, name: str, stamped: bool) -> None:
        self.name, self.stamped = name, stamped

    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        body = tagged(self.context, self.name, text(record.value), record)
        self.context.forward(record.with_value(body if self.stamped else body[:body.rindex("|t")]))


def group(key: str, value: str) -> str:
    return ("odd" if int(key[-1]) % 2 else "even") + value[0]


def _tail(text_: str) -> str:
    return text_[-40:]


def old_value_writes(builder: StreamsBuilder, owners_topic: str, pets_topic: str, out: str) -> None:
    # the re-groupings' updates without their timestamps: the runner stamps an aggregation's update with the
    # larger of the record's and the aggregate's only where its store keeps timestamps (README, "Record
    # timestamps written by the runner")
    owners = builder.table(owners_topic, Materialized.as_("owners-store").with_caching_disabled())
    pets = builder.table(pets_topic, Materialized.as_("pets-store").with_caching_disabled())
    owners.to_stream().process(lambda: StoreRewriter("owners-store"), "owners-store").to(out)
    owners.group_by(lambda key, value: (group(key, value), value)) \
        .reduce(lambda total, value: _tail(f"{total}+{value}"), lambda total, value: _tail(f"{total}-{value}"),
                Materialized.as_("owner-groups").with_caching_disabled()) \
        .to_stream().process(lambda: Tagger("owner-groups", stamped=False)).to(out)
    # a filter of a join sends old values: its tombstones depend on the join's old value
    joined = owners.outer_join(pets, lambda owner, pet: f"{text(owner)}+{text(pet)}")
    joined.to_stream().process(lambda: Tagger("owners-pets", stamped=True)).to(out)
    joined.filter(lambda key, value: not value.startswith("x")) \
        .to_stream().process(lambda: Tagger("owners-pets-kept", stamped=True)).to(out)
    pets.group_by(lambda key, value: (group(key, value), value)) \
        .count(Materialized.as_("pet-groups").with_caching_disabled()) \
        .to_stream().process(lambda: Tagger("pet-groups", stamped=False)).to(out)
    pets.to_stream().process(lambda: StoreRewriter("pets-store"), "pets-store").to(out)
