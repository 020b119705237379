"""Whole recorded logs, replayed through the real supervisor: one failure, one clear alert.

Each log of tests/fixtures/whole_logs (real logs from public repositories,
each with its URL and the outcome its source establishes in manifest.jsonl)
is printed line by line by a real subprocess run as a stage under
``eagle3tui --watch --run-all`` (bench/score_whole_logs.py), which then ends
the way the recorded process ended. The floors are the figures measured
(docs/history/logs-notebook.md, "Whole logs replayed through the supervisor"); raise them when the supervisor
does better, never lower them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import ModuleType

import pytest

from eagle3tui.config import load_config
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.supervisor.records import RunRecord
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from tests.conftest import bench_module

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "whole_logs"

# Measured after the changes of the wholelogs round (20 logs, 7 deaths) and held
# after round two (42 logs, 17 deaths; docs/history/logs-notebook.md, "Round two"): manifest rows 1-42.
FLOORS = {
    "died_one_alert_per_failure": 1.0,  # at most one fatal-log-event critical + one stage-failed
    # The [alerts] command runs once per death, for stage-failed (alerts.hold_fatal, session nine;
    # with hold_fatal = 0, 23 of the 28 deaths of rows 1-63 ran it twice or more).
    "died_one_page": 1.0,
    "died_cause_quoted": 1.0,  # the stage-failed alert's cause spans the line the source names
    "died_message_names_cause": 1.0,  # and its message quotes that line's exception
    "all_ok": 1.0,
}
CEILINGS = {"died_with_false_fatals": 0, "calm_false_alarms": 0}
# Round three (manifest rows 43-63: 21 logs, 11 deaths), held apart so that the first 42 keep
# their floors: measured after its changes (docs/history/logs-notebook.md, "Round three"), then raised by round
# structfatal (docs/history/logs-notebook.md, "Fatal endings by structure, round two"), which fixed the two deaths
# that still failed: a vLLM traceback interleaved with a raw "Process EngineCore:" line, and a
# notice read as missing model files ("Failed to load generation config ... Proceeding without").
ROUND_THREE_FROM = 42
FLOORS_ROUND_THREE = {
    "died_one_alert_per_failure": 1.0,
    "died_one_page": 1.0,
    "died_cause_quoted": 1.0,  # 11/11
    "died_message_names_cause": 1.0,  # 11/11
    "all_ok": 1.0,  # 21/21
}
CEILINGS_ROUND_THREE = {"died_with_false_fatals": 0, "calm_false_alarms": 0}
# Round four (manifest rows 64-84: 21 logs, 10 deaths), session nine: scored 19/21 ok on the
# unchanged tree (docs/history/logs-notebook.md, "Whole logs, round four"), held apart at the figures measured
# after its changes (an exception message that says the rest follows; the job runner's report).
ROUND_FOUR_FROM = 63
FLOORS_ROUND_FOUR = {
    "died_one_alert_per_failure": 1.0,
    "died_one_page": 1.0,
    "died_cause_quoted": 1.0,  # 10/10
    "died_message_names_cause": 1.0,  # 10/10
    "all_ok": 1.0,  # 21/21
}
CEILINGS_ROUND_FOUR = {"died_with_false_fatals": 0, "calm_false_alarms": 0}
# Round five (manifest rows 85-103: 19 logs, 8 deaths), session nine: scored 16/19 ok on the
# unchanged tree (docs/history/logs-notebook.md, "Whole logs, round five"), held apart at the figures measured
# after its change (a traceback a logger wrote at WARNING is judged by that level). Still short:
# two LSF kills whose cause is LSF's report (TERM_RUNLIMIT, TERM_OWNER), which no structure here
# reads, and a CUDA device-side assertion whose AcceleratorError came after two more training
# steps (two criticals; the cause quoted is the assertion, the label names the AcceleratorError).
ROUND_FIVE_FROM = 84
FLOORS_ROUND_FIVE = {
    "died_one_alert_per_failure": 0.875,  # 7/8
    "died_one_page": 1.0,  # 8/8
    "died_cause_quoted": 0.625,  # 5/8
    "died_message_names_cause": 0.625,  # 5/8
    "all_ok": 0.842,  # 16/19
}
CEILINGS_ROUND_FIVE = {"died_with_false_fatals": 2, "calm_false_alarms": 0}  # before its change: 3


def _scorer() -> ModuleType:
    return bench_module("score_whole_logs")


def test_manifest_rows_are_complete_and_name_real_lines() -> None:
    rows = _scorer().load_manifest()
    assert len(rows) >= 84
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert {p.stem for p in FIXTURES.glob("*.log")} == set(ids), "every log has a manifest row and back"
    for r in rows:
        assert r["url"].startswith("https://github.com/") and r["repo"] in r["url"], r["id"]
        assert r["kind"] in ("task", "service") and r["outcome"] in ("died", "completed", "serving"), r["id"]
        lines = (FIXTURES / f"{r['id']}.log").read_text(encoding="utf-8").splitlines()
        assert len(lines) >= 40, f"{r['id']}: {len(lines)} lines; whole logs or at least 40 lines"
        assert all(ln == ln.rstrip() for ln in lines), f"{r['id']}: trailing spaces are trimmed"
        if r["outcome"] == "died":
            assert r["cause"] and r["exit_code"] != 0, r["id"]
            assert r["cause_line"] is None or 1 <= r["cause_line"] <= len(lines), r["id"]
        else:
            assert r["cause_line"] is None and r["exit_code"] == 0, r["id"]
        if r.get("stop_line") is not None:
            assert r["kind"] == "service" and 1 < r["stop_line"] <= len(lines), r["id"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    mod = _scorer()
    # The floors were measured at the fixed 3 ms per line. With the logs' own timestamps
    # (the scorer's default) one death of rows 43-63 leads with its repeat, not its cause:
    # logic-rl-verl-grpo-register-center-assertion (the raylet's ImportError traceback at
    # 138-164, printed again at 198 after a real pause, is then read as survived). Until
    # that is fixed, this test replays at the pace its floors were measured at.
    mod.PACE = "fixed"
    results = mod.run(mod.load_manifest(), tmp_path_factory.mktemp("whole"))
    return results, mod.summarise(results)


def test_whole_logs_meet_the_measured_floors(scored: tuple[list[dict], dict]) -> None:
    results, _ = scored
    summarise = _scorer().summarise
    for part, floors, ceilings in ((results[:ROUND_THREE_FROM], FLOORS, CEILINGS),
                                   (results[ROUND_THREE_FROM:ROUND_FOUR_FROM], FLOORS_ROUND_THREE,
                                    CEILINGS_ROUND_THREE),
                                   (results[ROUND_FOUR_FROM:ROUND_FIVE_FROM], FLOORS_ROUND_FOUR,
                                    CEILINGS_ROUND_FOUR),
                                   (results[ROUND_FIVE_FROM:], FLOORS_ROUND_FIVE, CEILINGS_ROUND_FIVE)):
        totals = summarise(part)
        bad = [r for r in part if not r["ok"]]
        for key, floor in floors.items():
            assert totals[key] is not None and totals[key] >= floor, (key, totals, json.dumps(bad, indent=1))
        for key, ceiling in ceilings.items():
            assert totals[key] <= ceiling, (key, totals, json.dumps(bad, indent=1))


def test_a_startup_death_leads_with_its_root_cause_not_its_echoes(scored: tuple[list[dict], dict]) -> None:
    """vLLM logs "EngineCore failed to start", the ValueError under it, the same traceback again
    and the API server's "see root cause above": the alert names the KV-cache ValueError, once."""
    results, _ = scored
    r = next(x for x in results if x["id"] == "dgx-spark-vllm-laguna-int4-kv-cache")
    assert r["critical_kinds"] == ["fatal-log-event", "stage-failed"], r
    assert r["message"].startswith("failed: ValueError: To serve at least one request"), r["message"]
    g = next(x for x in results if x["id"] == "hijinks-vllm-gemma4-failed-startup")
    assert "ImportError: vllm.vllm_flash_attn requires the CUDA flash attention" in g["message"], g["message"]
    # A chain: the CUDA OOM is "the direct cause" of the script's own RuntimeError; it leads.
    y = next(x for x in results if x["id"] == "teech-yolov8-oom-retries")
    assert y["message"].startswith("failed: RuntimeError: CUDA error: out of memory"), y["message"]


