"""A real browser on a real `dagster dev`: the example graph is there (two of its applications
chained into one lineage), one partition of a sub-topology materializes from the UI, and the
health checks executed from the UI show what waits.

`dagster dev` (webserver + daemon) runs on workspace.yaml with a temporary DAGSTER_HOME, the
test broker and a temporary state location; headless Chromium (Debian's `chromium`) is driven by
Playwright. Screenshots go to test-output/ui/.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

import dagster as dg
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from assets import users_per_country
from dagster_kstreams.generator import BurstSchedule, generate

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUT = REPO_ROOT / "test-output" / "ui"
DAGSTER = str(Path(sys.executable).parent / "dagster")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# Below Linux's ephemeral ports (32768-60999), which any client's connection may take between the probe
# and the webserver's bind.
PORT_RANGE = range(29300, 29400)
APP_GROUP = "users_per_country"
# The instance settings `make demo` uses, among them a queued run coordinator that looks for queued
# runs every second (with Dagster's default, every 5 s, each launch from the UI waited up to 9 s).
DAGSTER_YAML = (REPO_ROOT / "deploy" / "dagster.yaml").read_text()


def _free_port() -> int:
    for port in random.sample(list(PORT_RANGE), len(PORT_RANGE)):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE}")


def _default_signals() -> None:
    # The test runner may have been started with SIGINT/SIGTERM ignored, which children inherit;
    # `dagster dev` must stop on them.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_group(process: subprocess.Popen) -> None:
    """Stop `dagster dev` and everything it started (webserver, daemon, code server, runs, Spark)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the group (run workers, JVMs)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


