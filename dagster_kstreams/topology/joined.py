"""Join configurations: ``Joined`` (stream-table) and ``StreamJoined`` (stream-stream), as Kafka
Streams' ``Joined.java`` and ``StreamJoined.java``. Immutable: ``with_*`` returns a copy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Callable, Optional

from .fluent import WithJoinSerdes, WithLogging, WithName, install_static_factories
from .named import validate_name
from .serdes import Serde
from .store_suppliers import WindowBytesStoreSupplier

__all__ = ["Joined", "StreamJoined", "TableJoined"]


@dataclass(frozen=True)
class Joined(WithName, WithJoinSerdes):
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    other_value_serde: Optional[Serde] = None
    name: Optional[str] = None
    grace_period: Optional[timedelta] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              other_value_serde: Optional[Serde] = None, name: Optional[str] = None) -> "Joined":
        return Joined(key_serde, value_serde, other_value_serde, name)

    @staticmethod
    def as_(name: str) -> "Joined":
        return Joined(name=name)

    def with_grace_period(self, grace: timedelta) -> "Joined":
        return replace(self, grace_period=grace)


@dataclass(frozen=True)
class StreamJoined(WithName, WithJoinSerdes, WithLogging):
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    other_value_serde: Optional[Serde] = None
    name: Optional[str] = None
    store_name: Optional[str] = None
    logging_enabled: bool = True
    # the window stores of each side, when given (their names then name the stores: kstream_join.py)
    this_store_supplier: Optional[WindowBytesStoreSupplier] = None
    other_store_supplier: Optional[WindowBytesStoreSupplier] = None

    def __post_init__(self):
        validate_name(self.name)
        validate_name(self.store_name, "Store name")
        for supplier in (self.this_store_supplier, self.other_store_supplier):
            if supplier is not None and not isinstance(supplier, WindowBytesStoreSupplier):
                raise TypeError("StreamJoined: a join's store supplier is a WindowBytesStoreSupplier (Stores."
                                f"persistent_window_store / in_memory_window_store), got {type(supplier).__name__}")

    @staticmethod
    def with_(key_serde=None, value_serde: Optional[Serde] = None,
              other_value_serde: Optional[Serde] = None) -> "StreamJoined":
        """``with_(key_serde, value_serde, other_value_serde)``, or ``with_(this_store_supplier,
        other_store_supplier)`` as Kafka Streams' ``StreamJoined.with(WindowBytesStoreSupplier, ...)``."""
        if isinstance(key_serde, WindowBytesStoreSupplier):
            return StreamJoined(this_store_supplier=key_serde, other_store_supplier=value_serde)
        return StreamJoined(key_serde, value_serde, other_value_serde)

    def with_this_store_supplier(self, supplier: WindowBytesStoreSupplier) -> "StreamJoined":
        return replace(self, this_store_supplier=supplier)

    def with_other_store_supplier(self, supplier: WindowBytesStoreSupplier) -> "StreamJoined":
        return replace(self, other_store_supplier=supplier)

    @staticmethod
    def as_(store_name: str) -> "StreamJoined":
        return StreamJoined(store_name=store_name)

    def with_store_name(self, store_name: str) -> "StreamJoined":
        return replace(self, store_name=store_name)


install_static_factories(Joined, {"key_serde": lambda serde: Joined(key_serde=serde),
                                  "value_serde": lambda serde: Joined(value_serde=serde),
                                  "other_value_serde": lambda serde: Joined(other_value_serde=serde)})


@dataclass(frozen=True)
class TableJoined(WithName):
    """A foreign-key join's configuration (Kafka Streams' ``TableJoined``): its name, which names
    every processor, store and topic of the join, and the partitioners of this table's
    (``partitioner``) and the other table's (``other_partitioner``) topics."""

    partitioner: Optional[Callable] = None
    other_partitioner: Optional[Callable] = None
    name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def with_(partitioner: Optional[Callable] = None, other_partitioner: Optional[Callable] = None) -> "TableJoined":
        return TableJoined(partitioner, other_partitioner)

    @staticmethod
    def as_(name: str) -> "TableJoined":
        return TableJoined(name=name)

    def with_partitioner(self, partitioner: Callable) -> "TableJoined":
        return replace(self, partitioner=partitioner)

    def with_other_partitioner(self, other_partitioner: Callable) -> "TableJoined":
        return replace(self, other_partitioner=other_partitioner)
