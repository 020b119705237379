"""StageLogMonitor on real logs: fixtures, live processes, tracebacks, early exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eagle3tui.logs.follower import LogWatcher
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.rules import build_ruleset
from eagle3tui.logs.stall import GpuWitness

FIX = Path(__file__).parent / "fixtures" / "logs"
RULES = build_ruleset()


def _run(path: Path, exit_code: int | None = None, **kw) -> tuple[StageLogMonitor, list]:
    m = StageLogMonitor(path, rules=RULES, went_on_s=0.0, **kw)
    ev = m.poll()
    ev += m.finish(exit_code=exit_code)
    return m, ev


def _kinds(events, kind: str) -> list:
    return [e for e in events if e.kind == kind]


def test_seed_extraction_log() -> None:
    m, ev = _run(FIX / "issues" / "seed_extraction.log", estimate_s=22 * 60)
    benign = _kinds(ev, "benign")
    assert [(e.line, e.rule) for e in benign] == [(1, "triton-kernels-import")]
    assert "safe to ignore" in benign[0].explanation
    assert not _kinds(ev, "fatal")
    # 4 of 64 shards projects +31%, but is no evidence yet: shown, not alerted.
    assert not [e for e in ev if e.rule == "eta-drift"]
    assert m.eta is not None and m.eta.drift is not None and m.eta.drift > 0.25
    assert m.progress is not None and (m.progress.n, m.progress.total) == (4, 64)
    assert m.progress.worker == "Worker_TP0"
    assert m.eta is not None and 30 * 60 <= m.eta.projected_s <= 33 * 60  # type: ignore[operator]


@pytest.mark.parametrize(
    ("name", "exit_code", "rule", "lines"),
    [
        ("captured_torch_oom.log", 1, "oom", (2, 6)),
        ("captured_safetensors_corrupt.log", 1, "safetensors-corrupt", (2, 8)),
        ("captured_traceback_exit.log", 1, "traceback", (2, 8)),
        ("captured_traceback_chained.log", 1, "traceback", (1, 13)),
        ("captured_argparse_unrecognized.log", 2, "usage-error", (2, 2)),
        ("captured_argparse_required.log", 2, "usage-error", (2, 2)),
        ("captured_argparse_choice.log", 2, "usage-error", (2, 2)),
        ("captured_segfault.log", -11, "crash-signal", (2, 2)),
        ("issues/safetensors_header_too_large.log", None, "safetensors-corrupt", (2, 7)),
        ("issues/vllm_engine_dead.log", None, "vllm-engine-dead", (3, 9)),
        ("issues/torchrun_child_failed.log", None, "torchrun-child-failed", (1, 1)),
        ("issues/nccl_watchdog_timeout.log", None, "nccl", (1, 1)),
    ],
)
def test_fatal_fixtures(name: str, exit_code: int | None, rule: str, lines: tuple[int, int]) -> None:
    # The exit code recorded when the fixture was captured, as the supervisor knows it.
    if exit_code is not None:
        assert int((FIX / (name + ".exit")).read_text()) == exit_code
    _, ev = _run(FIX / name, exit_code=exit_code)
    fatal = [e for e in _kinds(ev, "fatal") if e.rule != "early-exit"]
    assert fatal, name
    assert (fatal[0].rule, (fatal[0].line, fatal[0].end_line)) == (rule, lines)
    assert fatal[0].explanation


def test_no_fatal_in_healthy_fixtures() -> None:
    for name in ("captured_tqdm.log", "issues/vllm_triton_import_benign.log", "issues/vllm_worker_loading.log"):
        _, ev = _run(FIX / name, exit_code=0)
        assert not _kinds(ev, "fatal"), (name, [(e.line, e.rule) for e in ev])


def test_handled_traceback_is_not_fatal() -> None:
    _, ev = _run(FIX / "captured_traceback_handled.log", exit_code=0)
    tb = [e for e in ev if e.line == 4]
    assert len(tb) == 1 and tb[0].kind == "warning" and tb[0].rule == "traceback-handled"
    assert tb[0].end_line == 8 and tb[0].text == "KeyError: 'missing_key'"


def test_same_traceback_judged_by_exit_code(tmp_path: Path) -> None:
    src = (FIX / "captured_traceback_exit.log").read_bytes()
    p = tmp_path / "x.log"
    p.write_bytes(src)
    m = StageLogMonitor(p, rules=RULES)
    assert m.poll() == []  # not judged yet: did the process go on?
    assert len(m.pending) == 1
    ev = m.finish(exit_code=0)
    assert [(e.kind, e.rule) for e in ev] == [("warning", "traceback-handled")]
    m2 = StageLogMonitor(p, rules=RULES, started_at=time.time() - 3600)
    m2.poll()
    ev2 = m2.finish(exit_code=1)
    assert [(e.kind, e.rule) for e in ev2] == [("fatal", "traceback")]  # no early-exit: ran an hour


def test_interleaved_worker_tracebacks(tmp_path: Path) -> None:
    p = tmp_path / "w.log"
    p.write_text(
        textwrap.dedent(
            """\
            [rank0]: Traceback (most recent call last):
            [rank1]: Traceback (most recent call last):
            [rank0]:   File "train.py", line 10, in <module>
            [rank1]:   File "train.py", line 10, in <module>
            [rank0]:     step()
            [rank1]:     step()
            [rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
            [rank0]: ValueError: shapes do not match
            (VllmWorker rank=3 pid=10672) ERROR 01-01 00:00:00 [worker.py:1] Traceback (most recent call last):
            (VllmWorker rank=3 pid=10672) ERROR 01-01 00:00:00 [worker.py:1]   File "w.py", line 2, in run
            (VllmWorker rank=3 pid=10672) ERROR 01-01 00:00:00 [worker.py:1]     x()
            (VllmWorker rank=3 pid=10672) ERROR 01-01 00:00:00 [worker.py:1] RuntimeError: CUDA error: an illegal memory access was encountered
            [2025-01-01 00:00:00] Scheduler hit an exception: Traceback (most recent call last):
              File "scheduler.py", line 1, in run_scheduler_process
                scheduler.event_loop()
            KeyError: 'req-7'
            """
        )
    )
    _, ev = _run(p, exit_code=1)
    got = sorted((e.line, e.end_line, e.kind, e.rule, e.worker) for e in ev if e.rule != "early-exit")
    assert (2, 7, "fatal", "oom", "rank1") in got
    assert (1, 8, "fatal", "traceback", "rank0") in got
    assert (9, 12, "fatal", "cuda-error", "VllmWorker rank=3") in got
    assert (13, 13, "fatal", "vllm-engine-dead", None) in got
    assert (13, 16, "fatal", "traceback", None) in got


def test_early_exit_reports_usage_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    script = tmp_path / "train_eagle3.py"
    script.write_text(
        "import argparse\n"
        "ap = argparse.ArgumentParser()\n"
        "ap.add_argument('--prepared-data', required=True)\n"
        "ap.parse_args()\n"
    )
    mon = StageLogMonitor(log, rules=RULES, stage="train")
    with open(log, "wb") as out:
        rc = subprocess.run(
            [sys.executable, str(script), "--data-path", "/data"], stdout=out, stderr=subprocess.STDOUT, check=False
        ).returncode
    assert rc == 2
    ev = mon.poll() + mon.finish(exit_code=rc)
    early = [e for e in ev if e.rule == "early-exit"]
    assert len(early) == 1
    assert early[0].text.startswith("usage: train_eagle3.py")
    assert "the following arguments are required: --prepared-data" in early[0].text
    assert "exit 2" in early[0].explanation
    assert any(e.rule == "usage-error" for e in ev)
    assert mon.tail_errors(3)[-1].rule == "early-exit"


def test_live_follow_real_process_latency(tmp_path: Path) -> None:
    """A real process writes progress, then an OOM line; the monitor sees it soon."""
    log = tmp_path / "live.log"
    go = tmp_path / "go"
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import os, sys, time
            from tqdm import tqdm
            out = open({str(log)!r}, "a", buffering=1)
            for _ in tqdm(range(20), desc="shards", file=out, mininterval=0):
                time.sleep(0.01)
            print("(Worker_TP0 pid=1) INFO ready", file=out, flush=True)
            while not os.path.exists({str(go)!r}):
                time.sleep(0.01)
            print("(Worker_TP0 pid=1) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB", file=out, flush=True)
            time.sleep(30)
            """
        )
    )
    log.write_bytes(b"")
    mon = StageLogMonitor(log, rules=RULES)
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        with LogWatcher([log], poll_interval=0.05) as w:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                mon.poll()
                if mon.progress is not None and mon.progress.n == 20:
                    break
                w.wait(0.2)
            assert mon.progress is not None and mon.progress.n == 20
            t0 = time.monotonic()
            go.write_text("x")
            fatal = []
            while time.monotonic() < deadline and not fatal:
                w.wait(0.2)
                fatal = _kinds(mon.poll(), "fatal")
            latency = time.monotonic() - t0
        assert fatal and fatal[0].rule == "oom" and fatal[0].worker == "Worker_TP0"
        assert latency < 5.0  # generous for a loaded CI box; bench/ measures the real figure
        assert mon.last_output_at is not None
    finally:
        proc.kill()
        proc.wait()


