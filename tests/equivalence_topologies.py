"""The example topologies of issue 4 in the Python DSL, twins of kstreams.oracle.StreamsApp (Java),
and the skewed input both sides process.

Input records: key ``user<id>`` (ids Zipf-distributed: a few hot users), value
``"<country>,<word> <word> ..."`` (words Zipf-distributed over a vocabulary with some non-ASCII
words). A user's country is fixed and drawn from a set of countries owned by the user's input
partition: so every record of one country comes from one partition, and "latest user per
country" (a key-changing map + to_table) has one right answer. Kafka Streams itself only orders
records within a partition; across partitions "latest" would depend on timing on both sides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np

from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.topology.consumed_produced import Consumed, Produced
from dagster_kstreams.topology.grouped_repartitioned import Grouped
from dagster_kstreams.topology.materialized import Materialized
from dagster_kstreams.topology import StreamsBuilder
from dagster_kstreams.topology.serdes import Serdes

USERS_PER_COUNTRY_STORE = "users-per-country-store"
WORD_COUNT_STORE = "word-count-store"
LATEST_USER_STORE = "latest-user-by-country"

TOPOLOGIES = ("users_per_country", "word_count", "latest_user_by_country")
STORES = {
    "users_per_country": USERS_PER_COUNTRY_STORE,
    "word_count": WORD_COUNT_STORE,
    "latest_user_by_country": LATEST_USER_STORE,
}
# Serde of each output topic's values (keys are strings everywhere).
OUTPUT_VALUE_SERDES = {
    "users_per_country": Serdes.Long(),
    "word_count": Serdes.Long(),
    "latest_user_by_country": Serdes.String(),
}

COUNTRY_CODES = [
    "fr", "de", "it", "es", "pt", "nl", "be", "ch", "at", "pl", "se", "no", "dk", "fi", "ie", "gb",
    "us", "ca", "mx", "br", "ar", "cl", "jp", "kr", "cn", "in", "au", "nz", "za", "eg", "ma", "ng",
]
EXTRA_WORDS = ["café", "straße", "naïve", "日本", "ñandú", "Ölfeld", "x,y", "über"]


def country(value: str) -> str:
    return value[: value.index(",")]


def words(value: str) -> list[str]:
    # Same as Java's value.substring(indexOf(',') + 1).split(" ") for single-space text.
    return value[value.index(",") + 1:].split(" ")


# The topology functions below are self-contained lambdas, not calls of country()/words(): Spark's
# Python workers unpickle a module-level helper by reference, and this module is not importable
# there (see the runner defect in tests/test_equivalence_kstreams.py).


def _consumed() -> Consumed:
    return Consumed.with_(Serdes.String(), Serdes.String())


def users_per_country(input_topic: str, output_topic: str):
    builder = StreamsBuilder()
    builder.stream(input_topic, _consumed()) \
        .group_by(lambda key, value: value[: value.index(",")], Grouped.with_(Serdes.String(), Serdes.String())) \
        .count(Materialized.as_(USERS_PER_COUNTRY_STORE).with_key_serde(Serdes.String())
               .with_value_serde(Serdes.Long())) \
        .to_stream().to(output_topic, Produced.with_(Serdes.String(), Serdes.Long()))
    return builder.build()


def word_count(input_topic: str, output_topic: str):
    builder = StreamsBuilder()
    builder.stream(input_topic, _consumed()) \
        .flat_map_values(lambda value: value[value.index(",") + 1:].split(" ")) \
        .group_by(lambda key, word: word, Grouped.with_(Serdes.String(), Serdes.String())) \
        .count(Materialized.as_(WORD_COUNT_STORE).with_key_serde(Serdes.String()).with_value_serde(Serdes.Long())) \
        .to_stream().to(output_topic, Produced.with_(Serdes.String(), Serdes.Long()))
    return builder.build()


def latest_user_by_country(input_topic: str, output_topic: str):
    builder = StreamsBuilder()
    builder.stream(input_topic, _consumed()) \
        .map(lambda key, value: (value[: value.index(",")], key)) \
        .to_table(Materialized.as_(LATEST_USER_STORE).with_key_serde(Serdes.String())
                  .with_value_serde(Serdes.String())) \
        .to_stream().to(output_topic, Produced.with_(Serdes.String(), Serdes.String()))
    return builder.build()


BUILDERS = {
    "users_per_country": users_per_country,
    "word_count": word_count,
    "latest_user_by_country": latest_user_by_country,
}


def skewed_records(count: int, partitions: int = 4, seed: int = 4, users: int = 20_000,
                   vocabulary: int = 5_000, max_words: int = 8) -> Iterator[tuple[bytes, bytes, int]]:
    """``count`` records ``(key, value, partition)``; the partition is Kafka's default for the key."""
    rng = np.random.default_rng(seed)
    user_ids = np.minimum(rng.zipf(1.2, count), users)
    word_ranks = np.minimum(rng.zipf(1.1, count * max_words), vocabulary + len(EXTRA_WORDS)) - 1
    lengths = rng.integers(1, max_words + 1, count)
    vocab = EXTRA_WORDS + [f"w{rank}" for rank in range(vocabulary)]
    groups = [COUNTRY_CODES[g::partitions] for g in range(partitions)]
    country_of: dict[int, tuple[str, int]] = {}
    position = 0
    for i in range(count):
        uid = int(user_ids[i])
        key = f"user{uid}".encode()
        if uid not in country_of:
            partition = default_partition(key, partitions)
            group = groups[partition]
            # Skewed countries too: the first of a partition's countries is the most common.
            country_of[uid] = (group[min(int(rng.zipf(1.5)) - 1, len(group) - 1)], partition)
        code, partition = country_of[uid]
        n = int(lengths[i])
        text = " ".join(vocab[int(r)] for r in word_ranks[position:position + n])
        position += n
        yield key, f"{code},{text}".encode(), partition


def expected_tables(records: list[tuple[bytes, bytes, int]]) -> dict[str, dict]:
    """The final tables computed in plain Python (a check on the oracle run, not the oracle)."""
    per_country: Counter = Counter()
    per_word: Counter = Counter()
    latest: dict[str, str] = {}
    for key, value, _ in records:
        text = value.decode()
        per_country[country(text)] += 1
        per_word.update(words(text))
        latest[country(text)] = key.decode()  # one country lives in one partition: offset order
    return {"users_per_country": dict(per_country), "word_count": dict(per_word),
            "latest_user_by_country": latest}
