"""What a DSL key-value store keyed by windows needs before it runs: a ``filter``/``map_values`` store of
a windowed table, plain (read by a user processor: :mod:`.user_dsl_store`) or versioned
(:mod:`.table_step_stores`), and a join's store of windowed tables.

Kafka Streams writes such a store's ``Windowed`` keys with the store's key serde: a time-windowed one
(the key's bytes, then the window's start) finds an entry by its key and start, and reads its end back
from the serde's window size; a session-windowed one writes the session's end too. With any other serde
Kafka Streams fails at the store's first put (a time-windowed serde over sessions would lose their ends).
The runner keeps each window in the window's group of the task's state (:mod:`.own_groups`): by key and
start, Kafka Streams' time-windowed entry, except in a sub-topology with session windows, where every
window's group keeps its end too, so there a time-windowed store's entries would not be Kafka Streams'.
"""

from __future__ import annotations

from dagster_kstreams.processors.errors import UnsupportedTopologyError
from dagster_kstreams.processors.own_groups import windows_keyed_by_start
from dagster_kstreams.processors.table_behind import table_of, tables_joined
from dagster_kstreams.topology.node_specs import NodeKind
from dagster_kstreams.topology.serdes import WindowedSerde
from dagster_kstreams.topology.windows import SessionWindows

__all__ = ["keyed_by_sessions", "check_windowed_key_serde", "check_windows_kept_by_start"]


def keyed_by_sessions(sub, node) -> bool:
    """Whether the windowed table ``node`` reads (through steps, suppressions, a cogroup's merge, a join of
    windowed tables: both its tables are session ones or neither, ``check_session_join``) is a session
    aggregation's."""
    table = table_of(sub, node)
    if table.writer.kind is NodeKind.TABLE_TABLE_JOIN_MERGE:
        return keyed_by_sessions(sub, tables_joined(sub, table.writer)[0])
    return isinstance(table.writers[0].params.get("windows"), SessionWindows)


def check_windowed_key_serde(where: str, owner, key_serde, sessions: bool, offered: str) -> None:
    """``owner``'s store, keyed by windows (over sessions: ``sessions``), has a key serde that writes them
    as Kafka Streams' store needs (see the module docstring); else refused naming ``where`` (the store and
    who reads it), ``offered`` saying what runs."""
    if sessions and isinstance(key_serde, WindowedSerde) and key_serde.session:
        return
    if not sessions and isinstance(key_serde, WindowedSerde) and not key_serde.session \
            and key_serde.window_size_ms is not None:
        return
    wanted = "Serdes.SessionWindowed(key serde), a session-windowed serde" if sessions \
        else "WindowedSerde(key serde, window size), a time-windowed serde"
    raise UnsupportedTopologyError(
        f"{where} belongs to {owner.name} ({owner.kind.value}), over windowed tables, whose store is keyed by "
        f"windows, but its key serde is {key_serde!r}: give it Materialized.with_key_serde({wanted}), as Kafka "
        f"Streams needs; {offered}")


def check_windows_kept_by_start(where: str, owner, sub, offered: str) -> None:
    """A time-windowed store's entry is the window's key and start; beside session windows the sub-topology
    keeps a window's group by its end too, so a write of a window with another end would be a second entry,
    and a read would give each entry the table's end rather than the serde's: refused."""
    if windows_keyed_by_start(sub):
        return
    raise UnsupportedTopologyError(
        f"{where} belongs to {owner.name} ({owner.kind.value}), over windowed tables, whose store is keyed by "
        f"windows, in a sub-topology with session windows, where the runner keeps a window by its end too, "
        f"unlike Kafka Streams' time-windowed serde: not compared with Kafka Streams yet; {offered}")
