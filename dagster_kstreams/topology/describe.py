"""``TopologyDescription`` whose ``str()`` is byte-identical to Kafka Streams'.

Kafka Streams prints collections in the iteration order of Java's ``HashSet``/``HashMap``
(source topics, store names) and orders ``-->``/``<--`` lists with a ``TreeSet`` whose
comparator reads a node's sub-tree size *while the sizes are still changing*. To print the
same bytes, this module reproduces those three pieces of Java behaviour exactly:
``String.hashCode`` + ``HashMap`` bucket order, and a red-black ``TreeMap`` insertion.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from .topic_name_extractor import extractor_description

__all__ = ["TopologyDescription", "SubtopologyDescription", "GlobalStoreDescription", "describe_global_store", "NodeDescription", "java_hash_order"]


# ---------------------------------------------------------------------------------------
# Java collections
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units), as an unsigned 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _spread(h: int) -> int:
    return (h ^ (h >> 16)) & 0xFFFFFFFF


def _table_size_for(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return n


def java_hash_order(keys: Sequence[str], initial_capacity: Optional[int] = None) -> list[str]:
    """Iteration order of a Java ``HashSet<String>``/``HashMap`` filled with ``keys`` in order.

    ``initial_capacity`` is the table size the collection starts with (16 for ``new HashSet<>()``;
    ``new HashSet<>(collection)`` starts at ``max(n/.75 + 1, 16)``). Buckets are iterated by index;
    within a bucket, insertion order (resizes split buckets preserving it).
    """
    unique: list[str] = []
    seen = set()
    for key in keys:
        if key not in seen:
            seen.add(key)
            unique.append(key)
    capacity = _table_size_for(initial_capacity or 16)
    threshold = int(capacity * 0.75)
    size = 0
    for _ in unique:
        size += 1
        if size > threshold:
            capacity *= 2
            threshold = int(capacity * 0.75)
    index = {key: position for position, key in enumerate(unique)}
    return sorted(unique, key=lambda key: (_spread(java_string_hash(key)) & (capacity - 1), index[key]))


def java_hash_set_copy_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of ``new HashSet<>(collection)`` for a collection iterating as ``keys``."""
    n = len(set(keys))
    return java_hash_order(keys, max(int(n / 0.75) + 1, 16))


def java_collection_string(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


class _TreeNode:
    __slots__ = ("key", "left", "right", "parent", "black")

    def __init__(self, key, parent):
        self.key = key
        self.left = None
        self.right = None
        self.parent = parent
        self.black = True


class JavaTreeSet:
    """A red-black tree with Java ``TreeMap``'s insertion and rebalancing, so that iteration
    order matches Java's even when the comparator is inconsistent over time."""

    def __init__(self, compare: Callable):
        self.compare = compare
        self.root: Optional[_TreeNode] = None

    def add(self, key) -> None:
        t = self.root
        if t is None:
            self.root = _TreeNode(key, None)
            return
        while True:
            cmp = self.compare(key, t.key)
            if cmp < 0:
                if t.left is None:
                    t.left = _TreeNode(key, t)
                    self._fix_after_insertion(t.left)
                    return
                t = t.left
            elif cmp > 0:
                if t.right is None:
                    t.right = _TreeNode(key, t)
                    self._fix_after_insertion(t.right)
                    return
                t = t.right
            else:
                t.key = key
                return

    def __iter__(self):
        stack, node = [], self.root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.key
            node = node.right

    def __len__(self):
        return sum(1 for _ in self)

    # -- red-black helpers (null-safe as in TreeMap) ---------------------------------------
    @staticmethod
    def _black(p) -> bool:
        return True if p is None else p.black

    @staticmethod
    def _parent(p):
        return None if p is None else p.parent

    @staticmethod
    def _set_black(p, black: bool) -> None:
        if p is not None:
            p.black = black

    @staticmethod
    def _left(p):
        return None if p is None else p.left

    @staticmethod
    def _right(p):
        return None if p is None else p.right

    def _rotate_left(self, p) -> None:
        if p is None:
            return
        r = p.right
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self.root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p) -> None:
        if p is None:
            return
        l = p.left
        p.left = l.right
        if l.right is not None:
            l.right.parent = p
        l.parent = p.parent
        if p.parent is None:
            self.root = l
        elif p.parent.right is p:
            p.parent.right = l
        else:
            p.parent.left = l
        l.right = p
        p.parent = l

    def _fix_after_insertion(self, x) -> None:
        x.black = False
        while x is not None and x is not self.root and not x.parent.black:
            parent = self._parent(x)
            grand = self._parent(parent)
            if parent is self._left(grand):
                y = self._right(grand)
                if not self._black(y):
                    self._set_black(parent, True)
                    self._set_black(y, True)
                    self._set_black(grand, False)
                    x = grand
                else:
                    if x is self._right(parent):
                        x = parent
                        self._rotate_left(x)
                    self._set_black(self._parent(x), True)
                    self._set_black(self._parent(self._parent(x)), False)
                    self._rotate_right(self._parent(self._parent(x)))
            else:
                y = self._left(grand)
                if not self._black(y):
                    self._set_black(parent, True)
                    self._set_black(y, True)
                    self._set_black(grand, False)
                    x = grand
                else:
                    if x is self._left(parent):
                        x = parent
                        self._rotate_right(x)
                    self._set_black(self._parent(x), True)
                    self._set_black(self._parent(self._parent(x)), False)
                    self._rotate_left(self._parent(self._parent(x)))
        self.root.black = True


