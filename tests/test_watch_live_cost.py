"""Following a live log costs little and keeps little (issue 34): behaviour, not timing.

Real files, a real StageWatch and a real driver process killed with SIGKILL.
What is counted: records in verdicts.jsonl, alerts handed over per poll,
saves of the alerted mark, alerts in alerts.jsonl. Never a duration.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from conftest import wait_for

from eagle3tui.config import load_config
from eagle3tui.supervisor import stage_alerts
from eagle3tui.supervisor.fatal_peek import FatalPeek
from eagle3tui.supervisor.records import RunRecord
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from eagle3tui.supervisor.wakeups import DriverWakeups

WARNING = ("/usr/lib/python3/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs "
           "have requires_grad=True. Gradients will be None\n")
FATAL = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity\n"


def _watch(tmp_path: Path, text: str) -> StageWatch:
    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "s"\ncommand = ["true"]\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    log = tmp_path / "s.log"
    log.write_text(text)
    now = time.time()
    rec = RunRecord(stage="s", attempt=1, run_id="r1", argv=["true"], cwd=str(tmp_path), log=str(log),
                    launched_at=now - 60, started_at=now - 60, pid=1)
    (cfg.state_dir / "runs" / "s").mkdir(parents=True, exist_ok=True)
    return StageWatch(cfg.stage("s"), rec, cfg, cfg.state_dir, ruleset_for(cfg))


def _verdict_lines(w: StageWatch) -> list[dict]:
    if not w.verdicts_path.exists():
        return []
    return [json.loads(x) for x in w.verdicts_path.read_text().splitlines()]


def test_a_run_of_one_repeated_warning_is_one_verdict_record(tmp_path: Path) -> None:
    n = 3000
    w = _watch(tmp_path, "step 1 starting\n" + WARNING * n + "done\n")
    while True:
        w.poll()
        if not w.behind:
            break
    recs = _verdict_lines(w)
    assert len(recs) <= 2, f"{len(recs)} verdict records for {n} lines of one warning"
    # The TUI still marks every one of those lines.
    marked = {no for r in recs if r["kind"] == "warning" for no in range(r["line"], r["end_line"] + 1)}
    assert marked == set(range(2, n + 2))


def test_plain_output_writes_no_verdicts(tmp_path: Path) -> None:
    lines = "".join(f"[rank{i % 8}]: step {i} loss=1.{i % 97:02d} tokens/s=1{i % 1000:03d}\n" for i in range(5000))
    w = _watch(tmp_path, lines)
    w.poll()
    assert _verdict_lines(w) == []


def test_what_a_poll_hands_over_is_bounded_for_a_burst_of_repeated_warnings(tmp_path: Path) -> None:
    """A backlog far larger than a poll's byte bound: each poll hands over at most a bound's
    worth of alerts, and the polls together hand over every line (nothing lost)."""
    n = 3 * stage_alerts.POLL_BYTES // len(WARNING)  # three bounds' worth of lines
    w = _watch(tmp_path, WARNING * n)
    per_line_cap = (stage_alerts.POLL_BYTES + w.monitor.follower.block_size) // len(WARNING)  # + one read
    total = 0
    polls = 0
    while True:
        alerts = w.poll()
        polls += 1
        assert len(alerts) <= per_line_cap, f"one poll handed over {len(alerts)} alerts"
        total += sum(1 for a in alerts if a[1] == "log-warning")
        if not w.behind:
            break
    assert polls >= 3
    assert total == n
    assert w.monitor.line_no == n


def test_polls_without_alerts_do_not_save_the_mark_each_time(tmp_path: Path, monkeypatch) -> None:
    w = _watch(tmp_path, "")
    saves = []
    real = w._write_seen
    monkeypatch.setattr(w, "_write_seen", lambda: (saves.append(1), real())[1])
    log = Path(w.log_path)
    with open(log, "a") as f:
        for i in range(200):
            f.write(f"step {i} loss=1.{i:03d}\n")
            f.flush()
            alerts = w.poll()
            assert alerts == []
            w.commit_seen(None, alerted=bool(alerts))
    # 200 polls in well under a few seconds: the mark went to disk a handful of times, not 200.
    assert len(saves) <= 10, f"{len(saves)} saves of the mark for 200 quiet polls"
    # And a poll that alerts saves it at once, up to its line.
    with open(log, "a") as f:
        f.write(FATAL)
    alerts = w.poll()
    assert any(a[1] == "fatal-log-event" for a in alerts)
    w.commit_seen(None, alerted=True)
    assert json.loads(w.seen_path.read_text())["alerted_line"] == 201


def test_fatal_peek_sees_a_fatal_keyword_once(tmp_path: Path) -> None:
    w = _watch(tmp_path, "")
    log = Path(w.log_path)
    rules = w.monitor.rules
    peek = FatalPeek(str(log))
    log.write_text("step 1 loss=2.0\n" * 100)
    assert not peek.ahead(0, rules)
    with open(log, "a") as f:
        f.write(FATAL)
    assert peek.ahead(0, rules)
    assert not peek.ahead(0, rules), "the same bytes are looked at once"
    assert w.fatal_ahead()


NCCL_INFO = "node-03:26841:26900 [0] NCCL INFO Channel 07/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
NCCL_FATAL = ("[rank0]:[E1206 10:00:00.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
              "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600030 ms\n")


def test_fatal_peek_is_not_woken_by_a_keyword_alone(tmp_path: Path) -> None:
    """``NCCL`` is a fatal rule's keyword and sits in every NCCL INFO line: the peek searches the
    line with that rule's pattern, so chatty ranks do not run a pass per peek."""
    w = _watch(tmp_path, "")
    log = Path(w.log_path)
    rules = w.monitor.rules
    peek = FatalPeek(str(log))
    log.write_text(NCCL_INFO * 200)
    assert not peek.ahead(0, rules), "an NCCL INFO line is not a fatal line"
    with open(log, "a") as f:
        f.write(NCCL_INFO + NCCL_FATAL)
    assert peek.ahead(0, rules)


