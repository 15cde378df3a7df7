"""Serdes in the JVM: the Column plan's readers and writers of record bytes (spark/expressions.py).

What a Column plan can read in the JVM (``String``, ``Long``, ``Integer``, ``ByteArray``,
``Json(schema=...)``) and write (those and ``Json()``), as Column expressions; the malformed records
they detect are those the Python serdes refuse (see the differences in spark/expressions.py).
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

__all__ = ["jvm_deserializable", "jvm_serializable", "deserialize", "serialize", "stop_where"]

_CORRUPT = "_dks_corrupt_record"


def _serde_name(serde) -> str:
    return getattr(serde, "name", type(serde).__name__)


def stop_where(rows, condition, message):
    """``rows``, the batch stopped with ``message`` (a string Column) at the first row where
    ``condition`` holds: a record the plan cannot read. A filter, which Spark cannot prune away."""
    return rows.where(F.coalesce(F.when(condition, F.raise_error(message)).cast("boolean"), F.lit(True)))


def jvm_deserializable(serde) -> bool:
    name = _serde_name(serde)
    if name == "Json":
        return getattr(serde, "schema", None) is not None
    return name in ("String", "ByteArray", "Long", "Integer")


def jvm_serializable(serde) -> bool:
    return _serde_name(serde) in ("String", "ByteArray", "Long", "Integer", "Json")


def deserialize(raw, serde):
    """``(parsed Column, malformed Column, reason)`` for raw bytes ``raw``."""
    name = _serde_name(serde)
    never = F.lit(False)
    # Python's strict decode refuses invalid UTF-8; Spark's cast keeps the bytes as they are (and
    # shows them as U+FFFD): refused here too.
    not_utf8 = raw.isNotNull() & ~F.is_valid_utf8(raw.cast("string"))
    if name == "String":
        return F.when(~not_utf8, raw.cast("string")), not_utf8, "UnicodeDecodeError: invalid UTF-8"
    if name == "ByteArray":
        return raw, never, ""
    if name in ("Long", "Integer"):
        size = 8 if name == "Long" else 4
        bad = raw.isNotNull() & (F.length(raw) != size)
        signed = F.conv(F.hex(raw), 16, -10).cast("long")  # 8 bytes: two's complement already
        if name == "Integer":
            signed = F.when(signed >= 2**31, signed - 2**32).otherwise(signed).cast("int")
        return F.when(~bad, signed), bad, f"ValueError: Serdes.{name}() expects {size} bytes"
    if name == "Json":
        schema = serde.schema
        if isinstance(schema, str):
            schema = f"{schema}, {_CORRUPT} string"
        else:  # a StructType: a copy with the corrupt-record field
            schema = StructType([*schema.fields, StructField(_CORRUPT, StringType(), True)])
        text = raw.cast("string")
        parsed = F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT})
        is_null = F.trim(text) == F.lit("null")
        # from_json gives no struct at all for an empty or blank text: malformed, as json.loads has it.
        unparsed = parsed.isNull() | parsed.getField(_CORRUPT).isNotNull()
        bad = raw.isNotNull() & ~is_null & (unparsed | not_utf8)
        value = F.when(raw.isNotNull() & ~is_null & ~bad, parsed.dropFields(_CORRUPT))
        return value, bad, "JSONDecodeError: malformed JSON (or not UTF-8) for the schema"
    raise ValueError(f"{serde!r} cannot be parsed in the JVM")


def serialize(column, data_type, serde):

    name = _serde_name(serde)
    if name == "String":
        return column.cast("string").cast("binary")
    if name == "ByteArray":
        return column.cast("binary")
    if name == "Long":
        return F.unhex(F.lpad(F.hex(column.cast("long")), 16, "0"))
    if name == "Integer":
        return F.unhex(F.substring(F.lpad(F.hex(column.cast("long")), 16, "0"), 9, 8))
    if name == "Json":
        if isinstance(data_type, (StructType, MapType, ArrayType)):
            text = F.to_json(column)
        else:  # a scalar: JSON of a one-element array, without the brackets
            text = F.when(column.isNotNull(), F.regexp_extract(F.to_json(F.array(column)), r"^\[(.*)\]$", 1))
        return text.cast("binary")
    raise ValueError(f"{serde!r} cannot be written in the JVM")
