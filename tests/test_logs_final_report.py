"""A command's own final error report (session eight, branch ``cliend``).

Command-line programs end by printing one error line on stderr, with no logger header, in a
shared convention: ``<prog>: error: <msg>`` (argparse, sbatch, srun), ``error: <msg>``
(tritonserver's ``error: creating server: ...``, cargo, git), ``Error: <msg>`` (cobra: ollama,
helm), docker's ``Error response from daemon: <msg>``, apt's ``E: <msg>``
(``eagle3tui/logs/endings.py``: ``command_report``). Such a line is fatal when it is the
process's last word, in a task and in a service (a server that says so and nothing more did
not start); a line of ordinary output after it says the process (or the script around the
command) went on, and it is a warning (the monitor's ``_after_report``). Measured on a fresh
set collected and labelled before the change (tests/final_report_set.py), with counter-tests on
real look-alikes and on every tune row labelled non-fatal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eagle3tui.logs import endings
from eagle3tui.logs.offline import classify_log
from tests.conftest import bench_module, corpus_tune_row, assert_after_figure, assert_fresh_rows, top_verdict
from tests.fatal_endings_set import FATAL_ENDINGS_SET
from tests.final_report_set import FINAL_REPORT_SET

ROOT = Path(__file__).resolve().parent.parent
ROWS = {r["id"]: r for r in FINAL_REPORT_SET}
# The verdicts of a final report: cobra's "Error: ..." keeps its older name.
REPORT_RULES = {"final-report", "top-level-error"}
# Scored once on the branch's start (8f0db91) before any change of this round, once after.
BEFORE = {"fatal_called_fatal": 16, "non_fatal_not_fatal": 8, "exact": 17}
AFTER = {"fatal_called_fatal": 25, "non_fatal_not_fatal": 10, "exact": 27}




def test_the_fresh_set_is_what_its_docstring_says() -> None:
    assert len(FINAL_REPORT_SET) == 42 and len(ROWS) == 42
    assert [r["label"] for r in FINAL_REPORT_SET].count("fatal") == 30
    corpus_urls = {json.loads(line)["url"] for line in (ROOT / "tests/fixtures/corpus/corpus.jsonl").open()}
    quoted: set[str] = set()
    for other in (ROOT / "tests").glob("*.py"):
        if other.name not in ("final_report_set.py", Path(__file__).name):
            quoted |= set(re.findall(r"https://github\.com/[^\s\"'#)]+", other.read_text(errors="replace")))
    urls = [r["url"] for r in FINAL_REPORT_SET]
    assert len(set(urls)) == len(urls)
    assert len({"/".join(u.split("/")[3:5]) for u in urls}) >= 38  # many programs, not one
    assert_fresh_rows(FINAL_REPORT_SET, corpus_urls | quoted)


def test_the_fresh_set_holds_its_after_figure(tmp_path: Path) -> None:
    assert_after_figure(tmp_path, FINAL_REPORT_SET, BEFORE, AFTER)


# Final reports the classifier missed before this round (a warning or information then), in a
# task and in a service: the batch scheduler's, a server's that did not start, docker's, apt's.
@pytest.mark.parametrize(
    "row_id",
    ["awsome-196", "signac-flow-517", "tao-triton-11", "yuxi-237", "bundlesdf-184", "grok-docker-2", "vic-2146",
     "gluu-docker-1", "ntopng-1008"],
)
def test_a_commands_last_word_is_fatal(tmp_path: Path, row_id: str) -> None:
    r = ROWS[row_id]
    kind, events = top_verdict(tmp_path, r["text"], r["kind"])
    assert kind == "fatal", (row_id, [(e.kind, e.rule) for e in events])
    assert "final-report" in {e.rule for e in events if e.kind == "fatal"}


# Batch ten's tune half: the three final reports it missed (a warning then).
@pytest.mark.parametrize(
    "row_id", ["DomainLab-590-1", "stable-diffusion-webui-docker-423-1", "server-2858-1"]
)
def test_the_tune_rows_that_end_in_a_final_report(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    kind, events = top_verdict(tmp_path, row["text"], row["kind"])
    assert kind == "fatal" == row["label"], [(e.kind, e.rule) for e in events]
    assert "final-report" in {e.rule for e in events if e.kind == "fatal"}


# Look-alikes: the same shapes, then ordinary output -- a loop of submissions that goes on, a
# setting sbatch ignored, "docker rm ... || true" before "docker run" (fatal or a named step's
# failure before this round).
@pytest.mark.parametrize("row_id", ["sdsc-si-55", "jetstream-18", "maven-archetypes-3"])
def test_a_report_followed_by_ordinary_output_is_a_warning(tmp_path: Path, row_id: str) -> None:
    r = ROWS[row_id]
    kind, events = top_verdict(tmp_path, r["text"], r["kind"])
    assert kind == "warning", (row_id, [(e.kind, e.rule) for e in events])
    assert any(e.rule in REPORT_RULES and "went on" in e.explanation for e in events)


def test_more_of_the_report_is_no_going_on(tmp_path: Path) -> None:
    """Lines that are part of the report or the ending do not settle it (each from a real thread)."""
    from eagle3tui.logs.settlement import report_goes_on as _report_goes_on

    # apt's own notes after its error (ntop/ntopng#1008 in the fresh set), make's record of the
    # failed command in the zh locale (dndx/nchnroutes#2), a pointer to the help
    # (ApolloAuto/apollo#7130 in tests/fatal_endings_set.py), a line that introduces the next
    # (organicmaps/organicmaps#209).
    for body in (
        "N: See apt-secure(8) manpage for repository creation and user configuration details.",
        "make: *** [Makefile:2：produce] 错误 128",
        "See 'docker run --help'.",
        "Unrecognized git object type:",
    ):
        assert _report_goes_on(body), body
    for body in ("Submitted batch job 3310344", "running egg_info", "Cloning into 'libetpan'..."):
        assert not _report_goes_on(body), body
    # The ending itself (a server's "Shutting down shards" after "Error: ShardCannotStart",
    # text-generation-inference-1627-1 of the tune split) keeps the report fatal.
    row = corpus_tune_row("text-generation-inference-1627-1")
    _, events = top_verdict(tmp_path, row["text"], row["kind"])
    assert [e.kind for e in events if e.rule in REPORT_RULES] == ["fatal"]


@pytest.mark.parametrize(
    "line",
    [
        "sbatch: error: Unable to open file /home/aih/xudong.sun/mnist_diva_full/job_logs/fbopt.cmd",
        "cobra-meta: error: unrecognized arguments: 2",
        "error: creating server: Internal - failed to load all models",
        "Error response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu]]",
        "docker: Error response from daemon: server error from portlayer : xxxx: no such executable in PATH.",
        "Error: INSTALLATION FAILED: Kubernetes cluster unreachable: Get \"https://10.158.210.53:6443/version\": "
        "dial tcp 10.158.210.53:6443: connect: connection refused",
        "E: Unable to locate package apt-get",
        "error: pathspec 'CMakeModules' did not match any file(s) known to git.",
    ],
)
def test_the_shapes_of_a_final_report(line: str) -> None:
    assert endings.command_report(line)


@pytest.mark.parametrize(
    "line",
    [
        # Python 2's exception line of class "error", closing a traceback a server logged for one
        # request (gunicorn-921-1 of the tune split).
        "error: [Errno 104] Connection reset by peer",
        # git's bare "fatal:", mostly a subprocess of the program that goes on
        # (TheDeanLab/navigate#818 in tests/fatal_endings_set.py, labelled benign).
        "fatal: not a git repository (or any of the parent directories): .git",
        # Loggers write the level in capitals or in a header of their own.
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
        "This behaviour is the source of the following dependency conflicts.",
        "ERRO[67290] Handler for POST /containers/create returned error: No such image: icinga2:latest (tag: latest)",
        "2014/12/26 20:51:21 Error: failed to start one or more containers",
        "N: Updating from such a repository can't be done securely, and is therefore disabled by default.",
    ],
)
def test_look_alikes_are_no_final_report(line: str) -> None:
    assert not endings.command_report(line)


def test_the_structfatal_look_alikes_stay_non_fatal(tmp_path: Path) -> None:
    """The previous round's fresh look-alikes (git's lone "fatal:" notice among them) stay non-fatal."""
    for r in FATAL_ENDINGS_SET:
        if r["label"] != "fatal":
            assert top_verdict(tmp_path, r["text"], r["kind"])[0] != "fatal", r["id"]


def test_no_non_fatal_tune_row_turns_fatal_by_a_final_report() -> None:
    """Counter-test on the corpus: no tune row labelled non-fatal (rows < 1618) is fatal through this cue."""
    scorer = bench_module("score_corpus")
    rows = [r for r in scorer.load_corpus()[:1618] if r["split"] == "tune" and r["label"] != "fatal"]
    assert len(rows) > 700
    rules = scorer.build_ruleset()
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for r in rows:
            log = Path(d) / "x.log"
            log.write_text(r["text"] + "\n", encoding="utf-8")
            events, _ = classify_log(log, rules=rules, stage_kind=r["kind"], progress_events=True, include_info=True)
            assert not any(e.kind == "fatal" and e.rule == "final-report" for e in events), r["id"]
