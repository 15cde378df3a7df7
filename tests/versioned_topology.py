"""Versioned tables, the Python twin of kstreams.oracle.VersionedExamples (Java): keep the two in step.

Prices are a table read from a topic into a versioned store (10 s of history), whose changes go to
a topic; rates are a stream made a table by ``to_table`` into another (4 s of history). Orders are
joined (inner) with the prices and left-joined with the rates: each order reads the version valid
at its own timestamp; and joined with the prices again with a grace period of 3 s (buffered, then
joined in timestamp order once the buffer's time has passed it by the grace). Its functions are self-contained: Spark's Python workers cannot import
modules of tests/.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import Joined, Materialized, Named, Stores, StreamsBuilder

INPUTS = ("prices", "rates", "orders")
OUTPUTS = ("out-changes", "out-inner", "out-left", "out-grace")


def versioned_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of VersionedExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    prices = builder.table(topics["prices"], Materialized.as_(
        Stores.persistent_versioned_key_value_store("prices-store", timedelta(seconds=10))))
    prices.to_stream().to(topics["out-changes"])
    rates = builder.stream(topics["rates"]).to_table(Named.as_("rates-table"), Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates-store", timedelta(seconds=4))))
    orders = builder.stream(topics["orders"])

    def text(value):  # as Java's string concatenation writes it
        return "null" if value is None else value

    orders.join(prices, lambda order, price: f"{text(order)}@{text(price)}").to(topics["out-inner"])
    orders.left_join(rates, lambda order, rate: f"{text(order)}%{text(rate)}").to(topics["out-left"])
    orders.join(prices, lambda order, price: f"{text(order)}#{text(price)}",
                Joined.as_("graced").with_grace_period(timedelta(seconds=3))).to(topics["out-grace"])
    return builder
