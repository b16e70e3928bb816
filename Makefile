# Two commands for a fresh machine:  make demo  |  make test
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test serve

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q -e ./client
	touch $@

demo: setup
	$(PY) manage.py demo
	$(PY) manage.py runserver 127.0.0.1:8000

serve: setup
	$(PY) manage.py runserver 127.0.0.1:8000

test: setup
	bash scripts/test
