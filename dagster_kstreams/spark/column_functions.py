"""A user's PySpark Column in place of a Python function: the marker the programs carry
(:class:`ColumnExpression`, evaluated only by the Column plan in the JVM: :mod:`.expressions`) and the
check, when the topology is compiled, that the operation has a Column form."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

__all__ = ["COLUMN_KINDS", "ColumnExpression", "column_function", "column_predicates", "is_column", "split_conditions", "uses_column"]

# NodeKind values whose user function may be a Column, and what the Column must be.
COLUMN_KINDS = {"filter": 1, "map_values": 1, "select_key": 1, "map": 2, "flat_map_values": 1}
# A split's predicates may be Columns too (one each), which only a stateless Column plan runs.
_PREDICATE_KINDS = {"branch": 1}


class ColumnExpression:
    """A user's Column (or ``(key, value)`` tuple of Columns), in place of a Python function.

    It cannot be called in Python: only :class:`ColumnPlan` evaluates it, in the JVM.
    """

    def __init__(self, column: Any, processor: str, stream_serdes: tuple = (None, None)):
        self.column = column
        self.processor = processor
        # The serdes of the stream the Column reads (None: the default): what a record handed to it
        # after state is written and read with (column_hand_back.py).
        self.stream_serdes = stream_serdes

    def __call__(self, *args):
        raise TypeError(
            f"processor {self.processor} is a PySpark Column expression; it runs in the JVM only"
        )

    def __repr__(self) -> str:
        return f"ColumnExpression({self.processor}: {self.column!r})"

    def __getstate__(self) -> dict:
        # Shipped to Python workers (a Column plan's Python pass: column_placement.py) without the
        # Column, a JVM object that only the driver's plan reads.
        return {"column": None, "processor": self.processor, "stream_serdes": self.stream_serdes}


def column_predicates(node) -> list:
    """The Column expressions among a split's (``branch``) predicates (none for any other processor)."""
    if node.kind != "branch":
        return []
    return [predicate for predicate in node.predicates if isinstance(predicate, ColumnExpression)]


def is_column(node) -> bool:
    """Whether a processor's function is a PySpark Column expression."""
    return isinstance(node.fn, ColumnExpression)


def uses_column(node) -> bool:
    """Whether a processor of a program is given a PySpark Column: its function, or a split's predicate."""
    return is_column(node) or bool(column_predicates(node))


class _ColumnFunction:
    """What compile.py's ``spark_function`` returns for a Column: ``as_key_value()`` gives the marker."""

    def __init__(self, expression: ColumnExpression):
        self.expression = expression

    def as_key_value(self) -> ColumnExpression:
        return self.expression


def column_function(factory, user_function, error_class):
    """Check that ``factory`` (a view ProcessorNode) may take the Column; wrap it for the program."""
    kind = factory.kind.value
    arities = {**COLUMN_KINDS, **_PREDICATE_KINDS}
    if kind not in arities:
        raise error_class(
            f"processor {factory.name} ({kind}) is given a PySpark Column expression; the Spark runner "
            f"runs Column expressions for {', '.join(sorted(arities))} only"
        )
    column = user_function.fn
    arity = len(column) if isinstance(column, (tuple, list)) else 1
    if arity != arities[kind]:
        want = "a (key, value) tuple of two Columns" if kind == "map" else "one Column"
        raise error_class(f"processor {factory.name} ({kind}) needs {want}, got {column!r}")
    stream_serdes = factory.params.get("stream_serdes", (None, None))
    return _ColumnFunction(ColumnExpression(column, factory.name, stream_serdes))


def split_conditions(node) -> list:
    """Each branch's condition of a split on Columns, in its children's order: its Column true (null:
    false) and every earlier branch's false; the default branch's, every other's false."""
    conditions, earlier = [], F.lit(False)
    for predicate in node.predicates:
        holds = F.lit(True) if predicate is None else F.coalesce(predicate.column, F.lit(False))
        conditions.append(~earlier & holds)
        earlier = earlier | holds
    return conditions
