"""Click enrichment by a stream-table join.

``clicks`` is keyed by click id (``{"click_id", "user_id", "url", "ts"}``); ``profiles`` is a table
keyed by user id (``{"user_id", "name", "country", "tier"}``). Clicks are re-keyed by user, which
sends them through a repartition topic co-partitioned with ``profiles`` (same partition count,
same partitioner), and each click is joined with its user's latest profile into ``enriched-clicks``.
"""

from __future__ import annotations

import json

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Materialized, Named, StreamsBuilder, Topology

APP_ID = "click-enrichment"
TOPIC_PARTITIONS = {"clicks": 2, "profiles": 2, "enriched-clicks": 2}


def user_of(click_id: str, click_json: str) -> str:
    return json.loads(click_json)["user_id"]


def enrich(click_json: str, profile_json: str) -> str:
    click, profile = json.loads(click_json), json.loads(profile_json)
    return json.dumps({**click, "name": profile["name"], "country": profile["country"], "tier": profile["tier"]})


def build_topology(clicks: str = "clicks", profiles: str = "profiles",
                   enriched_clicks: str = "enriched-clicks") -> Topology:
    builder = StreamsBuilder()
    profiles_table = builder.table(profiles, Materialized.as_("profiles-store"))
    (builder.stream(clicks)
        .select_key(user_of, Named.as_("clicks-by-user"))
        .join(profiles_table, enrich)
        .to(enriched_clicks))
    return builder.build()


def build_app(app_id: str = APP_ID, clicks: str = "clicks", profiles: str = "profiles",
              enriched_clicks: str = "enriched-clicks", **options) -> KStreamsApp:
    return KStreamsApp(
        build_topology(clicks, profiles, enriched_clicks), app_id,
        {clicks: TOPIC_PARTITIONS["clicks"], profiles: TOPIC_PARTITIONS["profiles"],
         enriched_clicks: TOPIC_PARTITIONS["enriched-clicks"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, clicks: str = "clicks", profiles: str = "profiles",
               enriched_clicks: str = "enriched-clicks", elastic_workers=None, resources=None,
               **options) -> dg.Definitions:
    return kstreams_definitions(build_app(app_id, clicks, profiles, enriched_clicks, **options),
                                resources=resources, elastic_workers=elastic_workers)
