"""Fatal endings by structure, round two (session eight, branch ``structfatal``).

How a process ends, told by whoever ran it in that program's own words: an exit status
reported by a supervisor, a service manager, a launcher, an editor's build system or a
container runtime; a part of the job declared dead by what watches it; a part that could
not be started, named after the verb; a record whose verb is the ending and whose cause is
an error (``eagle3tui/logs/endings.py``). Measured on a fresh set collected and labelled
before the change (tests/fatal_endings_set.py), with counter-tests on real look-alikes.
Also: a logged traceback survives a raw line of another stream in its middle, and a
fatal family's line that says the program proceeds without the thing is no death.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3tui.logs import endings
from eagle3tui.logs.judge import is_errorish, gate_bits
from eagle3tui.logs.offline import classify_log
from tests.conftest import bench_module, assert_after_figure, assert_fresh_rows, top_verdict
from tests.fatal_endings_set import FATAL_ENDINGS_SET

ROOT = Path(__file__).resolve().parent.parent
ROWS = {r["id"]: r for r in FATAL_ENDINGS_SET}
# Scored once on the branch's start (f1a1d02) before any cue of this round, once after.
BEFORE = {"fatal_called_fatal": 21, "non_fatal_not_fatal": 16, "exact": 29}
AFTER = {"fatal_called_fatal": 28, "non_fatal_not_fatal": 18, "exact": 38}




def test_the_fresh_set_is_what_its_docstring_says() -> None:
    assert len(FATAL_ENDINGS_SET) == 48 and len(ROWS) == 48
    labels = [r["label"] for r in FATAL_ENDINGS_SET]
    assert labels.count("fatal") == 30
    corpus_urls = {json.loads(line)["url"] for line in (ROOT / "tests/fixtures/corpus/corpus.jsonl").open()}
    assert_fresh_rows(FATAL_ENDINGS_SET, corpus_urls)


def test_the_fresh_set_holds_its_after_figure(tmp_path: Path) -> None:
    assert_after_figure(tmp_path, FATAL_ENDINGS_SET, BEFORE, AFTER)


# Fatal endings the classifier missed before this round (info, warning or benign then).
@pytest.mark.parametrize(
    "row_id",
    ["fate-3986", "ollama-1148", "cargo-2311", "spin-12", "proxmox-nvidia-lxc-1", "lxd-11427", "ray-3446"],
)
def test_an_ending_told_by_what_ran_the_process_is_fatal(tmp_path: Path, row_id: str) -> None:
    r = ROWS[row_id]
    assert top_verdict(tmp_path, r["text"], r["kind"])[0] == "fatal", row_id


@pytest.mark.parametrize(
    ("body", "rule", "final"),
    [
        # each a line of the fresh set, as the judge sees it (header peeled)
        ("ollama.service: Main process exited, code=dumped, status=11/SEGV", "nonzero-exit", False),
        ("exited: fate-clustermanager (exit status 0; not expected)", "nonzero-exit", False),
        ("[Finished in 10534.3s with exit code 1]", "nonzero-exit", False),
        ("Process didn't exit successfully: `target/debug/segfault` (signal: 11)", "nonzero-exit", False),
        ("ollama.service: Failed with result 'core-dump'.", "nonzero-exit", False),
        ("gave up: fate-clustermanager entered FATAL state, too many start retries too quickly", "process-died", True),
        ("The node with client ID 1ead has been marked dead because the monitor has missed too many heartbeats from it.",
         "process-died", False),
        ('__lxc_start: 1999 Failed to spawn container "102"', "process-died", False),
        ("TASK ERROR: startup for container '102' failed", "process-died", False),
        ("ninja: build stopped: subcommand failed.", "process-died", False),
    ],
)
def test_the_shapes_of_a_reported_ending(body: str, rule: str, final: bool) -> None:
    assert endings.ending_reported(body, lambda c: is_errorish(c, gate_bits(c))) == (rule, final)


@pytest.mark.parametrize(
    "body",
    [
        # counter-tests: real lines of look-alikes (fresh set, public threads)
        "compose-app-1 exited with code 0",  # docker/compose#9782
        "✗ docker failed: container agentos-minio-init-1 exited (0)",  # curie-eng/curie#342
        "ollama.service: Deactivated successfully.",  # ollama/ollama#12194
        "Stopped ollama.service - Ollama Service.",  # ollama/ollama#12194
        "CRIT Set uid to user 1000",  # Supervisor/supervisor#492
        "INFO spawned: 'postgresql' with pid 1288",  # Supervisor/supervisor#1663
        "2024-07-16 14:13:12.539 UTC [143] LOG:  shutting down",  # CrunchyData/postgres-operator#3798
    ],
)
def test_look_alikes_are_no_reported_ending(body: str) -> None:
    assert endings.ending_reported(body, lambda c: is_errorish(c, gate_bits(c))) is None


def test_a_supervisor_that_restarts_the_program_settles_its_exit(tmp_path: Path) -> None:
    r = ROWS["supervisor-1663"]  # "exited: postgresql (exit status 0; not expected)", then "spawned: ..."
    kind, events = top_verdict(tmp_path, r["text"], r["kind"])
    assert kind != "fatal", events
    # without the restart the same exit is the service's end
    assert top_verdict(tmp_path, r["text"].split("\n")[0], r["kind"])[0] == "fatal"


def test_no_non_fatal_tune_row_reports_an_ending() -> None:
    """The cue fires on no line of the corpus's tune rows that a person labelled non-fatal."""
    rows = bench_module("score_corpus").load_corpus()[:1490]
    errorish = lambda c: is_errorish(c, gate_bits(c))  # noqa: E731
    for r in rows:
        if r["split"] != "tune" or r["label"] == "fatal":
            continue
        for line in r["text"].split("\n"):
            assert endings.ending_reported(line, errorish) is None, (r["id"], line)


