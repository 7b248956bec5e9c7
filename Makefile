# Wattledger: `make demo` runs the product (the `demo` app seeds it), `make test` runs the suite, `make test-fast`
# the inner loop (all but the slow tests and the fault harness). Each sets itself up.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

# Services for `make test-services` (CI points these at the machine's PostgreSQL and Redis).
SERVICES_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/wattledger
SERVICES_BROKER_URL   ?= redis://127.0.0.1:6379/0

.PHONY: demo test test-fast test-pg test-citus test-citus-ci test-services test-faults test-faults-citus soak lint typecheck check migrations-check clean focus-check \
	bench bench-smoke bench-citus bench-ingest bench-rollup bench-pages bench-collector bench-storage bench-scenarios bench-curves bench-uploads

$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is needed"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py seed_demo --first-days 2
	DEBUG=1 PATH="$(CURDIR)/$(BIN):$$PATH" bin/run-demo

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The inner loop: the suite less the tests marked slow (gunicorn, a Celery worker, Chromium, end-to-end, the demo's
# seed and run, the collector's signals; see conftest.py) and the fault harness. `make test` and CI still run them.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not faults" $(PYTEST_ARGS)

# The suite on a throwaway PostgreSQL cluster that bin/test-pg starts, and removes after.
test-pg: $(STAMP)
	PYTHON=$(BIN)/python bin/test-pg $(PYTEST_ARGS)

# The suite (or PYTEST_ARGS) on a throwaway Citus cluster (a coordinator and two workers) that bin/test-citus
# starts and removes after; it says how to install Citus where it is missing (exit 2). CI runs test-citus-ci.
test-citus: $(STAMP)
	PYTHON=$(BIN)/python bin/test-citus $(PYTEST_ARGS)

# CI's run on Citus (.ci/run): the whole suite but its slow tests (browser, gunicorn, real Celery workers and
# other processes, 158 of them) and the fault harness (its own cluster: test-faults-citus), every PostgreSQL test
# among them, against a coordinator and two workers: 2,390 passed, 22 skipped (what a cluster keeps no table
# for) in 17 minutes in CI, the cluster's start included, plus two to build Citus the first time.
# CITUS_CI_TESTS narrows it (e.g. tests/citus for the layout, shard and worker-kill tests alone).
CITUS_CI_TESTS ?= tests

test-citus-ci: $(STAMP)
	$(MAKE) test-citus PYTEST_ARGS='-q -p no:cacheprovider -m "not slow and not faults" $(CITUS_CI_TESTS)'

test-services: $(STAMP)
	DATABASE_URL=$(SERVICES_DATABASE_URL) CELERY_BROKER_URL=$(SERVICES_BROKER_URL) \
		$(BIN)/python -m pytest $(PYTEST_ARGS)

# The fault harness (tests/faults/): its own PostgreSQL cluster, Redis, gunicorn, Celery, simulated
# collectors through a fault proxy. test-faults: the short run (~3 min); soak: the long one, with its tally.
test-faults: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m faults tests/faults

# The short run on a Citus cluster of its own (a coordinator, two workers), a worker killed with kill -9 among
# the faults; it needs the citus extension (sudo ../shared/bin/citus-install) and skips with the reason without.
test-faults-citus: $(STAMP)
	WATTLEDGER_FAULTS_CITUS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m faults tests/faults/test_faults.py

SOAK_HOURS ?= 12
soak: $(STAMP)
	SOAK_HOURS=$(SOAK_HOURS) $(BIN)/python -m tests.faults.run soak $(if $(SOAK_CITUS),--citus)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy .

migrations-check: $(STAMP)
	DEBUG=1 $(BIN)/python manage.py makemigrations --check --dry-run

check: lint typecheck migrations-check test

# Benchmarks (not tests): each prints a table and writes bench/results/NAME.json; see bench/README.md.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/wattledger_bench

bench: bench-ingest bench-rollup bench-pages bench-collector bench-storage bench-scenarios bench-curves bench-uploads bench-ledger

bench-ingest bench-rollup bench-pages bench-collector bench-storage bench-scenarios bench-curves bench-uploads bench-ledger: bench-%: $(STAMP)
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python -m bench.$*

# Ingest CPU charged per server and bytes per sample in columnar storage, on a throwaway Citus cluster
# (a coordinator, two workers) beside one plain PostgreSQL server, all on loopback (bin/bench-citus; bench/README.md,
# "Citus"). BENCH_CITUS_ARGS go to bench.citus. About 10 minutes on 2 cores at its defaults; exit 2 without Citus.
bench-citus: $(STAMP)
	PYTHON=$(BIN)/python bin/bench-citus $(BENCH_CITUS_ARGS)

# Every benchmark once at a tiny size, on its own database, results under var/bench-smoke/ (CI: that each
# still runs and writes its result file; no timing is judged). ~2 minutes.
BENCH_SMOKE_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/wattledger_bench_smoke

bench-smoke: $(STAMP)
	BENCH_SMOKE_DATABASE_URL=$(BENCH_SMOKE_DATABASE_URL) $(BIN)/python -m bench.smoke

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache

# The FOCUS 1.2 export of a small seeded demo, checked by the FinOps Foundation's validator (offline; see
# docs/focus.md) through bin/focus-check, which calls FOCUS_VALIDATE, the shared script, not a copy.
# A throwaway SQLite database under FOCUS_DIR.
# The window's first FOCUS_CLOSE_HOURS are locked before their history arrives, so their lines are booked as
# corrections in the first open period (now): the export runs from the year's start to tomorrow to hold them, and
# the check fails unless Correction rows are there.
FOCUS_VALIDATE ?= ../shared/bin/focus-validate
FOCUS_DIR      ?= var/focus-check
FOCUS_DEMO_END ?= 2026-11-25T00:00:00Z
FOCUS_CLOSE_HOURS ?= 2
FOCUS_EXPORT    = --start 2026-01-01T00:00:00Z --end $(shell date -u -d tomorrow +%Y-%m-%dT00:00:00Z)

focus-check: $(STAMP)
	rm -rf $(FOCUS_DIR) && mkdir -p $(FOCUS_DIR)
	WATTLEDGER_VAR_DIR=$(CURDIR)/$(FOCUS_DIR) DEBUG=1 $(BIN)/python manage.py migrate --noinput >/dev/null
	WATTLEDGER_VAR_DIR=$(CURDIR)/$(FOCUS_DIR) DEBUG=1 $(BIN)/python manage.py seed_demo --hours 24 \
		--end $(FOCUS_DEMO_END) --close-hours $(FOCUS_CLOSE_HOURS) >$(FOCUS_DIR)/seed.log
	WATTLEDGER_VAR_DIR=$(CURDIR)/$(FOCUS_DIR) DEBUG=1 $(BIN)/python manage.py focus_export --organization demo-ai \
		$(FOCUS_EXPORT) --output $(FOCUS_DIR)/focus-hour.csv
	WATTLEDGER_VAR_DIR=$(CURDIR)/$(FOCUS_DIR) DEBUG=1 $(BIN)/python manage.py focus_export --organization demo-ai \
		$(FOCUS_EXPORT) --granularity day --output $(FOCUS_DIR)/focus-day.csv
	grep -q ',Correction,' $(FOCUS_DIR)/focus-hour.csv && grep -q ',Correction,' $(FOCUS_DIR)/focus-day.csv \
		|| { echo "focus-check: no Correction rows in the export" >&2; exit 1; }
	grep -q ',Tax,' $(FOCUS_DIR)/focus-hour.csv && grep -q ',fixed_charge,' $(FOCUS_DIR)/focus-hour.csv \
		|| { echo "focus-check: no Tax or site charge rows in the export" >&2; exit 1; }
	FOCUS_VALIDATE=$(abspath $(FOCUS_VALIDATE)) bin/focus-check $(FOCUS_DIR)/focus-hour.csv $(FOCUS_DIR)/focus-day.csv
