"""The processor protocol, and the registry that finds a processor class by its kind.

A processor is one node of a sub-topology, resolved for execution (serdes chosen, user
functions in the form they are called in), as a ``Processor`` of Kafka Streams'
``kstream/internals`` (``KStreamFilter``, ``KStreamAggregate`` ...). Its protocol:

* :meth:`Processor.process` — one record arrives (``key``, ``value``, the source record's
  :class:`~dagster_kstreams.processors.records.RecordContext`, the pass's
  :class:`~dagster_kstreams.processors.records.Output` and the source key's
  :class:`~dagster_kstreams.processors.state.GroupState`, None in a stateless pass); it forwards
  what it produces to its children with :meth:`Processor.forward`, depth first, child by child.
* :meth:`StoreProcessor.flush` — the end of a key group (or task batch): a processor with a
  record cache forwards each entry it held back (Kafka Streams' cache flush).
* :attr:`StoreProcessor.state_slot` — a stateful processor's slot in the key's state row.
* :meth:`Processor.end_task_batch` — the end of a task-grouped batch: prune what no later record
  can read.

``children`` are positions in the program's processor list (topological order); records reach
a child through :meth:`SubtopologyProgram._forward <dagster_kstreams.processors.program.SubtopologyProgram._forward>`,
the one path every record takes between two processors (a child's entry: its ``process``, or the
compiled chain of stateless processors that starts at it, :mod:`.fused_chains`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Callable, ClassVar, Optional

from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.topology.functions import UserFunction

__all__ = ["Processor", "StoreProcessor", "PROCESSORS", "register", "processor_class"]

# kind -> the class that runs it; filled by @register as the family modules load.
PROCESSORS: dict[str, type["Processor"]] = {}


def register(cls: type["Processor"]) -> type["Processor"]:
    if cls.kind in PROCESSORS:
        raise ValueError(f"processor kind {cls.kind!r} is registered twice "
                         f"({PROCESSORS[cls.kind].__name__}, {cls.__name__})")
    PROCESSORS[cls.kind] = cls
    return cls


def processor_class(kind: str) -> type["Processor"]:
    try:
        return PROCESSORS[kind]
    except KeyError:
        raise ValueError(f"no processor runs kind {kind!r} (known: {sorted(PROCESSORS)})") from None


class Processor:
    """One processor of a sub-topology. Subclasses set :attr:`kind` and implement :meth:`process`."""

    kind: ClassVar[str] = ""
    # keeps a store in the key's state row (StoreProcessor)
    stateful: ClassVar[bool] = False
    # reads the task's stream time (dagster_kstreams.spark.event_time computes it)
    uses_stream_time: ClassVar[bool] = False
    # ... and that stream time skips records with a null value too, not only a null key
    stream_time_skips_null_values: ClassVar[bool] = False
    # drops late records: forwards one row on records.DROPPED_LATE_TOPIC per drop (counted, never written)
    drops_late_records: ClassVar[bool] = False
    # its semantics span keys: the sub-topology runs task-grouped (task_state.py)
    task_grouped: ClassVar[bool] = False
    # has punctuators to fire after each record (the Processor API: punctuation.punctuate)
    punctuates: ClassVar[bool] = False
    # may forward records under another key than the record being processed's (own_groups.py)
    forwards_other_keys: ClassVar[bool] = False
    # ... and those go on with their own key's group: set by the program (own_groups.own_group)
    regroups: bool = False
    # finds the state of each store it names for a key itself, by the key as that store's serde writes it
    # (SubtopologyProgram.store_key_serde), rather than being handed one key's state for all its stores:
    # a user processor's store views (store_keyed_groups.py)
    looks_up_each_store: ClassVar[bool] = False
    # the user function, for processors that have one (Column plans look at it)
    fn: Any = None
    store: Optional[str] = None
    state_slot: Optional[int] = None

    def __init__(self, name: str):
        self.name = name
        self.children: list[int] = []
        self.program = None

    def init(self, program) -> None:
        """Bind to the program that runs it (Kafka Streams' ``Processor.init(context)``)."""
        self.program = program

    def process(self, key, value, context, out, state) -> None:
        raise NotImplementedError

    def forward(self, key, value, context, out, state) -> None:
        """Pass a record to every child, in order."""
        forward = self.program._forward
        for child in self.children:
            forward(child, key, value, context, out, state)

    def start_task_batch(self, task, out, first_context) -> None:
        """The start of a task-grouped batch, before its first record (``first_context``)."""

    def end_task_batch(self, task) -> None:
        """The end of a task-grouped batch (nothing to do unless overridden)."""

    def call(self, context, fn: Callable, *args):
        """``fn(*args)``; a failure becomes a :class:`ProcessingError` naming this processor and the record."""
        try:
            return fn(*args)
        except Exception as cause:  # noqa: BLE001 - re-raised with the record's coordinates
            raise self.failure(context, cause) from cause

    def failure(self, context, cause: Exception) -> ProcessingError:
        """The error :meth:`call` raises when this processor's function fails on the record at
        ``context`` (compiled chains, :mod:`.fused_chains`, raise the same)."""
        return ProcessingError(f"processor {self.name} ({self.kind}) failed on the record at {context.describe()}: "
                               f"{type(cause).__name__}: {cause}")

    def needs_state(self, state) -> None:
        if state is None:
            raise ValueError(f"processor {self.name} needs state but runs in a stateless pass")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, children={self.children})"


class StoreProcessor(Processor):
    """A processor with a store: one slot of the key's state row, and Kafka Streams' record cache
    (``cached``: forward once per key per batch at the flush; else on every update)."""

    stateful = True

    def __init__(self, name: str, store: str, cached: bool = True):
        super().__init__(name)
        self.store = store
        self.cached = cached
        self.state_slot: Optional[int] = None  # set when the program is built

    def flush_entries(self, state, context) -> list:
        """What the record cache's flush forwards for this key group: ``(position, forward(out))`` pairs,
        which the flush places among every group's by ``position`` (that of the update each forwards).
        One per key here, forwarded with ``context``, the key's last update (Kafka Streams' cache keeps
        one entry per key of a key-value store); a windowed store has one per window."""
        return [(context.position, lambda out: self.flush(state, out, context))]

    def flush(self, state, out, context) -> None:
        """Forward the slot's final value (a tombstone when the store no longer holds the key)."""
        slot = self.state_slot
        value = state.values[slot]
        self.forward(state.keys[slot], None if value is ABSENT else value, context, out, state)


def reachable(sub: Any, start: Iterable[str], step: Callable[[Any], Iterable[str]]) -> Iterator[Any]:
    """The nodes of sub-topology ``sub`` reached from the nodes named ``start`` by ``step`` (a
    node's children, or its parents), each once: what a definition-time check walks over."""
    todo, seen = list(start), set()
    while todo:
        node = sub.node(todo.pop())
        if node.name in seen:
            continue
        seen.add(node.name)
        yield node
        todo.extend(step(node))


def column_expressions_in(sub: Any) -> bool:
    """Whether a processor of sub-topology ``sub`` is given a PySpark Column expression: an engine
    then runs those first and hands the records that leave them, and the records of a source none of
    them follows, over to the rest (a record it skips there, as malformed, reaches no processor), none
    of them with the task's stream time."""
    return any(isinstance(value, UserFunction) and value.is_column
               for node in sub.nodes for value in node.params.values())
