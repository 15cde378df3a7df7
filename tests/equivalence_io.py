"""What the window, session and join equivalence tests share: Java's rendering of null, the
processor that stamps values with their record's timestamp (``StampValues``), writing
string records with their timestamps, inputs whose timestamps never tie, reading windowed keys, the
output topics of our side of a comparison, and Kafka Streams' side run by a main of the Java harness."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Optional

import pytest
from pyspark import cloudpickle

import oracle_harness
from dagster_kstreams.kafka.records import Record as KafkaRecord, produce, read_topic
from dagster_kstreams.kafka.timestamp_header import TIMESTAMP_HEADER, decode_timestamp
from dagster_kstreams.topology.processor_api import FixedKeyProcessor, Record
from dagster_kstreams.topology.serdes import Serdes, WindowedSerde

# The DSL programs' lambdas call java_string in Spark's Python workers, which cannot import
# modules of tests/: ship this one by value, as the test modules ship themselves.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def java_string(value) -> str:
    """``value`` as Java's string concatenation renders it ("null" for null)."""
    return "null" if value is None else value


class StampValues(FixedKeyProcessor):
    """The Java harness's StampValues: the value (Java's "null" for null), "|t" and the record's
    timestamp, so an output sequence compares timestamps too."""

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(f"{java_string(record.value)}|t{record.timestamp}"))


def written_time(record: KafkaRecord) -> int:
    """The timestamp ``record`` was written with: its own, or the runner's header where its producer
    could not write it (librdkafka writes 0 as the time of the write: README, "Record timestamps")."""
    for name, data in record.headers:
        if name == TIMESTAMP_HEADER and data is not None:
            return decode_timestamp(data)
    return record.timestamp


def final_values_and_times(records: Iterable[KafkaRecord], key_decoder=bytes.decode,
                           value_decoder=bytes.decode) -> dict:
    """``{key: (last value, the timestamp it was written with)}`` in offset order (a table read from a
    changelog, with its rows' timestamps: :func:`written_time`); tombstones delete."""
    table: dict = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        key = key_decoder(record.key)
        if record.value is None:
            table.pop(key, None)
        else:
            table[key] = (value_decoder(record.value), written_time(record))
    return table


def produce_strings(bootstrap: str, topic: str, records: Iterable[tuple]) -> None:
    """Write ``(key, value, timestamp)`` or ``(key, value, partition, timestamp)`` string records
    (None: a null key or value; a None partition: the murmur2 partitioner places the record)."""
    def encoded(text):
        return None if text is None else text.encode()

    produce(bootstrap, topic, [(encoded(record[0]), encoded(record[1]), *([None] if len(record) == 3 else []),
                                *record[2:]) for record in records])


def produce_inputs(bootstrap: str, topics: Mapping[str, str], records: Mapping[str, list], names: Iterable[str]) -> None:
    """Each input's records (``produce_strings``' tuples) to its topic, input by input in ``names``' order."""
    for name in names:
        produce_strings(bootstrap, topics[name], records[name])


def partition_sequences(bootstrap: str, topics: Mapping[str, str], outputs: Iterable[str]) -> dict[tuple[str, int], list]:
    """``{(output, partition): [(key, value, timestamp)] in offset order}``, keys and values read as
    strings (None: null)."""
    results: dict[tuple[str, int], list] = {}
    for name in outputs:
        for record in sorted(read_topic(bootstrap, topics[name]), key=lambda r: (r.partition, r.offset)):
            key = None if record.key is None else record.key.decode()
            value = None if record.value is None else record.value.decode()
            results.setdefault((name, record.partition), []).append((key, value, written_time(record)))
    return results


def with_unique_timestamps(halves: list[dict[str, list[tuple]]], topics: Iterable[str]) -> list[dict[str, list[tuple]]]:
    """``halves`` (``{topic: [(key, value, partition, timestamp)]}`` each) with every timestamp moved
    up to the next one no record took yet, in place: no two records tie (Kafka Streams breaks a tie
    between partitions by the order of its internal queue, the runner by topic name)."""
    taken: set[int] = set()
    for half in halves:
        for topic in topics:
            for index, (key, value, partition, timestamp) in enumerate(half[topic]):
                while timestamp in taken:
                    timestamp += 1
                taken.add(timestamp)
                half[topic][index] = (key, value, partition, timestamp)
    return halves


def windowed_key_reader(kind: Optional[str]):
    """Bytes of an output key -> the plain string key (``kind`` None), or ``(key, start, end)`` of a
    windowed one (``kind`` "session", else the window kind ``WindowedSerde`` takes)."""
    if kind is None:
        return lambda data: data.decode()
    serde = WindowedSerde(Serdes.String(), session=True) if kind == "session" else WindowedSerde(Serdes.String(), kind)
    return lambda data: (lambda w: (w.key, w.window.start, w.window.end))(serde.deserialize(data))


