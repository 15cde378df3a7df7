"""Serdes' wire formats and the Java-collection emulation behind describe()."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagster_kstreams import Serdes, Window, Windowed, WindowedSerde
from dagster_kstreams.topology.describe import JavaTreeSet, java_hash_order, java_string_hash


def test_kafka_encodings():
    assert Serdes.Long().serialize(1) == b"\x00\x00\x00\x00\x00\x00\x00\x01"
    assert Serdes.Long().serialize(-2) == b"\xff" * 7 + b"\xfe"
    assert Serdes.Integer().serialize(258) == b"\x00\x00\x01\x02"
    assert Serdes.String().serialize("héllo") == "héllo".encode("utf-8")
    assert Serdes.ByteArray().serialize(b"\x00\x01") == b"\x00\x01"
    assert Serdes.Json().serialize({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'
    for serde in (Serdes.Long(), Serdes.Integer(), Serdes.String(), Serdes.ByteArray(), Serdes.Json()):
        assert serde.serialize(None) is None and serde.deserialize(None) is None


def test_serde_errors_are_clear():
    with pytest.raises(TypeError, match=r"Serdes.Long\(\) cannot serialize str"):
        Serdes.Long().serialize("1")
    with pytest.raises(OverflowError, match=r"Serdes.Integer\(\) value 2147483648"):
        Serdes.Integer().serialize(2**31)
    with pytest.raises(ValueError, match="expects 8 bytes, got 4"):
        Serdes.Long().deserialize(b"\x00\x00\x00\x01")


@given(st.integers(-(2**63), 2**63 - 1))
def test_long_round_trip_and_big_endian(value):
    data = Serdes.Long().serialize(value)
    assert data == struct.pack(">q", value)
    assert Serdes.Long().deserialize(data) == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_integer_round_trip(value):
    assert Serdes.Integer().deserialize(Serdes.Integer().serialize(value)) == value


@given(st.text(), st.integers(0, 2**40), st.integers(1, 10**6))
def test_windowed_keys_round_trip(key, start, size):
    time_windowed = WindowedSerde(Serdes.String(), window_size_ms=size)
    windowed = Windowed(key, Window(start, start + size))
    data = time_windowed.serialize(windowed)
    assert data == key.encode() + struct.pack(">q", start)
    assert time_windowed.deserialize(data) == windowed
    session = WindowedSerde(Serdes.String(), session=True)
    assert session.deserialize(session.serialize(windowed)) == windowed


def test_java_string_hash_matches_known_values():
    # values of "...".hashCode() in Java
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("KSTREAM-SOURCE-0000000000") == 1861603632
    assert java_string_hash("é😀x") == 61901292  # UTF-16 code units, as Java


def test_java_hash_order_buckets_by_hash():
    # in a 16-bucket table "b" (98 -> bucket 2) precedes "q" (113 -> bucket 1)? no: 113 & 15 = 1
    assert java_hash_order(["b", "q"]) == ["q", "b"]
    assert java_hash_order(["q", "b"]) == ["q", "b"]
    # same bucket keeps insertion order: "a" (97 & 15 = 1) and "q" (113 & 15 = 1)
    assert java_hash_order(["q", "a"]) == ["q", "a"] and java_hash_order(["a", "q"]) == ["a", "q"]


@given(st.lists(st.text(min_size=1, max_size=8), max_size=40))
def test_java_hash_order_is_a_permutation(keys):
    assert sorted(java_hash_order(keys)) == sorted(set(keys))


@given(st.lists(st.integers(-100, 100), max_size=200))
def test_java_tree_set_with_a_consistent_comparator_iterates_sorted(values):
    tree = JavaTreeSet(lambda a, b: (a > b) - (a < b))
    for value in values:
        tree.add(value)
    assert list(tree) == sorted(set(values))
