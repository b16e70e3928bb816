# Two commands for a fresh machine:  make demo  |  make test
# make setup installs what production runs (requirements.txt) and the client; make setup-dev adds the tests,
# benchmarks and lint (requirements-dev.txt).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup setup-dev demo test serve

setup: $(VENV)/.installed

setup-dev: $(VENV)/.installed-dev

$(VENV)/bin/python:
	[ ! -L $(VENV) ] || rm $(VENV)  # a link to a cached test venv since removed (make setup-dev, scripts/dev-venv)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# A .venv linked to the cached test venv (setup-dev) is never installed into, only brought up to date as a test venv:
# the editable client would point every clone sharing it at this one.
$(VENV)/.installed: requirements.txt | $(VENV)/bin/python
	if [ -L $(VENV) ]; then PYTHON=$(PYTHON) bash scripts/dev-venv; else \
	  $(PY) -m pip install -q -r requirements.txt && $(PY) -m pip install -q -e ./client; fi
	touch $@

# scripts/dev-venv: where the machine keeps a cache (ATELIER_VENV_CACHE, default ~/.cache/atelier/venvs; "off": none),
# .venv links to a venv built once per hash of the requirements, the client's sources and the interpreter (under a lock:
# clones building at once wait for one build); otherwise, or where .venv is a directory already, installed in place.
# Both install with pip's --no-compile (see the script).
CLIENT_SOURCES := $(shell find client -name build -prune -o -name '*.egg-info' -prune -o -type f \( -name '*.py' -o -name '*.toml' -o -name '*.cfg' \) -print)
$(VENV)/.installed-dev: requirements.txt requirements-dev.txt scripts/dev-venv $(CLIENT_SOURCES)
	PYTHON=$(PYTHON) bash scripts/dev-venv

# The demo judges through the production route against its own scripted judge (demo/judge.py), labelled
# "scripted judge (demo)"; `make serve` keeps that judge, so uploads to the demo site are judged alike.
demo: setup
	ATELIER_DEMO_JUDGE=true ATELIER_SITE_URL=http://127.0.0.1:8000 $(PY) manage.py demo
	ATELIER_DEMO_JUDGE=true ATELIER_SITE_URL=http://127.0.0.1:8000 $(PY) manage.py runserver 127.0.0.1:8000

serve: setup
	ATELIER_DEMO_JUDGE=true ATELIER_SITE_URL=http://127.0.0.1:8000 $(PY) manage.py runserver 127.0.0.1:8000

test: setup-dev
	bash scripts/test
