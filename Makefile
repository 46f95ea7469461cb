# LLM Math: `make book` to set up and build the book, `make test` to run every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# nbgrader's gradebook shells out to alembic, which lives in the venv.
export PATH := $(BIN):$(PATH)
ASSIGNMENT ?= roofline
LAB_PORT ?= 8888
# The learner's own copies of the exercises (gitignored; see scripts/lab.py), and extra
# arguments for jupyter lab, e.g. LAB_ARGS=--ServerApp.token=secret.
LEARNER_DIR ?= my-work
# make lab ROLE=instructor: nbgrader's Create Assignment and Formgrader, lessons writable.
ROLE ?= learner
LAB_ARGS ?=
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: help setup book book-clean test test-fast lint types pytest lab check bench release grade grade-report release-feedback review regrade bench-grading sandbox hub hub-env hub-backup lock browser clean

help:
	@echo "make book     set up .venv, vendor the JavaScript, build the book into _build/html"
	@echo "make test     lint, types and every test (builds the book first)"
	@echo "make test-fast  the model and display tests that need no built book (about a minute)"
	@echo "make lab      JupyterLab with widgets and nbgrader, on 127.0.0.1:$(LAB_PORT)"
	@echo "make lab ROLE=instructor   the same with nbgrader's instructor tools, lessons writable"
	@echo "make check ASSIGNMENT=roofline   check your copy in $(LEARNER_DIR)/ part by part"
	@echo "make bench    widget redraw and model sweep timings"
	@echo "make release ASSIGNMENT=roofline   regenerate exercises/ from solutions/"
	@echo "make grade ASSIGNMENT=roofline     collect, autograde, grades.csv, report (students see nothing)"
	@echo "make review ASSIGNMENT=roofline STUDENT=bob   mark bob's flags reviewed (no STUDENT: list them)"
	@echo "make release-feedback ASSIGNMENT=roofline   after hand grading and review: feedback from the final scores"
	@echo "make regrade ASSIGNMENT=roofline   after fixing a test: everyone again, hand grades kept"
	@echo "make hub STUDENTS=3   (root) a JupyterHub class: one OS user per student, kept in $(HUB_STATE)"
	@echo "make hub-backup TO=class.tar.gz   (root) the hub's class in one archive"

# uv installs the lock: it downloads in parallel and links files from its cache (pip copies each
# file, one at a time). It lives beside the environments it fills, not in them: each is the lock
# exactly. A new venv, .pyc files included, on this machine: pip 39-55 s, uv 21-25 s (3 runs).
UV_VERSION := 0.13.9
UV := $(CURDIR)/$(VENV)/uv/bin/uv
$(UV):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --target $(VENV)/uv uv==$(UV_VERSION)

# --no-deps: the lock is the whole environment, nothing resolved beyond it (requirements.lock);
# pip stays, pinned, for `pip check` (tests/course/test_environment.py). compileall writes the .pyc
# files on every core.
$(VENV)/.installed: requirements.lock pyproject.toml lab/overrides.json $(UV)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps -r requirements.lock pip==25.3
	$(BIN)/python -m compileall -q -j0 $(VENV)/lib
	# A venv made before the lock left them out still has them (see the lock target).
	$(UV) pip uninstall --quiet --python $(BIN)/python $(UNWANTED)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps -e .
	# Lessons (.md) open as notebooks in JupyterLab.
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp lab/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $@

setup: $(VENV)/.installed book/_vendor/versions.json

# Standard library and npm only: runs with this Python, beside the venv's install.
book/_vendor/versions.json: scripts/vendor_js.py
	$(PYTHON) scripts/vendor_js.py

book: setup
	@start=$$(date +%s); \
	LLMMATH_STATIC_WIDGETS=1 $(BIN)/python scripts/build_book.py . -W -n --keep-going --quiet \
		&& echo "Built in $$(( $$(date +%s) - start )) s. Open $(CURDIR)/_build/html/index.html"

book-clean:
	rm -rf _build

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy --strict on the files pyproject.toml names: the model package (src/llmmath), the course
# tooling (src/llmmath_course: grading, simulated classes) and the scripts that run it.
types: setup
	$(BIN)/mypy

# The grading sandbox (book/instructor.md, "The grading sandbox"): Debian's bubblewrap.
sandbox:
	@command -v bwrap >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
		else echo "Grading needs Debian's bubblewrap: sudo apt-get install bubblewrap"; exit 1; fi; }

