"""``reuse.ktable.source.topics``: a ``builder.table(topic)`` store keeps no changelog topic, the
source topic is its changelog (Kafka Streams' ``InternalStreamsBuilder.reuseKTableSourceTopics``:
``TableSourceNode`` disables the store's logging and connects the store to its source topic).

``describe()`` does not change. What changes here is the store's ``changelog`` flag, hence the
changelog topics a topology lists (``Topology.changelog_topics``): the table's
``<application_id>-<store>-changelog`` is no longer one of them. The runner keeps a task's state in
its Spark checkpoint and restores from there, never from a changelog, so it runs the same either way.
"""
from __future__ import annotations

from .graph import InternalStreamsBuilder, TableSourceNode

__all__ = ["reuse_ktable_source_topics"]


def reuse_ktable_source_topics(builder: InternalStreamsBuilder) -> None:
    """Mark every table source's store as logged to its source topic rather than a changelog."""
    for node in builder.added_nodes:
        if isinstance(node, TableSourceNode):
            node.spec.store.changelog = False
