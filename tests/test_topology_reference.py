"""`load_topology(reference)`: the one reader of `module:attribute` and `file.py:attribute` references."""

from __future__ import annotations

import sys
import textwrap

import pytest

from dagster_kstreams.topology import StreamsBuilder, Topology
from dagster_kstreams.topology.reference import TopologyReferenceError, load_topology

TINY = textwrap.dedent("""
    from dagster_kstreams.topology import StreamsBuilder

    def build():
        builder = StreamsBuilder()
        builder.stream("a").to("b")
        return builder.build()

    builder = StreamsBuilder()
    builder.stream("c").to("d")
    not_a_topology = 42
""")


@pytest.fixture
def tiny_file(tmp_path):
    path = tmp_path / "reference_tiny_topology.py"
    path.write_text(TINY)
    yield path
    sys.modules.pop(path.stem, None)


def test_a_file_path_names_a_function_that_builds_the_topology(tiny_file):
    topology, module = load_topology(f"{tiny_file}:build")
    assert isinstance(topology, Topology)
    assert topology.source_topics() == ["a"] and topology.sink_topics() == ["b"]
    assert module.__name__ == tiny_file.stem and sys.modules[tiny_file.stem] is module


def test_a_streams_builder_is_built(tiny_file):
    topology, _ = load_topology(f"{tiny_file}:builder")
    assert topology.source_topics() == ["c"]


def test_a_module_reference_is_imported():
    topology, module = load_topology("assets.users_per_country:build_topology")
    assert module is sys.modules["assets.users_per_country"]
    assert len(topology.subtopologies) == 2


def test_a_topology_object_is_returned_as_is(monkeypatch):
    builder = StreamsBuilder()
    builder.stream("x").to("y")
    built = builder.build()
    module = type(sys)("reference_prebuilt_topology")
    module.topology = built
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert load_topology("reference_prebuilt_topology:topology") == (built, module)


@pytest.mark.parametrize("reference, message", [
    ("assets.users_per_country", "must look like 'package.module:attribute' or 'path/to/file.py:attribute'"),
    (":build", "must look like"),
    ("assets.users_per_country:", "must look like"),
    ("assets.no_such_module:build", "cannot load topology 'assets.no_such_module:build': No module named"),
    ("assets.users_per_country:nothing",
     "cannot load topology 'assets.users_per_country:nothing': module 'assets.users_per_country' has no attribute"),
    ("no/such/file.py:build", "cannot load topology 'no/such/file.py:build': no such file: "),
])
def test_a_bad_reference_raises_a_value_error(reference, message):
    with pytest.raises(TopologyReferenceError, match=message) as error:
        load_topology(reference)
    assert isinstance(error.value, ValueError)


def test_an_attribute_that_is_no_topology_is_named(tiny_file):
    with pytest.raises(TopologyReferenceError, match="is a int, not a Topology or a StreamsBuilder"):
        load_topology(f"{tiny_file}:not_a_topology")
