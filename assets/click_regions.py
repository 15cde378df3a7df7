"""Each click with its user's country and region: a foreign-key join, then a global table.

``clicks`` is read as a table keyed by click id (``{"click_id", "user_id", "url", "ts"}``: the
latest version of each click); ``profiles`` is a table keyed by user id (``{"user_id", "name",
"country", "tier"}``); ``countries`` is reference data keyed by country code (``{"country",
"region", "currency"}``), small enough for every task to hold whole: a global table.

1. ``clicks.join(profiles, user_of, with_country)``, a foreign-key join: clicks are keyed by click
   and profiles by user, so Kafka Streams sends each click to its user's partition of
   ``profiles`` through a subscription-registration topic and the answer back through a
   subscription-response topic, and joins again whenever either side changes (a user who moves
   country moves all their clicks with them). Nothing is re-keyed by hand.
2. ``.to_stream().join(countries, country_of, with_region)``: each joined click looks its country
   up in the global table, with no repartition by country.

In Dagster the two subscription topics are intermediate assets of ``click_regions``, and
``kafka/countries`` is upstream of the sub-topology that joins it (every task reads all its
partitions). ``dagster-kstreams generate clicks profiles countries --create-topics`` writes all three.
"""

from __future__ import annotations

import json
from typing import Optional

import dagster as dg

from dagster_kstreams.orchestration.app import KStreamsApp
from dagster_kstreams.orchestration.definitions import kstreams_definitions
from dagster_kstreams.topology import Named, StreamsBuilder, TableJoined, Topology

APP_ID = "click-regions"
TOPIC_PARTITIONS = {"clicks": 2, "profiles": 2, "countries": 1, "click-regions": 2}


def user_of(click_json: str) -> Optional[str]:
    return json.loads(click_json).get("user_id")  # None: a click of no user joins nothing


def with_country(click_json: str, profile_json: str) -> str:
    return json.dumps({**json.loads(click_json), "country": json.loads(profile_json)["country"]})


def country_of(click_id: str, click_json: str) -> str:
    return json.loads(click_json)["country"]


def with_region(click_json: str, country_json: Optional[str]) -> str:
    region = json.loads(country_json)["region"] if country_json is not None else None
    return json.dumps({**json.loads(click_json), "region": region})


def build_topology(clicks: str = "clicks", profiles: str = "profiles", countries: str = "countries",
                   click_regions: str = "click-regions") -> Topology:
    builder = StreamsBuilder()
    country_table = builder.global_table(countries)
    (builder.table(clicks)
        .join(builder.table(profiles), user_of, with_country, TableJoined.as_("click-user"))
        .to_stream()
        .left_join(country_table, country_of, with_region, Named.as_("click-region"))
        .to(click_regions))
    return builder.build()


def build_app(app_id: str = APP_ID, clicks: str = "clicks", profiles: str = "profiles", countries: str = "countries",
              click_regions: str = "click-regions", **options) -> KStreamsApp:
    return KStreamsApp(
        build_topology(clicks, profiles, countries, click_regions), app_id,
        {clicks: TOPIC_PARTITIONS["clicks"], profiles: TOPIC_PARTITIONS["profiles"],
         countries: TOPIC_PARTITIONS["countries"], click_regions: TOPIC_PARTITIONS["click-regions"]},
        create_sink_topics=True, **options)


def build_defs(app_id: str = APP_ID, elastic_workers=None, resources=None, **options) -> dg.Definitions:
    return kstreams_definitions(build_app(app_id, **options), resources=resources, elastic_workers=elastic_workers)
