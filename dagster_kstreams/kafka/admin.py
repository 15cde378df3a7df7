"""Topics, offsets and consumer-group offsets through confluent-kafka's AdminClient.

Every call has a short timeout: a broker that does not answer gives a KafkaAdminError that
names the bootstrap servers, not a hang. A running task's admin client instead waits out a broker
restart (:meth:`KafkaAdmin.waiting_out_outages`). Offsets are keyed by ``TopicPartition(topic, partition)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, IsolationLevel, KafkaError, KafkaException, TopicCollection
from confluent_kafka import TopicPartition as _KafkaTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec, ResourceType

from dagster_kstreams.kafka.transient import LEADERLESS, MOVING, UNREACHABLE, error_code


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class KafkaAdminError(RuntimeError):
    """A Kafka admin operation failed; the message names the topic/group/broker at fault."""


class KafkaAdmin:
    """Admin operations against one Kafka cluster.

    ``config`` is passed to librdkafka as is (``security.protocol``, ``sasl.*``, ``ssl.*``, ...).
    ``timeout_s`` bounds each request. ``outage_s`` (0 by default) is how long a call waits out an
    unreachable broker, retrying with backoff, before it fails (transient answers such as a
    coordinator or leader that moves are retried for ``timeout_s`` or ``outage_s``, the longer).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, Any] | None = None,
        timeout_s: float = 10.0,
        outage_s: float = 0.0,
    ) -> None:
        if not bootstrap_servers:
            raise KafkaAdminError("bootstrap_servers is empty; pass e.g. '127.0.0.1:9092'")
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self.outage_s = outage_s
        self._config = dict(config or {})
        self.client_config: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "socket.timeout.ms": int(timeout_s * 1000),
            # Unreachable brokers are reported through our errors; librdkafka's own log would repeat them.
            "log_level": 0,
            **(config or {}),
        }
        self._client = AdminClient(self.client_config)

    def waiting_out_outages(self, outage_s: float) -> "KafkaAdmin":
        """An admin client on the same cluster whose calls wait up to ``outage_s`` for a broker
        that is down or restarting (a running task's: a restart costs it a pause, not a failure)."""
        return KafkaAdmin(self.bootstrap_servers, self._config, timeout_s=self.timeout_s, outage_s=outage_s)

    # -- helpers ---------------------------------------------------------------------
    def _request_kwargs(self) -> dict[str, float]:
        return {"request_timeout": self.timeout_s}

    def _retrying(self, attempt: Callable[[], Any], what: str, also_transient: frozenset[int] = frozenset()) -> Any:
        """Run ``attempt`` again while Kafka answers with a transient error, with backoff, up to
        ``timeout_s`` (or ``outage_s``, also while the broker is unreachable).

        Right after a topic is created or the broker starts, leaders and group coordinators
        are still being elected: NOT_LEADER_FOR_PARTITION, COORDINATOR_LOAD_IN_PROGRESS, ...
        """
        deadline = time.monotonic() + max(self.timeout_s, self.outage_s)
        backoff = 0.1
        while True:
            try:
                return attempt()
            except KafkaException as error:
                leaderless = self.outage_s > 0 and error_code(error) in LEADERLESS
                waits_out = leaderless or (self.outage_s > 0 and _is_unreachable(error))
                if time.monotonic() >= deadline or not (waits_out or _is_transient(error, also_transient)):
                    raise self._translate(error, what) from error
                if leaderless:
                    # A client that asked while the restarted broker had no leaders yet may keep that
                    # answer: seen in CI, "No leaders found" for 120 s after the leaders were back. A
                    # new client asks the broker again.
                    self._client = AdminClient(self.client_config)
            except TimeoutError as error:
                if self.outage_s <= 0 or time.monotonic() >= deadline:
                    raise KafkaAdminError(
                        f"Kafka at {self.bootstrap_servers} did not answer within "
                        f"{max(self.timeout_s, self.outage_s):.0f}s ({what})"
                    ) from error
            time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(2 * backoff, _MAX_BACKOFF_S)

    def _translate(self, error: KafkaException, what: str) -> KafkaAdminError:
        kafka_error = error.args[0] if error.args and isinstance(error.args[0], KafkaError) else None
        if _is_unreachable(error):
            waited = f" for {self.outage_s:.0f}s" if self.outage_s > 0 else ""
            return KafkaAdminError(
                f"Kafka at {self.bootstrap_servers} is unreachable{waited} ({what}): {kafka_error.str()}")
        message = kafka_error.str() if kafka_error else str(error)
        return KafkaAdminError(f"{what} failed on {self.bootstrap_servers}: {message}")

    # -- topics ----------------------------------------------------------------------
    def create_topics(
        self,
        partitions_by_topic: Mapping[str, int],
        replication_factor: int = 1,
        topic_config: Mapping[str, str] | None = None,
    ) -> None:
        """Create topics that do not exist yet. An existing topic must have the asked partition count."""
        for topic, partitions in partitions_by_topic.items():
            if partitions < 1:
                raise KafkaAdminError(f"topic {topic!r}: partition count must be >= 1, got {partitions}")
        if not partitions_by_topic:
            return
        new_topics = [
            NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor, config=dict(topic_config or {}))
            for topic, partitions in partitions_by_topic.items()
        ]
        futures = self._client.create_topics(new_topics, operation_timeout=self.timeout_s, **self._request_kwargs())
        existing = []
        for topic, future in futures.items():
            try:
                future.result(timeout=self.timeout_s + 5)
            except KafkaException as error:
                if error.args and isinstance(error.args[0], KafkaError) and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    existing.append(topic)
                    continue
                raise self._translate(error, f"creating topic {topic!r}") from error
            except TimeoutError as error:
                raise KafkaAdminError(
                    f"Kafka at {self.bootstrap_servers} did not answer within {self.timeout_s:.0f}s (creating topic {topic!r})"
                ) from error
        self._wait_for_leaders(list(partitions_by_topic))
        if existing:
            for topic, actual in self.partition_counts(existing).items():
                if actual != partitions_by_topic[topic]:
                    raise KafkaAdminError(
                        f"topic {topic!r} already exists with {actual} partitions, not {partitions_by_topic[topic]}"
                    )

    def _wait_for_leaders(self, topics: list[str]) -> None:
        """Wait until every partition of ``topics`` has a leader, so that reads and writes work at once."""

        def attempt() -> None:
            futures = self._client.describe_topics(TopicCollection(topics), **self._request_kwargs())
            for topic, future in futures.items():
                description = future.result(timeout=self.timeout_s + 5)
                leaderless = [p.id for p in description.partitions if p.leader is None]
                if leaderless:
                    raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"{topic} partitions {leaderless} have no leader yet"))

        # A topic created a moment ago may not be in the broker's metadata cache yet.
        self._retrying(attempt, f"waiting for leaders of {', '.join(topics)}", frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART}))

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1, topic_config: Mapping[str, str] | None = None) -> None:
        self.create_topics({topic: partitions}, replication_factor, topic_config)

    def delete_topics(self, topics: Iterable[str]) -> None:
        """Delete topics; topics that do not exist are ignored."""
        topics = list(topics)
        if not topics:
            return
        futures = self._client.delete_topics(topics, operation_timeout=self.timeout_s, **self._request_kwargs())
        for topic, future in futures.items():
            try:
                future.result(timeout=self.timeout_s + 5)
            except KafkaException as error:
                if error.args and isinstance(error.args[0], KafkaError) and error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise self._translate(error, f"deleting topic {topic!r}") from error

    def delete_records_before(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Delete each partition's records below its offset (its log start moves there)."""
        wanted = [_KafkaTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets.items() if offset > 0]
        if not wanted:
            return

        def attempt() -> None:
            for future in self._client.delete_records(wanted, **self._request_kwargs()).values():
                future.result(timeout=self.timeout_s + 5)

        self._retrying(attempt, "deleting records below " + ", ".join(
            f"{tp.topic}-{tp.partition}@{offset}" for tp, offset in sorted(offsets.items())))

    def partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition count of each topic; a missing topic is an error that names it."""
        topics = list(dict.fromkeys(topics))
        if not topics:
            return {}

        def attempt() -> dict[str, int]:
            futures = self._client.describe_topics(TopicCollection(topics), **self._request_kwargs())
            counts = {}
            for topic, future in futures.items():
                try:
                    description = future.result(timeout=self.timeout_s + 5)
                except KafkaException as error:
                    if error_code(error) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                        raise KafkaAdminError(f"topic {topic!r} does not exist on {self.bootstrap_servers}") from error
                    raise
                counts[topic] = len(description.partitions)
            return counts

        return self._retrying(attempt, f"describing topic(s) {', '.join(map(repr, topics))}")

    def partition_count(self, topic: str) -> int:
        return self.partition_counts([topic])[topic]

    def topic_config(self, topics: Iterable[str], name: str) -> dict[str, str]:
        """The value of topic setting ``name`` (e.g. ``max.message.bytes``) for each topic, as the
        broker has it (the topic's own or the broker's default)."""
        resources = [ConfigResource(ResourceType.TOPIC, topic) for topic in dict.fromkeys(topics)]
        if not resources:
            return {}
        values = {}
        for resource, future in self._client.describe_configs(resources, **self._request_kwargs()).items():
            try:
                entries = future.result(timeout=self.timeout_s + 5)
            except KafkaException as error:
                raise self._translate(error, f"reading the settings of topic {resource.name!r}") from error
            except TimeoutError as error:
                raise KafkaAdminError(f"Kafka at {self.bootstrap_servers} did not answer within "
                                      f"{self.timeout_s:.0f}s (settings of topic {resource.name!r})") from error
            if name in entries:
                values[resource.name] = entries[name].value
        return values

    def list_topics(self) -> set[str]:
        """Names of all topics, internal ones (``__consumer_offsets``) excluded. A request left
        unanswered (``_TIMED_OUT``: connected, where no broker up is ``_TRANSPORT``; a broker paused
        under a load of 20 in CI) is asked again, up to ``_METADATA_REQUESTS`` requests."""
        asked = 1
        while True:
            try:
                metadata = self._retrying(lambda: self._client.list_topics(timeout=self.timeout_s), "listing topics")
                return {name for name in metadata.topics if not name.startswith("__")}
            except KafkaAdminError as error:
                if asked == _METADATA_REQUESTS or error_code(error.__cause__) != KafkaError._TIMED_OUT:
                    raise
                asked += 1

    # -- offsets ---------------------------------------------------------------------
    def _partitions_of(self, topics: str | Iterable[str]) -> list[TopicPartition]:
        names = [topics] if isinstance(topics, str) else list(topics)
        counts = self.partition_counts(names)
        return [TopicPartition(topic, partition) for topic in names for partition in range(counts[topic])]

    def _list_offsets(self, topics: str | Iterable[str], spec: OffsetSpec, isolation_level: str) -> dict[TopicPartition, int]:
        levels = {"read_uncommitted": IsolationLevel.READ_UNCOMMITTED, "read_committed": IsolationLevel.READ_COMMITTED}
        if isolation_level not in levels:
            raise KafkaAdminError(f"isolation_level must be one of {sorted(levels)}, got {isolation_level!r}")
        partitions = self._partitions_of(topics)
        if not partitions:
            return {}
        offsets: dict[TopicPartition, int] = {}

        def attempt() -> dict[TopicPartition, int]:
            pending = [tp for tp in partitions if tp not in offsets]
            request = {_KafkaTopicPartition(tp.topic, tp.partition): spec for tp in pending}
            futures = self._client.list_offsets(request, isolation_level=levels[isolation_level], **self._request_kwargs())
            first_error = None
            for kafka_tp, future in futures.items():
                try:
                    offsets[TopicPartition(kafka_tp.topic, kafka_tp.partition)] = future.result(timeout=self.timeout_s + 5).offset
                except KafkaException as error:
                    first_error = first_error or error
            if first_error is not None:
                raise first_error
            return offsets

        names = sorted({tp.topic for tp in partitions})
        return self._retrying(attempt, f"listing offsets of {', '.join(names)}")

    def end_offsets(self, topics: str | Iterable[str], isolation_level: str = "read_uncommitted") -> dict[TopicPartition, int]:
        """The next offset to be written in each partition (the high watermark, or the LSO for read_committed)."""
        return self._list_offsets(topics, OffsetSpec.latest(), isolation_level)

    def beginning_offsets(self, topics: str | Iterable[str]) -> dict[TopicPartition, int]:
        """The earliest offset still present in each partition."""
        return self._list_offsets(topics, OffsetSpec.earliest(), "read_uncommitted")

    def offsets_for_time(self, topics: str | Iterable[str], timestamp_ms: int) -> dict[TopicPartition, int]:
        """In each partition, the first offset whose record's timestamp is ``timestamp_ms`` or later,
        else the end offset (Kafka's ``offsetsForTimes``, as Kafka Streams' reset tool seeks)."""
        found = self._list_offsets(topics, OffsetSpec.for_timestamp(timestamp_ms), "read_uncommitted")
        later = sorted({tp.topic for tp, offset in found.items() if offset < 0})
        end = self.end_offsets(later) if later else {}
        return {tp: offset if offset >= 0 else end[tp] for tp, offset in found.items()}

    def group_members(self, group: str) -> list[str]:
        """Who is a member of ``group`` now, as ``client-id (host)``. This library's runs never join
        the application's group (they commit as a group nobody joins), so members are other
        clients using the id: a Kafka Streams instance, a consumer."""

        def attempt() -> list[str]:
            future = self._client.describe_consumer_groups([group], **self._request_kwargs())[group]
            description = future.result(timeout=self.timeout_s + 5)
            return [f"{member.client_id} ({member.host})" for member in description.members]

        return self._retrying(attempt, f"describing group {group!r}")

    def committed_offsets(self, group: str, topics: str | Iterable[str] | None = None) -> dict[TopicPartition, int]:
        """Offsets committed by ``group``; partitions without a commit are left out.

        With ``topics``, only their partitions are asked for; otherwise those of every topic.

        Read with a consumer that carries the group id but never joins the group, not with
        AdminClient.list_consumer_group_offsets: librdkafka's admin path dereferences a null
        consumer group when the coordinator answers NOT_COORDINATOR (right after a broker
        starts, or when the coordinator moves) and crashes the process (librdkafka #5040).
        Only committed offsets count: while a transaction that adds offsets for ``group`` is
        open, the offsets before it are returned at once.
        """
        return {tp: offset for tp, (offset, _metadata) in self._committed(group, topics).items()}

    def _committed(self, group: str, topics: str | Iterable[str] | None) -> dict[TopicPartition, tuple[int, str | None]]:
        names = sorted(self.list_topics()) if topics is None else topics
        partitions = [_KafkaTopicPartition(tp.topic, tp.partition) for tp in self._partitions_of(names)]
        if not partitions:
            return {}
        # read_uncommitted: offsets a transaction has added but not committed yet (a task's fenced
        # commit, see kafka/fencing.py) are skipped, not waited for (UNSTABLE_OFFSET_COMMIT).
        consumer = Consumer({**self.client_config, "group.id": group, "enable.auto.commit": False,
                             "isolation.level": "read_uncommitted"})
        try:
            result = self._retrying(
                lambda: consumer.committed(partitions, timeout=self.timeout_s),
                f"reading committed offsets of group {group!r}",
            )
        finally:
            consumer.close()
        return {
            TopicPartition(kafka_tp.topic, kafka_tp.partition): (kafka_tp.offset, kafka_tp.metadata)
            for kafka_tp in result
            if kafka_tp.offset >= 0 and kafka_tp.error is None
        }

    def committed_with_metadata(self, group: str, topics: str | Iterable[str]) -> dict[TopicPartition, tuple[int, str]]:
        """As :meth:`committed_offsets`, each offset with the metadata string committed with it."""
        return {tp: (offset, metadata or "") for tp, (offset, metadata) in self._committed(group, topics).items()}

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition | tuple[str, int], int]) -> None:
        """Set ``group``'s committed offsets (the group must have no active members)."""
        if not offsets:
            return
        for (topic, partition), offset in offsets.items():
            if offset < 0:
                raise KafkaAdminError(f"offset for {topic}-{partition} in group {group!r} must be >= 0, got {offset}")
        partitions = [_KafkaTopicPartition(topic, partition, offset) for (topic, partition), offset in offsets.items()]
        request = [ConsumerGroupTopicPartitions(group, partitions)]

        def attempt() -> None:
            result = self._client.alter_consumer_group_offsets(request, **self._request_kwargs())[group].result(timeout=self.timeout_s + 5)
            for kafka_tp in result.topic_partitions or []:
                if kafka_tp.error is None:
                    continue
                if kafka_tp.error.code() in MOVING:
                    raise KafkaException(kafka_tp.error)  # retried
                raise KafkaAdminError(
                    f"committing offset {kafka_tp.offset} of {kafka_tp.topic}-{kafka_tp.partition} for group "
                    f"{group!r} failed: {kafka_tp.error.str()}"
                )

        self._retrying(attempt, f"committing offsets for group {group!r}")

    def lag(self, group: str, topics: str | Iterable[str]) -> dict[TopicPartition, int]:
        """Records not yet committed by ``group`` in each partition of ``topics``.

        A partition the group never committed counts from its earliest offset, as a consumer
        with ``auto.offset.reset=earliest`` would read it.
        """
        topics = [topics] if isinstance(topics, str) else list(topics)
        end = self.end_offsets(topics)
        committed = self.committed_offsets(group, topics)
        missing = [tp for tp in end if tp not in committed]
        beginning = self.beginning_offsets(sorted({tp.topic for tp in missing})) if missing else {}
        return {tp: max(0, end_offset - committed.get(tp, beginning.get(tp, 0))) for tp, end_offset in end.items()}


_MAX_BACKOFF_S = 2.0
_METADATA_REQUESTS = 3


def _is_transient(error: KafkaException, also_transient: frozenset[int] = frozenset()) -> bool:
    code = error_code(error)
    return code is not None and (code in MOVING or code in also_transient)


def _is_unreachable(error: KafkaException) -> bool:
    return error_code(error) in UNREACHABLE
