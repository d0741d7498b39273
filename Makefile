# Two commands on a fresh machine (see README):
#   make demo   set up .venv, ingest the sample chats, consolidate, recall
#   make test   set up .venv and run the test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench ui serve clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel; a looser request pulls a CUDA build
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/loci demo

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/loci bench all

ui: $(STAMP)
	$(BIN)/loci ui

serve: $(STAMP)
	$(BIN)/loci serve

clean:
	rm -rf $(VENV) .pytest_cache
