"""The topology layer imports and builds with neither pyspark, dagster nor confluent_kafka."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import sys

    BLOCKED = ("pyspark", "dagster", "confluent_kafka", "py4j", "pandas", "pyarrow")

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked import of {name}")
            return None

    sys.meta_path.insert(0, Blocker())

    from datetime import timedelta
    from dagster_kstreams import StreamsBuilder, Materialized, TimeWindows, JoinWindows

    b = StreamsBuilder()
    b.stream("users").group_by(lambda k, v: v["country"]).count().to_stream().to("users-per-country")
    b.stream("words").flat_map_values(lambda v: v.split()).group_by(lambda k, w: w) \\
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1))).count()
    b.stream("a").join(b.stream("b"), lambda x, y: x, JoinWindows.of_time_difference_with_no_grace(timedelta(1)))
    topology = b.build()
    print(len(topology.subtopologies), len(topology.tasks({"users": 2, "words": 1, "a": 1, "b": 1})))
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not loaded, loaded
    """
)


def test_topology_layer_needs_no_spark_dagster_or_kafka_client():
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5", "7"]


def test_the_blocker_really_blocks():
    probe = SCRIPT.split("from datetime")[0] + "import pyspark\n"
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "blocked import of pyspark" in result.stderr
