"""Foreign-key table-table joins (``KTable.join/left_join(other, foreign_key_extractor, joiner)``):
the five processors of Kafka Streams' ``kstream/internals/foreignkeyjoin`` and the joined table.

The left table's sub-topology sends subscriptions (:class:`SubscriptionSend`) keyed by foreign
key; the right table's sub-topology reads them together with the right table, both keyed by the
foreign key, so the subscription store lives in the foreign key's state row beside the right
table's store (:class:`SubscriptionReceive` keeps it: the subscribers of one foreign key, by
their serialized left key). :class:`SubscriptionJoin` answers a subscription with the right
table's current value; :class:`ForeignTableJoin` answers every subscriber when the right row
changes. Back in the left sub-topology (the answers are keyed by the left key),
:class:`ResponseJoin` drops an answer whose hash is not the hash of the left row's current value
and forwards the joiner's result (or a tombstone) to the joined table (a ``KTableSource``).

Emitted sequences follow Kafka Streams 4.3.1 instruction for instruction (see each class), and
so do their timestamps: an answer to a subscription carries the larger of the subscription's
timestamp and the right row's (:class:`SubscriptionJoin`), an answer to a right update that
update's, and the joined table's update its answer's (into a versioned store, the put's time). The
wire format of the two topics is Kafka Streams' (:mod:`.fk_join_wire`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from dagster_kstreams.processors.aggregations import TableSource
from dagster_kstreams.processors.base import Processor, StoreProcessor, register
from dagster_kstreams.processors.fk_join_wire import (
    Instruction, Response, Subscription, decode_response, decode_subscription, encode_response,
    encode_subscription, murmur3_hash128,
)
from dagster_kstreams.processors.partitioners import Placed
from dagster_kstreams.processors.state import ABSENT
from dagster_kstreams.processors.stateless import Merge
from dagster_kstreams.processors.value_getters import ValueGetter, value_getter
from dagster_kstreams.processors.versioned_tables import (
    VersionedTableSource, check_consumers, reads_versioned_updates, versioned_table,
)
from dagster_kstreams.topology.node_specs import NodeKind

__all__ = ["SubscriptionSend", "SubscriptionReceive", "SubscriptionJoin", "ForeignTableJoin", "ResponseJoin",
           "BUILDERS"]


def _hash(serde, value) -> Any:
    return None if value is None else murmur3_hash128(serde.serialize(value))


# The subscription store's slot, one per foreign key: ``(right_timestamp, subscribers)``, the
# subscribers ``{serialized left key: (Subscription, timestamp)}``. Kafka Streams stamps an answer to
# a subscription with its value getter's timestamp of the right row too; the right table's store here
# keeps values alone (a key-grouped row, where TaskState's timestamps are not at hand), so
# ForeignTableJoin, which sees every update of the right table, keeps the row's timestamp beside its
# subscribers (None: no right row). A slot written before it did (a plain dict of subscribers) reads
# as no known timestamp: answers then keep the subscription's until the right row's next update.
def _foreign_key_slot(stored) -> tuple[Optional[int], dict]:
    if stored is ABSENT:
        return None, {}
    if isinstance(stored, dict):
        return None, stored
    return stored


def _stored_slot(right_timestamp: Optional[int], subscribers: dict) -> Any:
    return ABSENT if right_timestamp is None and not subscribers else (right_timestamp, subscribers)


@register
class SubscriptionSend(Processor):
    """``SubscriptionSendProcessorSupplier``: a left table update (new value, and the old one
    through ``table``) as subscriptions keyed by foreign key. Inner join: a changed foreign key
    unsubscribes the old one without an answer and subscribes the new one (answer null if
    missing); an unchanged one re-subscribes (answer only if present); a deleted row or a null
    new foreign key unsubscribes with a null answer. Left join: the old key is unsubscribed when
    it changed, then the new one (possibly null) is always subscribed with a null-if-missing answer.
    An update of a versioned left table marked not latest sends nothing (``skips_not_latest``)."""

    kind = "fk_subscription_send"

    def __init__(self, name: str, extractor: Callable, left_join: bool, table: ValueGetter,
                 left_key_serde, left_value_serde, foreign_key_serde, skips_not_latest: bool = False):
        super().__init__(name)
        self.fn, self.left_join, self.table = extractor, left_join, table
        self.left_key_serde, self.left_value_serde = left_key_serde, left_value_serde
        self.foreign_key_serde = foreign_key_serde
        self.skips_not_latest = skips_not_latest

    def init(self, program) -> None:
        super().init(program)
        self.table.bind(program)

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        if self.skips_not_latest and not state.latest:
            return  # Kafka Streams: "Skipping out-of-order record from versioned table"
        old = self.table.get_old(self, key, state, context)
        old_fk = None if old is None else self.call(context, self.fn, key, old)
        new_fk = None if value is None else self.call(context, self.fn, key, value)
        send = self._sender(key, value, context, out, state)
        if self.left_join:
            if old is None and value is None:
                return
            if old_fk is not None and self._changed(new_fk, old_fk):
                send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if value is None:
            if old_fk is not None:
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
        elif new_fk is None:  # Kafka Streams skips the record (null foreign key), after unsubscribing
            if old_fk is not None:
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
        elif old_fk is not None and self._changed(new_fk, old_fk):
            send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
        else:
            send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)

    def _changed(self, new_fk, old_fk) -> bool:
        serialize = self.foreign_key_serde.serialize
        return serialize(new_fk) != serialize(old_fk)

    def _sender(self, key, value, context, out, state) -> Callable:
        value_hash = _hash(self.left_value_serde, value)  # of the new value, once per update
        primary_key = self.left_key_serde.serialize(key)

        def send(foreign_key, instruction: Instruction) -> None:
            wire = encode_subscription(Subscription(value_hash, instruction, primary_key, context.partition))
            self.forward(foreign_key, wire, context, out, state)
        return send


@register
class SubscriptionReceive(StoreProcessor):
    """``SubscriptionReceiveProcessorSupplier``: keeps the foreign key's subscribers (in its slot,
    beside the right row's timestamp: :func:`_foreign_key_slot`), deleting on an unsubscribe, and
    forwards ``((foreign key, subscription), timestamp)``. A null foreign key is dropped unless its
    subscription asks for a null answer (a left join), which is forwarded without being stored."""

    kind = "fk_subscription_receive"

    def __init__(self, name: str, store: str):
        super().__init__(name, store, cached=False)

    def process(self, key, value, context, out, state) -> None:
        subscription = decode_subscription(value)
        if key is None:
            if subscription.instruction is not Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                return
        else:
            self.needs_state(state)
            slot = self.state_slot
            right_timestamp, subscribers = _foreign_key_slot(state.values[slot])
            subscribers = dict(subscribers)
            if subscription.instruction in (Instruction.DELETE_KEY_AND_PROPAGATE, Instruction.DELETE_KEY_NO_PROPAGATE):
                subscribers.pop(subscription.primary_key, None)
            else:
                subscribers[subscription.primary_key] = (subscription, context.timestamp)
            state.values[slot] = _stored_slot(right_timestamp, subscribers)
            state.keys[slot] = key
            state.changed = True
        self.forward(key, subscription, context, out, state)

    def flush(self, state, out, context) -> None:
        """Never cached: nothing is held back."""


@register
class SubscriptionJoin(Processor):
    """``SubscriptionJoinProcessorSupplier``: answers a subscription with the right table's value
    for its foreign key, to the left key: a null answer for a deleted row; the value or null
    (``PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE``); the value only if present
    (``PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE``); nothing for ``DELETE_KEY_NO_PROPAGATE``. The answer
    carries the subscription's timestamp, or the right row's when that is later and the table has
    a value for the key (a deletion's null answer too, as in Kafka Streams)."""

    kind = "fk_subscription_join"

    def __init__(self, name: str, store: str, table: ValueGetter, foreign_value_serde):
        super().__init__(name)
        self.store, self.table, self.foreign_value_serde = store, table, foreign_value_serde
        self.slot = -1

    def init(self, program) -> None:
        super().init(program)
        self.slot = program.store_slots[self.store]
        self.table.bind(program)

    def process(self, key, value: Subscription, context, out, state) -> None:
        foreign = None if key is None else self.table.get(self, key, state, context)
        instruction = value.instruction
        if instruction is Instruction.DELETE_KEY_NO_PROPAGATE:
            return
        if instruction is Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and foreign is None:
            return
        if foreign is not None:
            context = self._stamped(context, state)
        if instruction is Instruction.DELETE_KEY_AND_PROPAGATE:
            foreign = None
        answer = None if foreign is None else self.foreign_value_serde.serialize(foreign)
        answer_to(self, value, answer, context, out, state)

    def _stamped(self, context, state):
        """``context`` with the larger of its timestamp and the right row's (``resultTimestamp``)."""
        right_timestamp = self._right_timestamp(state)
        if right_timestamp is None or right_timestamp <= context.timestamp:
            return context
        return dataclasses.replace(context, timestamp=right_timestamp)

    def _right_timestamp(self, state) -> Optional[int]:
        """The right row's timestamp: its cached update's not forwarded yet (Kafka Streams' value
        getter reads through the cache), else the one the foreign table join kept."""
        table = self.table
        if table.joined is None and table.slot in state.dirty:
            return state.dirty[table.slot].timestamp
        return _foreign_key_slot(state.values[self.slot])[0]


def answer_to(processor: Processor, subscription: Subscription, foreign_value, context, out, state) -> None:
    """Forward a response to the subscriber, keyed by its left key as serialized by the left
    table's task (the response sink writes keys and values as bytes), to the partition the
    subscription came from unless ``TableJoined`` gives a partitioner (Kafka Streams' response
    wrapper carries that partition to the sink's partitioner, never onto the wire)."""
    wire = encode_response(Response(subscription.hash, foreign_value))
    processor.forward(subscription.primary_key, Placed(wire, subscription.primary_partition), context, out, state)


@register
class ForeignTableJoin(Processor):
    """``ForeignTableJoinProcessorSupplier``: a right table update answers every subscriber of
    its key (in the order of their serialized left keys, as Kafka Streams' prefix scan) with the
    new value; a null key is dropped. ``table`` is the right table: an update that one of its
    ``filter``s turned into null from null never reaches here in Kafka Streams (``KTableFilter``
    drops it when old values are sent, which the join asks for), so it is dropped here too. An update
    of a versioned right table marked not latest answers nobody (``skips_not_latest``). Each answer
    carries the update's timestamp, which is kept beside the subscribers as the right row's
    (:func:`_foreign_key_slot`): a later subscription's answer is stamped with it."""

    kind = "fk_foreign_table_join"

    def __init__(self, name: str, store: str, foreign_value_serde, table: ValueGetter, skips_not_latest: bool = False):
        super().__init__(name)
        self.store, self.foreign_value_serde, self.table = store, foreign_value_serde, table
        self.skips_not_latest = skips_not_latest
        self.slot = -1

    def init(self, program) -> None:
        super().init(program)
        self.slot = program.store_slots[self.store]
        self.table.bind(program)

    def process(self, key, value, context, out, state) -> None:
        if key is None:
            return
        if self.skips_not_latest and not state.latest:
            return  # Kafka Streams: "Skipping out-of-order record from versioned table"
        self.needs_state(state)
        if value is None and self._null_to_null_at_a_filter(key, state, context):
            return
        right_timestamp, subscribers = _foreign_key_slot(state.values[self.slot])
        new_timestamp = None if value is None else context.timestamp
        if new_timestamp != right_timestamp:
            state.values[self.slot] = _stored_slot(new_timestamp, subscribers)
            state.keys[self.slot] = key
            state.changed = True
        answer = None if value is None else self.foreign_value_serde.serialize(value)
        for primary_key in sorted(subscribers):
            subscription, _ = subscribers[primary_key]
            answer_to(self, subscription, answer, context, out, state)

    def _null_to_null_at_a_filter(self, key, state, context) -> bool:
        table = self.table
        new, old = table.stored(self, key, state, context), table.stored_old(key, state)
        new, old = (None if new is ABSENT else new), (None if old is ABSENT else old)
        for kind, fn, negate in table.steps:
            if kind == "filter":
                new = None if new is None or bool(self.call(context, fn, key, new)) == negate else new
                old = None if old is None or bool(self.call(context, fn, key, old)) == negate else old
                if new is None and old is None:
                    return True
            else:
                new = None if new is None else self.call(context, fn, key, new)
                old = None if old is None else self.call(context, fn, key, old)
        return False


@register
class ResponseJoin(Processor):
    """``ResponseJoinProcessorSupplier``: an answer whose hash is that of the left row's current
    value gives the joined value ``joiner(left, foreign)``; a null foreign value gives a tombstone
    in an inner join (and in a left join when the left row is gone). Stale answers are dropped."""

    kind = "fk_response_join"

    def __init__(self, name: str, joiner: Callable, left_join: bool, table: ValueGetter, left_value_serde,
                 foreign_value_serde):
        super().__init__(name)
        self.fn, self.left_join, self.table = joiner, left_join, table
        self.left_value_serde, self.foreign_value_serde = left_value_serde, foreign_value_serde

    def init(self, program) -> None:
        super().init(program)
        self.table.bind(program)

    def process(self, key, value, context, out, state) -> None:
        self.needs_state(state)
        response = decode_response(value)
        current = self.table.get(self, key, state, context)
        if _hash(self.left_value_serde, current) != response.hash:
            return  # stale: the left row changed since it subscribed
        foreign = None if response.foreign_value is None else self.foreign_value_serde.deserialize(
            response.foreign_value)
        if foreign is None and (not self.left_join or current is None):
            result = None
        else:
            result = self.call(context, self.fn, key, current, foreign)
        self.forward(key, result, context, out, state)


# -- definition time -------------------------------------------------------------------------
def _serdes(factory, ctx) -> dict:
    params = factory.params
    return {
        "left_key": params["left_key_serde"] or ctx.default_key_serde,
        "left_value": params["left_value_serde"] or ctx.default_value_serde,
        "foreign_key": params["foreign_key_serde"] or ctx.default_key_serde,
        "foreign_value": params["foreign_value_serde"] or ctx.default_value_serde,
    }


def _table(ctx, factory, table_node_name: str) -> ValueGetter:
    """Either table of the join, read through its value getter as Kafka Streams reads it: also a
    table-table join's result without a store (its old values drive the subscriptions)."""
    return value_getter(ctx, factory, table_node_name, through_joins=True)


def _send(factory, ctx) -> SubscriptionSend:
    serdes = _serdes(factory, ctx)
    (table,) = factory.parents
    extractor = ctx.function(factory, factory.params["extractor"]).as_key_value()
    return SubscriptionSend(factory.name, extractor, factory.params["join_type"] == "left",
                            _table(ctx, factory, table), serdes["left_key"], serdes["left_value"],
                            serdes["foreign_key"], reads_versioned_updates(ctx, table))


def _receive(factory, ctx) -> SubscriptionReceive:
    return SubscriptionReceive(factory.name, factory.params["subscription_store"])


def _subscription_join(factory, ctx) -> SubscriptionJoin:
    return SubscriptionJoin(factory.name, factory.params["subscription_store"],
                            _table(ctx, factory, factory.params["right_table"]),
                            _serdes(factory, ctx)["foreign_value"])


def _foreign_table_join(factory, ctx) -> ForeignTableJoin:
    (table,) = factory.parents
    return ForeignTableJoin(factory.name, factory.params["subscription_store"], _serdes(factory, ctx)["foreign_value"],
                            _table(ctx, factory, table), reads_versioned_updates(ctx, table))


def _response_join(factory, ctx) -> ResponseJoin:
    serdes = _serdes(factory, ctx)
    joiner = ctx.function(factory, factory.params["joiner"]).as_joiner()
    return ResponseJoin(factory.name, joiner, factory.params["join_type"] == "left",
                        _table(ctx, factory, factory.params["left_table"]), serdes["left_value"],
                        serdes["foreign_value"])


def _result(factory, ctx) -> Processor:
    """The joined table: a ``KTableSource``, with a store only when named or read downstream. Into a
    versioned store it puts each result at its answer's time (Kafka Streams' ``KTableSource`` over a
    ``VersionedKeyValueStore``): dropped when expired, forwarded marked not latest when out of order."""
    store = factory.params["store_name"]
    if store not in factory.stores:
        return Merge(factory.name)
    versioned = versioned_table(ctx, store)
    if versioned is None:
        return TableSource(factory.name, store, ctx.cached(store))
    check_consumers(factory, ctx)
    return VersionedTableSource(factory.name, store, versioned.retention_ms, factory.kind.value)


BUILDERS = {
    NodeKind.FK_SUBSCRIPTION_SEND: _send,
    NodeKind.FK_SUBSCRIPTION_RECEIVE: _receive,
    NodeKind.FK_SUBSCRIPTION_JOIN: _subscription_join,
    NodeKind.FK_FOREIGN_TABLE_JOIN: _foreign_table_join,
    NodeKind.FK_RESPONSE_JOIN: _response_join,
    NodeKind.FK_JOIN_RESULT: _result,
}