# ---------------------------------------------------------------------------------------
# Description objects
class NodeDescription:
    """A node as ``TopologyDescription.Node``: name, predecessors, successors (ordered as Java)."""

    def __init__(self, name: str, role: str, topics: Optional[Sequence[str]] = None,
                 pattern: Optional[str] = None, stores: Sequence[str] = (), topic: Optional[str] = None,
                 topic_extractor=None):
        self.name = name
        self.role = role
        self._topics = list(topics) if topics is not None else None
        self.pattern = pattern
        self._stores = list(stores)
        self.topic = topic
        self.topic_extractor = topic_extractor
        self.size = 1
        self._predecessors = JavaTreeSet(_compare_nodes)
        self._successors = JavaTreeSet(_compare_nodes)

    @property
    def predecessors(self) -> list["NodeDescription"]:
        return list(self._predecessors)

    @property
    def successors(self) -> list["NodeDescription"]:
        return list(self._successors)

    @property
    def topics(self) -> Optional[list[str]]:
        return None if self._topics is None else java_hash_set_copy_order(self._topics)

    @property
    def stores(self) -> list[str]:
        return java_hash_set_copy_order(self._stores)

    def __str__(self) -> str:
        if self.role == "source":
            topics = self.pattern if self._topics is None or not self._topics else java_collection_string(self.topics)
            return f"Source: {self.name} (topics: {topics})\n      --> {_names(self.successors)}"
        if self.role == "processor":
            return (f"Processor: {self.name} (stores: {java_collection_string(self.stores)})\n"
                    f"      --> {_names(self.successors)}\n      <-- {_names(self.predecessors)}")
        if self.topic is not None:
            return f"Sink: {self.name} (topic: {self.topic})\n      <-- {_names(self.predecessors)}"
        return (f"Sink: {self.name} (extractor class: {extractor_description(self.topic_extractor)})\n"
                f"      <-- {_names(self.predecessors)}")

    def __repr__(self) -> str:
        return f"NodeDescription({self.name})"

    def as_dict(self) -> dict:
        """What :meth:`__str__` prints, as plain data (lists in the printed order)."""
        node: dict = {"name": self.name, "type": self.role}
        if self.role == "source":
            node.update({"topics": self.topics} if self._topics else {"pattern": self.pattern})
        elif self.role == "processor":
            node["stores"] = self.stores
        elif self.topic is not None:
            node["topic"] = self.topic
        else:
            node["topic_extractor"] = extractor_description(self.topic_extractor)
        if self.role != "sink":
            node["successors"] = [successor.name for successor in self.successors]
        if self.role != "source":
            node["predecessors"] = [predecessor.name for predecessor in self.predecessors]
        return node