def test_fatal_peek_looks_again_at_a_line_written_in_two_parts(tmp_path: Path) -> None:
    """The keyword arrives before the words the pattern needs: the unfinished line is looked at
    again once it is finished, not passed over."""
    w = _watch(tmp_path, "")
    log = Path(w.log_path)
    rules = w.monitor.rules
    peek = FatalPeek(str(log))
    head, tail = NCCL_FATAL[:40], NCCL_FATAL[40:]
    log.write_text(NCCL_INFO + head)
    assert not peek.ahead(0, rules)
    with open(log, "a") as f:
        f.write(tail)
    assert peek.ahead(0, rules)


def test_fatal_peek_reads_the_readers_descriptor(tmp_path: Path) -> None:
    """Given the follower's descriptor, the peek looks at the file the follower reads, even
    after the path was renamed away, and opens nothing itself."""
    w = _watch(tmp_path, "step 1\n")
    w.poll()
    fd = w.monitor.follower.fileno()
    assert fd is not None
    log = Path(w.log_path)
    log.rename(tmp_path / "s.log.1")
    with open(tmp_path / "s.log.1", "a") as f:
        f.write(FATAL)
    assert w.fatal_ahead(), "the fatal line written to the file still being read"


def _fatal_alerts_of(tmp_path: Path, reads: list[str]) -> list[tuple[str, str]]:
    """(level, message) of the fatal alerts a watch gives when the log grows by ``reads``, a poll each."""
    tmp_path.mkdir()
    w = _watch(tmp_path, "step 0/1000 | 0% | 0/1000 [00:00<01:00, 2.0it/s]\n")
    w.poll()
    got = []
    for text in reads:
        with open(w.log_path, "a") as f:
            f.write(text)
        got += [(a[0], a[2]) for a in w.poll() if a[1] == "fatal-log-event"]
    return got


def test_progress_between_two_errors_of_one_read_makes_the_second_a_new_failure(tmp_path: Path) -> None:
    """Error, progress, error: read line by line the second error pages again (the job went on
    after the first); read with the progress and the second error together (the driver coalesces
    wake-ups) it must page too, not be folded into the first failure as its echo."""
    def lines(n: int) -> list[str]:
        return [NCCL_FATAL.replace("SeqNum=9", f"SeqNum={n}"), f"step {n}/1000 | {n}/1000 [00:0{n}<01:00, 2.0it/s]\n"]
    seq = [x for n in range(1, 5) for x in lines(n)]
    one_by_one = _fatal_alerts_of(tmp_path / "a", seq)
    together = _fatal_alerts_of(tmp_path / "b", [seq[0], *(seq[i] + seq[i + 1] for i in range(1, len(seq) - 1, 2))])
    assert [lv for lv, _ in one_by_one] == ["critical"] * 4
    assert together == one_by_one


