"""User functions attached to processors, with the calling form Kafka Streams would use.

Kafka Streams has two overloads for several operations (``ValueMapper`` vs
``ValueMapperWithKey``, ``ValueJoiner`` vs ``ValueJoinerWithKey``). In Python the overload is
chosen from the function's number of positional parameters (``inspect.signature``) and recorded
as a :class:`FunctionForm` so that an executor knows how to call it. Anything that is not a plain
Python callable but a PySpark ``Column`` (or a tuple of them, for ``map``) is stored opaquely as
:attr:`FunctionForm.COLUMN`; this module never imports pyspark.
"""
from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

__all__ = ["FunctionForm", "UserFunction", "is_column_expression", "positional_arity"]


class FunctionForm(enum.Enum):
    """How the user's function is called."""

    VALUE = "value"                  # f(value)
    KEY_VALUE = "key_value"          # f(key, value)
    VALUE_VALUE = "value_value"      # joiner f(left_value, right_value)
    KEY_VALUE_VALUE = "key_value_value"  # joiner f(key, left_value, right_value)
    NO_ARGS = "no_args"              # initializer f()
    AGGREGATOR = "aggregator"        # f(key, value, aggregate)
    REDUCER = "reducer"              # f(aggregate, value)
    MERGER = "merger"                # session merger f(key, aggregate1, aggregate2)
    COLUMN = "column"                # an opaque PySpark Column expression (or tuple of them)


def is_column_expression(obj: Any) -> bool:
    """True for a PySpark Column (classic or Connect), or a tuple/list made only of them."""
    if isinstance(obj, (tuple, list)) and obj:
        return all(is_column_expression(item) for item in obj)
    cls = type(obj)
    return cls.__module__.startswith("pyspark") and any(
        base.__name__ == "Column" for base in cls.__mro__
    )


def positional_arity(fn: Callable) -> Optional[int]:
    """Number of positional parameters without defaults, or None if unknown/variadic."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    count = 0
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return None
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            if parameter.default is inspect.Parameter.empty:
                count += 1
    return count


_ARITY = {
    FunctionForm.VALUE: 1,
    FunctionForm.KEY_VALUE: 2,
    FunctionForm.VALUE_VALUE: 2,
    FunctionForm.KEY_VALUE_VALUE: 3,
    FunctionForm.NO_ARGS: 0,
    FunctionForm.AGGREGATOR: 3,
    FunctionForm.REDUCER: 2,
    FunctionForm.MERGER: 3,
}


@dataclass(frozen=True)
class UserFunction:
    """A user's function (or Column expression) and the form it is called in."""

    fn: Any
    form: FunctionForm

    @property
    def is_column(self) -> bool:
        return self.form is FunctionForm.COLUMN

    @classmethod
    def of(
        cls,
        fn: Any,
        forms: Sequence[FunctionForm],
        operation: str,
        allow_column: bool = False,
    ) -> "UserFunction":
        """Pick the form among ``forms`` (Kafka Streams' overloads) that matches ``fn``'s arity.

        ``forms`` lists the accepted overloads, preferred first (used when the arity is unknown,
        e.g. ``*args`` or a builtin without a signature).
        """
        if fn is None:
            raise TypeError(f"{operation}: the function must not be None")
        if is_column_expression(fn):
            if not allow_column:
                raise TypeError(f"{operation} does not accept a PySpark Column expression")
            return cls(fn, FunctionForm.COLUMN)
        if not callable(fn):
            raise TypeError(f"{operation} expects a function, got {type(fn).__name__} {fn!r}")
        arity = positional_arity(fn)
        if arity is None:
            return cls(fn, forms[0])
        for form in forms:
            if _ARITY[form] == arity:
                return cls(fn, form)
        expected = " or ".join(_describe(form) for form in forms)
        raise TypeError(
            f"{operation} expects a function of {expected}; "
            f"{getattr(fn, '__qualname__', fn)!r} takes {arity} positional parameter(s)"
        )

    # --- calling helpers for executors -------------------------------------------------
    def as_key_value(self) -> Callable[[Any, Any], Any]:
        """A callable ``(key, value) -> result`` for VALUE / KEY_VALUE forms."""
        if self.form is FunctionForm.VALUE:
            fn = self.fn
            return lambda key, value: fn(value)
        if self.form is FunctionForm.KEY_VALUE:
            return self.fn
        raise TypeError(f"a {self.form.value} function has no (key, value) form")

    def as_joiner(self) -> Callable[[Any, Any, Any], Any]:
        """A callable ``(key, left_value, right_value) -> result`` for joiners."""
        if self.form is FunctionForm.VALUE_VALUE:
            fn = self.fn
            return lambda key, left, right: fn(left, right)
        if self.form is FunctionForm.KEY_VALUE_VALUE:
            return self.fn
        raise TypeError(f"a {self.form.value} function is not a joiner")


def _describe(form: FunctionForm) -> str:
    return {
        FunctionForm.VALUE: "(value)",
        FunctionForm.KEY_VALUE: "(key, value)",
        FunctionForm.VALUE_VALUE: "(value, other_value)",
        FunctionForm.KEY_VALUE_VALUE: "(key, value, other_value)",
        FunctionForm.NO_ARGS: "()",
        FunctionForm.AGGREGATOR: "(key, value, aggregate)",
        FunctionForm.REDUCER: "(aggregate, value)",
        FunctionForm.MERGER: "(key, aggregate1, aggregate2)",
        FunctionForm.COLUMN: "a Column",
    }[form]