@pytest.fixture
def dagster_dev(kafka_bootstrap, kafka_admin, tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "DAGSTER_KSTREAMS_STATE_LOCATION": str(tmp_path / "state"),
        "DAGSTER_KSTREAMS_SPARK_MASTER": "local[1]",
        "DAGSTER_KSTREAMS_SPARK_CONF": json.dumps({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"}),
        # The example lag sensors run by default; a worker would take the partition this test
        # materializes by hand (and start SparkSessions of its own).
        "DAGSTER_KSTREAMS_WORKER_SENSORS": "stopped",
    }
    for attempt in range(3):
        process, base = _serving_dagster_dev(env, tmp_path / f"dagster-dev-{attempt}.log")
        if process is not None:
            break
    else:
        raise RuntimeError(f"dagster dev found no free port in {PORT_RANGE} in 3 attempts")
    try:
        yield base, home
    finally:
        _stop_group(process)


def _serving_dagster_dev(env: dict, log_path) -> tuple[Optional[subprocess.Popen], str]:
    """`dagster dev` started on a free port and serving, with its URL; ``(None, url)`` when another
    process took the port before its webserver bound it (it is stopped then)."""
    port = _free_port()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [DAGSTER, "dev", "-w", str(REPO_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_default_signals,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {process.returncode}: {log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/server_info", timeout=2) as response:
                if response.status == 200:
                    return process, base
        except OSError:
            pass
        if "address already in use" in log_path.read_text(errors="replace"):
            _stop_group(process)
            return None, base
        if time.monotonic() > deadline:
            _stop_group(process)
            raise RuntimeError(f"dagster dev did not serve {base} within 180s: {log_path.read_text()[-3000:]}")
        time.sleep(1)


@pytest.fixture
def users_topic(kafka_bootstrap, kafka_admin):
    """The example's input topic, with the partitions the example declares, and fresh records in it."""
    partitions = users_per_country.TOPIC_PARTITIONS["users"]
    if "users" not in kafka_admin.list_topics():
        kafka_admin.create_topic("users", partitions)
    assert kafka_admin.partition_count("users") == partitions
    generate(kafka_bootstrap, {"users": "users"}, BurstSchedule(rate=2000, burst_every_s=0), max_records=60)
    return "users"


@pytest.fixture
def browser_page(tmp_path):
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1600, "height": 1000},
        )
        try:
            yield context.new_page()
        finally:
            context.close()


def _dismiss_welcome(page) -> None:
    """Close the "Join the Dagster community" dialog a fresh instance shows once, shortly after loading."""
    try:
        page.get_by_role("button", name="Skip").click(timeout=10_000)
    except PlaywrightTimeout:
        pass


def test_graph_shows_subtopologies_and_repartition_topics_and_a_partition_materializes_from_the_ui(
    dagster_dev, users_topic, browser_page
):
    base, home = dagster_dev
    page = browser_page
    OUTPUT.mkdir(parents=True, exist_ok=True)

    # The asset graph of the users-per-country application.
    page.goto(f"{base}/locations/dagster_kstreams/asset-groups/{APP_GROUP}")
    page.get_by_text("subtopology_1", exact=True).wait_for(timeout=60_000)
    _dismiss_welcome(page)
    page.screenshot(path=str(OUTPUT / "asset-graph.png"))
    for node in ("users", "subtopology_0", "subtopology_1", "users_per_country_store", "users_per_country"):
        assert page.get_by_text(node, exact=True).count() >= 1, f"{node} is not in the asset graph"
    # Long labels are shortened in the middle ("users_per_co…_store_repartition").
    assert page.get_by_text(re.compile(r"^users_per_co.*_store_repartition$")).count() == 1

    # All four examples are in the global lineage.
    page.goto(f"{base}/asset-groups")
    for group in ("users_per_country", "word_count", "top_words", "click_enrichment"):
        page.get_by_text(group, exact=True).first.wait_for(timeout=30_000)
    page.screenshot(path=str(OUTPUT / "global-lineage.png"))

    # Two applications, one graph: the neighbours of the topic word count writes are word count's
    # counting sub-topology upstream and top words' sub-topology downstream.
    page.goto(f"{base}/assets/kafka/word_counts?view=lineage&lineageScope=neighbors&lineageDepth=1")
    for node in ("word_count", "subtopology_1", "word_counts", "top_words", "subtopology_0"):
        page.get_by_text(node, exact=True).first.wait_for(timeout=30_000)
    page.screenshot(path=str(OUTPUT / "pipeline-lineage.png"))

    # Materialize partition 0 of sub-topology 0 from its asset page.
    page.goto(f"{base}/assets/{APP_GROUP}/subtopology_0")
    page.get_by_role("button", name="Materialize…").first.click(timeout=60_000)
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Select a partition or create one").click()
    page.get_by_role("menuitem", name="0").first.click()
    dialog.get_by_text("Launch runs to materialize").click()  # close the partition menu
    page.screenshot(path=str(OUTPUT / "launch-dialog.png"))
    dialog.get_by_role("button", name="Launch 1 run").click()

    # The run shows up and succeeds, as the UI reports it.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        deadline = time.monotonic() + 60
        while not instance.get_run_records(limit=1):
            assert time.monotonic() < deadline, "no run was launched"
            time.sleep(0.5)
        run = instance.get_run_records(limit=1)[0].dagster_run
        assert run.tags.get("dagster/partition") == "0"
        page.goto(f"{base}/runs/{run.run_id}")
        page.get_by_text("Success", exact=True).first.wait_for(timeout=240_000)
        page.screenshot(path=str(OUTPUT / "run-succeeded.png"))

        # What the run recorded: the task partition with its numbers, and the repartition topic partitions it wrote.
        subtopology = dg.AssetKey([APP_GROUP, "subtopology_0"])
        repartition = dg.AssetKey([APP_GROUP, "users_per_country_store_repartition"])
        materialized = instance.get_latest_materialization_event(subtopology).asset_materialization
        assert materialized.partition == "0"
        assert materialized.metadata["task"].value == "0_0"
        assert materialized.metadata["lag_left"].value == 0
        written = instance.get_materialized_partitions(repartition)
        assert written and written <= {"0", "1"}
        # The lag sensors stayed stopped (DAGSTER_KSTREAMS_WORKER_SENSORS): the hand run is the only run.
        assert [record.dagster_run.run_id for record in instance.get_run_records()] == [run.run_id]

    # The asset's events show the materialization with the task's numbers.
    page.goto(f"{base}/assets/{APP_GROUP}/subtopology_0?view=events")
    page.get_by_text("records_per_second").first.wait_for(timeout=30_000)
    page.screenshot(path=str(OUTPUT / "materialization-events.png"))

    # Health in the catalog: task 0_0 wrote records into the repartition topic and sub-topology 1
    # never ran, so its freshness check, executed from the UI, fails and names the tasks.
    page.goto(f"{base}/assets/{APP_GROUP}/subtopology_1?view=checks")
    page.get_by_role("button", name="Execute all").click(timeout=60_000)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        deadline = time.monotonic() + 120
        while not (records := instance.get_run_records(limit=1)) or records[0].dagster_run.run_id == run.run_id \
                or not records[0].dagster_run.is_finished:
            assert time.monotonic() < deadline, "the checks' run did not finish"
            time.sleep(0.5)
        assert records[0].dagster_run.is_success
    # The open page polls for check results (they showed 10-13 s after the run had ended); a page
    # loaded once the run has finished shows them at once.
    page.reload()
    page.get_by_text("freshness", exact=True).first.click()
    page.get_by_text(re.compile(r"^input waiting with no report within 300s: 1_")).wait_for(timeout=120_000)
    page.screenshot(path=str(OUTPUT / "health-checks.png"))
