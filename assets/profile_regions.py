"""Profiles enriched with their country's region by a foreign-key table-table join.

``profiles`` is a table keyed by user id (``{"user_id", "name", "country", "tier"}``, as the
generator writes it); ``countries`` is a table keyed by country (``{"region", "currency"}``, written
by whoever maintains the reference data, e.g. ``kafka-console-producer --property parse.key=true``).
``profiles.join(countries, country_of, with_region)`` keys nothing by hand: Kafka Streams' foreign-key
join sends each profile to its country's partition through a subscription-registration topic and
the answers back through a subscription-response topic (both intermediate assets, partitioned as
Kafka Streams partitions them), and keeps ``profile-regions`` (user id -> profile with region) up
to date when either a profile or a country changes.
"""

from __future__ import annotations

import json
from typing import Optional

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Materialized, StreamsBuilder, TableJoined, Topology

APP_ID = "profile-regions"
TOPIC_PARTITIONS = {"profiles": 2, "countries": 1, "profile-regions": 2}


def country_of(profile_json: str) -> Optional[str]:
    return json.loads(profile_json).get("country")  # None: no country, no region (inner join)


def with_region(profile_json: str, country_json: str) -> str:
    return json.dumps({**json.loads(profile_json), "region": json.loads(country_json)["region"]})


def build_topology(profiles: str = "profiles", countries: str = "countries",
                   profile_regions: str = "profile-regions") -> Topology:
    builder = StreamsBuilder()
    (builder.table(profiles)
        .join(builder.table(countries), country_of, with_region, TableJoined.as_("profile-country"),
              Materialized.as_("profile-regions-store"))
        .to_stream()
        .to(profile_regions))
    return builder.build()


def build_app(app_id: str = APP_ID, profiles: str = "profiles", countries: str = "countries",
              profile_regions: str = "profile-regions", **options) -> KStreamsApp:
    return KStreamsApp(
        build_topology(profiles, countries, profile_regions), app_id,
        {profiles: TOPIC_PARTITIONS["profiles"], countries: TOPIC_PARTITIONS["countries"],
         profile_regions: TOPIC_PARTITIONS["profile-regions"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, elastic_workers=None, resources=None, **options) -> dg.Definitions:
    return kstreams_definitions(build_app(app_id, **options), resources=resources, elastic_workers=elastic_workers)