browser:
	@test -x /usr/bin/chromium || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		else echo "The browser tests need Debian's chromium: sudo apt-get install chromium"; exit 1; fi; }

# Both cores (at most 4 workers): each group of tests (a file, or a long test that needs
# none of its file's fixtures) runs whole on one worker, longest first (tests/conftest.py).
# (A third worker on two cores was no faster: pytest took 325-408 s against 339-403 s.)
PYTEST_WORKERS ?= $(shell n=$$(nproc); echo $$(( n < 4 ? n : 4 )))
# Every wait in the tests waits for a condition, its budget from tests/wait_support.py: scaled
# by the machine's load and by LLMMATH_WAIT_FACTOR (e.g. make test LLMMATH_WAIT_FACTOR=3 on a
# slow machine; .ci/run sets 2). A failed browser wait leaves screenshots in
# _build/test-screenshots/. Timings are `make bench`'s, never a test's.
ROOT_ONLY := $(if $(filter 0,$(shell id -u)),hub-env,)
pytest: setup browser sandbox $(ROOT_ONLY)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15

# What the tests need is made side by side: the project's venv beside the hub's (two pip runs,
# one core each), then the book, which keeps one core busy for a minute, beside lint, mypy and
# whatever is left of the hub's. After `make book` only the hub's is left to make.
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=target lint types book browser $(ROOT_ONLY)
	@$(MAKE) --no-print-directory pytest

# The edit loop: the model's tests (tests/model), the display's (tests/display) and the lessons' claims (tests/claims) that need
# neither the built book, nor a browser, nor a notebook run (no playwright import either); every
# lesson's {eval}s in page order among them. `make test` runs everything.
# tests/course holds grading, JupyterLab and the hub.
FAST_SKIPS := $(foreach t,book browser accessibility api_reference launch prose,--ignore=tests/display/test_$(t).py)
test-fast: setup
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -q tests/model tests/display tests/claims -m "not slow and not browser" $(FAST_SKIPS)

# Copies exercises/<a>/ to $(LEARNER_DIR)/<a>/ once (never over an existing copy), writes the
# start page $(LEARNER_DIR)/START.md, then starts JupyterLab with the course folder as root.
lab: setup
	$(BIN)/python scripts/lab.py --learner-dir $(LEARNER_DIR) --port $(LAB_PORT) --role $(ROLE) -- \
		$(ROOT_FLAG) $(LAB_ARGS)

# Runs the learner's copy against its visible tests and prints each part: passed or failed.
check: $(VENV)/.installed
	@$(BIN)/python scripts/check.py $(ASSIGNMENT) --learner-dir $(LEARNER_DIR)

# The book's pages on a phone network (scripts/bench_pages.py): after `make book`.
bench: setup
	$(BIN)/python scripts/bench.py
	$(BIN)/python scripts/bench_contracts.py --json
	$(BIN)/python scripts/bench_plan.py
	@if [ -f _build/html/index.html ]; then $(BIN)/python scripts/bench_pages.py _build/html \
		--out bench-pages.json; else echo "no built book: run make book for the page timings"; fi

release: setup
	$(BIN)/python scripts/release.py $(ASSIGNMENT)

# Instructors (book/instructor.md): collect, autograde in $(JOBS) processes with progress,
# grades.csv and reports/$(ASSIGNMENT)/; grade-report redoes only the report. Students see
# nothing until release-feedback (after hand grading and review); regrade re-records the
# assignment from solutions/ and autogrades everyone with the same $(JOBS), keeping hand grades.
# Two per core: a worker waits on its kernel part of the time (scripts/bench_grading.py).
JOBS ?= $(shell echo $$((2 * $$(nproc))))
grade: setup sandbox
	$(BIN)/python scripts/instructor.py grade $(ASSIGNMENT) --jobs $(JOBS)

grade-report: setup
	$(BIN)/python scripts/instructor.py report $(ASSIGNMENT)

# Refused while answers wait for hand grading or flags for review; FORCE=1 releases anyway
# (logged in feedback/.releases-$(ASSIGNMENT).log). review marks STUDENT's flags reviewed
# (without STUDENT: lists every flag, open or reviewed).
release-feedback: setup
	$(BIN)/python scripts/instructor.py release-feedback $(ASSIGNMENT)$(if $(FORCE), --force)

