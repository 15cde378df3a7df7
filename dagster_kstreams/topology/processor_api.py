"""The Processor API's user-facing types (Kafka Streams' ``processor.api`` and ``state.Stores``):
what a user writes a custom processor with, importable with no Spark and no broker.

* :class:`Processor` (``init(context)``, ``process(record)``, ``close()``) and
  :class:`FixedKeyProcessor` (``process_values``: it cannot change the key); a *supplier* is a
  no-argument callable returning a new processor, as Kafka Streams' ``ProcessorSupplier.get``.
* :class:`Record` — key, value, timestamp, headers (Kafka's :class:`~.headers.Headers`);
  ``with_key``/``with_value``/... return copies.
* :class:`PunctuationType`, :class:`RecordMetadata`.
* :class:`ValueAndTimestamp` — what a DSL operation's key-value store holds per key (an
  aggregation's, a materialized table's) when a processor names that store in ``process``.
* :class:`Stores` — ``Stores.key_value_store_builder(Stores.persistent_key_value_store(name),
  key_serde, value_serde)`` (or ``in_memory_key_value_store``), ``Stores.window_store_builder(
  Stores.persistent_window_store(name, retention, size, retain_duplicates), ...)``,
  ``Stores.session_store_builder(Stores.persistent_session_store(name, retention), ...)`` (or the
  ``in_memory_*`` stores), ``Stores.versioned_key_value_store_builder(
  Stores.persistent_versioned_key_value_store(name, history_retention), ...)``, added with
  ``StreamsBuilder.add_state_store`` and named in ``KStream.process(supplier, *store_names)``.

The engine side (the context a processor gets, the stores' contents, punctuation) lives in
:mod:`dagster_kstreams.processors.user_processors`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, NamedTuple, Optional, Union

from .errors import TopologyException
from .graph import GraphNode
from .headers import Headers
from .node_specs import NodeKind, ProcessorSpec, StoreSpec, StoreType
from .store_suppliers import KeyValueBytesStoreSupplier, SessionBytesStoreSupplier, WindowBytesStoreSupplier
from .versioned import VersionedBytesStoreSupplier

__all__ = [
    "Processor", "FixedKeyProcessor", "ProcessorSupplier", "supplier_stores", "user_processor_spec", "Record", "PunctuationType", "RecordMetadata", "Stores",
    "KeyValue", "ValueAndTimestamp",
    "KeyValueBytesStoreSupplier", "WindowBytesStoreSupplier", "SessionBytesStoreSupplier", "StoreBuilder", "StateStoreNode", "PROCESSOR_NAME", "PROCESSVALUES_NAME",
]

PROCESSOR_NAME = "KSTREAM-PROCESSOR-"
PROCESSVALUES_NAME = "KSTREAM-PROCESSVALUES-"


class PunctuationType(enum.Enum):
    """When a punctuator fires: on the task's stream time, or on the wall clock."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


@dataclass(frozen=True)
class Record:
    """A record as a processor sees and forwards it (Kafka Streams' ``api.Record``)."""

    key: Any
    value: Any
    timestamp: int
    # Kafka's Headers (topology/headers.py): the input record's in ``process``; what ``forward``
    # writes with the record. Each Record holds its own copy, as Kafka's constructor makes one.
    headers: Headers = field(default_factory=Headers)

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", Headers(self.headers))

    def with_key(self, key) -> "Record":
        return replace(self, key=key)

    def with_value(self, value) -> "Record":
        return replace(self, value=value)

    def with_timestamp(self, timestamp: int) -> "Record":
        if timestamp < 0:
            raise ValueError(f"Malformed Record: timestamp may not be negative. Got: {timestamp}")
        return replace(self, timestamp=timestamp)

    def with_headers(self, headers) -> "Record":
        """A copy with ``headers`` (a :class:`Headers`, or ``(key, value)`` pairs)."""
        return replace(self, headers=headers)