def test_round_two_failures_lead_with_their_cause(scored: tuple[list[dict], dict]) -> None:
    """The second batch's shapes, replayed: a service's start-up exception raised through its
    request frames, a DeepSpeed launcher stopped by SIGINT, Ray's remote traceback, and a vLLM
    engine failure whose traceback is printed twice before the API server's "see root cause"."""
    results, _ = scored
    by_id = {r["id"]: r for r in results}
    assert by_id["hijinks-vllm-gemma4-chunked-mm-valueerror"]["message"].startswith(
        "failed: ValueError: Chunked MM input disabled"), by_id["hijinks-vllm-gemma4-chunked-mm-valueerror"]
    assert by_id["hijinks-vllm-dflash-modulenotfound"]["message"].startswith(
        "failed: ModuleNotFoundError: No module named 'compressed_tensors"), by_id["hijinks-vllm-dflash-modulenotfound"]
    assert "Main process received SIGINT, exiting" in by_id["linskybing-deepspeed-zero3-amd-sigint"]["message"]
    verl = by_id["verl-grpo-ray-actor-unavailable"]
    assert verl["message"].startswith("failed: ray.exceptions.ActorUnavailableError: The actor"), verl
    assert verl["critical_kinds"] == ["fatal-log-event", "stage-failed"] and not verl["false_fatal_lines"], verl
    mt = by_id["meeting-translator-vllm-qwen35-array-typeerror"]
    assert mt["critical_kinds"] == ["fatal-log-event", "stage-failed"], mt
    assert mt["message"].startswith("failed: TypeError: type 'array.array' is not subscriptable"), mt


