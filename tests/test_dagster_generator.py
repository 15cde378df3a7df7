"""The example data generator: its rate schedule with bursts, and the records it writes to a real broker."""

from __future__ import annotations

import json

import pytest

from dagster_kstreams.cli import main
from dagster_kstreams.generator import BurstSchedule, ExampleData, generate
from dagster_kstreams.kafka.partitioner import default_partition
from dagster_kstreams.kafka.records import read_topic


def test_burst_schedule_multiplies_the_rate_at_the_end_of_each_period():
    schedule = BurstSchedule(rate=10, burst_every_s=30, burst_seconds=5, burst_factor=8)
    assert schedule.rate_at(0) == 10 and schedule.rate_at(24.9) == 10
    assert schedule.rate_at(25) == 80 and schedule.rate_at(29.9) == 80
    assert schedule.rate_at(30) == 10 and schedule.rate_at(56) == 80
    assert BurstSchedule(rate=10, burst_every_s=0).rate_at(29) == 10
    with pytest.raises(ValueError, match="burst_seconds"):
        BurstSchedule(rate=10, burst_every_s=5, burst_seconds=6)
    with pytest.raises(ValueError, match="rate"):
        BurstSchedule(rate=0)


def test_generated_records_follow_the_schedule_with_a_simulated_clock(kafka_bootstrap, kafka_admin, unique_topic):
    clicks = unique_topic("clicks")
    kafka_admin.create_topic(clicks, 2)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += 0.25  # coarser than real time: four ticks per simulated second

    # 4 s at 20/s, then a 2 s burst at 100/s: 80 + 200 records.
    counts = generate(kafka_bootstrap, {"clicks": clicks}, BurstSchedule(20, burst_every_s=6, burst_seconds=2,
                                                                         burst_factor=5),
                      duration_s=6, clock=lambda: now[0], sleep=sleep)
    assert 270 <= counts[clicks] <= 285
    records = read_topic(kafka_bootstrap, clicks)
    assert len(records) == counts[clicks]
    for record in records[:50]:
        click = json.loads(record.value)
        assert record.key.decode() == click["click_id"]
        assert set(click) == {"click_id", "user_id", "url", "ts"}
        assert record.partition == default_partition(record.key, 2)  # Kafka's default partitioner


def test_cli_writes_profiles_before_clicks_so_every_click_can_be_enriched(kafka_bootstrap, kafka_admin, unique_topic,
                                                                          capsys):
    clicks, profiles, users = unique_topic("clicks"), unique_topic("profiles"), unique_topic("users")
    kafka_admin.create_topics({clicks: 2, profiles: 2, users: 2})
    code = main(["generate", f"clicks={clicks}", f"profiles={profiles}", f"users={users}",
                 "--bootstrap-servers", kafka_bootstrap, "--rate", "500", "--records", "90", "--users", "40",
                 "--quiet"])
    assert code == 0
    assert f"to {clicks}" in capsys.readouterr().out
    profile_users = {json.loads(record.value)["user_id"] for record in read_topic(kafka_bootstrap, profiles)}
    assert len(profile_users) == 40
    click_users = {json.loads(record.value)["user_id"] for record in read_topic(kafka_bootstrap, clicks)}
    assert click_users and click_users <= profile_users
    countries = [json.loads(record.value)["country"] for record in read_topic(kafka_bootstrap, users)]
    assert len(countries) == 30 and len(set(countries)) > 2


def test_example_data_is_deterministic_for_a_seed():
    first, second = ExampleData(seed=3, users=20), ExampleData(seed=3, users=20)
    def without_time(record):
        key, value = record
        return key, {name: field for name, field in value.items() if name not in ("ts", "signup_ts")}

    for dataset in ("users", "profiles", "clicks", "text-lines", "countries"):
        assert without_time(first.record(dataset)) == without_time(second.record(dataset))
    with pytest.raises(ValueError, match="unknown dataset 'orders'"):
        first.record("orders")


def test_every_users_country_has_its_facts():
    # The profiles' countries are all in the countries dataset (the click-regions example looks them up).
    data = ExampleData(seed=1, users=200)
    countries = {data.profile(user_id)[1]["country"] for user_id in data.user_ids}
    facts = {data.country(code)[0]: data.country(code)[1] for code in countries}
    assert set(facts) == countries and all(fact["region"] in ("EU", "NA", "APAC") for fact in facts.values())
