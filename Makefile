# Entry points, each doing all of its own set-up on a fresh machine:
#   make run       - create .venv, install eagle3tui with the demo pipeline, open the TUI
#   make test      - create .venv, install everything the tests need, run the whole suite
#                    (starts a single-node Slurm first and stops it at the end)
#   make test-fast - the same venv; ruff, the import contracts and the classifier and unit
#                    tests: no Slurm, no real model or server, no whole-log replay
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

# make test-fast: the classifier (tests/test_logs_*) and the unit tests of the core, the
# alerts, the CLI, the GPU telemetry (a fake NVML), Slurm's parsers and rules and the
# pipeline's boundary; not the end-to-end suites (driver, --watch, TUI, pipeline stages),
# not tests marked slow (the real model, a real server) or slurm, not test_whole_logs.py,
# and not the differential tests that classify large generated logs both ways
# (test_logs_summary_listing.py, the template scan's): on a loaded 2-core machine they
# took 506 s of the 875 s these files took together (2026-12-02).
FAST_TESTS := tests/test_logs_*.py tests/test_core_config.py tests/test_alerts_*.py \
	tests/test_cli_*.py tests/test_gpu_*.py tests/test_slurm_parsers.py tests/test_slurm_rules.py \
	tests/test_learned_rules.py tests/test_node_report.py tests/test_import_hygiene.py \
	tests/test_pipeline_boundary.py tests/test_pipeline_output_modes.py tests/test_changed_settings.py \
	tests/test_pipeline_complete_alert.py tests/test_examples.py
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
FAST_SKIP := --ignore=tests/test_logs_summary_listing.py \
	--deselect "tests/test_logs_templates.py::test_template_scan_gives_the_same_events"

.PHONY: run test test-fast bench clean

$(BIN)/python:
	@echo "==> Creating the virtual environment $(VENV) (once)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(WHEELHOUSE)/.llama-cpp-0.3.36-portable: | $(BIN)/python
	@echo "==> Building $(LLAMA_CPP) from source: the demo's CPU inference server (llama.cpp),"
	@echo "    as a portable AVX2 wheel so it runs on any x86-64 VM. This takes about 10 minutes"
	@echo "    on 2 cores (10.5 min measured 2026-12-01) and prints nothing while the compiler"
	@echo "    works. It happens once: the wheel is kept"
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
	$(BIN)/ruff check
	$(BIN)/lint-imports
	@echo "make test: starting a single-node Slurm for the Slurm executor's tests (.ci/slurm-up; root)"
	bash .ci/slurm-up
	@rc=0; $(PYTEST) --durations=25 || rc=$$?; \
	echo "make test: stopping the single-node Slurm (.ci/slurm-down; run it yourself if this is interrupted)"; \
	bash .ci/slurm-down || echo "make test: .ci/slurm-down failed; stop munged, slurmctld and slurmd by hand"; \
	exit $$rc

test-fast: $(VENV)/.installed
	$(BIN)/ruff check
	$(BIN)/lint-imports
	$(PYTEST) --durations=15 -m "not slow and not slurm" $(FAST_SKIP) $(FAST_TESTS)

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV)
