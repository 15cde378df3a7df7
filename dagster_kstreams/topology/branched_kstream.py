"""``BranchedKStream``: what ``KStream.split`` returns, as Kafka Streams' ``BranchedKStreamImpl``
builds it (one splitter node, a child node per branch named ``<splitter><branch name or index>``)."""
from __future__ import annotations

from typing import Optional

from .abstract_stream import BRANCH_NAME, _AbstractStream, _or_generate
from .branched_printed import Branched
from .errors import TopologyException
from .functions import FunctionForm as F
from .functions import UserFunction
from .graph import ProcessorGraphNode
from .node_specs import NodeKind, ProcessorSpec

__all__ = ["BranchedKStream"]


class BranchedKStream:
    """Result of ``KStream.split()`` (Kafka Streams' ``BranchedKStream``). Its branches are KStreams made
    by the stream split (``KStream._child``): this module does not import kstream.py, which imports it,
    hence the streams' base class in the annotations."""

    def __init__(self, source: _AbstractStream, repartition_required: bool, name: Optional[str]):
        self._source = source
        self._builder = source._builder
        self._repartition_required = repartition_required
        self._splitter_name = _or_generate(self._builder, name, BRANCH_NAME)
        self._predicates: list[UserFunction] = []
        self._child_names: list[str] = []
        self._outputs: dict[str, _AbstractStream] = {}
        self._spec = ProcessorSpec(NodeKind.BRANCH, {"predicates": self._predicates, "children": self._child_names})
        self._node = ProcessorGraphNode(self._splitter_name, self._spec)
        self._builder.add_graph_node(source._node, self._node)
        self._closed = False

    def branch(self, predicate, branched: Optional[Branched] = None) -> BranchedKStream:
        if self._closed:
            raise TopologyException("no branch can be added after default_branch()/no_default_branch()")
        self._predicates.append(UserFunction.of(predicate, [F.KEY_VALUE], "BranchedKStream.branch", allow_column=True))
        self._create_branch(branched or Branched(), len(self._predicates))
        return self

    def default_branch(self, branched: Optional[Branched] = None) -> dict[str, _AbstractStream]:
        self._create_branch(branched or Branched(), 0)
        self._closed = True
        return self._outputs

    def no_default_branch(self) -> dict[str, _AbstractStream]:
        self._closed = True
        return self._outputs

    def _create_branch(self, branched: Branched, index: int) -> None:
        child_name = self._splitter_name + (branched.name if branched.name is not None else str(index))
        self._child_names.append(child_name)
        self._builder.new_processor_name(child_name)
        node = ProcessorGraphNode(child_name, ProcessorSpec(NodeKind.BRANCH_CHILD, {"index": index}))
        self._builder.add_graph_node(self._node, node)
        source = self._source
        branch = source._child(child_name, source.key_serde, source.value_serde, self._repartition_required, node)
        if branched.chain_function is not None:
            transformed = branched.chain_function(branch)
            if transformed is not None:
                self._outputs[child_name] = transformed
        elif branched.chain_consumer is not None:
            branched.chain_consumer(branch)
        else:
            self._outputs[child_name] = branch
