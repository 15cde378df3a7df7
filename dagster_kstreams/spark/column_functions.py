"""A user's PySpark Column in place of a Python function: the marker the programs carry
(:class:`ColumnExpression`, evaluated only by the Column plan in the JVM: :mod:`.expressions`) and the
check, when the topology is compiled, that the operation has a Column form."""

from __future__ import annotations

from typing import Any

__all__ = ["COLUMN_KINDS", "ColumnExpression", "column_function"]

# NodeKind values whose user function may be a Column, and what the Column must be.
COLUMN_KINDS = {"filter": 1, "map_values": 1, "select_key": 1, "map": 2, "flat_map_values": 1}


class ColumnExpression:
    """A user's Column (or ``(key, value)`` tuple of Columns), in place of a Python function.

    It cannot be called in Python: only :class:`ColumnPlan` evaluates it, in the JVM.
    """

    def __init__(self, column: Any, processor: str):
        self.column = column
        self.processor = processor

    def __call__(self, *args):
        raise TypeError(
            f"processor {self.processor} is a PySpark Column expression; it runs in the JVM only"
        )

    def __repr__(self) -> str:
        return f"ColumnExpression({self.processor}: {self.column!r})"

    def __getstate__(self) -> dict:
        # Shipped to Python workers (a Column plan's Python pass: column_placement.py) without the
        # Column, a JVM object that only the driver's plan reads.
        return {"column": None, "processor": self.processor}


class _ColumnFunction:
    """What compile.py's ``spark_function`` returns for a Column: ``as_key_value()`` gives the marker."""

    def __init__(self, expression: ColumnExpression):
        self.expression = expression

    def as_key_value(self) -> ColumnExpression:
        return self.expression


def column_function(factory, user_function, error_class):
    """Check that ``factory`` (a view ProcessorNode) may take the Column; wrap it for the program."""
    kind = factory.kind.value
    if kind not in COLUMN_KINDS:
        raise error_class(
            f"processor {factory.name} ({kind}) is given a PySpark Column expression; the Spark runner "
            f"runs Column expressions for {', '.join(sorted(COLUMN_KINDS))} only"
        )
    column = user_function.fn
    arity = len(column) if isinstance(column, (tuple, list)) else 1
    if arity != COLUMN_KINDS[kind]:
        want = "a (key, value) tuple of two Columns" if kind == "map" else "one Column"
        raise error_class(f"processor {factory.name} ({kind}) needs {want}, got {column!r}")
    return _ColumnFunction(ColumnExpression(column, factory.name))
