# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
export DJANGO_SETTINGS_MODULE ?= config.settings.local

.PHONY: venv demo test test-integration lint docs docs-build migrate bench fuzz clean

$(STAMP): requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "Concord needs $(PYTHON) on PATH (set PYTHON=...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

migrate: venv
	$(PY) manage.py migrate --noinput

demo: venv migrate
	$(PY) manage.py load_demo
	$(PY) manage.py demo_judge
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py demo_serve --host $(HOST) --port $(PORT)

test: venv
	DJANGO_SETTINGS_MODULE=config.settings.test $(PY) -m pytest -m "not integration" $(PYTEST_ARGS)

test-integration: venv
	DJANGO_SETTINGS_MODULE=config.settings.test $(PY) -m pytest -m integration $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

# The documentation site (mkdocs.yml, from docs/): served with live reload; docs-build is CI's strict build.
DOCS_PORT ?= 8001
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(HOST):$(DOCS_PORT)

docs-build: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

bench: venv
	$(PY) benchmarks/import_throughput.py

# The fuzz pass over the API and every rater POST (issue #26): exits 1 on any answer of 500.
fuzz: venv
	$(PY) benchmarks/fuzz_api.py

clean:
	rm -rf $(VENV) var staticfiles test-output
