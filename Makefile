# Two commands do all of the setup: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
PORT ?= 8501
TEST_WORKERS ?= 2  # pytest-xdist processes; each gets its share of the cores (tests/conftest.py)

.PHONY: run test check install install-dev chromium lint bench clean

## Start the app on http://localhost:$(PORT) (installs into .venv first when needed). Two malloc arenas: with
## glibc's default (one per thread, up to 8 per core) a closed tab's freed memory stayed with the server.
run: $(RUNTIME_STAMP)
	MALLOC_ARENA_MAX=2 $(BIN)/python -m streamlit run app.py --server.port $(PORT)

## Install everything, then run ruff and every test, the browser tests included: on TEST_WORKERS processes at once,
## each module's tests on one process in their order (each process starts its own app server and Chromium for the
## browser tests; the Ray modules share one process and its cluster: tests/conftest.py); then, alone, the two that
## time the server under a class's load (marked "alone": whatever ran beside them would show in their figures).
test: $(DEV_STAMP) chromium
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not alone"
	$(BIN)/python -m pytest -m alone

## The inner loop: ruff and every test that starts no server, no browser and no Ray cluster (about 2 minutes).
check: $(DEV_STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not e2e and not load and not ray"

install: $(RUNTIME_STAMP)
install-dev: $(DEV_STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The project itself goes in editable, so that the app, the tests and the rnnviz command import this tree.
# pip compiles what it installs one file at a time (35 of the 87 s a fresh install took); compileall on both cores
# writes the same .pyc files in 7 s. Like pip, it passes over files this Python cannot compile (torch ships test
# helpers in Python 3.12 syntax), hence the ignored status; anything it could not compile is compiled on import.
COMPILE_PACKAGES = $(BIN)/python -m compileall -q -j 0 \
	$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') > /dev/null || true
$(RUNTIME_STAMP): requirements.txt constraints.txt pyproject.toml | $(BIN)/python
	$(PIP) install --no-compile -r requirements.txt -c constraints.txt
	$(PIP) install --no-compile --no-deps --no-build-isolation -e .
	$(COMPILE_PACKAGES)
	touch $@

$(DEV_STAMP): $(RUNTIME_STAMP) requirements-dev.txt requirements-ray.txt
	$(PIP) install --no-compile -r requirements-dev.txt -c constraints.txt
	$(COMPILE_PACKAGES)
	touch $@

## Debian's Chromium drives the browser tests; install it when missing and we may (root).
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "No Chromium found and not root: browser tests will be skipped (or fail when CI is set)."; \
	fi

lint: $(DEV_STAMP)
	$(BIN)/python -m ruff check .

bench: $(RUNTIME_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache tests/e2e/screenshots
