# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
export DJANGO_SETTINGS_MODULE ?= config.settings.local

.PHONY: venv demo test test-integration lint docs docs-build docs-screenshots migrate bench fuzz messages clean

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

# One pytest worker per logical core, whole files to a worker (module fixtures such as a live server and its
# seeded study are built once); PYTEST_WORKERS=0 runs in this process.
PYTEST_WORKERS ?= logical
test: venv
	DJANGO_SETTINGS_MODULE=config.settings.test $(PY) -m pytest -m "not integration" -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

test-integration: venv
	DJANGO_SETTINGS_MODULE=config.settings.test $(PY) -m pytest -m integration $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

# The documentation site (mkdocs.yml, from docs/): served with live reload; docs-build is CI's strict build.
DOCS_PORT ?= 8001
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(HOST):$(DOCS_PORT)

# The guide's screenshots, taken by the browser tests that show those screens (tests/browser/conftest.py, DOCS_SCREENS).
docs-screenshots: venv
	CONCORD_DOCS_SCREENSHOTS=1 DJANGO_SETTINGS_MODULE=config.settings.test $(PY) -m pytest -q \
	  "tests/browser/test_rater_flow.py::test_full_assignment_stores_exactly_what_was_entered" \
	  tests/browser/test_pairwise_flow.py::test_full_pairwise_assignment_by_keyboard_and_click \
	  tests/browser/test_acute_flow.py::test_acute_page_at_1280_shows_two_conversations_side_by_side_with_the_judged_turns_marked \
	  "tests/browser/test_chat_flow.py::test_chat_then_rate_in_the_browser[desktop]"

docs-build: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

bench: venv
	$(PY) benchmarks/import_throughput.py

# The fuzz pass over the API and every rater POST: exits 1 on any answer of 500.
fuzz: venv
	$(PY) benchmarks/fuzz_api.py

# The rater pages' catalogues (locale/): extract the marked texts, then compile the .mo files that are committed
# (CI needs no gettext). Needs GNU gettext (msgfmt, xgettext); translate the new entries between the two steps.
LANGS ?= ar es
messages: venv
	$(PY) manage.py makemessages $(foreach l,$(LANGS),-l $(l)) --no-location --no-obsolete \
		--ignore=.venv --ignore=var --ignore=tests --ignore=staticfiles --ignore=test-output
	$(PY) manage.py compilemessages $(foreach l,$(LANGS),-l $(l)) --ignore=.venv

clean:
	rm -rf $(VENV) var staticfiles test-output