def test_driver_wakeups_on_a_followed_file_not_on_its_neighbours(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    cmds = tmp_path / "commands"
    cmds.mkdir()
    followed, other = logs / "a.log", logs / "b.log"
    followed.touch()
    other.touch()
    w = DriverWakeups(use_inotify=True).start()
    try:
        w.add(followed)
        w.add_dir(cmds)
        assert not w.wait(0.05)
        other.write_text("not followed\n")
        assert not w.wait(0.05), "a write to a file nobody follows woke the driver"
        for i in range(500):  # many small writes: one wake-up drains them all
            with open(followed, "a") as f:
                f.write(f"line {i}\n")
        assert w.wait(1.0)
        assert not w.wait(0.05), "the writes before the wake-up were drained with it"
        (cmds / "c.json").write_text("{}")
        assert w.wait(1.0)
        w.remove(followed)
        with open(followed, "a") as f:
            f.write("after remove\n")
        assert not w.wait(0.05)
    finally:
        w.stop()


def test_driver_wakeups_polling_fallback(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.touch()
    w = DriverWakeups(poll_interval=0.02, use_inotify=False).start()
    try:
        assert w.mode == "polling"
        w.add(log)
        w.wait(0.1)  # the add itself counts as a change
        log.write_text("x\n")
        assert wait_for(lambda: w.wait(0.1), timeout=5, what="the stat poll to see the write")
    finally:
        w.stop()


EMIT = """
import os, sys, time
gate = sys.argv[1]
print("RuntimeError: CUDA out of memory (first, the one alert)", flush=True)
while not os.path.exists(gate):
    time.sleep(0.02)
for i in range(300):
    print(f"step {i} loss=1.{i:03d}", flush=True)
"""


def test_an_alert_survives_kill_9_once(pipeline) -> None:
    """The driver is killed -9 right after a fatal line's alert is on disk; the next driver
    reads the log from the start again and sends that alert no second time."""
    script = pipeline.root / "emit.py"
    script.write_text(EMIT)
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [alerts]
        dedup_window = "0s"

        [[stage]]
        name = "s"
        command = ["{sys.executable}", "{script}", "{gate}"]
    """)
    pipeline.cli("start", "s", check=True)

    def fatal() -> list[dict]:
        return [a for a in pipeline.alerts() if a["kind"] == "fatal-log-event"]

    wait_for(fatal, timeout=30, what="the fatal alert")
    pid = pipeline.driver_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: pipeline.driver_pid() != pid, timeout=10, what="the killed driver gone")
    gate.write_text("")
    pipeline.cli("start", "s")  # a new driver reattaches (the stage still runs)
    wait_for(lambda: pipeline.records("s")[-1].get("extra", {}).get("finalized"), timeout=60,
             what="the stage settled")
    assert len(fatal()) == 1, [a["message"] for a in fatal()]


def test_a_stage_that_ends_with_a_backlog_is_read_in_bounded_polls(pipeline) -> None:
    """A stage writes three polls' worth of one warning and exits at once: the driver reads
    the rest over several bounded polls (one verdict run each), not in one read at the end,
    and every line is counted in the merged warning."""
    n = 3 * stage_alerts.POLL_BYTES // len(WARNING)
    script = pipeline.root / "burst.py"
    script.write_text(f"import os\nos.write(1, {WARNING!r}.encode() * {n})\n")
    pipeline.write(f"""
        [[stage]]
        name = "b"
        command = ["{sys.executable}", "{script}"]
    """)
    pipeline.cli("start", "b", check=True)
    wait_for(lambda: pipeline.records("b") and pipeline.records("b")[-1].get("extra", {}).get("finalized"),
             timeout=120, what="the burst stage settled")
    warned = sum(int(a.get("count") or 1) for a in pipeline.alerts() if a["kind"] == "log-warning")
    assert warned == n
    runs = pipeline.state_dir / "runs" / "b" / "0001.verdicts.jsonl"
    recs = [json.loads(x) for x in runs.read_text().splitlines()]
    # One run per poll: at least three polls (never one read of it all), and runs, not a record a line.
    assert 3 <= len(recs) <= 50, f"{len(recs)} verdict records for {n} lines"
    assert sum(r["end_line"] - r["line"] + 1 for r in recs) == n


def test_a_log_with_a_fatal_line_is_read_before_the_busy_ones(tmp_path: Path, monkeypatch) -> None:
    """Three stages' logs have new lines and a fourth's a fatal line: the driver's next pass reads
    the fatal one first and writes its alert before it reads the others."""
    from eagle3tui.alerts import build_hub
    from eagle3tui.supervisor.driver import Driver

    text = "".join(f'[[stage]]\nname = "s{i}"\ncommand = ["sleep", "60"]\n' for i in range(3))
    text += '[[stage]]\nname = "target"\ncommand = ["sleep", "60"]\n'
    (tmp_path / "pipeline.toml").write_text(text)
    config = load_config(tmp_path / "pipeline.toml")
    hub = build_hub(config)
    driver = Driver(config, hub=hub, exit_when_idle=False, gpu=False)
    order: list[str] = []
    alerts_at: list[int] = []
    hub.add_sink(lambda a: alerts_at.append(len(order)) if a.kind == "fatal-log-event" else None)
    try:
        driver.execute({"op": "start", "all": True})
        wait_for(lambda: (driver.tick(), len(driver.watches) == 4)[1], timeout=30, what="four stages followed")
        real = StageWatch.poll

        def poll(self, now=None):
            before = self.monitor.line_no
            out = real(self, now)
            if self.monitor.line_no != before:
                order.append(self.stage.name)
            return out

        monkeypatch.setattr(StageWatch, "poll", poll)
        for i in range(3):
            with open(driver.watches[f"s{i}"].log_path, "a") as f:
                f.write("".join(f"step {n} loss=1.{n:03d}\n" for n in range(200)))
        with open(driver.watches["target"].log_path, "a") as f:
            f.write(NCCL_FATAL)
        driver.tick()
        assert order[0] == "target", order
        assert alerts_at == [1], "the fatal alert was written before any other log was read"
        assert sorted(order) == ["s0", "s1", "s2", "target"]
    finally:
        for name in list(driver.watches):
            driver.stop_stage(name, reason="test")
        driver.tick()
        hub.close()
