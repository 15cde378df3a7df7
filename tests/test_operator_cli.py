"""The operator commands, as a user runs them: ``describe``, ``lag``, ``query`` and ``reset``.

One application runs once for the module (real broker, real Spark): lines keyed by user, words
counted through a repartition topic (key-value store ``counts``), and per user a tumbling-window
count and a session count in sub-topology 0. ``lag`` and ``query`` read it; the reset test,
last in the file, resets it and runs it again.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from confluent_kafka import Consumer

import assets.word_count
from dagster_kstreams.cli import main
from dagster_kstreams.kafka.admin import TopicPartition
from dagster_kstreams.kafka.fencing import ProducerFencedError, TaskFence, task_transactional_id
from dagster_kstreams.kafka.records import produce
from dagster_kstreams.orchestration.protocol import TAG_APP, TAG_WORKER, app_id_tag, report_heartbeat
from dagster_kstreams.spark.query_cli import format_entries, store_entries
from dagster_kstreams.spark.task_runner import TaskRunner
from dagster_kstreams.spark.state_location import TaskStateLocation
from dagster_kstreams.topology.node_specs import StoreType
from dagster_kstreams.topology.reference import load_topology
from dagster_kstreams.topology.serdes import Window, Windowed

pytestmark = pytest.mark.integration

APP_MODULE = """
from datetime import timedelta
from dagster_kstreams import Consumed, Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows

def build():
    builder = StreamsBuilder()
    lines = builder.stream({lines!r}, Consumed.with_(Serdes.String(), Serdes.String()))
    lines.flat_map_values(lambda line: line.split()).group_by(lambda user, word: word) \\
        .count(Materialized.as_("counts")).to_stream().to({out!r})
    by_user = lines.group_by_key()
    by_user.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(0))) \\
        .count(Materialized.as_("windowed-counts"))
    by_user.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=5), timedelta(0))) \\
        .count(Materialized.as_("sessions"))
    return builder.build()
