"""One environment variable per setting: DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS, the old name warned about once."""

from __future__ import annotations

import io

import pytest

from dagster_kstreams.base import environment
from dagster_kstreams.base.environment import bootstrap_servers


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(environment, "_warned", set())


def test_the_new_name_wins_and_needs_no_warning():
    warnings = io.StringIO()
    environ = {"DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS": "new:9092", "KSTREAMS_BOOTSTRAP_SERVERS": "old:9092"}
    assert bootstrap_servers(environ, warnings) == "new:9092"
    assert warnings.getvalue() == ""


def test_the_old_name_still_works_with_one_warning_line_per_process():
    warnings = io.StringIO()
    environ = {"KSTREAMS_BOOTSTRAP_SERVERS": "old:9092"}
    assert bootstrap_servers(environ, warnings) == "old:9092"
    assert bootstrap_servers(environ, warnings) == "old:9092"
    assert warnings.getvalue() == ("dagster-kstreams: warning: KSTREAMS_BOOTSTRAP_SERVERS is deprecated; "
                                   "set DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS instead\n")


def test_without_either_the_local_broker():
    assert bootstrap_servers({}, io.StringIO()) == "127.0.0.1:9092"