def test_an_exception_quoting_a_workers_traceback_is_one_event_ending_at_the_workers_error(
        tmp_path: Path) -> None:
    """PyTorch's DataLoader re-raises a worker's error as ``FileNotFoundError: Traceback (most
    recent call last):`` followed by the worker's traceback: one event, whose exception line
    is the worker's ``[Errno 2] No such file`` (github.com/XDong18/hd3, nohup.out)."""
    from conftest import classified_events

    text = (FIXTURES / "hd3-inference-dataloader-filenotfound.log").read_text(encoding="utf-8")
    fatal = [e for e in classified_events(tmp_path, text.rstrip("\n")) if e.kind == "fatal"]
    assert [(e.line, e.end_line) for e in fatal] == [(33, 53)], fatal
    assert fatal[0].text.startswith("FileNotFoundError: [Errno 2] No such file or directory"), fatal[0].text


# -- round two (session seven): the shapes the second 22 logs showed -----------------


def _failed_watch(tmp_path: Path, log_id: str, kind: str, exit_code: int = 1, stop_asked: bool = False) -> StageWatch:
    """A StageWatch that read a whole fixture log and saw its process exit ``exit_code``.

    With ``stop_asked``, the supervisor had asked the attempt to stop before it read the log."""
    (tmp_path / "pipeline.toml").write_text(f'[[stage]]\nname = "s"\nkind = "{kind}"\ncommand = ["true"]\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    log = tmp_path / "s.log"
    log.write_bytes((FIXTURES / f"{log_id}.log").read_bytes())
    now = time.time()
    rec = RunRecord(stage="s", attempt=1, run_id="r1", argv=["true"], cwd=str(tmp_path), log=str(log),
                    launched_at=now - 3600, started_at=now - 3600, pid=1)
    if stop_asked:
        rec.stop_requested_at = now - 1
    (cfg.state_dir / "runs" / "s").mkdir(parents=True, exist_ok=True)
    watch = StageWatch(cfg.stage("s"), rec, cfg, cfg.state_dir, ruleset_for(cfg))
    watch.poll(now)
    rec.exit_code, rec.ended_at = exit_code, now
    watch.finish(rec)
    return watch


def test_a_service_that_exits_right_after_a_request_looking_traceback_died_of_it(tmp_path: Path) -> None:
    """vLLM's API server raises a start-up ValueError through its request-handling frames and
    exits (github.com/jethac/dgx-spark-hijinks): the traceback read as one request's failure,
    but nothing came after it, so it is the cause, not "failed: exit 1"."""
    cause = _failed_watch(tmp_path, "hijinks-vllm-gemma4-chunked-mm-valueerror", "service").cause()
    assert cause is not None and (cause["line"], cause["end_line"]) == (17, 69), cause
    assert cause["text"].startswith("ValueError: Chunked MM input disabled"), cause


def test_a_request_failure_the_server_went_on_after_never_explains_a_later_failure(tmp_path: Path) -> None:
    """Counter-case: Jupyter's completion handler fails (lines 18-75) and the server logs on
    (github.com/Woody5962/Ranked-List-Truncation): were the server to fail later, that request's
    traceback is not why."""
    cause = _failed_watch(tmp_path, "jupyter-notebook-kernel-completion-error", "service").cause()
    assert cause is None or cause["rule"] == "early-exit" or cause["line"] != 18, cause


def test_a_launcher_killing_its_ranks_is_explained_by_its_own_next_line(tmp_path: Path) -> None:
    """DeepSpeed's launcher kills both ranks (lines 300-301), then says why: it got SIGINT
    (github.com/linskybing/LLM, zero_3_amd.log). The failure quotes the reason, not a kill line."""
    cause = _failed_watch(tmp_path, "linskybing-deepspeed-zero3-amd-sigint", "task").cause()
    assert cause is not None and cause["rule"] == "launcher-kill" and cause["end_line"] == 302, cause
    assert cause["text"].endswith("Main process received SIGINT, exiting"), cause


def test_rays_remote_traceback_is_one_event_ending_at_the_remote_exception(tmp_path: Path) -> None:
    """Ray prints ``RayTaskError(ActorUnavailableError): ray::TaskRunner.run() ...`` and then the
    remote frames down to ``ActorUnavailableError: The actor ... is unavailable`` (verl GRPO,
    github.com/Foo1szz/verl, train.out): one traceback 953-986, not a wrapper judged on its own."""
    from conftest import classified_events

    text = (FIXTURES / "verl-grpo-ray-actor-unavailable.log").read_text(encoding="utf-8")
    fatal = [e for e in classified_events(tmp_path, text.rstrip("\n")) if e.kind == "fatal"]
    assert [(e.line, e.end_line) for e in fatal] == [(952, 952), (953, 986), (989, 989)], fatal
    assert fatal[1].text.startswith("ray.exceptions.ActorUnavailableError: The actor"), fatal[1].text


def test_a_wrapper_exception_with_nothing_after_it_ends_its_traceback_soon(tmp_path: Path) -> None:
    """Counter-case, live: the same log read only up to the wrapper's line (969), then silence.
    The traceback is not held open for frames that never come: it ends at 969 within seconds."""
    lines = (FIXTURES / "verl-grpo-ray-actor-unavailable.log").read_text(encoding="utf-8").splitlines()
    log = tmp_path / "live.log"
    log.write_text("\n".join(lines[:969]) + "\n", encoding="utf-8")
    mon = StageLogMonitor(log, stage_kind="task", started_at=0.0)
    first = mon.poll(now=100.0)
    assert not [e for e in first if e.line == 953], first  # frames may still follow
    later = mon.poll(now=102.0)
    tb = [e for e in later if e.line == 953]
    assert [(e.end_line, e.kind) for e in tb] == [(969, "fatal")], later


# -- round three (session eight): what the third 21 logs showed ------------------------


def test_round_three_failures_lead_with_their_cause(scored: tuple[list[dict], dict]) -> None:
    """The third batch's deaths, replayed: an offline vLLM script whose engine dies (its bar drawn
    once more at 0/1 under the traceback), a verl run whose every wrapper only announces the
    import error inside it, and a docker build step whose Python assertion carries BuildKit's prefix."""
    results, _ = scored
    by_id = {r["id"]: r for r in results}
    fi = by_id["hijinks-vllm-offline-flashinfer-enginedead"]
    assert fi["message"].startswith("failed: RuntimeError: Error in function 'BatchPrefillWithPagedKVCacheDispatched'"), fi
    assert not fi["false_fatal_lines"], fi
    # The bar drawn at 0/1 after the error is no progress: the failure pages once.
    assert fi["critical_kinds"] == ["fatal-log-event", "stage-failed"], fi
    rl = by_id["logic-rl-verl-grpo-register-center-assertion"]
    assert rl["message"].startswith("failed: ImportError: /home/tri/miniconda3/envs/logic/lib/python3.9/site-packages/"
                                    "flash_attn_2_cuda"), rl
    dk = by_id["hijinks-docker-build-assertion"]
    assert dk["message"].startswith("failed: AssertionError: patched FlashInfer stride/deswizzle source markers"), dk
    for calm in ("eval-dataset-vllm-judge-server", "memory-rlhf-vllm-qwen25-server", "structrag-vllm-tp4-server",
                 "autoscientists-vllm-server", "dgx-spark-vllm-gemma4-int4-serve", "eagle3-layers-gen-data-qwen3-completed",
                 "linskybing-deepspeed-qr-condaerror-completed"):
        assert by_id[calm]["criticals"] == 0 and not by_id[calm]["false_alarm"], by_id[calm]


def test_a_chain_whose_parts_only_announce_what_follows_is_explained_by_the_exception_inside(
        tmp_path: Path) -> None:
    """Ray's "The actor ... failed to import on the worker ...:" and transformers' "Failed to import
    ... because of the following error (look up to see its traceback):" each only announce the
    error after them; the chain's first exception, inside the span, says what went wrong: flash_attn's
    ImportError (github.com/zhiyuanhubj/logic-rl-formula, grpo.log, line 164)."""
    cause = _failed_watch(tmp_path, "logic-rl-verl-grpo-register-center-assertion", "task").cause()
    assert cause is not None and cause["line"] <= 164 <= cause["end_line"], cause
    assert cause["text"].startswith("ImportError: /home/tri/miniconda3/envs/logic/lib/python3.9/site-packages/"
                                    "flash_attn_2_cuda"), cause


def test_a_part_that_says_what_went_wrong_still_leads_the_failure(tmp_path: Path) -> None:
    """Counter-case: when a part of the error has a message of its own, it leads and the span is
    not searched: the SGLang scheduler's "RuntimeError: Not enough memory. ..." (line 152,
    github.com/jethac/dgx-spark-hijinks), and the SIGTERM line of a vLLM server stopped while it
    waited for GPUs, whose span holds no exception (github.com/ThomasVuNguyen/agent-distillation)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sg = _failed_watch(tmp_path / "a", "hijinks-sglang-gemma4-26b-not-enough-memory", "service").cause()
    assert sg is not None and sg["text"].startswith("RuntimeError: Not enough memory."), sg
    st = _failed_watch(tmp_path / "b", "agent-distillation-vllm-ray-placement-sigterm", "service").cause()
    assert st is not None and st["line"] == 19 and "SIGTERM received" in st["text"], st


def test_a_bar_drawn_again_at_zero_under_a_traceback_is_not_the_process_going_on(tmp_path: Path) -> None:
    """An offline vLLM script: the engine core logs its traceback (59-146), the script's own
    traceback follows, then tqdm draws "Processed prompts: 0% 0/1" once more as the exception
    unwinds through it (github.com/jethac/dgx-spark-hijinks, bf16_flashinfer.log). That bar did
    no work: the engine's RuntimeError is the failure, not a traceback the process went on after."""
    cause = _failed_watch(tmp_path, "hijinks-vllm-offline-flashinfer-enginedead", "task").cause()
    assert cause is not None and cause["line"] <= 146 <= cause["end_line"], cause
    assert cause["text"].startswith("RuntimeError: Error in function 'BatchPrefillWithPagedKVCacheDispatched'"), cause


def test_a_bar_that_advances_after_a_traceback_still_shows_the_process_went_on(tmp_path: Path) -> None:
    """Counter-case: a real program prints a caught exception's traceback, then a tqdm bar that
    counts to 3: it went on, so the traceback is handled even though the process later exits 1."""
    import subprocess
    import sys

    prog = ("import traceback, tqdm\n"
            "try:\n    {}['missing_key']\nexcept KeyError:\n    traceback.print_exc()\n"
            "for _ in tqdm.tqdm(range(3), desc='steps', ascii=True, mininterval=0):\n    pass\n")
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, check=True)
    log = tmp_path / "went_on.log"
    log.write_text(out.stderr, encoding="utf-8")
    assert "steps: 100%" in out.stderr and "KeyError: 'missing_key'" in out.stderr, out.stderr
    mon = StageLogMonitor(log, stage_kind="task", started_at=0.0)
    events = mon.poll(now=100.0)
    events += mon.finish(exit_code=1, now=101.0)
    tb = [e for e in events if e.text.startswith("KeyError")]
    assert [(e.kind, e.rule) for e in tb] == [("warning", "traceback-handled")], events


