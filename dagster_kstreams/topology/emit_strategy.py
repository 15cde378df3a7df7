"""``EmitStrategy``: when a windowed aggregation forwards its results (Kafka Streams' ``EmitStrategy``).

``on_window_update()`` (the default) forwards every update of a window (or, with the record cache,
the latest one per commit); ``on_window_close()`` forwards each window once, when the stream time
passes its end plus the grace period, and nothing before (KIP-825).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EmitStrategy"]

ON_WINDOW_UPDATE = "on_window_update"
ON_WINDOW_CLOSE = "on_window_close"


@dataclass(frozen=True)
class EmitStrategy:
    type: str  # ON_WINDOW_UPDATE | ON_WINDOW_CLOSE

    @staticmethod
    def on_window_update() -> "EmitStrategy":
        return EmitStrategy(ON_WINDOW_UPDATE)

    @staticmethod
    def on_window_close() -> "EmitStrategy":
        return EmitStrategy(ON_WINDOW_CLOSE)
