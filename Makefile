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
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q -e ./client
	touch $@

# --no-compile: pip would byte-compile every installed file (torch's included), about 100 s of the 175 s install on the
# 2-core CI machine; Python compiles only the modules a run imports, once, on first import. Production (setup) keeps
# pip's compile: its processes may not write beside the code.
$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install -q --no-compile -r requirements-dev.txt
	$(PY) -m pip install -q -e ./client
	touch $@

# The demo judges through the production route against its own scripted judge (demo/judge.py), labelled
# "scripted judge (demo)"; `make serve` keeps that judge, so uploads to the demo site are judged alike.
demo: setup
	ATELIER_DEMO_JUDGE=true ATELIER_SITE_URL=http://127.0.0.1:8000 $(PY) manage.py demo
	ATELIER_DEMO_JUDGE=true ATELIER_SITE_URL=http://127.0.0.1:8000 $(PY) manage.py runserver 127.0.0.1:8000

serve: setup
	ATELIER_DEMO_JUDGE=true ATELIER_SITE_URL=http://127.0.0.1:8000 $(PY) manage.py runserver 127.0.0.1:8000

test: setup-dev
	bash scripts/test