def _compare_nodes(a: NodeDescription, b: NodeDescription) -> int:
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    return (a.name > b.name) - (a.name < b.name)


def _names(nodes: Sequence[NodeDescription]) -> str:
    return ", ".join(node.name for node in nodes) if nodes else "none"


def _update_size(node: NodeDescription, delta: int) -> None:
    """Add ``delta`` to the node and, once per path, to every ancestor (as Kafka's recursion)."""
    stack = [node]
    while stack:
        current = stack.pop()
        current.size += delta
        stack.extend(current._predecessors)


@dataclass
class SubtopologyDescription:
    id: int
    nodes: list  # ordered as Kafka prints them

    def __str__(self) -> str:
        return f"Sub-topology: {self.id}\n" + "".join(f"    {node}\n" for node in self.nodes) + "\n"

    def as_dict(self) -> dict:
        return {"id": self.id, "nodes": [node.as_dict() for node in self.nodes]}


@dataclass
class GlobalStoreDescription:
    """A global store as ``TopologyDescription.GlobalStore``: a source and its table source."""

    id: int
    source: NodeDescription
    processor: NodeDescription

    def __str__(self) -> str:
        return (f"Sub-topology: {self.id} for global store (will not generate tasks)\n"
                f"    {self.source}\n    {self.processor}\n")

    def as_dict(self) -> dict:
        return {"id": self.id, "global_store": True, "nodes": [self.source.as_dict(), self.processor.as_dict()]}


@dataclass
class TopologyDescription:
    subtopologies: list = field(default_factory=list)
    global_stores: list = field(default_factory=list)

    def __str__(self) -> str:
        # Kafka Streams prints sub-topologies and global stores by id, interleaved.
        parts = sorted([*self.subtopologies, *self.global_stores], key=lambda part: part.id)
        return "Topologies:\n " + "".join(f"  {part}" for part in parts)

    __repr__ = __str__

    def as_dict(self) -> dict:
        """The description as plain data (for JSON): sub-topologies, their nodes in the printed
        order, each node's type, topics or stores, predecessors and successors."""
        described = {"subtopologies": [subtopology.as_dict() for subtopology in self.subtopologies]}
        if self.global_stores:
            described["global_stores"] = [store.as_dict() for store in self.global_stores]
        return described


def describe_global_store(group_id: int, source_name: str, processor_name: str, topic: str,
                          store_name: str) -> GlobalStoreDescription:
    """A global store's description (``InternalTopologyBuilder.describeGlobalStore``)."""
    source = NodeDescription(source_name, "source", topics=[topic])
    processor = NodeDescription(processor_name, "processor", stores=[store_name])
    source._successors.add(processor)
    processor._predecessors.add(source)
    return GlobalStoreDescription(group_id, source, processor)


def describe_subtopology(subtopology_id: int, node_names: Sequence[str], factories) -> SubtopologyDescription:
    """Build one sub-topology's description as ``InternalTopologyBuilder.describeSubtopology``.

    ``node_names`` are the group's nodes in the order they were added to the topology.
    """
    by_name: dict[str, NodeDescription] = {}
    for name in node_names:
        factory = factories[name]
        by_name[name] = NodeDescription(
            name, factory.role,
            topics=factory.topics if factory.role == "source" else None,
            pattern=factory.pattern, stores=factory.store_names, topic=factory.topic,
            topic_extractor=factory.topic_extractor,
        )
    for name in java_hash_order(list(node_names)):
        node = by_name[name]
        for predecessor_name in factories[name].predecessors:
            predecessor = by_name[predecessor_name]
            node._predecessors.add(predecessor)
            predecessor._successors.add(node)
            _update_size(predecessor, node.size)
    ordered = JavaTreeSet(_compare_nodes)
    for node in by_name.values():
        ordered.add(node)
    return SubtopologyDescription(subtopology_id, list(ordered))
