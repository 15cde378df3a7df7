# `make demo`: venv + jars + local Kafka broker + Dagster UI.  `make test`: the test suite
# against a broker started for it.  Both work from a fresh clone (Java 17+, Maven, Python 3.11+).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# The first python3.x on PATH that is 3.11 or newer.
PYTHON ?= $(shell for candidate in python3 python3.13 python3.12 python3.11; do \
	command -v $$candidate >/dev/null 2>&1 && $$candidate -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	&& { command -v $$candidate; break; }; done)

export DAGSTER_KSTREAMS_HOME ?= $(CURDIR)/.kstreams
export PATH := $(BIN):$(PATH)

DEMO_BROKER_PORT ?= 9092
UI_PORT ?= 3000
DEMO_DAGSTER_HOME := $(DAGSTER_KSTREAMS_HOME)/dagster_home
TEST_BROKER_PORT ?= 19092
TEST_BROKER_DIR := $(DAGSTER_KSTREAMS_HOME)/test-broker
TEST_CONNECT_PORT ?= 19095
TEST_CONNECT_DIR := $(DAGSTER_KSTREAMS_HOME)/test-connect-server
PYTEST_ARGS ?=

.PHONY: help install jars browser demo down status test

help:
	@echo "make demo   install, start the local Kafka broker and Dagster (UI on http://127.0.0.1:$(UI_PORT))"
	@echo "make test   install, start a broker for the tests, run pytest, stop the broker"
	@echo "make down   stop the demo's Kafka broker"

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "error: Python 3.11+ is needed (no python3.11+ on PATH)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Reinstalls only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(VENV)/.installed

jars: install
	dagster-kstreams local jars

# The UI test drives Debian's Chromium through Playwright; install it when it is missing.
browser:
	@test -x /usr/bin/chromium || { \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			echo "installing chromium (apt-get) for the UI test"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "error: the UI test needs Chromium at /usr/bin/chromium (Debian: apt-get install chromium)" >&2; exit 1; \
		fi; }

demo: jars
	dagster-kstreams local up --port $(DEMO_BROKER_PORT)
	dagster-kstreams local spark-archive --bootstrap 127.0.0.1:$(DEMO_BROKER_PORT)
	mkdir -p $(DEMO_DAGSTER_HOME)
	cp deploy/dagster.yaml $(DEMO_DAGSTER_HOME)/dagster.yaml  # queued runs, one run per worker id
	@echo "Dagster UI: http://127.0.0.1:$(UI_PORT)  (Kafka: 127.0.0.1:$(DEMO_BROKER_PORT); stop Dagster with Ctrl-C, Kafka with 'make down')"
	DAGSTER_HOME=$(DEMO_DAGSTER_HOME) DAGSTER_KSTREAMS_BOOTSTRAP_SERVERS=127.0.0.1:$(DEMO_BROKER_PORT) \
		dagster dev -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

down:
	dagster-kstreams local down --port $(DEMO_BROKER_PORT)

status:
	dagster-kstreams local status --port $(DEMO_BROKER_PORT) || true

# The test broker gets fresh data each run unless it is still up from an interrupted run.
# Without PYTEST_ARGS, pytest spreads the test modules over TEST_PROCESSES processes (pytest-xdist,
# one report): an integration module (a broker, Spark, Dagster) keeps about two thirds of a core busy
# while it waits on its JVMs and the broker, so three processes fill the 2 cores (the suite: 1,192 s
# with two, 739 s with three; README, "Tests"); tests/conftest.py orders the modules, slowest first.
# With PYTEST_ARGS, one pytest process with those arguments.
TEST_PROCESSES ?= 3
# Every JVM of the tests (Spark's drivers and cluster, Kafka Streams' harness, the worker runs) is
# short-lived and handles a few thousand records: HotSpot's optimizing compiler and the parallel
# collector cost them more than they return. C1 alone and the serial collector took one module from
# 164 to 96 CPU seconds and the suite from 22 to 16 minutes (README, "Tests"). Only the tests' JVMs:
# the benchmarks and `make demo` keep the JVM's defaults, and so does the test broker, started
# before the options are set: it lives through the whole suite and holds every test's topics, and
# under the serial collector, on a busy CI machine, it once left a 10 s metadata request unanswered.
TEST_JAVA_OPTIONS ?= -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
# The tests run at a lower priority than the services they share, started before them: the broker,
# and a Spark Connect server, whose Python worker for a query's foreachBatch must connect back
# within 10 s (hard-coded in Spark) after importing pyspark, about 2 CPU seconds: at a load of 16 on
# 2 cores it missed that in every CI of sessions 30 and 31, retried for two minutes (README, "Tests").
TEST_NICENESS ?= 10
# The test broker keeps records whatever their timestamps: Kafka Streams' own test scenarios are near
# time 0, which a 7-day retention deletes at its next check (every 5 minutes), mid-module.

test: jars browser
	broker_args="--port $(TEST_BROKER_PORT) --state-dir $(TEST_BROKER_DIR)"; \
	connect_args="--port $(TEST_CONNECT_PORT) --state-dir $(TEST_CONNECT_DIR)"; \
	dagster-kstreams local status $$broker_args >/dev/null || rm -rf $(TEST_BROKER_DIR)/data; \
	trap 'dagster-kstreams local spark-connect down '"$$connect_args"'; dagster-kstreams local down '"$$broker_args" EXIT; \
	dagster-kstreams local up $$broker_args --broker-config log.retention.ms=-1; \
	dagster-kstreams local spark-connect up $$connect_args --cores 2; \
	export JAVA_TOOL_OPTIONS="$(TEST_JAVA_OPTIONS) $${JAVA_TOOL_OPTIONS:-}"; \
	dagster-kstreams local spark-archive --bootstrap 127.0.0.1:$(TEST_BROKER_PORT); \
	export KSTREAMS_TEST_BOOTSTRAP=127.0.0.1:$(TEST_BROKER_PORT); \
	export KSTREAMS_TEST_CONNECT=sc://127.0.0.1:$(TEST_CONNECT_PORT); \
	if [ -n "$(strip $(PYTEST_ARGS))" ]; then nice -n $(TEST_NICENESS) pytest $(PYTEST_ARGS); \
	else nice -n $(TEST_NICENESS) pytest --numprocesses $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder; fi