def test_a_traceback_inside_a_buildkit_step_is_one_event(tmp_path: Path) -> None:
    """docker build --progress=plain prefixes a step's output with its number and seconds ("#9
    1.863 "): peeled like any launcher tag, the step's traceback runs from its header to
    "AssertionError: patched FlashInfer ... were not found" (179-181, github.com/jethac/dgx-spark-hijinks)
    instead of a header alone and an assertion read as an optional part missing. (``classify`` of a
    file cannot see the exit, so the event's kind is left to the replay's test above.)"""
    from conftest import classified_events

    text = (FIXTURES / "hijinks-docker-build-assertion.log").read_text(encoding="utf-8")
    events = classified_events(tmp_path, text.rstrip("\n"))
    tb = [e for e in events if e.line == 179]
    assert [(e.end_line, e.text[:40]) for e in tb] == [(181, "AssertionError: patched FlashInfer strid")], events


def test_buildkit_lines_without_a_step_clock_keep_their_text() -> None:
    """Counter-case, the same build's own lines: a step's title, its end and BuildKit's error report
    carry no seconds and are not peeled; BuildKit's summary quotes the output with the seconds alone."""
    from eagle3tui.logs.workers import split_worker

    lines = (FIXTURES / "hijinks-docker-build-assertion.log").read_text(encoding="utf-8").splitlines()
    for no in (176, 178, 185, 188):  # "#8 DONE 2.0s", "#9 [6/6] RUN ...", "#9 ERROR: ...", "1.863 Traceback ..."
        assert split_worker(lines[no - 1]) == (None, lines[no - 1]), lines[no - 1]
    assert split_worker(lines[180]) == (None, "AssertionError: patched FlashInfer stride/deswizzle source markers "
                                              "were not found"), lines[180]


