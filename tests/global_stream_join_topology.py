"""Stream-stream joins fed by stream-global-table joins, the Python twin of
kstreams.oracle.GlobalStreamJoinExamples (Java): keep the two in step.

An order's value is ``"<profile>,<order>"`` (``-`` for an order with no profile); the key selector
maps an order to its profile. Orders are left-joined with the global table of profiles, then
outer-joined with the payments; and joined (inner) with the profiles, then joined with the
payments. Both stream-stream joins live in the orders' sub-topology, fed by the global joins. Its
functions are self-contained: Spark's Python workers cannot import modules of tests/.
"""

from __future__ import annotations

from datetime import timedelta

from dagster_kstreams.topology import JoinWindows, StreamsBuilder

INPUTS = ("profiles", "orders", "payments")
OUTPUTS = ("out-left-outer", "out-inner")


def global_stream_join_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of GlobalStreamJoinExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    profiles = builder.global_table(topics["profiles"])
    orders = builder.stream(topics["orders"])
    payments = builder.stream(topics["payments"])

    def profile_of(key, order):
        return None if order is None or order.startswith("-,") else order.split(",")[0]

    def text(value):  # as Java's string concatenation writes it
        return "null" if value is None else value

    orders.left_join(profiles, profile_of, lambda key, order, profile: f"{text(order)}|{text(profile)}") \
        .outer_join(payments, lambda key, order, payment: f"{text(key)}:{text(order)}&{text(payment)}",
                    JoinWindows.of_time_difference_and_grace(timedelta(seconds=3), timedelta(seconds=1))) \
        .to(topics["out-left-outer"])
    orders.join(profiles, profile_of, lambda key, order, profile: f"{text(order)}|{text(profile)}") \
        .join(payments, lambda order, payment: f"{text(order)}&{text(payment)}",
              JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(seconds=2))
              .after(timedelta(seconds=1))) \
        .to(topics["out-inner"])
    return builder