def output_topics(kafka_admin, unique_topic, inputs: Mapping[str, str], partitions: Mapping[str, int],
                  prefix: str = "spark") -> dict[str, str]:
    """``inputs`` and new output topics for our run (named ``<prefix>-<output>``), created with
    ``partitions[output]`` partitions each."""
    topics = {**inputs, **{name: unique_topic(f"{prefix}-{name}") for name in partitions}}
    kafka_admin.create_topics({topics[name]: count for name, count in partitions.items()})
    return topics


class KafkaStreamsInBackground:
    """Kafka Streams' side of a comparison, run in the background while ours runs: new input topics
    (``write_inputs`` fills them, given ``{input: topic}``) and output topics, and the harness main
    ``main`` (``"kstreams.oracle.X"``) on them as the app ``ks-<name>-<random>`` (or ``app_id``, for a
    test that reads its internal topics), its arguments bootstrap, app id, ``state_dir``, then the
    ``inputs`` and ``outputs`` topics in that order. :meth:`result` waits for it: the JSON it printed,
    with ``"results"``: ``read_results(bootstrap, topics)``; :meth:`close` waits for it whatever became
    of it."""

    def __init__(self, main: str, name: str, bootstrap: str, kafka_admin, unique_topic, state_dir,
                 inputs: Sequence[str], outputs: Sequence[str], partitions: int,
                 write_inputs: Callable[[dict[str, str]], None], read_results: Callable[[str, dict[str, str]], dict],
                 app_id: Optional[str] = None):
        input_topics = {input_: unique_topic(f"ks-{name}-{input_}") for input_ in inputs}
        kafka_admin.create_topics({topic: partitions for topic in input_topics.values()})
        write_inputs(input_topics)
        self.topics = output_topics(kafka_admin, unique_topic, input_topics, dict.fromkeys(outputs, partitions), "ks")
        args = [bootstrap, app_id or unique_topic(f"ks-{name}"), str(state_dir),
                *(self.topics[topic] for topic in (*inputs, *outputs))]
        self._main = oracle_harness.BackgroundMain(main, args)
        self._bootstrap, self._read_results = bootstrap, read_results
        self._result: Optional[dict] = None

    def result(self) -> dict:
        if self._result is None:
            self._result = {**self._main.report(), "results": self._read_results(self._bootstrap, self.topics)}
        return self._result

    def close(self) -> None:
        self._main.close()


def run_kafka_streams(main: str, name: str, bootstrap: str, kafka_admin, unique_topic,
                      tmp_path_factory: pytest.TempPathFactory, inputs: Mapping[str, str],
                      partitions: Mapping[str, int], prefix: str = "ks",
                      app_id: Optional[str] = None) -> tuple[dict[str, str], str]:
    """Kafka Streams' side of a comparison: new output topics (:func:`output_topics` with ``prefix``)
    and the harness main ``main`` (``"kstreams.oracle.X"``) run on them until it has consumed its
    input, as the app ``ks-<name>-<random>`` with a new state directory. The main's arguments:
    bootstrap, app id, state directory, then every input and output topic in ``inputs`` and
    ``partitions`` order (``app_id``: another app id, for a test that reads its internal topics).
    Returns the topics and what the main printed."""
    topics, kafka_streams = start_kafka_streams(main, name, bootstrap, kafka_admin, unique_topic, tmp_path_factory,
                                                inputs, partitions, prefix, app_id)
    try:
        return topics, kafka_streams.stdout()
    finally:
        kafka_streams.close()


class KafkaStreamsReference(Mapping):
    """A module fixture's Kafka Streams side whose harness main runs in the background
    (:func:`start_kafka_streams`) while the module's first tests run ours: the keys of ``ready``
    (what our side needs: its inputs, their records) at once; the others, ``finish(stdout)`` of the
    main, at the first read of one of them, which waits for the main. :meth:`close` waits for it
    whatever became of it."""

    def __init__(self, main: oracle_harness.BackgroundMain, ready: Mapping, finish: Callable[[str], Mapping]):
        self._main, self._ready, self._finish = main, dict(ready), finish
        self._finished: Optional[dict] = None

    def _all(self) -> dict:
        if self._finished is None:
            self._finished = {**self._finish(self._main.stdout()), **self._ready}
        return self._finished

    def __getitem__(self, key):
        return self._ready[key] if key in self._ready else self._all()[key]

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def close(self) -> None:
        self._main.close()


def start_kafka_streams(main: str, name: str, bootstrap: str, kafka_admin, unique_topic,
                        tmp_path_factory: pytest.TempPathFactory, inputs: Mapping[str, str],
                        partitions: Mapping[str, int], prefix: str = "ks",
                        app_id: Optional[str] = None) -> tuple[dict[str, str], oracle_harness.BackgroundMain]:
    """:func:`run_kafka_streams` in the background, so that our side runs meanwhile: the topics, and
    the main still running (``stdout()`` and ``report()`` wait for it)."""
    topics = output_topics(kafka_admin, unique_topic, inputs, partitions, prefix)
    args = [bootstrap, app_id or unique_topic(f"ks-{name}"), str(tmp_path_factory.mktemp(f"ks-{name}-state")),
            *topics.values()]
    return topics, oracle_harness.BackgroundMain(main, args)