@dataclass(frozen=True)
class RecordMetadata:
    """Where the record being processed came from. In ``init()`` and a punctuator Kafka Streams' dummy
    record context: no topic, partition and offset -1 (``StreamTask.punctuate``), not an empty one."""

    topic: Optional[str]
    partition: int
    offset: int


class KeyValue(NamedTuple):
    """An entry of a key-value store's ``all()``/``range()`` (Kafka Streams' ``KeyValue``)."""

    key: Any
    value: Any


class ValueAndTimestamp:
    """A value and the timestamp stored with it (Kafka Streams' ``state.ValueAndTimestamp``): what
    ``get`` returns, and ``put`` takes, on a DSL operation's key-value store (a ``count`` with
    ``Materialized.as_("counts")``, a materialized table) named in ``process(supplier, "counts")``.
    Build one with :meth:`make`, which gives None for a None value (a put of None deletes)."""

    __slots__ = ("_value", "_timestamp")

    def __init__(self, value: Any, timestamp: int):
        self._value, self._timestamp = value, int(timestamp)

    @classmethod
    def make(cls, value: Any, timestamp: int) -> Optional["ValueAndTimestamp"]:
        return None if value is None else cls(value, timestamp)

    @staticmethod
    def get_value_or_null(value_and_timestamp: Optional["ValueAndTimestamp"]) -> Any:
        return None if value_and_timestamp is None else value_and_timestamp.value()

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> int:
        return self._timestamp

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ValueAndTimestamp) and self._timestamp == other._timestamp
                and self._value == other._value)

    def __hash__(self) -> int:
        return hash((self._value, self._timestamp))

    def __repr__(self) -> str:
        # Kafka Streams' toString: <value,timestamp>
        return f"<{self._value},{self._timestamp}>"


class Processor:
    """A user processor. Override :meth:`process`; :meth:`init` keeps the context by default.

    Guarantee: records reach :meth:`process` one at a time in the task's processing order, and
    what is kept in the context's state stores survives micro-batches, crashes and reruns. The
    instance itself lives for one micro-batch (``init`` at its start, ``close`` at its end):
    keep in stores whatever must outlive it, as Kafka Streams requires of anything that must
    outlive a restart."""

    context = None

    def init(self, context) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class FixedKeyProcessor(Processor):
    """A processor for ``process_values``: it forwards records with the key it was given."""


class ProcessorSupplier:
    """A supplier that also brings its stores (Kafka Streams' ``ProcessorSupplier`` with
    ``ConnectedStoreProvider.stores()``): ``get()`` returns a new processor; the stores ``stores()``
    returns are added to the topology and connected to the processor, as ``add_state_store`` and a
    store name in ``process`` would. Any no-argument callable is a supplier too (with no stores)."""

    def get(self) -> Processor:
        raise NotImplementedError

    def stores(self):
        return None

    def __call__(self) -> Processor:
        return self.get()


def user_processor_spec(supplier, kind: NodeKind, operation: str) -> ProcessorSpec:
    """What a user processor node does (``process``, ``process_values``, ``add_processor``): the
    supplier, checked as Kafka Streams checks a ``ProcessorSupplier`` (a new processor on every
    call), and the stores it brings. ``operation`` names the call in the error."""
    if not callable(supplier):
        raise TypeError(f"{operation}: the supplier must be a no-argument callable returning a Processor, "
                        f"got {type(supplier).__name__}")
    if supplier() is supplier():
        raise TopologyException(f"{operation}: the supplier returned the same Processor instance twice; it must "
                                "return a new one on every call (Kafka Streams' ProcessorSupplier contract)")
    return ProcessorSpec(kind, {"supplier": supplier}, supplier_stores(supplier))


def supplier_stores(supplier) -> list[StoreSpec]:
    """The stores a supplier brings (``ProcessorSupplier.stores()``), as store specs."""
    if not isinstance(supplier, ProcessorSupplier):
        return []
    builders = list(supplier.stores() or ())
    for builder in builders:
        if not isinstance(builder, StoreBuilder):
            raise TypeError(f"{type(supplier).__name__}.stores() must return StoreBuilders, got {type(builder).__name__}")
    return [builder.spec() for builder in builders]