# -- round four (session nine): the shapes the fourth 21 logs showed ----------------------


def test_an_exception_whose_message_announces_more_is_read_through_that_message(tmp_path: Path) -> None:
    """SGLang's scheduler: ``RuntimeError: Ninja build failed. Ninja output:`` (line 94) and then
    ninja's output, which is that exception's message (github.com/jethac/dgx-spark-hijinks,
    sglang_qwen25_1_5b_fp4kv_patched_flashinfer_..._startup.log). Read as the process going on, its
    "[2/4] nvcc ..." lines were progress (the failure forgot its cause) and "ninja: build stopped"
    a second death. Read as the message, the chain is one event 57-175, through "During handling of
    the above exception" and SGLang's "Possible solutions:" list, up to the launcher's own record."""
    from conftest import classified_events

    text = (FIXTURES / "hijinks-sglang-fp4kv-flashinfer-ninja-build-failed.log").read_text(encoding="utf-8")
    events = classified_events(tmp_path, text.rstrip("\n"), "service")
    fatal = [(e.line, e.end_line) for e in events if e.kind == "fatal"]
    assert fatal == [(57, 57), (57, 175), (178, 178)], events
    assert not [e for e in events if e.kind == "progress" and 57 <= e.line <= 175], events


def test_a_failure_whose_exception_quotes_a_build_leads_with_the_chains_first_exception(tmp_path: Path) -> None:
    """The same log under a StageWatch: the failure spans the chain and quotes its first exception,
    ninja's CalledProcessError (line 62), not "ninja: build stopped: subcommand failed." (168)."""
    cause = _failed_watch(tmp_path, "hijinks-sglang-fp4kv-flashinfer-ninja-build-failed", "service").cause()
    assert cause is not None and cause["line"] == 57 and cause["end_line"] >= 175, cause
    assert cause["text"].startswith("subprocess.CalledProcessError: Command '['ninja', '-v'"), cause