# -- the two whole-log misses of round one ------------------------------------------------
WHOLE = ROOT / "tests" / "fixtures" / "whole_logs"


def test_a_logged_traceback_survives_a_raw_line_of_another_stream() -> None:
    # vLLM logs the EngineCore traceback line by line (43-102); at 54 the same process's raw
    # "(EngineCore pid=250) Process EngineCore:" (multiprocessing, on stderr) comes between.
    events, _ = classify_log(WHOLE / "hijinks-vllm-qwen-nvfp4-cutlass-attributeerror.log", stage_kind="service")
    tb = [e for e in events if e.line == 43]
    assert len(tb) == 1 and tb[0].end_line == 102, [(e.line, e.end_line, e.rule) for e in events]
    assert tb[0].text.startswith("AttributeError: module 'cutlass.cute.nvgpu'"), tb[0].text
    assert not [e for e in events if 44 <= e.line <= 102 and e.line != 43 and e.kind != "info"]


def test_a_line_of_another_logger_record_still_ends_a_traceback(tmp_path: Path) -> None:
    # counter-test: a record with a logger header of its own after the traceback's first lines
    # (lines 43, 44 and 41 of the same real log, in that order) is the process going on, not
    # an interleaved raw stream: the traceback ends before it, as it did before this round
    lines = (WHOLE / "hijinks-vllm-qwen-nvfp4-cutlass-attributeerror.log").read_text(encoding="utf-8").split("\n")
    log = tmp_path / "x.log"
    log.write_text("\n".join([lines[42], lines[43], lines[40]]) + "\n", encoding="utf-8")
    events, _ = classify_log(log, stage_kind="task")
    assert [(e.line, e.end_line) for e in events if e.rule.startswith("traceback") or e.line == 1] == [(1, 2)], events


def test_an_optional_file_the_program_goes_on_without_is_no_missing_model() -> None:
    events, _ = classify_log(WHOLE / "dgx-spark-sglang-laguna-specdecode-vanished.log", stage_kind="service")
    line33 = [e for e in events if e.line == 33]
    assert line33 and line33[0].kind == "benign" and line33[0].rule == "optional-missing", line33
    assert not [e for e in events if e.kind == "fatal"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Failed to load generation config for x: x does not appear to have a file named generation_config.json. "
         "Checkout 'https://huggingface.co/x/tree/main' for available files.. Proceeding without generation config.", True),
        ("No module 'xformers'. Proceeding without it.", True),  # AbdBarho/stable-diffusion-webui-docker#296
        # the same family without a word of going on: the pack's own example, and a thread's line
        ("OSError: Can't load tokenizer for '/models/target'. If you were trying to load it from "
         "'https://huggingface.co/models', make sure you don't have a local directory with the same name.", False),
        ("Failed to start the dashboard , return code 3221226505", False),  # ray-project/ray#54655 (tune row)
    ],
)
def test_goes_on_without(body: str, expected: bool) -> None:
    assert endings.goes_on_without(body) is expected