@dataclass(frozen=True)
class StoreBuilder:
    """A store to add with ``StreamsBuilder.add_state_store`` (Kafka Streams' ``StoreBuilder``)."""

    supplier: Union[KeyValueBytesStoreSupplier, WindowBytesStoreSupplier, SessionBytesStoreSupplier,
                    VersionedBytesStoreSupplier]
    key_serde: Any = None
    value_serde: Any = None
    logging_enabled: bool = True
    caching_enabled: bool = False

    @property
    def name(self) -> str:
        return self.supplier.name

    def with_logging_disabled(self) -> "StoreBuilder":
        return replace(self, logging_enabled=False)

    def with_logging_enabled(self, config: Optional[dict] = None) -> "StoreBuilder":
        return replace(self, logging_enabled=True)

    def with_caching_enabled(self) -> "StoreBuilder":
        if isinstance(self.supplier, VersionedBytesStoreSupplier):
            raise TopologyException("Versioned stores do not support caching")  # as Kafka Streams' builder
        return replace(self, caching_enabled=True)

    def with_caching_disabled(self) -> "StoreBuilder":
        return replace(self, caching_enabled=False)

    def spec(self) -> StoreSpec:
        """The store as the topology holds it; a window or session store's supplier rides in ``window``."""
        store_type = _STORE_TYPES[type(self.supplier)]
        windowed = store_type in (StoreType.USER_WINDOW, StoreType.USER_SESSION)
        versioned = store_type is StoreType.USER_VERSIONED
        return StoreSpec(self.name, store_type, self.logging_enabled, self.key_serde, self.value_serde,
                         window=self.supplier if windowed else None,
                         retention_ms=self.supplier.retention_ms if windowed else None,
                         queryable=True, caching=self.caching_enabled,
                         history_retention_ms=self.supplier.history_retention_ms if versioned else None,
                         persistent=True if versioned else self.supplier.persistent)  # versioned: RocksDB's


_STORE_TYPES = {KeyValueBytesStoreSupplier: StoreType.USER_KEY_VALUE, WindowBytesStoreSupplier: StoreType.USER_WINDOW,
                SessionBytesStoreSupplier: StoreType.USER_SESSION, VersionedBytesStoreSupplier: StoreType.USER_VERSIONED}


