# Two entry points, each doing all of its own set-up on a fresh machine:
#   make run   - create .venv, install eagle3tui with the demo pipeline, open the TUI
#   make test  - create .venv, install everything the tests need, run the whole suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU torch: this exact version resolves to a local CPU wheel; an unpinned torch
# would pull a multi-GB CUDA build.
TORCH ?= torch==2.13.0
# llama.cpp's server (the demo's CPU inference server) builds from source. A
# native build may use CPU features (AMX, AVX-512) that a VM or sandbox does
# not allow, and then dies with SIGILL on the first request: build a portable
# AVX2 wheel once, outside the tree, and install that.
LLAMA_CPP := llama-cpp-python==0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
WHEELHOUSE ?= $(HOME)/.cache/eagle3tui/wheels

.PHONY: run test bench clean

$(BIN)/python:
	@echo "==> Creating the virtual environment $(VENV) (once)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(WHEELHOUSE)/.llama-cpp-0.3.36-portable: | $(BIN)/python
	@echo "==> Building $(LLAMA_CPP) from source: the demo's CPU inference server (llama.cpp),"
	@echo "    as a portable AVX2 wheel so it runs on any x86-64 VM. This takes about 5-6 minutes"
	@echo "    and prints nothing while the compiler works. It happens once: the wheel is kept"
	@echo "    in $(WHEELHOUSE) and reused by every later make (delete it to rebuild)."
	mkdir -p $(WHEELHOUSE)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel -q --no-deps --no-cache-dir \
	    "$(LLAMA_CPP)" -w $(WHEELHOUSE)
	touch $@

$(VENV)/.installed: pyproject.toml $(WHEELHOUSE)/.llama-cpp-0.3.36-portable | $(BIN)/python
	@echo "==> Installing CPU $(TORCH) and eagle3tui with the demo pipeline into $(VENV)"
	@echo "    (a few minutes the first time; again only when pyproject.toml changes)"
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q --find-links $(WHEELHOUSE) -e ".[pipeline,demo,test]"
	@if ! command -v tmux >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null 2>&1 || \
	    echo "note: tmux not installed; the tmux test will be skipped"; fi
	touch $@
	@echo "==> Ready. The eagle3tui command is $(BIN)/eagle3tui; to type just eagle3tui,"
	@echo "    run: source $(BIN)/activate   (or add $(abspath $(BIN)) to PATH)"

run: $(VENV)/.installed
	$(BIN)/eagle3tui --config pipeline.toml

test: $(VENV)/.installed
	@echo "make test: starting a single-node Slurm for the Slurm executor's tests (.ci/slurm-up; root, once)"
	bash .ci/slurm-up
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV)
