"""The Processor API example, the Python twin of kstreams.oracle.ProcessorApiExamples (Java):
keep the two in step.

``BucketCounter`` (``process``, stores ``seen`` and ``buckets``): per record, it forwards at once
whether the key's value is new or a repeat of the last one (a deduplicator over ``seen``), or that
the record is late (its 10 s bucket ended at or before the stream time) or has a null key or
value; it counts the other records per (bucket, key) in ``buckets``, and a punctuator on stream
time every 10 s forwards and deletes the counts of the buckets that ended by then, in store order.
``StampValues`` (``process_values``) appends each record's timestamp to its value. ``WindowLog``
(``process`` on the same source, window stores ``recent`` and ``recent-memory``) forwards what its
two window stores hold after each record. ``SessionLog`` (session stores ``sessions`` and
``sessions-memory``) merges each record into its key's sessions by hand and forwards what the stores
return; ``DuplicateLog`` (window stores ``dups`` and ``dups-memory`` that retain duplicates) puts
every value and forwards what the stores hold. ``VersionLog`` (versioned store ``versions``, 2 s of
history) puts each value at its record's time (a null value deletes; ``v3`` also puts a tombstone
500 ms before, and of one key a version of a rarely written one) and forwards what the puts and
deletes return and what the store reads back, as of several times. ``TableLog`` tags what the
events' versioned table (``to_table`` into 2 s of history, DSL wiring only) forwards through
``to_stream``: out-of-order updates and tombstones too, expired ones not; it names the table's store,
writes versions into it and reads them back.

Every value starts with ``p<partition>|``: the task that produced it. What a record forwards at
once and what the punctuator forwards are in an order fixed by the input each (Kafka Streams runs
its punctuators after a varying number of records, so the two interleave differently run to run).

Spark's Python workers cannot import modules of tests/: the test ships this module by value, as
equivalence_io (StampValues) ships itself.
"""

from __future__ import annotations

from equivalence_io import StampValues
from dagster_kstreams.topology import Materialized, StreamsBuilder, TopicNameExtractor, Topology
from dagster_kstreams.topology.processor_api import Processor, PunctuationType, Record, Stores
from dagster_kstreams.topology.serdes import Serdes, Window, Windowed

BUCKET_MS = 10_000
SESSION_GAP_MS = 500


def metadata_text(metadata) -> str:
    if metadata is None:
        return "empty"
    return f"{'null' if metadata.topic is None else metadata.topic}/{metadata.partition}/{metadata.offset}"


class PunctuatedOrNot(TopicNameExtractor):
    """To ``punctuated`` what a punctuator forwarded (Kafka Streams' context: no topic, partition -1,
    offset -1, no headers), the rest to ``processed``; downstream of StampValues too."""

    def __init__(self, processed: str, punctuated: str):
        self.processed, self.punctuated = processed, punctuated

    def extract(self, key, value, record_context) -> str:
        punctuated = (record_context.topic() is None and record_context.partition() == -1
                      and record_context.offset() == -1 and not record_context.headers().to_array())
        return self.punctuated if punctuated else self.processed

    def __str__(self) -> str:  # what describe() prints; the Java twin's toString() says the same
        return "PunctuatedOrNot"


class BucketCounter(Processor):
    def init(self, context) -> None:
        self.context = context
        self.seen = context.get_state_store("seen")
        self.buckets = context.get_state_store("buckets")
        self.metadata_in_init = metadata_text(context.record_metadata())
        context.schedule(BUCKET_MS, PunctuationType.STREAM_TIME, self.emit_closed)

    def process(self, record: Record) -> None:
        metadata = self.context.record_metadata()
        tag = f"p{metadata.partition}|"
        if record.key is None or record.value is None:
            key, value = ("null" if text is None else text for text in (record.key, record.value))
            self.context.forward(record.with_value(f"{tag}null|{key}|{value}"))
            return
        last = self.seen.put_if_absent(record.key, record.value)
        if last is not None:
            self.seen.put(record.key, record.value)
        kind = "repeat" if last == record.value else "new"
        self.context.forward(record.with_value(f"{tag}{kind}|{record.value}|o{metadata.offset}"))
        bucket = record.timestamp // BUCKET_MS
        if (bucket + 1) * BUCKET_MS <= self.context.current_stream_time_ms():
            self.context.forward(record.with_value(f"{tag}late|{record.value}"))
            return
        slot = f"{bucket:012d}|{record.key}"
        self.buckets.put(slot, (self.buckets.get(slot) or 0) + 1)

    def emit_closed(self, now: int) -> None:
        tag = f"p{self.context.task_id().partition}|"
        # the metadata init() and a punctuator see: Kafka Streams' dummy record context's
        seen = f"{self.metadata_in_init}|{metadata_text(self.context.record_metadata())}"
        for entry in self.buckets.all():
            bucket, key = int(entry.key[:12]), entry.key[13:]
            end = (bucket + 1) * BUCKET_MS
            if end > now:
                break
            self.context.forward(Record(key, f"{tag}count|{bucket}|{entry.value}|{seen}", end - 1))
            self.buckets.delete(entry.key)


