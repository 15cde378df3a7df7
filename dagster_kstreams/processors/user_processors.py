"""The Processor API on the runner: ``KStream.process`` / ``process_values`` with a user's
:class:`~dagster_kstreams.topology.processor_api.Processor`, its stores (its own in :mod:`.user_stores`: key-value
there; window, session and versioned stores in :mod:`.user_window_store`, :mod:`.user_session_store`,
:mod:`.user_versioned_store`; a DSL
operation's key-value store in :mod:`.user_dsl_store`, a versioned table's in :mod:`.user_dsl_versioned_store`, a
windowed aggregation's in :mod:`.user_dsl_window_store`, a session aggregation's in :mod:`.user_dsl_session_store`)
and punctuators, as Kafka Streams 4.3.1 runs them (``ProcessorNode``, ``ProcessorContextImpl``, ``StreamTask``,
``PunctuationQueue``).

A user processor may read and write any key of its stores and forward records of any key from a
punctuator, so its sub-topology runs task-grouped (:mod:`.task_state`): the task's records in
processing order, one at a time, with the task-level values holding

* each store's content (:mod:`.user_stores`);
* the task's stream time and each processor's punctuation schedules' next times (:mod:`.punctuation`).

What a processor gets in ``init`` is its :class:`~.user_processor_context.ProcessorContext`.

Lifetime: the processor instance lives for one micro-batch: ``supplier()`` then ``init(context)``
at the batch's start (before its first record; a batch with no records does not start one), ``close()`` at its end. A schedule made again in a later batch keeps its time
and whether it was cancelled (schedules are matched by the order they are made in: make them in
``init``), and the stores persist with the task's checkpoint, so a killed and rerun task continues
exactly; instance fields do not outlive a batch.
"""

from __future__ import annotations

from typing import Callable, Optional

from dagster_kstreams.processors.base import Processor, register
from dagster_kstreams.processors.errors import ProcessingError
from dagster_kstreams.processors.punctuation import PunctuationSchedule
from dagster_kstreams.processors.state import load_state
from dagster_kstreams.processors.user_dsl_session_store import AggregationSessionStore
from dagster_kstreams.processors.user_dsl_store import TimestampedKeyValueStore, check_dsl_store, keyed_by_windows
from dagster_kstreams.processors.user_dsl_versioned_store import VersionedTableStore, WindowedVersionedTableStore
from dagster_kstreams.processors.user_dsl_window_store import TimestampedWindowStore
from dagster_kstreams.processors.user_dsl_windowed_keys import WindowedKeyValueStore
from dagster_kstreams.processors.user_processor_context import ProcessorContext
from dagster_kstreams.processors.user_session_store import SessionStore
from dagster_kstreams.processors.user_stores import open_store
from dagster_kstreams.processors.user_versioned_store import VersionedKeyValueStore
from dagster_kstreams.topology.headers import Headers
from dagster_kstreams.topology.node_specs import NodeKind, StoreType
from dagster_kstreams.topology.processor_api import Record
from dagster_kstreams.topology.versioned import VersionedBytesStoreSupplier

__all__ = ["UserProcessorNode", "user_store_content", "connected_stores", "BUILDERS"]


def user_store_content(program, stored: Optional[bytes], store_name: str) -> dict:
    """``{key: value}`` of a user processor's store in a dumped task state (``read_store``); a window
    or session store's keys are ``Windowed(key, window)`` (of a window store that retains duplicates,
    the last value in its order stands for each window); a versioned store's values are the keys' latest."""
    serdes = next((node.stores[store_name] for node in program.nodes
                   if isinstance(node, UserProcessorNode) and store_name in node.stores), None)
    if serdes is None:
        raise KeyError(f"no user processor of sub-topology {program.subtopology_id} has the store {store_name!r}")
    if stored is None:
        return {}
    content = load_state(stored)["values"].get(f"papi.store.{store_name}", {})
    store = open_store(store_name, serdes, content)
    if isinstance(store, VersionedKeyValueStore):
        return store.latest_values()
    entries = store.fetch(None, None) if isinstance(store, SessionStore) else store.all()
    return {entry.key: entry.value for entry in entries}


