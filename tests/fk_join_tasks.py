"""Foreign-key joins without Spark: the left task (sub-topology 0) and the right one (1) of a
topology, run batch by batch with their state rows as the Spark strategies keep them
(tests/test_fk_join_logic.py, tests/test_fk_join_timestamps_logic.py)."""

from __future__ import annotations

import pickle
from collections import defaultdict

from dagster_kstreams.processors.records import RecordContext
from dagster_kstreams.spark.compile import compile_topology
from dagster_kstreams.topology import StreamsBuilder

from fk_join_topology import fk_join_examples

# The state of a task-grouped sub-topology's task (one partition here), beside key-grouped rows by key.
TASK = "task"
TOPICS = {"accounts": "accounts", "users": "users", "out-inner": "inner", "out-left": "left"}


class Tasks:
    """The left task (sub-topology 0) and the right one (1), one partition each, run batch by
    batch with their state rows (or task state: a task-grouped sub-topology) as the Spark strategies keep
    them; ``deliver(*topics)`` runs the
    records waiting on topics of one sub-topology (inputs or internal topics) as one batch;
    ``answer_times`` holds the timestamps of the answers on the generated join's topic, by left key."""

    def __init__(self, builder: StreamsBuilder):
        self.compiled = compile_topology(builder, "app")
        self.programs = [self.compiled.program(0), self.compiled.program(1)]
        self.state: list[dict] = [{}, {}]
        self.waiting: dict[str, list] = defaultdict(list)
        self.offsets: dict[str, int] = defaultdict(int)
        self.out: dict[str, list] = defaultdict(list)
        self.answer_times: dict[str, list] = defaultdict(list)
        self.clock = 0

    def put(self, topic: str, key: str, value, timestamp: int | None = None) -> None:
        self.clock += 1
        self.waiting[topic].append((key.encode(), None if value is None else value.encode(),
                                    self.clock if timestamp is None else timestamp))

    def internal_topics(self) -> list[str]:
        return [self.compiled.application.topic_name(topic) for topic in self.compiled.topology.repartition_topics]

    def deliver(self, *topics: str) -> None:
        """The records waiting on ``topics`` (of one sub-topology) as one batch, topic after topic."""
        (index,) = {i for i, program in enumerate(self.programs) for topic in topics if topic in program.source_by_topic}
        program, state = self.programs[index], self.state[index]
        batch = []
        for topic in topics:
            records, self.waiting[topic] = self.waiting[topic], []
            for key, value, timestamp in records:
                offset = self.offsets[topic]
                self.offsets[topic] += 1
                batch.append((RecordContext(topic, 0, offset, timestamp, position=len(batch), raw_key=key), key, value))
        rows = []
        if program.task_grouped:  # a versioned store's task-level values: the whole batch, one state
            out, state[TASK] = program.run_task_batch(batch, state.get(TASK))
            rows += zip(out.emit_order(), out.topic, out.key, out.value, out.timestamp_ms)
        else:
            groups = defaultdict(list)
            for record in batch:
                groups[record[1]].append(record)
            for key, group in groups.items():
                out, state[key] = program.run_key_group(group, state.get(key))
                rows += zip(out.emit_order(), out.topic, out.key, out.value, out.timestamp_ms)
        for _, out_topic, key, value, timestamp in sorted(rows, key=lambda row: row[0]):
            if out_topic in self.internal_topics():
                self.waiting[out_topic].append((key, value, timestamp))
                if "RESPONSE" in out_topic:  # the inner join's answers
                    self.answer_times[key.decode()].append(timestamp)
            else:
                self.out[out_topic].append((key.decode(), None if value is None else value.decode()))

    def settle(self) -> None:
        while any(self.waiting.values()):
            for topic in [t for t, records in self.waiting.items() if records]:
                self.deliver(topic)

    def table(self, topic: str) -> dict:
        final: dict = {}
        for key, value in self.out[topic]:
            if value is None:
                final.pop(key, None)
            else:
                final[key] = value
        return final


def subscribers(tasks: Tasks, foreign_key: str) -> list[bytes]:
    """The left keys subscribed to ``foreign_key`` in both joins' subscription stores."""
    program = tasks.programs[1]
    row = tasks.state[1].get(foreign_key.encode())
    if row is None:
        return []
    keys = []
    for store, slot in program.store_slots.items():
        if "subscription" in store.lower() and row[slot] is not None:
            keys += sorted(pickle.loads(row[slot])[1])  # (the right row's timestamp, subscribers)
    return keys


def example_tasks() -> Tasks:
    return Tasks(fk_join_examples(TOPICS))