review: setup
	$(BIN)/python scripts/instructor.py review $(ASSIGNMENT) $(STUDENT)

regrade: setup sandbox
	$(BIN)/python scripts/instructor.py regrade $(ASSIGNMENT) --jobs $(JOBS)

# Autograde throughput on 300 simulated submissions (minutes; not part of make test).
bench-grading: setup sandbox
	$(BIN)/python scripts/bench_grading.py --jobs $(JOBS)

# JupyterHub (book/instructor.md, "On JupyterHub"). Servers run as each student's OS user, so
# they need a Python every user can read (the project's .venv may live in root's private
# home): HUB_HOME/<version>, a copy of this interpreter with a venv of the same pins
# (scripts/hub.py --build-env; <version> is a digest of the lock and the interpreter), and the
# hub's proxy from npm (hub/package-lock.json) in hub/node_modules. The class (accounts' homes,
# course, exchange, the hub's database) lives in HUB_STATE and outlasts a stop.
HUB_HOME ?= /opt/llmmath-hub
HUB_STATE ?= /var/lib/llmmath-hub
# What one student's server, kernels and terminals may use together (a memory cgroup).
HUB_MEM_LIMIT ?= 1G
# Each student's private /tmp (and /var/tmp) and /dev/shm; the exchange's filesystem and the
# part of it only the instructor may write (book/instructor.md, "Disk").
HUB_TMP_SIZE ?= 256M
HUB_SHM_SIZE ?= 64M
HUB_EXCHANGE_SIZE ?= 2G
HUB_EXCHANGE_RESERVE ?= 256M
STUDENTS ?= 3
HUB_PORT ?= 8000
export LLMMATH_HUB_HOME := $(HUB_HOME)

hub/node_modules/.installed: hub/package.json hub/package-lock.json
	cd hub && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Built only when no folder holds this lock on this Python; another version's folder is removed
# only when no process runs from it, so a running hub keeps its environment.
# Needs only this Python (scripts/hub.py is standard library) and uv: built beside setup.
hub-env: hub/node_modules/.installed $(UV)
	$(PYTHON) scripts/hub.py --build-env --uv $(UV)

hub: setup hub-env
	$(BIN)/python scripts/hub.py --students $(STUDENTS) --port $(HUB_PORT) --state $(HUB_STATE) \
		--mem-limit $(HUB_MEM_LIMIT) --tmp-size $(HUB_TMP_SIZE) --shm-size $(HUB_SHM_SIZE) \
		--exchange-size $(HUB_EXCHANGE_SIZE) --exchange-reserve $(HUB_EXCHANGE_RESERVE)

# The whole class in one tar.gz (mode 600), safe while the hub runs: make hub-backup TO=x.tar.gz
TO ?= llmmath-hub-$(shell date +%F).tar.gz
hub-backup:
	$(PYTHON) scripts/hub.py --backup $(TO) --state $(HUB_STATE)

# Re-resolve the pinned environment from requirements.in (then commit requirements.lock).
# The lock is installed --no-deps, so it holds everything (--all: setuptools and wheel too; pip
# is pinned in setup). UNWANTED are left out of it: jsonschema imports rfc3987-syntax when it
# is there (an optional IRI check nothing here uses), and that import builds a lark parser,
# about a second in every process that imports nbformat's validator, nbgrader or a Jupyter
# server (tests/course/test_environment.py checks they stay out).
UNWANTED := lark rfc3987-syntax
lock:
	rm -rf /tmp/llmmath-lock && $(PYTHON) -m venv /tmp/llmmath-lock
	/tmp/llmmath-lock/bin/pip install --quiet -r requirements.in
	( echo "# Pinned by 'make lock' on $$(date -u +%F) from requirements.in (Python 3.11)."; \
	  echo "# Installed with --no-deps: this list is the whole environment. Left out on purpose:"; \
	  echo "# $(UNWANTED) (see the Makefile's lock target)."; \
	  /tmp/llmmath-lock/bin/pip freeze --all --exclude-editable \
	    | grep -v $(foreach p,pip $(UNWANTED),-e '^$(p)==') ) > requirements.lock

clean: book-clean
	rm -rf $(VENV) book/_vendor .pytest_cache .mypy_cache .ruff_cache