class WindowLog(Processor):
    """Puts each value under its 5 s window in two window stores (20 s retention), the persistent
    ``recent`` and the in-memory ``recent-memory`` (a null value deletes the window), and forwards
    what each holds for the key over the last 10 s and for every key over the last 30 s, in the
    store's own order."""

    def init(self, context) -> None:
        self.context = context
        self.stores = [context.get_state_store("recent"), context.get_state_store("recent-memory")]

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        start = record.timestamp // 5_000 * 5_000
        parts = []
        for store in self.stores:
            store.put(record.key, record.value, start)
            mine = ",".join(f"{ts}={value}" for ts, value in store.fetch(record.key, start - 10_000, start))
            every = ",".join(f"{entry.key.key}@{entry.key.window.start}={entry.value}"
                             for entry in store.fetch_all(start - 30_000, start + 5_000))
            parts.append(f"{mine}/{every}")
        self.context.forward(record.with_value(f"p{self.context.record_metadata().partition}|win|" + "|".join(parts)))


def _window_stores():
    return [Stores.window_store_builder(Stores.persistent_window_store("recent", 20_000, 5_000, False),
                                        Serdes.String(), Serdes.String()),
            Stores.window_store_builder(Stores.in_memory_window_store("recent-memory", 20_000, 5_000, False),
                                        Serdes.String(), Serdes.String())]


# Window starts a processor computes near 0 (not a record's time), before it too: Kafka Streams' window store
# takes a negative start (200 s retention), which only a key's fetch reads back (a window may not start before 0).
NEAR_ZERO_STARTS = (-150_005, -100_001, -60_000, -5, 0, 10, 50_000)


class NearZeroWindows(Processor):
    """Puts each value under one of ``NEAR_ZERO_STARTS`` (by its timestamp) in the persistent window store
    ``near-zero``, and forwards the key's windows starting before 0 (from -200 s: those still retained) and
    every key's from 0 to 100 s, in the store's order."""

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store("near-zero")

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        self.store.put(record.key, record.value, NEAR_ZERO_STARTS[record.timestamp % len(NEAR_ZERO_STARTS)])
        before = ",".join(f"{start}={value}" for start, value in self.store.fetch(record.key, -200_000, -1))
        every = ",".join(f"{entry.key.key}@{entry.key.window.start}={entry.value}"
                         for entry in self.store.fetch_all(0, 100_000))
        self.context.forward(record.with_value(f"p{self.context.record_metadata().partition}|near|{before}/{every}"))


def _near_zero_store():
    return Stores.window_store_builder(Stores.persistent_window_store("near-zero", 200_000, 100, False),
                                       Serdes.String(), Serdes.String())


class SessionLog(Processor):
    """In each session store (20 s retention), the record merges the key's sessions within the gap
    (500 ms) of it: each found one is removed (``remove``; a null value instead deletes them with a
    put of None and stores nothing), and the merged session is put with the count of records it
    holds; a value ``v3`` also puts a one-instant session at the merged session's end. Forwards
    what was found, the key's sessions backwards, every key's sessions overlapping the last 5 s,
    and ``fetch_session`` of the merged session; then the in-memory store's sessions of every key
    that end in the last 2 s."""

    def init(self, context) -> None:
        self.context = context
        self.stores = [context.get_state_store("sessions"), context.get_state_store("sessions-memory")]

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        t, parts = record.timestamp, []
        for store in self.stores:
            found = list(store.find_sessions(record.key, t - SESSION_GAP_MS, t + SESSION_GAP_MS))
            start = min([t] + [entry.key.window.start for entry in found])
            end = max([t] + [entry.key.window.end for entry in found])
            count = 1 + sum(int(entry.value) for entry in found)
            for entry in found:
                if record.value is None:
                    store.put(entry.key, None)
                else:
                    store.remove(entry.key)
            if record.value is not None:
                store.put(Windowed(record.key, Window(start, end)), str(count))
                if record.value == "v3":
                    store.put(Windowed(record.key, Window(end, end)), "1")
            found_text = ",".join(f"{e.key.window.start}-{e.key.window.end}={e.value}" for e in found)
            mine = ",".join(f"{e.key.window.start}-{e.key.window.end}={e.value}" for e in store.backward_fetch(record.key))
            every = ",".join(f"{e.key.key}@{e.key.window.start}-{e.key.window.end}={e.value}"
                             for e in store.find_sessions("a", "c", t - 5_000, t))
            single = store.fetch_session(record.key, start, end)
            parts.append(f"{found_text}/{mine}/{every}/{'null' if single is None else single}")
        ending = ",".join(f"{e.key.key}@{e.key.window.start}-{e.key.window.end}={e.value}"  # in-memory only
                          for e in self.stores[1].find_sessions(t - 2_000, t))
        parts.append(ending)
        self.context.forward(record.with_value(f"p{self.context.record_metadata().partition}|ses|" + "|".join(parts)))


