"""The topology layer's error (Kafka Streams' ``errors.TopologyException``)."""
from __future__ import annotations

__all__ = ["TopologyException"]


class TopologyException(Exception):
    """An invalid topology (Kafka Streams' ``TopologyException``)."""

    def __init__(self, message: str):
        super().__init__(f"Invalid topology: {message}")
