"""Users counted per country: ``users.groupBy(country).count()``, the seed's first example.

``users`` is keyed by user id with JSON values (``{"user_id", "name", "country", ...}``). Re-keying
by country inserts a repartition topic, so there are two sub-topologies: 0 re-keys and writes the
repartition topic, 1 counts per country (queryable store ``users-per-country-store``) and writes
the changing counts (Long values) to ``users-per-country``.
"""

from __future__ import annotations

import json

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Materialized, StreamsBuilder, Topology

APP_ID = "users-per-country"
TOPIC_PARTITIONS = {"users": 2, "users-per-country": 2}


def country_of(user_id: str, user_json: str) -> str:
    return json.loads(user_json)["country"]


def build_topology(users: str = "users", users_per_country: str = "users-per-country") -> Topology:
    builder = StreamsBuilder()
    (builder.stream(users)
        .group_by(country_of)
        .count(Materialized.as_("users-per-country-store"))
        .to_stream()
        .to(users_per_country))
    return builder.build()


def build_app(app_id: str = APP_ID, users: str = "users", users_per_country: str = "users-per-country",
              partitions: int | None = None, **options) -> KStreamsApp:
    """``partitions``: of both topics, instead of :data:`TOPIC_PARTITIONS` (the tasks per sub-topology)."""
    return KStreamsApp(
        build_topology(users, users_per_country), app_id,
        {users: partitions or TOPIC_PARTITIONS["users"],
         users_per_country: partitions or TOPIC_PARTITIONS["users-per-country"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, users: str = "users", users_per_country: str = "users-per-country",
               elastic_workers=None, resources=None, partitions: int | None = None, **options) -> dg.Definitions:
    return kstreams_definitions(build_app(app_id, users, users_per_country, partitions, **options),
                                resources=resources, elastic_workers=elastic_workers)
