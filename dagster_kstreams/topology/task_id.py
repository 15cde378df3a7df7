"""A task's id (Kafka Streams' ``TaskId``): sub-topology and partition, ``"1_3"`` as a string.

The type every layer passes around; the string form is for the edges (tags, paths, the CLI).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TaskId"]


@dataclass(frozen=True, order=True)
class TaskId:
    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> "TaskId":
        match = re.fullmatch(r"(\d+)_(\d+)", text)
        if not match:
            raise ValueError(f"not a task id (expected '<subtopology>_<partition>'): {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))
