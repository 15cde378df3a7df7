"""Clicks counted per country and minute, through a global table of profiles.

``clicks`` is keyed by click id (``{"click_id", "user_id", "url", "ts"}``), read with a timestamp
extractor that takes each click's event time from ``ts``; ``profiles`` is a global table keyed by
user id (``{"user_id", "name", "country", "tier"}``), whole in every task, so each click finds its
user's country with no repartition by user and no co-partitioning (``profiles`` may have any
partition count). Re-keyed by country, the clicks go through a repartition topic to a tumbling
one-minute count written to ``clicks-per-country-per-minute``.

In Dagster: ``kafka/profiles`` is an upstream asset of ``clicks_per_country/subtopology_1`` (every
task reads all its partitions); sub-topology 0 is the global store, which makes no task and no asset.
"""

from __future__ import annotations

import json
from datetime import timedelta

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows, Topology
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

APP_ID = "clicks-per-country"
TOPIC_PARTITIONS = {"clicks": 2, "profiles": 2, "clicks-per-country-per-minute": 2}


class ClickTime:
    """The click's own time (``ts``), not the time it reached Kafka."""

    def extract(self, record, partition_time: int) -> int:
        return record.timestamp if record.value is None else json.loads(record.value)["ts"]


def user_of(click_id: str, click_json: str) -> str:
    return json.loads(click_json)["user_id"]


def country_of_click(click_json: str, profile_json: str) -> str:
    return json.loads(profile_json)["country"]


def build_topology(clicks: str = "clicks", profiles: str = "profiles",
                   per_minute: str = "clicks-per-country-per-minute") -> Topology:
    builder = StreamsBuilder()
    profile_table = builder.global_table(profiles)
    (builder.stream(clicks, Consumed.with_timestamp_extractor(ClickTime()))
        .join(profile_table, user_of, country_of_click)
        .group_by(lambda click_id, country: country)
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=10)))
        .count(Materialized.as_("clicks-per-country-store"))
        .to_stream()
        .to(per_minute, Produced.with_(WindowedSerde(Serdes.String(), 60_000), Serdes.Long())))
    return builder.build()


def build_app(app_id: str = APP_ID, clicks: str = "clicks", profiles: str = "profiles",
              per_minute: str = "clicks-per-country-per-minute", **options) -> KStreamsApp:
    return KStreamsApp(
        build_topology(clicks, profiles, per_minute), app_id,
        {clicks: TOPIC_PARTITIONS["clicks"], profiles: TOPIC_PARTITIONS["profiles"],
         per_minute: TOPIC_PARTITIONS["clicks-per-country-per-minute"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, clicks: str = "clicks", profiles: str = "profiles",
               per_minute: str = "clicks-per-country-per-minute", elastic_workers=None, resources=None,
               **options) -> dg.Definitions:
    return kstreams_definitions(build_app(app_id, clicks, profiles, per_minute, **options),
                                resources=resources, elastic_workers=elastic_workers)
