"""Word count: lines of text split into words, counted per word.

``text-lines`` holds JSON documents (``{"doc_id", "text"}``) keyed by document id. Sub-topology 0
splits and re-keys by word into a repartition topic; sub-topology 1 counts per word (queryable
store ``word-counts-store``) into ``word-counts`` (String word -> Long count), which
:mod:`assets.top_words` reads: the two applications make one graph.
"""

from __future__ import annotations

import json
import re

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Materialized, StreamsBuilder, Topology

APP_ID = "word-count"
TOPIC_PARTITIONS = {"text-lines": 2, "word-counts": 2}

_WORD = re.compile(r"[a-z']+")


def words_of(document_json: str) -> list[str]:
    return _WORD.findall(json.loads(document_json)["text"].lower())


def by_word(doc_id: str, word: str) -> str:
    return word


def build_topology(text_lines: str = "text-lines", word_counts: str = "word-counts") -> Topology:
    builder = StreamsBuilder()
    (builder.stream(text_lines)
        .flat_map_values(words_of)
        .group_by(by_word)
        .count(Materialized.as_("word-counts-store"))
        .to_stream()
        .to(word_counts))
    return builder.build()


def build_app(app_id: str = APP_ID, text_lines: str = "text-lines", word_counts: str = "word-counts",
              **options) -> KStreamsApp:
    return KStreamsApp(
        build_topology(text_lines, word_counts), app_id,
        {text_lines: TOPIC_PARTITIONS["text-lines"], word_counts: TOPIC_PARTITIONS["word-counts"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, text_lines: str = "text-lines", word_counts: str = "word-counts",
               elastic_workers=None, resources=None, **options) -> dg.Definitions:
    return kstreams_definitions(build_app(app_id, text_lines, word_counts, **options), resources=resources,
                                elastic_workers=elastic_workers)
