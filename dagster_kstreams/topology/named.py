"""``Named`` and the rule every processor, store and topic name given to the DSL must follow
(Kafka Streams' ``Named.validate``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .errors import TopologyException

__all__ = ["Named", "validate_name", "MAX_NAME_LENGTH"]

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


def validate_name(name: Optional[str], what: str = "Name") -> Optional[str]:
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, got {type(name).__name__}")
    if not name:
        raise TopologyException(f"{what} is illegal, it can't be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise TopologyException(f"{what} is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, name: {name}")
    if not _LEGAL_NAME.match(name):
        raise TopologyException(
            f"{what} \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )
    return name


@dataclass(frozen=True)
class Named:
    name: Optional[str] = None

    def __post_init__(self):
        validate_name(self.name)

    @staticmethod
    def as_(name: str) -> "Named":
        return Named(name)

    def with_name(self, name: str) -> "Named":
        return Named(name)