class Stores:
    """Factories of state stores (Kafka Streams' ``Stores``): key-value, window and session stores."""

    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_store_name(name), True)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_store_name(name), True)

    @staticmethod
    def in_memory_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_store_name(name), False)

    @staticmethod
    def persistent_versioned_key_value_store(name: str, history_retention,
                                             segment_interval=None) -> VersionedBytesStoreSupplier:
        """A versioned key-value store for a table (``Materialized.as_(supplier)``) or a processor
        (:meth:`versioned_key_value_store_builder`); durations: timedelta or ms. ``segment_interval``
        is RocksDB's layout in Kafka Streams and changes no result: checked, then unused."""
        if segment_interval is not None and _millis(segment_interval, "segmentInterval") < 1:
            raise ValueError("segmentInterval cannot be zero or negative")
        return VersionedBytesStoreSupplier(_store_name(name), _millis(history_retention, "historyRetention"))

    @staticmethod
    def persistent_window_store(name: str, retention_period, window_size, retain_duplicates: bool
                                ) -> WindowBytesStoreSupplier:
        """A RocksDB window store (durations: timedelta or ms)."""
        return _window_supplier(name, retention_period, window_size, retain_duplicates, persistent=True)

    @staticmethod
    def persistent_timestamped_window_store(name: str, retention_period, window_size, retain_duplicates: bool
                                            ) -> WindowBytesStoreSupplier:
        """A RocksDB window store that keeps each value's timestamp (a windowed aggregation's window
        timestamps survive in it: the plain one's adapter reads them back as -1)."""
        return _window_supplier(name, retention_period, window_size, retain_duplicates, persistent=True,
                                timestamped=True)

    @staticmethod
    def in_memory_window_store(name: str, retention_period, window_size, retain_duplicates: bool
                               ) -> WindowBytesStoreSupplier:
        return _window_supplier(name, retention_period, window_size, retain_duplicates, persistent=False)

    @staticmethod
    def window_store_builder(supplier: WindowBytesStoreSupplier, key_serde=None, value_serde=None) -> StoreBuilder:
        if not isinstance(supplier, WindowBytesStoreSupplier):
            raise TypeError(f"window_store_builder expects a window store supplier, got {type(supplier).__name__}")
        return StoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def persistent_session_store(name: str, retention_period) -> SessionBytesStoreSupplier:
        """A RocksDB session store (retention: timedelta or ms)."""
        retention_ms = _millis(retention_period, "retentionPeriod")
        return SessionBytesStoreSupplier(_store_name(name), True, retention_ms, max(retention_ms // 2, 60_000))

    @staticmethod
    def in_memory_session_store(name: str, retention_period) -> SessionBytesStoreSupplier:
        retention_ms = _millis(retention_period, "retentionPeriod")
        return SessionBytesStoreSupplier(_store_name(name), False, retention_ms, max(retention_ms // 2, 60_000))

    @staticmethod
    def session_store_builder(supplier: SessionBytesStoreSupplier, key_serde=None, value_serde=None) -> StoreBuilder:
        if not isinstance(supplier, SessionBytesStoreSupplier):
            raise TypeError(f"session_store_builder expects a session store supplier, got {type(supplier).__name__}")
        return StoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def versioned_key_value_store_builder(supplier: VersionedBytesStoreSupplier, key_serde=None,
                                          value_serde=None) -> StoreBuilder:
        """A processor's versioned store (``VersionedKeyValueStore``; never cached)."""
        if not isinstance(supplier, VersionedBytesStoreSupplier):
            raise TypeError("versioned_key_value_store_builder expects a versioned store supplier "
                            f"(Stores.persistent_versioned_key_value_store), got {type(supplier).__name__}")
        return StoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def key_value_store_builder(supplier: KeyValueBytesStoreSupplier, key_serde=None, value_serde=None) -> StoreBuilder:
        if not isinstance(supplier, KeyValueBytesStoreSupplier):
            raise TypeError(f"key_value_store_builder expects a key-value store supplier, got {type(supplier).__name__}")
        return StoreBuilder(supplier, key_serde, value_serde)


def _millis(duration, what: str) -> int:
    millis = int(duration.total_seconds() * 1000) if isinstance(duration, timedelta) else int(duration)
    if millis < 0:
        raise ValueError(f"{what} cannot be negative")
    return millis


def _window_supplier(name, retention_period, window_size, retain_duplicates: bool, persistent: bool,
                     timestamped: bool = False) -> WindowBytesStoreSupplier:
    retention_ms, size_ms = _millis(retention_period, "retentionPeriod"), _millis(window_size, "windowSize")
    if size_ms > retention_ms:
        raise ValueError(f"The retention period of the window store {name} must be no smaller than its window size. "
                         f"Got size=[{size_ms} ms], retention=[{retention_ms} ms]")
    return WindowBytesStoreSupplier(_store_name(name), persistent, retention_ms, size_ms, bool(retain_duplicates),
                                    max(retention_ms // 2, 60_000), timestamped)


def _store_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise TopologyException(f"a store name must be a non-empty str, got {name!r}")
    return name


class StateStoreNode(GraphNode):
    """``StreamsBuilder.add_state_store``: a store no DSL operation owns, connected to the
    processors that name it (Kafka Streams' ``StateStoreNode``)."""

    def __init__(self, store: StoreSpec):
        super().__init__(store.name)
        self.store = store

    def write(self, builder) -> None:
        builder.add_state_store(self.store)
