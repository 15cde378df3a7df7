"""The driver JVM's class-data archive: named after what it depends on, used only once it is there."""

from __future__ import annotations

import pytest

from dagster_kstreams.spark.class_archive import archive_path, java_options
from dagster_kstreams.spark.session import spark_conf

JARS = ["/opt/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"]


def _java_home(tmp_path, release: str):
    home = tmp_path / f"jdk-{release}"
    home.mkdir()
    (home / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{release}"\n')
    return home


def test_a_session_maps_no_archive_until_one_is_made(tmp_path):
    conf = spark_conf("local[1]", jars_home=tmp_path)
    assert "SharedArchiveFile" not in conf.get("spark.driver.extraJavaOptions", "")


def test_once_made_the_archive_comes_first_and_the_users_own_java_options_win(tmp_path):
    conf = spark_conf("local[1]", jars_home=tmp_path)
    path = archive_path(conf["spark.jars"].split(","), tmp_path, conf["spark.driver.extraClassPath"])
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    options = spark_conf("local[1]", {"spark.driver.extraJavaOptions": "-Xshare:off -Dx=1"},
                         jars_home=tmp_path)["spark.driver.extraJavaOptions"].split()
    assert options[0] == f"-XX:SharedArchiveFile={path}"
    assert options[-2:] == ["-Xshare:off", "-Dx=1"]  # later options win in a JVM
    # A driver started elsewhere (cluster deploy mode) has no such file.
    cluster = spark_conf("k8s://https://k8s:443", {"spark.submit.deployMode": "cluster"}, jars_home=tmp_path)
    assert "spark.driver.extraJavaOptions" not in cluster


def test_the_archive_is_named_after_the_java_and_the_jars(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "17.0.13")))
    seventeen = archive_path(JARS, tmp_path)
    assert archive_path(JARS, tmp_path) == seventeen
    assert archive_path([*JARS, "/opt/jars/extra.jar"], tmp_path) != seventeen
    assert archive_path(JARS, tmp_path, "/opt/jars/first.jar") != seventeen  # another class path to match
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "21.0.5")))
    assert archive_path(JARS, tmp_path) not in (None, seventeen)


@pytest.mark.parametrize("release", ["11.0.25", "1.8.0_412", None])
def test_a_java_that_cannot_map_a_dynamic_archive_gets_none(tmp_path, monkeypatch, release):
    home = _java_home(tmp_path, release) if release else tmp_path / "no-java"
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert archive_path(JARS, tmp_path) is None
    assert java_options(JARS, tmp_path) == []


@pytest.mark.integration
def test_the_test_sessions_jvm_maps_the_archive_when_it_was_made(spark):
    # `make test` makes the archive before pytest starts (dagster-kstreams local spark-archive).
    conf = spark.sparkContext.getConf()
    path = archive_path(conf.get("spark.jars").split(","), class_path=conf.get("spark.driver.extraClassPath", ""))
    arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert (f"-XX:SharedArchiveFile={path}" in arguments) == path.is_file()