# -- structure alone ----------------------------------------------------------------------
def test_structure_only_switches_off_every_program_specific_rule() -> None:
    scorer = bench_module("score_corpus")
    from eagle3tui.logs.rules import load_builtin_rules

    ids = {r.id for r in load_builtin_rules()}
    assert scorer.GENERAL_RULES <= ids  # no stale name
    kept = {r.id for r in scorer.structure_only_ruleset().rules}
    assert kept == scorer.GENERAL_RULES
    assert "vllm-engine-dead" not in kept and "torchrun-child-failed" not in kept and "traceback" in kept


def test_a_vllm_header_with_a_path_is_read() -> None:
    # Newer vLLM names the file by its path in the package (tune row vllm-26328-2): the header
    # is read, so "WorkerProc failed to start." is the sentence the judge weighs.
    from eagle3tui.logs.anatomy import shape

    sh = shape("ERROR 10-06 18:54:30 [v1/executor/multiproc_executor.py:597] WorkerProc failed to start.")
    assert (sh.level, sh.source, sh.body) == ("error", "v1/executor/multiproc_executor.py:597", "WorkerProc failed to start.")


def test_structure_alone_catches_a_worker_that_failed_to_start(tmp_path: Path) -> None:
    scorer = bench_module("score_corpus")
    row = next(r for r in scorer.load_corpus() if r["id"] == "vllm-26328-2")
    got, _why = scorer.verdict(row, scorer.structure_only_ruleset(), tmp_path)
    assert got == "fatal"


# -- a stop someone asked for ----------------------------------------------------------------
@pytest.mark.parametrize("row_id", ["compose-2787", "crunchy-postgres-operator-3798"])
def test_the_endings_of_a_requested_stop_are_no_failure(tmp_path: Path, row_id: str) -> None:
    # fatal on f1a1d02: compose's "ERROR: Aborting." after Ctrl+C; Postgres's FATAL record and a
    # worker's exit status 1 after "received fast shutdown request"
    r = ROWS[row_id]
    kind, events = top_verdict(tmp_path, r["text"], r["kind"])
    assert kind != "fatal", events
    assert "stop-requested" in {e.rule for e in events}


def test_without_the_request_the_same_endings_stay_fatal(tmp_path: Path) -> None:
    lines = ROWS["crunchy-postgres-operator-3798"]["text"].split("\n")
    assert top_verdict(tmp_path, "\n".join(lines[1:]), "service")[0] == "fatal"


def test_a_crash_after_a_requested_stop_stays_fatal(tmp_path: Path) -> None:
    # real lines of two threads: the stop of docker/compose#2787, the shell's report of a
    # segmentation fault of alanhoff/rust-webview#5; a crash is not how a stop is reported
    text = "^CGracefully stopping... (press Ctrl+C again to force)\nzsh: segmentation fault  cargo run"
    assert top_verdict(tmp_path, text, "task")[0] == "fatal"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("^CGracefully stopping... (press Ctrl+C again to force)", True),  # docker/compose#2787
        ("2024-07-16 14:13:12.520 UTC [140] LOG:  received fast shutdown request", True),  # CrunchyData/postgres-operator#3798
        # a signal's name alone is how a launcher stops a failed job's other processes
        ("*** SIGTERM received at time=1748300290 on cpu 8 ***", False),  # whole log agent-distillation (cause of its death)
        ("[2025-08-15 08:42:11,420] [INFO] [launch.py:328:sigkill_handler] Main process received SIGINT, exiting", False),
    ],
)
def test_stop_requested(line: str, expected: bool) -> None:
    assert endings.stop_requested(line) is expected
