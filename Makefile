# Two entry points, each doing all of its own set-up on a fresh machine:
#   make run   - create .venv, install eagle3tui with the demo pipeline, open the TUI
#   make test  - create .venv, install everything the tests need, run the whole suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU torch: this exact version resolves to a local CPU wheel; an unpinned torch
# would pull a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: run test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[pipeline,demo,test]"
	@if ! command -v tmux >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null 2>&1 || \
	    echo "note: tmux not installed; the tmux test will be skipped"; fi
	touch $@

run: $(VENV)/.installed
	$(BIN)/eagle3tui --config pipeline.toml

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV)
