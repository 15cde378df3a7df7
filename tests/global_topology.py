"""The global-table example (inner and left stream-global-table joins), the Python twin of
kstreams.oracle.GlobalExamples (Java): keep the two in step.

A click's value is ``"<user>,<family><n>"``; the key selector maps it to its user (None for a
click whose user is ``-``, and for a null value), the profile table is keyed by user. Its lambdas
are self-contained: Spark's Python workers cannot import modules of tests/.
"""

from __future__ import annotations

from dagster_kstreams.topology import Named, StreamsBuilder

INPUTS = ("profiles", "clicks")
OUTPUTS = ("out-inner", "out-left")


def global_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of GlobalExamples.java, on ``topics`` (``INPUTS`` and ``OUTPUTS`` -> topic)."""
    builder = StreamsBuilder()
    profiles = builder.global_table(topics["profiles"])
    clicks = builder.stream(topics["clicks"])

    def user_of(key, click):
        return None if click is None or click.startswith("-,") else click.split(",")[0]

    clicks.join(profiles, user_of, lambda key, click, profile: f"{'null' if key is None else key}|{click}|{profile}") \
        .to(topics["out-inner"])
    clicks.left_join(profiles, user_of,
                     lambda key, click, profile: "|".join("null" if part is None else part
                                                          for part in (key, click, profile)),
                     Named.as_("enrich-left")) \
        .to(topics["out-left"])
    return builder
