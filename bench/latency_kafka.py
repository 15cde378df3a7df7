"""The latency bench's Kafka plumbing, confluent-kafka only (the bench does not rely on the library's
internals): its topics, the writer of user records at a steady rate, and the reader of the output
topic with each record's log-append and receive times."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.latency_records import Output, Produced

# The generator's countries and skew (dagster_kstreams/generator.py), each pinned to one input
# partition (alternating down the weights, which balances them roughly).
COUNTRY_WEIGHTS = {"fr": 8, "de": 6, "us": 5, "it": 3, "es": 3, "pt": 1, "nl": 1, "be": 1, "pl": 1, "se": 1,
                   "jp": 1}


def country_partitions(partitions: int) -> dict[str, int]:
    return {country: index % partitions for index, country in enumerate(COUNTRY_WEIGHTS)}


def create_topics(bootstrap: str, topics: dict[str, dict], partitions: int) -> None:
    """Create each topic with ``partitions`` partitions and the given configs."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config) for name, config in topics.items()])
    for future in futures.values():
        future.result(timeout=60)


class OutputReader:
    """Reads the output topic from the beginning in a thread; keeps every record with its
    log-append time and receive time, and the highest count seen per country."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.outputs: list[Output] = []
        self.highest: dict[str, int] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"read-{topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def highest_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.highest)

    def _run(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "enable.auto.commit": False,
                             "group.id": f"bench-latency-reader-{uuid.uuid4().hex}",  # assign() only; never joins
                             "fetch.wait.max.ms": 10, "fetch.min.bytes": 1})
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        try:
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=10_000, timeout=0.05)
                received = time.time()
                batch = []
                for message in messages:
                    if message.error():
                        self.errors.append(str(message.error()))
                        continue
                    kind, stamp = message.timestamp()
                    if kind != TIMESTAMP_LOG_APPEND_TIME:
                        self.errors.append(f"output record without log-append time (type {kind})")
                    value = message.value()
                    count = int.from_bytes(value, "big", signed=True) if value is not None and len(value) == 8 \
                        else int(value.decode()) if value else 0
                    batch.append(Output(message.key().decode(), count, stamp / 1000.0, received,
                                        message.partition(), message.offset()))
                if batch:
                    with self._lock:
                        self.outputs.extend(batch)
                        for output in batch:
                            if output.count > self.highest.get(output.country, 0):
                                self.highest[output.country] = output.count
        finally:
            consumer.close()


class UserWriter:
    """Writes user records (the generator's shape: ``{"user_id", "name", "country", "signup_ts"}``,
    keyed by user id) and keeps, per record, its country rank and produce time."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, seed: int = 0):
        self.topic = topic
        self.country_partition = country_partitions(partitions)  # each country pinned to one partition
        self.random = random.Random(seed)
        self.countries = list(COUNTRY_WEIGHTS)
        self.weights = [COUNTRY_WEIGHTS[c] for c in self.countries]
        self.produced: list[Produced] = []
        self.per_country: dict[str, int] = {}
        self.failed = 0
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})

    def _on_delivery(self, error, message) -> None:
        if error is not None:
            self.failed += 1

    def write(self, country: str, measured: bool) -> None:
        user = self.random.randrange(100_000)
        rank = self.per_country.get(country, 0) + 1
        self.per_country[country] = rank
        now = time.time()
        value = json.dumps({"user_id": f"user-{user}", "name": f"user {user}", "country": country,
                            "signup_ts": int(now * 1000)})
        self.producer.produce(self.topic, key=f"user-{user}", value=value, partition=self.country_partition[country],
                              timestamp=int(now * 1000), on_delivery=self._on_delivery)
        self.produced.append(Produced(country, rank, now, measured))
        self.producer.poll(0)

    def write_random(self, measured: bool) -> None:
        self.write(self.random.choices(self.countries, self.weights)[0], measured)

    def steady(self, rate: float, warmup_s: float, seconds: float) -> dict:
        """``rate`` records/s on a fixed schedule; the first ``warmup_s`` seconds unmeasured."""
        total = int(round(rate * (warmup_s + seconds)))
        warm = int(round(rate * warmup_s))
        started = time.monotonic()
        behind = 0.0
        for i in range(total):
            due = started + i / rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                behind = max(behind, -wait)
            self.write_random(measured=i >= warm)
        elapsed = time.monotonic() - started
        self.producer.flush(60)
        return {"records": total, "warmup_records": warm, "seconds": round(elapsed, 2),
                "rate": round(total / elapsed, 1) if elapsed else None, "max_behind_schedule_s": round(behind, 3),
                "delivery_failures": self.failed}

    def flush(self) -> None:
        self.producer.flush(60)