@register
class UserProcessorNode(Processor):
    """A node of ``process``/``process_values``: runs a fresh user processor each micro-batch."""

    kind = "process"
    task_grouped = True
    punctuates = True
    forwards_other_keys = True  # from punctuators, and process() may change keys
    looks_up_each_store = True  # each view finds a key's state in its store's own key bytes

    def __init__(self, name: str, supplier: Callable, stores: dict, fixed_key: bool, child_names: list[str],
                 dsl_stores: Optional[dict] = None):
        super().__init__(name)
        self.supplier = supplier
        self.stores = stores  # store name -> (key serde, value serde, window, session or versioned store supplier or None)
        # a DSL operation's stores it names: store name -> (key serde, value serde, the view a processor
        # gets: user_dsl_store.py, user_dsl_versioned_store.py, user_dsl_window_store.py, user_dsl_session_store.py)
        self.dsl_stores = dsl_stores or {}
        self.fixed_key = fixed_key
        self.child_names = child_names
        self._instance = None
        self._context: Optional[ProcessorContext] = None

    def schedules(self) -> list[PunctuationSchedule]:
        return [] if self._context is None else self._context.schedules

    def child_position(self, child_name: str) -> int:
        if child_name not in self.child_names:
            raise ProcessingError(f"processor {self.name}: Unknown downstream node: {child_name} "
                                  f"(children: {self.child_names})")
        return self.children[self.child_names.index(child_name)]

    def start_task_batch(self, task, out, first_context) -> None:
        saved = task.values.get(f"papi.schedules.{self.name}", [])
        self._context = context = ProcessorContext(self, task, out, self.program.subtopology_id, saved,
                                                   first_context.partition)
        self._instance = self.supplier()
        self._instance.init(context)

    def process(self, key, value, context, out, state) -> None:
        ctx = self._context
        ctx._record_context = ctx._last_context = context
        ctx._group, ctx._input_key = state, key
        try:
            record = Record(key, value, context.timestamp, Headers.from_column(context.headers))
            self.call(context, self._instance.process, record)
        finally:
            ctx._record_context = None

    def fire(self, schedule: PunctuationSchedule, now: int, context, group) -> None:
        """Run one due punctuator, after the record ``context`` (its key's ``group``)."""
        ctx = self._context
        ctx._last_context, ctx._group, ctx._punctuation_time = context, group, now
        try:
            schedule.punctuator(now)
        except Exception as cause:  # noqa: BLE001 - re-raised naming the processor
            raise ProcessingError(f"processor {self.name}: punctuator failed at {schedule.kind.name} {now}: "
                                  f"{type(cause).__name__}: {cause}") from cause
        finally:
            ctx._punctuation_time = None
        schedule.advance(now)

    def end_task_batch(self, task) -> None:
        context = self._context
        if context is None:
            return
        saved = [(s.due, s.cancelled) for s in context.schedules]
        task.values[f"papi.schedules.{self.name}"] = saved + context._saved[len(saved):]
        self._instance.close()
        self._instance = self._context = None


# -- definition time -------------------------------------------------------------------------
def build(factory, ctx) -> UserProcessorNode:
    stores, dsl_stores = connected_stores(factory, ctx)
    return UserProcessorNode(factory.name, factory.params["supplier"], stores,
                             fixed_key=factory.kind is NodeKind.PROCESS_VALUES, child_names=list(factory.children),
                             dsl_stores=dsl_stores)


def connected_stores(factory, ctx, skip: tuple = ()) -> tuple[dict, dict]:
    """The stores of the user processor ``factory``, as :class:`UserProcessorNode` takes them: its own
    (added with ``add_state_store`` or brought by its supplier), and the DSL operations' it names; not
    those in ``skip`` (a transform_values' own store, which it keeps itself)."""
    stores, dsl_stores = {}, {}
    for store_name in factory.stores:
        if store_name in skip:
            continue
        spec = ctx.topology.state_stores[store_name]
        serdes = (spec.key_serde or ctx.default_key_serde, spec.value_serde or ctx.default_value_serde)
        if spec.type is StoreType.USER_VERSIONED:
            stores[store_name] = (*serdes, VersionedBytesStoreSupplier(store_name, spec.history_retention_ms))
        elif spec.type in (StoreType.USER_KEY_VALUE, StoreType.USER_WINDOW, StoreType.USER_SESSION):
            stores[store_name] = (*serdes, spec.window)  # the window or session store's supplier (None: key-value)
        else:
            check_dsl_store(factory, spec, ctx.subtopology, serdes[0])
            windowed = keyed_by_windows(spec, ctx.subtopology)
            if spec.history_retention_ms is not None:
                view = WindowedVersionedTableStore if windowed else VersionedTableStore
            elif windowed:
                view = WindowedKeyValueStore
            else:
                view = _DSL_STORE_VIEWS.get(spec.type, TimestampedKeyValueStore)
            dsl_stores[store_name] = (*serdes, view)
    return stores, dsl_stores


# The view of a DSL store a processor names, by the store's type (check_dsl_store admits which).
_DSL_STORE_VIEWS = {StoreType.WINDOW: TimestampedWindowStore, StoreType.SESSION: AggregationSessionStore}

BUILDERS = {NodeKind.PROCESS: build, NodeKind.PROCESS_VALUES: build}