def test_an_announced_message_ends_at_a_log_record_a_frame_or_a_new_traceback(tmp_path: Path) -> None:
    """Counter-cases on real lines (github.com/zhiyuanhubj/logic-rl-formula, grpo.log): Ray's "...
    not installed in the worker environment:" (143) is followed by a blank line and a new
    "Traceback" (145), which is no message text: that traceback ends at 143. transformers' "... (look
    up to see its traceback):" (182) runs through its next lines to Ray's "An unexpected internal
    error occurred ..." (185) and ends at the raylet's time-stamped records (186-197); the raylet's
    "A worker died" (198) and the frames after it are read on their own, as before."""
    from conftest import classified_events

    text = (FIXTURES / "logic-rl-verl-grpo-register-center-assertion.log").read_text(encoding="utf-8")
    # (``classify`` of a file cannot see the exit: a traceback's kind is left to the replay.)
    spans = [(e.line, e.end_line) for e in classified_events(tmp_path, text.rstrip("\n"))]
    assert (138, 143) in spans and (145, 185) in spans and (198, 198) in spans, spans


def test_the_runners_report_that_it_cancelled_the_job_explains_the_failure(tmp_path: Path) -> None:
    """openpi training killed at 12.9k of 200k steps: the log's last line is Slurm's "*** JOB 334949
    ON dgx-03 CANCELLED AT ... ***" (github.com/HEISENYAN/openpi, train_aloha_folding.out), a warning
    since eagle3tui's own stop makes Slurm write it too. Nothing fatal came before and no stop was
    asked: the failure quotes who ended the job, not "exit 143"."""
    cause = _failed_watch(tmp_path, "openpi-train-slurm-cancelled-tail", "task", exit_code=143).cause()
    assert cause is not None and (cause["line"], cause["rule"]) == (60, "slurm-cancelled"), cause
    assert cause["text"].startswith("slurmstepd: error: *** JOB 334949 ON dgx-03 CANCELLED AT"), cause