def test_stall_check_names_last_progress(tmp_path: Path) -> None:
    p = tmp_path / "s.log"
    p.write_text("shards:   6% Completed | 4/64 [01:33<27:17, 27.30s/it]\n")
    m = StageLogMonitor(p, rules=RULES, stall_floor_s=60, stall_k=10, started_at=0)
    m.poll(now=100)
    assert m.check(now=300) == []  # limit is 10 x 27.3 s = 273 s after the last output
    ev = m.check(now=400, gpu=GpuWitness(memory_changing=False, busy=False))
    assert len(ev) == 1 and ev[0].rule == "hang-suspected"
    assert "shards 4/64" in ev[0].text
    assert m.check(now=500) == []
    with open(p, "a") as f:
        f.write("shards:   8% Completed | 5/64 [02:00<27:00, 27.00s/it]\n")
    m.poll(now=600)
    ev = m.check(now=1000, gpu=GpuWitness(memory_changing=True, busy=True))
    assert [e.rule for e in ev] == ["quiet-but-working"]


def test_truncation_mid_monitor_and_counts(tmp_path: Path) -> None:
    p = tmp_path / "t.log"
    p.write_text("ERROR 1 [a.py:1] first problem\n")
    m = StageLogMonitor(p, rules=RULES, include_info=True, stage_kind="service")
    # An error naming no family is held until the process shows what it does
    # next; with nothing after it, it stays an error-line warning after went_on_s.
    # (A service: in a task, an error line without a source is the command's final
    # report, pending rather than held.)
    assert m.poll(now=100.0) == [] and [e.rule for e in m.held] == ["error-line"]
    assert [e.rule for e in m.poll(now=111.0)] == ["error-line"]
    with open(p, "r+") as f:
        f.truncate(0)
    with open(p, "a") as f:
        f.write("Killed\n")
    ev = m.poll()
    assert [e.rule for e in ev] == ["log-reset", "killed"]
    assert ev[1].line == 1
    assert m.counts["fatal"] == 1 and m.counts["warning"] == 1
    assert [e.rule for e in m.tail_errors(5)] == ["error-line", "killed"]


