"""Realistic keyed JSON for the example topologies, written at a chosen rate with bursts.

Datasets (each a topic of the examples in ``assets/``):

* ``users`` — keyed by user id: ``{"user_id", "name", "country", "signup_ts"}``; countries skewed.
* ``profiles`` — keyed by user id: ``{"user_id", "name", "country", "tier"}``; every user's profile
  is written first (so click enrichment finds it), then occasional updates.
* ``clicks`` — keyed by click id: ``{"click_id", "user_id", "url", "ts"}``; a few users click a lot.
* ``text-lines`` — keyed by document id: ``{"doc_id", "text"}``; words Zipf-distributed.

The rate is records per second across the chosen datasets; every ``burst_every_s`` seconds it is
multiplied by ``burst_factor`` for ``burst_seconds``, so lag builds up and drains (what the lag
sensor reacts to). Records are placed with Kafka's default partitioner, as any Java client would.

    dagster-kstreams generate users clicks profiles text-lines --rate 200 --duration 120 --create-topics
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from confluent_kafka import Producer

from dagster_kstreams.base import environment
from dagster_kstreams.kafka.admin import KafkaAdmin

__all__ = ["DATASETS", "EXAMPLE_PARTITIONS", "BurstSchedule", "ExampleData", "generate", "register"]

# Partition counts the example definitions declare for their input topics.
EXAMPLE_PARTITIONS = {"users": 2, "profiles": 2, "clicks": 2, "text-lines": 2, "countries": 1}
DATASETS = tuple(EXAMPLE_PARTITIONS)

_COUNTRIES = ["fr"] * 8 + ["de"] * 6 + ["us"] * 5 + ["it"] * 3 + ["es"] * 3 + ["pt", "nl", "be", "pl", "se", "jp"]
_FIRST_NAMES = ["Ada", "Alan", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Edsger", "Frances", "Dennis",
                "Radia", "Tim", "Hedy", "John", "Katherine", "Guido"]
_PAGES = ["/", "/pricing", "/docs", "/docs/quickstart", "/blog", "/blog/kafka-streams", "/signup", "/login",
          "/cart", "/checkout", "/product/42", "/product/7", "/search?q=spark", "/about"]
_WORDS = ("the of and to a in is it that for on stream kafka topic partition task offset lag spark dagster "
          "asset record key value state store window join table count event worker scale").split()
_TIERS = ["free"] * 6 + ["pro"] * 3 + ["enterprise"]
# Reference data of the countries users live in (the "countries" dataset: a small table).
_COUNTRY_FACTS = {"fr": ("EU", "EUR"), "de": ("EU", "EUR"), "us": ("NA", "USD"), "it": ("EU", "EUR"),
                  "es": ("EU", "EUR"), "pt": ("EU", "EUR"), "nl": ("EU", "EUR"), "be": ("EU", "EUR"),
                  "pl": ("EU", "PLN"), "se": ("EU", "SEK"), "jp": ("APAC", "JPY")}


@dataclass(frozen=True)
class BurstSchedule:
    """Records per second at time ``t`` (seconds since the start)."""

    rate: float
    burst_every_s: float = 30.0
    burst_seconds: float = 5.0
    burst_factor: float = 10.0

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError(f"rate must be > 0 records/s, got {self.rate}")
        if self.burst_factor < 1:
            raise ValueError(f"burst_factor must be >= 1, got {self.burst_factor}")
        if self.burst_every_s > 0 and not 0 <= self.burst_seconds <= self.burst_every_s:
            raise ValueError(f"burst_seconds must be between 0 and burst_every_s ({self.burst_every_s}), "
                             f"got {self.burst_seconds}")

    def in_burst(self, t: float) -> bool:
        # Bursts come at the end of each period, so a run starts at the base rate.
        if self.burst_every_s <= 0 or self.burst_seconds <= 0:
            return False
        return t % self.burst_every_s >= self.burst_every_s - self.burst_seconds

    def rate_at(self, t: float) -> float:
        return self.rate * (self.burst_factor if self.in_burst(t) else 1.0)


class ExampleData:
    """Deterministic (given ``seed``) records of the datasets over a fixed population of users."""

    def __init__(self, seed: int = 0, users: int = 500):
        self.random = random.Random(seed)
        self.user_ids = [f"user-{i:05d}" for i in range(users)]
        self._clicks = 0
        self._documents = 0
        self._user_cursor = 0
        # Some users are far more active than others (Zipf-like weights).
        self._activity = [1.0 / (rank + 1) ** 0.8 for rank in range(users)]

    def _profile(self, user_id: str) -> dict:
        index = int(user_id.split("-")[1])
        country = _COUNTRIES[(index * 7) % len(_COUNTRIES)]  # a user's country is stable
        return {"user_id": user_id, "name": f"{_FIRST_NAMES[index % len(_FIRST_NAMES)]} {index}",
                "country": country, "tier": self.random.choice(_TIERS)}

    def user(self) -> tuple[str, dict]:
        user_id = self.user_ids[self._user_cursor % len(self.user_ids)]
        self._user_cursor += 1
        profile = self._profile(user_id)
        return user_id, {"user_id": user_id, "name": profile["name"], "country": profile["country"],
                         "signup_ts": int(time.time() * 1000)}

    def profile(self, user_id: Optional[str] = None) -> tuple[str, dict]:
        user_id = user_id or self.random.choice(self.user_ids)
        return user_id, self._profile(user_id)

    def click(self) -> tuple[str, dict]:
        self._clicks += 1
        click_id = f"click-{self._clicks:09d}-{self.random.getrandbits(24):06x}"
        user_id = self.random.choices(self.user_ids, weights=self._activity)[0]
        return click_id, {"click_id": click_id, "user_id": user_id, "url": self.random.choice(_PAGES),
                          "ts": int(time.time() * 1000)}

    def country(self, code: Optional[str] = None) -> tuple[str, dict]:
        code = code or self.random.choice(sorted(_COUNTRY_FACTS))
        region, currency = _COUNTRY_FACTS[code]
        return code, {"country": code, "region": region, "currency": currency}

    def text_line(self) -> tuple[str, dict]:
        self._documents += 1
        weights = [1.0 / (rank + 1) for rank in range(len(_WORDS))]
        words = self.random.choices(_WORDS, weights=weights, k=self.random.randint(3, 14))
        doc_id = f"doc-{self._documents:08d}"
        return doc_id, {"doc_id": doc_id, "text": " ".join(words).capitalize() + "."}

    def record(self, dataset: str) -> tuple[str, dict]:
        makers: Mapping[str, Callable[[], tuple[str, dict]]] = {
            "users": self.user, "profiles": self.profile, "clicks": self.click, "text-lines": self.text_line,
            "countries": self.country}
        if dataset not in makers:
            raise ValueError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}")
        return makers[dataset]()


def generate(
    bootstrap_servers: str,
    topics: Mapping[str, str],
    schedule: BurstSchedule,
    *,
    duration_s: Optional[float] = None,
    max_records: Optional[int] = None,
    seed: int = 0,
    users: int = 500,
    client_config: Optional[Mapping[str, str]] = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_second: Optional[Callable[[float, int, float], None]] = None,
) -> dict[str, int]:
    """Write records of ``topics`` (``{dataset: topic}``) until ``duration_s`` or ``max_records``.

    Returns how many records went to each topic (the initial profiles included).
    """
    if duration_s is None and max_records is None:
        raise ValueError("give duration_s or max_records, or the generator never stops")
    for dataset in topics:
        if dataset not in DATASETS:
            raise ValueError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}")
    producer = Producer({"bootstrap.servers": bootstrap_servers, "partitioner": "murmur2_random",
                         "linger.ms": 20, "log_level": 0, **(client_config or {})})
    errors: list[str] = []

    def on_delivery(error, message) -> None:
        if error is not None:
            errors.append(f"{message.topic()}: {error}")

    counts = {topic: 0 for topic in topics.values()}
    data = ExampleData(seed, users)

    def send(dataset: str, key: str, value: dict) -> None:
        topic = topics[dataset]
        while True:
            try:
                producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.1)
        counts[topic] += 1

    if "profiles" in topics:  # every user has a profile before the first click
        for user_id in data.user_ids:
            send("profiles", *data.profile(user_id))
    if "countries" in topics:  # and every country its facts
        for code in sorted(_COUNTRY_FACTS):
            send("countries", *data.country(code))
    datasets = list(topics)
    started = clock()
    sent = 0
    credit = 0.0
    last = started
    reported = 0
    while True:
        now = clock()
        elapsed = now - started
        if duration_s is not None and elapsed >= duration_s:
            break
        if max_records is not None and sent >= max_records:
            break
        credit += schedule.rate_at(elapsed) * (now - last)
        last = now
        due = int(credit)
        if max_records is not None:
            due = min(due, max_records - sent)
        for _ in range(due):
            dataset = datasets[sent % len(datasets)]
            send(dataset, *data.record(dataset))
            sent += 1
        credit -= due
        producer.poll(0)
        if errors:
            raise RuntimeError(f"producing failed: {errors[:3]}")
        if on_second is not None and int(elapsed) > reported:
            reported = int(elapsed)
            on_second(elapsed, sent, schedule.rate_at(elapsed))
        sleep(0.01)
    remaining = producer.flush(60)
    if remaining or errors:
        raise RuntimeError(f"producing failed: {remaining} records undelivered; {errors[:3]}")
    return counts


def _topics_argument(values: Sequence[str]) -> dict[str, str]:
    topics = {}
    for value in values or DATASETS:
        dataset, _, topic = value.partition("=")
        if dataset not in DATASETS:
            raise argparse.ArgumentTypeError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}")
        topics[dataset] = topic or dataset
    return topics


def _run(args: argparse.Namespace) -> int:
    topics = _topics_argument(args.datasets)
    bootstrap = args.bootstrap_servers or environment.bootstrap_servers()
    if args.create_topics:
        admin = KafkaAdmin(bootstrap)
        existing = admin.list_topics()
        wanted = {topic: EXAMPLE_PARTITIONS[dataset] for dataset, topic in topics.items() if topic not in existing}
        if wanted:
            admin.create_topics(wanted)
            print(f"created {', '.join(f'{t} ({n} partitions)' for t, n in wanted.items())}")
    schedule = BurstSchedule(args.rate, args.burst_every, args.burst_seconds, args.burst_factor)
    duration = None if args.duration is not None and args.duration <= 0 else args.duration
    if duration is None and args.records is None:
        duration = float("inf")  # until interrupted

    def report(elapsed: float, sent: int, rate: float) -> None:
        print(f"{elapsed:6.0f}s  {sent:8d} records  {rate:7.0f}/s{'  burst' if rate > args.rate else ''}", flush=True)

    try:
        counts = generate(bootstrap, topics, schedule, duration_s=duration, max_records=args.records,
                          seed=args.seed, users=args.users, on_second=report if not args.quiet else None)
    except KeyboardInterrupt:
        return 130
    print("wrote " + ", ".join(f"{count} to {topic}" for topic, count in counts.items()))
    return 0


def register(subcommands) -> None:
    parser = subcommands.add_parser(
        "generate", help="write example JSON records (users, profiles, clicks, text-lines) at a rate, with bursts",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="*", metavar="DATASET[=TOPIC]",
                        help=f"datasets to write ({', '.join(DATASETS)}; default all), optionally to another topic")
    parser.add_argument("--bootstrap-servers", default=None,
                        help=f"Kafka bootstrap servers (default ${environment.BOOTSTRAP_SERVERS_ENV_VAR} "
                             f"or {environment.DEFAULT_BOOTSTRAP_SERVERS})")
    parser.add_argument("--rate", type=float, default=50.0, help="records per second between bursts")
    parser.add_argument("--burst-every", type=float, default=30.0, help="seconds between bursts (0: none)")
    parser.add_argument("--burst-seconds", type=float, default=5.0, help="how long a burst lasts")
    parser.add_argument("--burst-factor", type=float, default=10.0, help="rate multiplier during a burst")
    parser.add_argument("--duration", type=float, default=None, help="seconds to run (default: until Ctrl-C)")
    parser.add_argument("--records", type=int, default=None, help="stop after this many records")
    parser.add_argument("--users", type=int, default=500, help="size of the user population")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--create-topics", action="store_true",
                        help="create missing topics with the partition counts the examples declare")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=_run)