"""


@dataclass
class App:
    reference: str
    app_id: str
    lines: str
    bootstrap: str
    state: Path
    base_ms: int  # the first record's timestamp
    lines_produced: list[tuple[str, str]]

    def options(self) -> list[str]:
        return ["--app-id", self.app_id, "--bootstrap-servers", self.bootstrap]

    def runner(self, spark) -> TaskRunner:
        return TaskRunner(load_topology(self.reference)[0], self.app_id, self.bootstrap,
                          state_location=str(self.state), spark=spark)


@pytest.fixture(scope="module")
def app(kafka_bootstrap, kafka_admin, unique_topic, spark, tmp_path_factory) -> App:
    lines, out = unique_topic("lines"), unique_topic("out")
    kafka_admin.create_topics({lines: 1, out: 1})
    module = tmp_path_factory.mktemp("operator") / "operator_app.py"
    module.write_text(textwrap.dedent(APP_MODULE.format(lines=lines, out=out)))
    base = (int(time.time() * 1000) // 10_000 - 6) * 10_000  # recent (not past retention), window-aligned
    first = [("alice", "a b a"), ("bob", "b c"), ("alice", "a")]
    produce(kafka_bootstrap, lines, [(user, text, 0, base + at) for (user, text), at in zip(first, (0, 1000, 20_000))])
    built = App(f"{module}:build", unique_topic("ops"), lines, kafka_bootstrap, module.parent / "state", base, first)
    built.runner(spark).run_all()
    more = [("carol", "c"), ("carol", "d")]  # not processed: lag 2 on task 0_0
    produce(kafka_bootstrap, lines, [(user, text, 0, base + 25_000) for user, text in more])
    built.lines_produced = first + more
    return built


def _one_line_error(capsys, fragment: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dagster-kstreams: error: "), err
    assert fragment in err[0], err[0]


def test_describe_prints_what_kafka_streams_prints_and_json(capsys):
    expected = assets.word_count.build_topology().describe()
    assert main(["describe", "assets.word_count:build_topology"]) == 0
    assert capsys.readouterr().out == f"{expected}\n"
    assert main(["describe", "assets.word_count:build_topology", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert [node["name"] for node in described["subtopologies"][1]["nodes"]] == \
        [node.name for node in expected.subtopologies[1].nodes]
    assert described["subtopologies"][0]["nodes"][0] == {
        "name": "KSTREAM-SOURCE-0000000000", "type": "source", "topics": ["text-lines"],
        "successors": ["KSTREAM-FLATMAPVALUES-0000000001"]}
    assert described["state_stores"] == {"word-counts-store": 1}
    assert described["repartition_topics"] == ["word-counts-store-repartition"]
    assert main(["describe", "assets.word_count:no_such_topology"]) == 1
    _one_line_error(capsys, "module 'assets.word_count' has no attribute 'no_such_topology'")


def test_lag_per_task_and_sub_topology(app, capsys, monkeypatch):
    assert main(["lag", app.reference, *app.options(), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    tasks = {task["task"]: task for task in report["tasks"]}
    assert tasks["0_0"]["partitions"] == [{"topic": app.lines, "partition": 0, "committed": 3, "end": 5, "lag": 2}]
    words = sum(len(text.split()) for _user, text in app.lines_produced[:3])
    # Offsets: the words, plus the commit marker of each upstream transaction (exactly-once).
    [downstream] = tasks["1_0"]["partitions"]
    assert downstream["topic"] == f"{app.app_id}-counts-repartition" and downstream["partition"] == 0
    assert downstream["committed"] == downstream["end"] and downstream["lag"] == 0
    assert words <= downstream["end"] <= words + 3
    assert report["subtopologies"] == {"0": {"lag": 2, "tasks": 1}, "1": {"lag": 0, "tasks": 1}}
    assert report["total_lag"] == 2

    assert main(["lag", app.reference, *app.options()]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[1].split() == ["TASK", "TOPIC", "PARTITION", "COMMITTED", "END", "LAG"]
    assert text[2].split() == ["0_0", app.lines, "0", "3", "5", "2"]
    assert text[-3:] == ["sub-topology 0: lag 2 (1 task)", "sub-topology 1: lag 0 (1 task)", "total lag 2"]

    monkeypatch.setenv("DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS", app.bootstrap)  # instead of --bootstrap-servers
    assert main(["lag", "--app-id", app.app_id]) == 0  # no topology: the group's partitions
    assert [app.lines, "0", "3", "5", "2"] in [line.split() for line in capsys.readouterr().out.splitlines()]

    assert main(["lag", app.reference, "--app-id", "no-such-app", "--bootstrap-servers", app.bootstrap]) == 1
    _one_line_error(capsys, "application 'no-such-app' has no committed offsets")
    assert main(["lag", "--app-id", app.app_id, "--bootstrap-servers", "127.0.0.1:1", "--timeout", "1"]) == 1
    _one_line_error(capsys, "Kafka at 127.0.0.1:1 is unreachable")


def test_query_prints_plain_windowed_and_session_stores(app, spark, capsys):
    # In this process, on the session of the tests (the command leaves a session it did not start).
    query = ["query", app.reference, *app.options(), "--state-location", str(app.state)]
    assert main([*query, "--store", "windowed-counts", "--key", "bob"]) == 0
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(app.base_ms / 1000))
    end = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(app.base_ms / 1000 + 10))
    window = f"[{start}.000Z, {end}.000Z)"
    assert capsys.readouterr().out.splitlines() == [f"KEY  {'WINDOW'.ljust(len(window))}  VALUE", f"bob  {window}  1"]

    assert main([*query, "--store", "sessions", "--key", "alice"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    session_start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(app.base_ms / 1000 + 20))
    assert [row.split("  ")[0] for row in rows] == ["alice", "alice"]  # two sessions, 20 s apart
    assert rows[1].endswith(f"[{session_start}.000Z, {session_start}.000Z]  1")  # both ends inclusive

    assert main([*query, "--store", "counts", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["type"] == "key_value"
    assert printed["entries"] == [{"key": "a", "value": 3}, {"key": "b", "value": 2}, {"key": "c", "value": 1}]
    assert main([*query, "--store", "counts", "--key", "zebra"]) == 1
    _one_line_error(capsys, f"store 'counts' of application {app.app_id!r} has no key 'zebra'")
    assert spark.sparkContext._jsc is not None  # still running


def test_store_entries_match_keys_by_their_text_and_keep_windows_apart():
    content = {Windowed(7, Window(2_000, 3_000)): {"n": 1}, Windowed(7, Window(0, 1_000)): {"n": 2},
               Windowed("x", Window(0, 1_000)): {"n": 3}}
    entries = store_entries(content, key="7")
    assert [entry["window"]["start"] for entry in entries] == [0, 2_000]
    first, second = "[1970-01-01T00:00:00.000Z, 1970-01-01T00:00:01.000Z)", "[1970-01-01T00:00:02.000Z, 1970-01-01T00:00:03.000Z)"
    assert format_entries(entries, StoreType.WINDOW) == [
        f"KEY  {'WINDOW'.ljust(len(first))}  VALUE", f'7    {first}  {{"n": 2}}', f'7    {second}  {{"n": 1}}']
    assert store_entries({b"k": "v", "plain": 1}, key="k") == [{"key": b"k", "value": "v"}]


def test_query_names_an_unknown_store_or_app_before_starting_spark(app, capsys):
    query = ["query", app.reference, "--state-location", str(app.state), "--bootstrap-servers", app.bootstrap]
    assert main([*query, "--app-id", app.app_id, "--store", "nope"]) == 1
    _one_line_error(capsys, f"application {app.app_id!r} has no state store 'nope' "
                            "(it has ['counts', 'sessions', 'windowed-counts'])")
    assert main([*query, "--app-id", "other-app", "--store", "counts"]) == 1
    _one_line_error(capsys, f"application 'other-app' has no task state under {app.state}")


def test_reset_refuses_a_running_worker_then_starts_the_application_over(app, spark, kafka_admin, capsys,
                                                                         tmp_path, monkeypatch):
    reset = ["reset", app.reference, *app.options(), "--state-location", str(app.state)]
    # A worker run of the app in the Dagster instance: refused, naming the run.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        run = instance.add_run(dg.DagsterRun(job_name="ops_workers", status=dg.DagsterRunStatus.STARTED,
                                             tags={TAG_APP: app_id_tag(app.app_id), TAG_WORKER: "worker-0"}))
        report_heartbeat(instance, run.run_id)
    assert main([*reset, "--dry-run"]) == 1
    _one_line_error(capsys, f"application {app.app_id!r} is running: run {run.run_id} (worker-0, STARTED, "
                            "last heartbeat ")
    with dg.DagsterInstance.get() as instance:
        instance.report_run_failed(instance.get_run_by_id(run.run_id))
    repartition = f"{app.app_id}-counts-repartition"

    assert main([*reset, "--dry-run", "--to-datetime",
                 time.strftime("%Y-%m-%dT%H:%M:%S.500Z", time.gmtime(app.base_ms / 1000))]) == 0
    plan = capsys.readouterr().out
    assert f"  {app.lines}-0: 3 -> 1" in plan  # the first record at or after base + 500 ms
    assert f"  {repartition} (1 partition)" in plan
    assert f"  {app.state}/{app.app_id}/tasks/0_0" in plan and "dry run: nothing changed" in plan
    assert repartition in kafka_admin.list_topics() and (app.state / app.app_id).is_dir()

    monkeypatch.delenv("DAGSTER_HOME")
    # A process still holding task 0_0 that no check can see (a `dagster-kstreams run` by hand).
    unseen = TaskFence(app.bootstrap, task_transactional_id(app.app_id, "0_0"), app.app_id).start()
    assert main(reset) == 0
    assert f"  {app.lines}-0: 3 -> 0" in capsys.readouterr().out
    with pytest.raises(ProducerFencedError):  # it cannot commit over the reset offsets
        unseen.commit({(app.lines, 0): 5})
    unseen.close()
    assert kafka_admin.committed_offsets(app.app_id, app.lines) == {TopicPartition(app.lines, 0): 0}
    assert repartition not in kafka_admin.list_topics()
    assert not (app.state / app.app_id).exists()

    # Run again: everything counted once, from the first line (no state or offsets left behind).
    runner = app.runner(spark)
    runner.run_all()
    assert runner.read_store("counts") == dict(Counter(word for _user, text in app.lines_produced
                                                       for word in text.split()))
    assert main(["reset", app.reference, "--app-id", "never-ran", "--bootstrap-servers", app.bootstrap,
                 "--state-location", str(app.state)]) == 1
    _one_line_error(capsys, "application 'never-ran' has no committed offsets or internal topics")


def test_reset_refuses_while_the_consumer_group_has_members(app, capsys):
    # A Kafka Streams instance (here: a plain consumer) using the app id as its group.
    member_group = f"{app.app_id}-member"
    consumer = Consumer({"bootstrap.servers": app.bootstrap, "group.id": member_group, "client.id": "other-instance"})
    try:
        consumer.subscribe([app.lines])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.5)
        assert consumer.assignment(), "the consumer never joined its group"
        assert main(["reset", app.reference, "--app-id", member_group, "--bootstrap-servers", app.bootstrap,
                     "--dry-run"]) == 1
        _one_line_error(capsys, f"application {member_group!r} is running: consumer group {member_group!r} has "
                                "members other-instance (")
    finally:
        consumer.close()


def test_task_state_under_a_uri_is_listed_and_deleted_through_hadoop(spark, tmp_path):
    for task in ("0_0", "1_2"):
        (tmp_path / "app" / "tasks" / task / "checkpoint").mkdir(parents=True)
    state = TaskStateLocation(f"file://{tmp_path}", "app", spark)
    assert not state.is_local
    assert state.task_directories() == [f"file://{tmp_path}/app/tasks/0_0", f"file://{tmp_path}/app/tasks/1_2"]
    listed = state.task_directories()
    assert state.delete() == listed
    assert not (tmp_path / "app").exists() and state.task_directories() == [] and not state.exists()