class DuplicateLog(Processor):
    """Puts each value under its 5 s window in two window stores that retain duplicates (a null
    value: a no-op), and forwards what each holds for the key over the last 5 s, for every key
    backwards, and ``fetch(key, start)``."""

    def init(self, context) -> None:
        self.context = context
        self.stores = [context.get_state_store("dups"), context.get_state_store("dups-memory")]

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        start, parts = record.timestamp // 5_000 * 5_000, []
        for store in self.stores:
            store.put(record.key, record.value, start)
            mine = ",".join(f"{ts}={value}" for ts, value in store.fetch(record.key, start - 5_000, start))
            every = ",".join(f"{entry.key.key}@{entry.key.window.start}={entry.value}"
                             for entry in store.backward_fetch_all(start - 5_000, start))
            single = store.fetch(record.key, start)
            parts.append(f"{mine}/{every}/{'null' if single is None else single}")
        self.context.forward(record.with_value(f"p{self.context.record_metadata().partition}|dup|" + "|".join(parts)))


class VersionLog(Processor):
    """Per record with a key, into the versioned store ``versions`` (2 s of history): a value is put
    at the record's time (``v3`` then also puts a tombstone 500 ms earlier, into the history, and, of
    key ``<letter>1``, the value under the rarely written key ``<letter>0``), a null value deletes at
    it; forwards what each put returns (the validTo, -1 for the latest, Long.MIN_VALUE when expired)
    or the deleted record, then the key's latest record, its record as of 1 ms and 1.5 s before the
    record, ``<letter>0``'s as of 2.5 s before (mostly past the history: only an old enough latest
    version is found) and ``<letter>1``'s as of the record's time."""

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store("versions")

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        t, store = record.timestamp, self.store
        if record.value is None:
            written = f"del={_versioned(store.delete(record.key, t))}"
        else:
            written = f"put={store.put(record.key, record.value, t)}"
            if record.value == "v3":
                written += f",tomb={store.put(record.key, None, t - 500)}"
                if record.key.endswith("1"):
                    written += f",side={store.put(record.key[0] + '0', record.value, t)}"
        reads = [store.get(record.key), store.get(record.key, t - 1), store.get(record.key, t - 1_500),
                 store.get(record.key[0] + "0", t - 2_500), store.get(record.key[0] + "1", t)]
        partition = self.context.record_metadata().partition
        self.context.forward(record.with_value(f"p{partition}|ver|{written}|" + "|".join(map(_versioned, reads))))


def _versioned(versioned_record) -> str:
    """A VersionedRecord as ``value@timestamp~validTo`` (``-``: none), ``null`` for None."""
    if versioned_record is None:
        return "null"
    valid_to = versioned_record.valid_to()
    return f"{versioned_record.value()}@{versioned_record.timestamp()}~{'-' if valid_to is None else valid_to}"


class TableLog(Processor):
    """Tags each update a versioned table's ``to_stream`` forwards with its task and timestamp, and
    works on the table's own store (``versioned-events``): an update ``v2`` puts ``w`` 300 ms ahead
    of it (the table's next updates of the key before then are out of order), ``v1`` deletes 100 ms
    before it; then forwards what those return, the key's latest record and the one as of 1 ms
    before the update."""

    def init(self, context) -> None:
        self.context = context
        self.table = context.get_state_store("versioned-events")

    def process(self, record: Record) -> None:
        value, t = ("null" if record.value is None else record.value), record.timestamp
        written = ""
        if record.value == "v2":
            written = f"put={self.table.put(record.key, 'w', t + 300)}"
        elif record.value == "v1":
            written = f"del={_versioned(self.table.delete(record.key, t - 100))}"
        reads = f"{_versioned(self.table.get(record.key))}|{_versioned(self.table.get(record.key, t - 1))}"
        partition = self.context.record_metadata().partition
        self.context.forward(record.with_value(f"p{partition}|tab|{value}|t{t}|{written}|{reads}"))