def test_progress_events_and_never_ending_bar(tmp_path: Path) -> None:
    p = tmp_path / "bar.log"
    with open(p, "w") as f:
        f.writelines(f"\rgen: {i * 2}%|#   | {i}/50 [00:{i:02d}<00:50, 1.00it/s]" for i in range(50))
    m = StageLogMonitor(p, rules=RULES, progress_events=True)
    ev = m.poll()
    # The bar never wrote a newline: its \r segments still update progress.
    assert m.progress is not None and m.progress.n == 48
    assert ev and ev[-1].kind == "progress" and ev[-1].to_json()["n"] == 48


def test_offset_resume(tmp_path: Path) -> None:
    p = tmp_path / "r.log"
    p.write_text("ok\nKilled\n")
    m = StageLogMonitor(p, rules=RULES)
    assert len(m.poll()) == 1
    off, no = m.offset, m.line_no
    with open(p, "a") as f:
        f.write("Segmentation fault (core dumped)\n")
    m2 = StageLogMonitor(p, rules=RULES, offset=off, line_no=no)
    ev = m2.poll()
    assert [(e.line, e.rule) for e in ev] == [(3, "crash-signal")]


@pytest.mark.slow
def test_large_log_bounded_memory(tmp_path: Path) -> None:
    """Catch up on a 1 GiB log in a fresh process; its peak RSS stays small."""
    big = tmp_path / "big.log"
    block = (
        b"(Worker_TP0 pid=268417) INFO 02-22 00:33:37 [compressed_tensors_moe.py:199] Using Marlin\n" * 4000
        + b"\rshards:  50%|#####     | 32/64 [15:00<15:00, 28.00s/it]" * 50
        + b"\n"
    )
    with open(big, "wb") as f:
        written = 0
        while written < (1 << 30):
            f.write(block)
            written += len(block)
        f.write(b"torch.OutOfMemoryError: CUDA out of memory.\n")
    code = textwrap.dedent(
        f"""\
        from eagle3tui.logs.monitor import StageLogMonitor
        m = StageLogMonitor({str(big)!r})
        ev = m.poll()
        # VmHWM is this address space's peak. ru_maxrss is not: it survives
        # execve, so it would report the (large) pytest parent after a vfork.
        hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
        print(len([e for e in ev if e.kind == "fatal"]), m.line_no, hwm // 1024)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=os.getcwd()
    ).stdout.split()
    fatal, lines, rss_mb = int(out[0]), int(out[1]), int(out[2])
    assert fatal == 1
    assert lines > 10_000_000
    assert rss_mb < 150, rss_mb


def test_rotation_mid_monitor_line_numbers(tmp_path: Path) -> None:
    p = tmp_path / "rot.log"
    p.write_text("ok\nok\n")
    m = StageLogMonitor(p, rules=RULES)
    assert m.poll() == [] and m.line_no == 2
    with open(p, "a") as f:
        f.write("Killed\nunfinished ERROR line")
    os.rename(p, tmp_path / "rot.log.1")
    p.write_text("fresh\nSegmentation fault (core dumped)\n")
    ev = m.poll()
    assert [(e.line, e.rule) for e in ev] == [(3, "killed"), (4, "error-line"), (2, "crash-signal")]
    assert m.line_no == 2


def test_traceback_interrupted_by_other_output(tmp_path: Path) -> None:
    p = tmp_path / "i.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "INFO 01-01 00:00:00 [api.py:1] request done\n"
        "Segmentation fault (core dumped)\n"
    )
    _, ev = _run(p, exit_code=139)
    got = [(e.line, e.end_line, e.kind, e.rule) for e in ev if e.rule != "early-exit"]
    assert (4, 4, "fatal", "crash-signal") in got
    tb = [g for g in got if g[0] == 1]
    assert tb == [(1, 2, "fatal", "traceback")]


def test_server_live_figures(tmp_path: Path) -> None:
    """Throughput, running/queued requests and KV usage of a server, under stable names."""
    p = tmp_path / "serve.log"
    p.write_text(
        "INFO 05-06 10:00:01 [loggers.py:111] Engine 000: Avg prompt throughput: 1520.3 tokens/s, "
        "Avg generation throughput: 812.4 tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 41.2%, "
        "Prefix cache hit rate: 0.0%\n"
        "[2025-05-06 10:00:02] Decode batch. #running-req: 33, #token: 20480, token usage: 0.25, "
        "cuda graph: True, gen throughput (token/s): 2310.55, #queue-req: 1,\n"
    )
    m = StageLogMonitor(p, rules=RULES, stage_kind="service")
    ev = m.poll()
    assert not [e for e in ev if e.kind in ("fatal", "warning")]
    assert m.figures == {"prompt_throughput_tok_s": 1520.3, "throughput_tok_s": 2310.55, "running_reqs": 33.0,
                         "queued_reqs": 1.0, "kv_usage": 0.25}
    assert m.figures_line == 2
