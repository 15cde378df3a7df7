"""Reading a table whose values come from a table-table join that has no store of its own.

Kafka Streams reads such a table (to join it again, join a stream with it, or re-group it) through
the join's value getter (``KTableKTable{Inner,Left,Right,Outer}JoinValueGetter``): it looks up both
input tables through their own value getters and applies the joiner on each lookup; nothing is
stored. :class:`JoinedValues` is that getter:

* inner: ``joiner(this, other)`` when both are present, else null;
* left: ``joiner(this, other)`` when ``this`` is present (``other`` may be null), else null;
* outer: ``joiner(this, other)`` when either is present, else null.

A join of windowed tables is read so too: a windowed key asks each table for its window of that start
(:class:`~.value_getters.ValueGetter`), as Kafka Streams' join value getter asks each table's getter.

The joined table's *old* value (``Change.oldValue``, which a downstream left or outer join and a
re-grouping read) is what the join processor that forwarded the update computed with the same rule
from the updated table's old value and the other table's current one, as Kafka Streams' join
processors do once ``sendOldValues`` is on. That processor leaves it, as a function computing it on
demand (only a reader that needs it pays for the joiner call), in the key's ``state.old_values``
under :func:`old_value_key` (a key that is no store slot: old values are never saved, so no state
layout changes) just before it forwards. A materialized join's result without the record cache
forwards that old value too (Kafka Streams' merger forwards the join's ``Change`` as it is), not its
store's previous value: the two differ when both input tables flushed an update of one key (a
cached table forwards its update with the other table's *new* value).
"""

from __future__ import annotations

from typing import Any

from dagster_kstreams.processors.base import Processor
from dagster_kstreams.processors.state import ABSENT

__all__ = ["JoinedValues", "joined_value", "old_value_key", "sent_old_value"]


def joined_value(reader: Processor, context, joiner, join_type: str, key, this, other):
    """The joined table's value for one pair of input values (None: no row), by ``join_type``."""
    if join_type == "outer":
        present = this is not None or other is not None
    elif join_type == "left":
        present = this is not None
    else:
        present = this is not None and other is not None
    return reader.call(context, joiner, key, this, other) if present else None


def old_value_key(merge_name: str) -> tuple[str, str]:
    """Where the join processors feeding ``merge_name`` leave the joined table's old value."""
    return ("joined", merge_name)


class JoinedValues:
    """The current and old value of a table-table join's result, read through both input tables'
    value getters (``this``, ``other``: :class:`~.value_getters.ValueGetter`)."""

    def __init__(self, merge_name: str, joiner, join_type: str, this, other):
        self.merge_name, self.joiner, self.join_type = merge_name, joiner, join_type
        self.this, self.other = this, other

    def bind(self, program) -> None:
        self.this.bind(program)
        self.other.bind(program)

    def get(self, reader: Processor, key, state, context) -> Any:
        """The joined value now (ABSENT: no row), as Kafka Streams' join value getter computes it."""
        this = self.this.get(reader, key, state, context)
        other = self.other.get(reader, key, state, context)
        value = joined_value(reader, context, self.joiner, self.join_type, key, this, other)
        return ABSENT if value is None else value

    def keep_timestamps(self, program) -> None:
        self.this.keep_timestamps(program)
        self.other.keep_timestamps(program)

    def get_timestamped(self, reader: Processor, key, state, context) -> tuple[Any, int]:
        """:meth:`get` with its timestamp, as Kafka Streams' join value getters stamp it: the larger of
        the present rows' timestamps (a missing row's ``NO_TIMESTAMP`` is below any)."""
        this, this_timestamp = self.this.get_timestamped(reader, key, state, context)
        other, other_timestamp = self.other.get_timestamped(reader, key, state, context)
        value = joined_value(reader, context, self.joiner, self.join_type, key, this, other)
        return ABSENT if value is None else value, max(this_timestamp, other_timestamp)

    def get_old(self, state) -> Any:
        """The joined value before the update being forwarded now (ABSENT: none)."""
        return sent_old_value(state, self.merge_name)


def sent_old_value(state, merge_name: str) -> Any:
    """The old value the join processor forwarding to ``merge_name`` now computed (ABSENT: none)."""
    old = state.old_values.get(old_value_key(merge_name))
    value = None if old is None else old()
    return ABSENT if value is None else value