def _versioned_store():
    return Stores.versioned_key_value_store_builder(Stores.persistent_versioned_key_value_store("versions", 2_000),
                                                    Serdes.String(), Serdes.String())


def _session_and_duplicate_stores():
    return [Stores.session_store_builder(Stores.persistent_session_store("sessions", 20_000),
                                         Serdes.String(), Serdes.String()),
            Stores.session_store_builder(Stores.in_memory_session_store("sessions-memory", 20_000),
                                         Serdes.String(), Serdes.String()),
            Stores.window_store_builder(Stores.persistent_window_store("dups", 20_000, 5_000, True),
                                        Serdes.String(), Serdes.String()),
            Stores.window_store_builder(Stores.in_memory_window_store("dups-memory", 20_000, 5_000, True),
                                        Serdes.String(), Serdes.String())]


def processor_api_examples(topics: dict[str, str]) -> StreamsBuilder:
    """The topology of ProcessorApiExamples.java on ``topics`` (``events``, ``out``, ``processed`` and
    ``punctuated`` -> topic)."""
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store("seen"), Serdes.String(), Serdes.String()))
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("buckets"), Serdes.String(), Serdes.Long()))
    for store in _window_stores():
        builder.add_state_store(store)
    events = builder.stream(topics["events"])
    stamped = events.process(BucketCounter, "seen", "buckets").process_values(StampValues)
    stamped.to(topics["out"])
    stamped.to(PunctuatedOrNot(topics["processed"], topics["punctuated"]))  # a topic picked by the context
    events.process(WindowLog, "recent", "recent-memory").to(topics["out"])
    for store in _session_and_duplicate_stores():
        builder.add_state_store(store)
    events.process(SessionLog, "sessions", "sessions-memory").to(topics["out"])
    events.process(DuplicateLog, "dups", "dups-memory").to(topics["out"])
    builder.add_state_store(_versioned_store())
    events.process(VersionLog, "versions").to(topics["out"])
    events.to_table(Materialized.as_(Stores.persistent_versioned_key_value_store("versioned-events", 2_000))) \
        .to_stream().process(TableLog, "versioned-events").to(topics["out"])
    builder.add_state_store(_near_zero_store())
    events.process(NearZeroWindows, "near-zero").to(topics["out"])
    return builder


def processor_api_low_level(topics: dict[str, str]) -> Topology:
    """The same processors wired with the low-level API (``Topology.add_source`` ...): the graph of
    :func:`processor_api_examples` under names of its own (Java twin: ProcessorApiExamples.lowLevel)."""
    topology = Topology() \
        .add_source("events-source", topics["events"]) \
        .add_processor("counter", BucketCounter, "events-source") \
        .add_state_store(Stores.key_value_store_builder(
            Stores.persistent_key_value_store("seen"), Serdes.String(), Serdes.String()), "counter") \
        .add_state_store(Stores.key_value_store_builder(
            Stores.in_memory_key_value_store("buckets"), Serdes.String(), Serdes.Long()), "counter") \
        .add_processor("stamp", StampValues, "counter") \
        .add_sink("out-sink", topics["out"], "stamp") \
        .add_processor("window-log", WindowLog, "events-source")
    for store in _window_stores():
        topology.add_state_store(store, "window-log")
    topology.add_sink("log-sink", topics["out"], "window-log") \
        .add_processor("session-log", SessionLog, "events-source") \
        .add_processor("duplicate-log", DuplicateLog, "events-source")
    sessions, sessions_memory, dups, dups_memory = _session_and_duplicate_stores()
    topology.add_state_store(sessions, "session-log").add_state_store(sessions_memory, "session-log")
    topology.add_state_store(dups, "duplicate-log").add_state_store(dups_memory, "duplicate-log")
    return topology.add_sink("session-sink", topics["out"], "session-log") \
        .add_sink("duplicate-sink", topics["out"], "duplicate-log") \
        .add_processor("version-log", VersionLog, "events-source") \
        .add_state_store(_versioned_store(), "version-log") \
        .add_sink("version-sink", topics["out"], "version-log")
