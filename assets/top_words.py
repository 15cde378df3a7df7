"""Top words: the words of :mod:`assets.word_count` counted at least ``MIN_COUNT`` times.

It reads ``word-counts``, the topic word count writes (String word -> Long count, one record each
time a count changes), keeps the records whose count reached ``MIN_COUNT`` and writes them to
``top-words``. One sub-topology, task ``p`` on partition ``p`` of ``word-counts``.

The two applications are one pipeline: loaded together (``kstreams_definitions(word_count,
top_words)``, as ``assets/__init__.py`` does) they draw one lineage graph,
``word_count/subtopology_1 -> kafka/word_counts -> top_words/subtopology_0 -> kafka/top_words``.
Loaded in separate code locations, build this one with ``topics_declared_elsewhere=["word-counts"]``.
"""

from __future__ import annotations

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Consumed, Produced, Serdes, StreamsBuilder, Topology

APP_ID = "top-words"
TOPIC_PARTITIONS = {"word-counts": 2, "top-words": 2}
MIN_COUNT = 3


def build_topology(word_counts: str = "word-counts", top_words: str = "top-words",
                   min_count: int = MIN_COUNT) -> Topology:
    builder = StreamsBuilder()
    (builder.stream(word_counts, Consumed.with_(Serdes.String(), Serdes.Long()))
        .filter(lambda word, count: count >= min_count)
        .to(top_words, Produced.with_(Serdes.String(), Serdes.Long())))
    return builder.build()


def build_app(app_id: str = APP_ID, word_counts: str = "word-counts", top_words: str = "top-words",
              min_count: int = MIN_COUNT, **options) -> KStreamsApp:
    return KStreamsApp(
        build_topology(word_counts, top_words, min_count), app_id,
        {word_counts: TOPIC_PARTITIONS["word-counts"], top_words: TOPIC_PARTITIONS["top-words"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, word_counts: str = "word-counts", top_words: str = "top-words",
               min_count: int = MIN_COUNT, elastic_workers=None, resources=None, **options) -> dg.Definitions:
    """This app alone; ``word-counts`` is its external source unless ``topics_declared_elsewhere`` names it."""
    return kstreams_definitions(build_app(app_id, word_counts, top_words, min_count, **options),
                                resources=resources, elastic_workers=elastic_workers)