def test_a_cancellation_the_supervisor_asked_for_or_another_last_warning_is_no_cause(tmp_path: Path) -> None:
    """Counter-cases: the same Slurm report after a stop eagle3tui asked for is the stop, never a
    failure's cause; and a warning that is not the runner's, as the last line of a process that
    vanished (multiprocessing's leaked-semaphore UserWarning, github.com/sostrowsk/dgx-spark-local-llm,
    sglang-versuch1.log), leaves the failure to its exit code."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    stopped = _failed_watch(tmp_path / "a", "openpi-train-slurm-cancelled-tail", "task", exit_code=143,
                            stop_asked=True).cause()
    assert stopped is None, stopped
    vanished = _failed_watch(tmp_path / "b", "dgx-spark-sglang-versuch1-vanished", "service").cause()
    assert vanished is None or vanished["rule"] == "early-exit", vanished


def test_round_four_failures_lead_with_their_cause(scored: tuple[list[dict], dict]) -> None:
    """The fourth batch, replayed: SGLang's FlashInfer JIT build failing inside CUDA-graph capture
    pages once and quotes ninja's CalledProcessError; a Slurm cancellation with nothing fatal before
    it is quoted; an eval launcher whose GPU tasks all ran out of memory leads with the OOM, not with
    the ZeroDivisionError the launcher died of computing a success rate over no results."""
    results, _ = scored
    by_id = {r["id"]: r for r in results}
    nj = by_id["hijinks-sglang-fp4kv-flashinfer-ninja-build-failed"]
    assert nj["critical_kinds"] == ["fatal-log-event", "stage-failed"] and not nj["false_fatal_lines"], nj
    assert nj["message"].startswith("failed: subprocess.CalledProcessError: Command '['ninja'"), nj
    sl = by_id["openpi-train-slurm-cancelled-tail"]
    assert sl["message"].startswith("failed: slurmstepd: error: *** JOB 334949 ON dgx-03 CANCELLED AT"), sl
    oom = by_id["openpi-eval-launcher-tasks-cuda-oom"]
    assert "out of memory" in oom["message"] and "ZeroDivisionError" not in oom["message"], oom



# -- round five (session nine): what the fifth 19 logs showed ---------------------------


def _read_then_exit(tmp_path: Path, lines: list[str], exit_code: int, kind: str = "task") -> list:
    """A live monitor's events for ``lines`` written at once and the process exiting half a second
    later: too soon for "it went on" to be seen by what came after (the replay's pace)."""
    log = tmp_path / "live.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    mon = StageLogMonitor(log, stage_kind=kind, started_at=0.0)
    return mon.poll(now=100.0) + mon.finish(exit_code=exit_code, now=100.5)


def test_a_traceback_its_logger_wrote_at_warning_is_a_warning_even_when_the_job_dies_soon_after(
        tmp_path: Path) -> None:
    """torch._dynamo logs each graph it cannot compile as "[WARNING] WON'T CONVERT ... due to:" and a
    traceback every line of which carries "torch._dynamo.convert_frame: [WARNING]", then runs the code
    eagerly (github.com/MrCogito/Deep_learning_2023, WeightInit_0.md: PaiNN training killed by LSF at
    its run-time limit, exit 140). The program caught those exceptions: they are warnings by the level
    it gave them, not the fatal ends of a process that died 100 lines later with no line of its own."""
    lines = (FIXTURES / "painn-lsf-weightinit-runlimit-usr2.log").read_text(encoding="utf-8").splitlines()
    events = _read_then_exit(tmp_path, lines, 140)
    tbs = [e for e in events if e.line in (12, 23, 38, 57, 68, 79, 90, 101, 112)]
    assert len(tbs) == 9 and {(e.kind, e.rule) for e in tbs} == {("warning", "traceback-logged")}, tbs
    # Nothing the program wrote before the shell's "User defined signal 2" (121) is fatal.
    assert not [e for e in events if e.kind == "fatal" and e.line < 121 and e.rule != "early-exit"], events
    cause = _failed_watch(tmp_path, "painn-lsf-weightinit-runlimit-usr2", "task", exit_code=140).cause()
    assert cause is None or cause["line"] > 120, cause  # not a dynamo warning's traceback


def test_a_traceback_logged_at_error_or_printed_raw_before_a_death_is_still_its_cause(tmp_path: Path) -> None:
    """Counter-cases on real lines: a vLLM worker's traceback logged at ERROR ("(Worker pid=40539) ERROR
    ... [multiproc_executor.py:901] Traceback ...", github.com/swiss-ai/apertus-speculative-decoding,
    engine-error.log) and a raw one Python printed (sentencepiece's "TypeError: not a string",
    github.com/apollo-mg/Project-Apollo, vllm_results_fp8.log) stay fatal when the process then fails."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    err = (FIXTURES / "apertus-vllm-70b-draft-tp-mismatch.log").read_text(encoding="utf-8").splitlines()
    fatal = [e for e in _read_then_exit(tmp_path / "a", err, 1, "service") if e.kind == "fatal"]
    tb = [e for e in fatal if e.rule == "traceback"]
    assert [(e.line, e.end_line) for e in tb] == [(4, 29)], fatal
    assert tb[0].text.startswith("ValueError: Currently, 'draft_tensor_parallel_size'"), tb
    raw = (FIXTURES / "apollo-vllm-fp8-mistral-tokenizer-typeerror.log").read_text(encoding="utf-8").splitlines()
    fatal = [e for e in _read_then_exit(tmp_path / "b", raw, 1) if e.kind == "fatal"]
    assert [(e.line, e.end_line, e.text) for e in fatal][:1] == [(23, 70, "TypeError: not a string")], fatal


def test_round_five_deaths_quote_no_warning_a_logger_wrote(scored: tuple[list[dict], dict]) -> None:
    """The fifth batch, replayed: the PaiNN job LSF killed at its time limit no longer leads with
    torch._dynamo's "[WARNING] ... BackendCompilerFailed" traceback (its message quotes LSF's "Exited
    with exit code 140." report, not yet its TERM_RUNLIMIT line), with no false fatal before it; the
    completed twin full of the same warnings stays quiet; a llama.cpp abort on a ROCm hardware
    exception and a vLLM draft-model TP mismatch lead with their causes and page once."""
    results, _ = scored
    by_id = {r["id"]: r for r in results}
    wi = by_id["painn-lsf-weightinit-runlimit-usr2"]
    assert not wi["false_fatal_lines"] and "BackendCompilerFailed" not in wi["message"], wi
    calm = by_id["painn-lsf-dynamo-warnings-completed"]
    assert calm["criticals"] == 0 and not calm["false_alarm"], calm
    ll = by_id["apollo-llamacpp-rocm-hsa-exception-abort"]
    assert ll["message"].startswith("failed: ROCm error: unspecified launch failure"), ll
    ap = by_id["apertus-vllm-70b-draft-tp-mismatch"]
    assert ap["message"].startswith("failed: ValueError: Currently, 'draft_tensor_parallel_size'"), ap
    assert ap["critical_kinds"] == ["fatal-log-event", "stage-failed"], ap
