"""What a user processor's views of DSL stores share (:mod:`.user_dsl_store`,
:mod:`.user_dsl_window_store`, :mod:`.user_dsl_session_store`): the store's processor, the task's
state they read and write, the key lookup and the copy a write stores.

``owner`` is the store's processor (its slot, and how a write reaches its state); ``store_key_serde``
writes a key as the task's state keeps this store's keys (``program.store_key_serde``: the store's
own serde when its sub-topology's stores keep keys in different serdes' bytes);
``write_context(timestamp)`` is the record context a write made now is stamped and flushed with
(None: the current record's time, or the punctuation's).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["DslStoreView"]


class DslStoreView:
    """A view of a DSL store over the task's state ``task`` (see the module docstring)."""

    kind = "store"  # as errors name it

    def __init__(self, name: str, key_serde, value_serde, owner, store_key_serde, task,
                 write_context: Callable[[Optional[int]], Any]):
        self.name = name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._owner, self._store_key_serde, self._task = owner, store_key_serde, task
        self._write_context = write_context

    def _group(self, key):
        """The task state's group that holds ``key``'s slot of this store."""
        if key is None:
            raise ValueError(f"{self.kind} {self.name}: the key cannot be null")
        return self._task.group(self._store_key_serde.serialize(key))

    def _copy(self, value):
        """What a write stores: the value as its serde reads it back (never the caller's object)."""
        return self._value_serde.deserialize(self._value_serde.serialize(value))
