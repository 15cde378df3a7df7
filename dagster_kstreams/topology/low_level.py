"""The Processor API's low-level topology (Kafka Streams' ``Topology.addSource`` /
``addProcessor`` / ``addSink`` / ``addStateStore``): a graph of named nodes wired by hand.

:class:`~.view.Topology` takes these methods: ``Topology()`` starts an empty topology, each call
adds to its :class:`~.topology_builder.InternalTopologyBuilder` (with Kafka Streams' checks and
messages) and refreshes the read-only view, so ``describe()``, the runner and the Dagster layer
see it as they see a topology built by ``StreamsBuilder``.
"""
from __future__ import annotations

import re
from typing import Optional, Union

from .errors import TopologyException
from .node_specs import NodeKind
from .processor_api import StoreBuilder, user_processor_spec
from .topic_name_extractor import topic_name_function

__all__ = ["LowLevelTopologyMethods"]


class LowLevelTopologyMethods:
    """``add_source`` / ``add_processor`` / ``add_sink`` / ``add_state_store`` /
    ``connect_processor_and_state_stores``; each returns the topology (calls chain as in Java)."""

    _builder = None

    def _refresh(self) -> None:  # pragma: no cover - provided by Topology
        raise NotImplementedError

    def add_source(self, name: str, *topics: Union[str, "re.Pattern[str]"], key_serde=None, value_serde=None,
                   offset_reset=None):
        """``addSource(name, topics...)`` (or one ``re.Pattern``); serdes are Kafka Streams' deserializers."""
        _check_name(name, "source")
        pattern = None
        if len(topics) == 1 and isinstance(topics[0], re.Pattern):
            pattern, topics = topics[0].pattern, ()
        elif not topics:
            raise TopologyException("topics must not be empty")
        for topic in topics:
            if not isinstance(topic, str) or not topic:
                raise TypeError(f"add_source({name!r}): a topic name must be a non-empty str, got {topic!r}")
        serdes = {"key_serde": key_serde, "value_serde": value_serde, "timestamp_extractor": None,
                  "offset_reset": offset_reset}
        self._builder.add_source(name, list(topics), pattern, serdes)
        self._refresh()
        return self

    def add_processor(self, name: str, supplier, *parent_names: str):
        """``addProcessor(name, supplier, parentNames...)``: ``supplier()`` returns a new Processor."""
        _check_name(name, "processor")
        spec = user_processor_spec(supplier, NodeKind.PROCESS, f"add_processor({name!r})")
        self._builder.add_processor(name, spec, list(parent_names))
        self._refresh()
        return self

    def add_sink(self, name: str, topic: str, *parent_names: str, key_serde=None, value_serde=None,
                 partitioner=None):
        """``addSink(name, topic, parentNames...)``; serdes are Kafka Streams' serializers. ``topic``
        is a topic name, or a topic-name extractor that picks it per record
        (``addSink(name, TopicNameExtractor, ...)``: :mod:`.topic_name_extractor`)."""
        _check_name(name, "sink")
        extractor = None if isinstance(topic, str) else topic
        if extractor is None and not topic:
            raise TypeError(f"add_sink({name!r}): the topic must be a non-empty str or a topic-name extractor, "
                            f"got {topic!r}")
        if extractor is not None:
            topic_name_function(extractor, f"add_sink({name!r})")  # refused here if it is no extractor
        serdes = {"key_serde": key_serde, "value_serde": value_serde, "partitioner": partitioner}
        self._builder.add_sink(name, None if extractor else topic, list(parent_names), extractor, serdes=serdes)
        self._refresh()
        return self

    def add_state_store(self, store_builder: StoreBuilder, *processor_names: str):
        """``addStateStore(storeBuilder, processorNames...)``."""
        if not isinstance(store_builder, StoreBuilder):
            raise TypeError(f"add_state_store expects a StoreBuilder (Stores.key_value_store_builder(...)), "
                            f"got {type(store_builder).__name__}")
        self._builder.add_state_store(store_builder.spec(), *processor_names)
        self._refresh()
        return self

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str):
        """``connectProcessorAndStateStores(processorName, stateStoreNames...)``."""
        for store_name in store_names:
            self._builder.connect_processor_and_state_store(processor_name, store_name)
        self._refresh()
        return self


def _check_name(name: Optional[str], what: str) -> None:
    if not isinstance(name, str) or not name:
        raise TopologyException(f"the {what} name must be a non-empty str, got {name!r}")
