"""The ``[alerts] command`` notifier: real commands, real processes, hostile text."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from conftest import wait_for

from eagle3tui.alerts import Alert, AlertHub, build_hub
from eagle3tui.config import load_config
from eagle3tui.errors import ConfigError
from eagle3tui.alerts.notifier import Notifier

EVIL = "ERROR: $(touch pwned1) `touch pwned2` \"; touch pwned3; \" '; touch pwned4; ' $HOME"

# A notifier that records what it got: stdin (the alert JSON) and its EAGLE3TUI_ env.
RECORDER = textwrap.dedent("""
    import json, os, sys, time
    out = sys.argv[1]
    data = sys.stdin.read()
    env = {k: v for k, v in os.environ.items() if k.startswith("EAGLE3TUI_ALERT_")}
    name = os.path.join(out, f"{time.time_ns()}-{os.getpid()}.json")
    with open(name + ".tmp", "w") as f:
        json.dump({"stdin": data, "env": env, "argv": sys.argv[1:]}, f)
    os.rename(name + ".tmp", name)
""")


def _recorder(tmp_path: Path) -> tuple[list[str], Path]:
    script = tmp_path / "record.py"
    script.write_text(RECORDER)
    out = tmp_path / "got"
    out.mkdir()
    return [sys.executable, str(script), str(out)], out


def _received(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def test_command_gets_json_on_stdin_and_env_and_no_shell_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a shell, if any ran, would create pwned* here
    argv, out = _recorder(tmp_path)
    problems: list[Alert] = []
    n = Notifier(argv + ["$(touch pwned0)"], min_level="info", report=problems.append)
    alert = Alert("critical", "fatal-log-event", EVIL, stage="st`id`", attempt=3,
                  details={"rule": "error-line", "text": EVIL, "line": 7})
    n.submit(alert)
    assert n.close(wait_s=20)
    got = _received(out)
    assert len(got) == 1, problems
    assert json.loads(got[0]["stdin"]) == alert.to_json()
    env = got[0]["env"]
    assert env["EAGLE3TUI_ALERT_MESSAGE"] == EVIL
    assert env["EAGLE3TUI_ALERT_LEVEL"] == "critical"
    assert env["EAGLE3TUI_ALERT_KIND"] == "fatal-log-event"
    assert env["EAGLE3TUI_ALERT_STAGE"] == "st`id`"
    assert env["EAGLE3TUI_ALERT_ATTEMPT"] == "3"
    assert env["EAGLE3TUI_ALERT_RULE"] == "error-line"
    assert got[0]["argv"][-1] == "$(touch pwned0)"  # passed verbatim as one argument
    assert not list(tmp_path.rglob("pwned*"))
    assert problems == [] and n.sent == 1


def test_control_characters_never_reach_the_environment(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="info")
    n.submit(Alert("warning", "log-warning", "a\x1b[2Jb\nc\x00d"))
    assert n.close(wait_s=20)
    env = _received(out)[0]["env"]
    assert env["EAGLE3TUI_ALERT_MESSAGE"] == "ab c d"


def test_hanging_command_is_killed_and_the_next_alert_still_goes_out(tmp_path: Path) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text(textwrap.dedent("""
        import json, os, subprocess, sys, time
        a = json.loads(sys.stdin.read())
        if a["kind"] == "first":
            # A child too, so the kill must take the whole group.
            child = subprocess.Popen(["sleep", "1000"])
            open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
            time.sleep(1000)
        open(sys.argv[2], "w").write("second arrived")
    """))
    pidfile, second = tmp_path / "pid", tmp_path / "second"
    problems: list[Alert] = []
    n = Notifier([sys.executable, str(hang), str(pidfile), str(second)], min_level="info",
                 timeout_s=1.0, report=problems.append)
    t0 = time.monotonic()
    n.submit(Alert("critical", "first", "x"))
    n.submit(Alert("critical", "second", "y"))
    assert time.monotonic() - t0 < 0.1  # submit never waits for the command
    wait_for(pidfile.exists, timeout=15, what="hanging notifier to start")
    pid, child = (int(x) for x in pidfile.read_text().split())
    wait_for(second.exists, timeout=20, what="the alert after the hanging one")
    assert [p.kind for p in problems] == ["notifier-timeout"]
    assert "did not finish within 1s" in problems[0].message
    for p in (pid, child):  # the command and its child: the whole group was killed
        wait_for(lambda p=p: _gone(p), timeout=10, what=f"process {p} to be gone")
    assert n.close(wait_s=10)
    assert n.timed_out == 1 and n.sent == 1


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_min_level_filters(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning")
    n.submit(Alert("info", "stage-started", "started"))
    n.submit(Alert("warning", "stall", "quiet"))
    n.submit(Alert("critical", "stage-failed", "failed"))
    assert n.close(wait_s=20)
    kinds = sorted(json.loads(r["stdin"])["kind"] for r in _received(out))
    assert kinds == ["stage-failed", "stall"]


def test_rate_limit_drops_and_says_so_once(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    problems: list[Alert] = []
    n = Notifier(argv, min_level="info", rate_limit_per_min=3, report=problems.append)
    for i in range(10):
        n.submit(Alert("warning", "log-warning", f"line {i}"))
    assert n.close(wait_s=30)
    assert len(_received(out)) == 3
    assert n.dropped_rate == 7
    assert [p.kind for p in problems] == ["notifier-dropped"]
    assert "rate limit of 3 alerts per minute" in problems[0].message
    assert "alerts.rate_limit" in problems[0].message


def test_missing_executable_and_failing_command_are_reported(tmp_path: Path) -> None:
    problems: list[Alert] = []
    n = Notifier([str(tmp_path / "no-such-notify")], min_level="info", report=problems.append)
    n.submit(Alert("critical", "stage-failed", "x"))
    assert n.close(wait_s=10)
    assert problems[0].kind == "notifier-failed"
    assert "no-such-notify" in problems[0].message and "alerts.command" in problems[0].message

    problems.clear()
    fail = tmp_path / "fail.py"
    fail.write_text("import sys; print('webhook said 403 \\x1b[31mForbidden'); sys.exit(3)\n")
    n = Notifier([sys.executable, str(fail)], min_level="info", report=problems.append)
    n.submit(Alert("critical", "stage-failed", "x"))
    assert n.close(wait_s=20)
    assert problems[0].kind == "notifier-failed"
    assert "exited with 3" in problems[0].message
    assert problems[0].details["output"].strip() == "webhook said 403 Forbidden"


def test_build_hub_wires_notifier_from_config_and_reports_through_the_hub(tmp_path: Path) -> None:
    _argv, out = _recorder(tmp_path)
    fail = tmp_path / "fail.py"
    fail.write_text("import sys; sys.exit(5)\n")
    cfg_path = tmp_path / "pipeline.toml"
    cfg_path.write_text(textwrap.dedent(f"""
        [alerts]
        command = [{json.dumps(sys.executable)}, {json.dumps(str(fail))}]
        min_level = "critical"
        dedup_window = "1m"
        [[stage]]
        name = "a"
        command = ["true"]
    """))
    config = load_config(cfg_path)
    got: list[Alert] = []
    hub = build_hub(config, [got.append])
    assert isinstance(hub, AlertHub) and hub.dedup_window_s == 60
    hub.emit(Alert("critical", "stage-failed", "failed: exit 1", stage="a", attempt=1))
    hub.emit(Alert("info", "stage-started", "started", stage="a", attempt=2))
    wait_for(lambda: any(a.kind == "notifier-failed" for a in got), timeout=15,
             what="notifier failure reported through the hub")
    hub.close()
    # The failure is an alert like any other, but it is never sent to the failing command.
    assert hub.notifier.sent == 0 and hub.notifier.failed == 1
    assert [a.kind for a in got] == ["stage-failed", "stage-started", "notifier-failed"]
    assert not list(out.iterdir())


def test_no_notifier_without_command(tmp_path: Path) -> None:
    cfg_path = tmp_path / "pipeline.toml"
    cfg_path.write_text('[[stage]]\nname = "a"\ncommand = ["true"]\n')
    hub = build_hub(load_config(cfg_path))
    assert hub.notifier is None and hub.sinks == []
    assert hub.dedup_window_s == 300
    hub.close()
    assert os.path.exists(cfg_path)


# -- one failure, one page ------------------------------------------------------
def _fatal(stage: str = "train", attempt: int = 1) -> Alert:
    return Alert("critical", "fatal-log-event", "The GPU ran out of memory", stage=stage,
                 attempt=attempt, details={"rule": "oom", "line": 7,
                                           "text": "torch.OutOfMemoryError: CUDA out of memory."})


def _failed(stage: str = "train", attempt: int = 1) -> Alert:
    return Alert("critical", "stage-failed",
                 "failed: torch.OutOfMemoryError: CUDA out of memory. (exit 1)", stage=stage,
                 attempt=attempt, details={"exit_code": 1, "line": 7})


def _kinds(out: Path) -> list[str]:
    return [json.loads(g["stdin"])["kind"] for g in _received(out)]


def test_a_death_right_after_its_fatal_line_pages_once_with_the_stage_failed_alert(
        tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning", hold_s=30)
    n.submit(_fatal())
    n.submit(Alert("warning", "stage-failing", "still alive", stage="train", attempt=1))
    n.submit(_failed())
    assert n.close(wait_s=20)
    assert _kinds(out) == ["stage-failed"]
    assert n.coalesced == 2 and n.sent == 1


def test_without_a_hold_a_death_pages_twice(tmp_path: Path) -> None:
    # The counter-test: what hold_fatal = 0 asks for (and what every death did before).
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning", hold_s=0)
    n.submit(_fatal())
    n.submit(_failed())
    assert n.close(wait_s=20)
    assert _kinds(out) == ["fatal-log-event", "stage-failed"]


def test_a_process_still_alive_when_the_hold_runs_out_pages_for_its_fatal_line(
        tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning", hold_s=0.5)
    t0 = time.monotonic()
    n.submit(_fatal())
    wait_for(lambda: len(_received(out)) == 1, timeout=15, what="the held page to go out")
    assert time.monotonic() - t0 >= 0.5
    assert _kinds(out) == ["fatal-log-event"]
    # It ends later: that is a second fact (it ended), and it pages too.
    n.submit(_failed())
    assert n.close(wait_s=20)
    assert _kinds(out) == ["fatal-log-event", "stage-failed"] and n.coalesced == 0


def test_an_attempt_that_ends_without_failing_sends_its_held_page_at_once(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning", hold_s=600)
    n.submit(_fatal())
    # A stop is info (below min_level) and still settles the attempt's hold.
    n.submit(Alert("info", "stage-stopped", "stopped", stage="train", attempt=1))
    wait_for(lambda: len(_received(out)) == 1, timeout=15, what="the page released by the stop")
    assert _kinds(out) == ["fatal-log-event"]
    assert n.close(wait_s=20)


def test_holds_are_per_attempt_and_closing_sends_what_is_held(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning", hold_s=600)
    n.submit(_fatal(attempt=1))
    n.submit(_failed(attempt=2))  # another attempt's failure says nothing of attempt 1
    wait_for(lambda: len(_received(out)) == 1, timeout=15, what="attempt 2's page")
    assert n.close(wait_s=20)  # the driver exits with attempt 1 still running: its page goes out
    got = [json.loads(g["stdin"]) for g in _received(out)]
    assert sorted((a["kind"], a["attempt"]) for a in got) == [("fatal-log-event", 1),
                                                              ("stage-failed", 2)]
    assert n.coalesced == 0


def test_hold_fatal_is_read_from_the_alerts_table_and_a_bad_value_names_the_key(
        tmp_path: Path) -> None:
    cfg_path = tmp_path / "pipeline.toml"
    body = '[[stage]]\nname = "a"\ncommand = ["true"]\n'
    cfg_path.write_text('[alerts]\ncommand = ["true"]\nhold_fatal = "3s"\n' + body)
    assert load_config(cfg_path).alerts.hold_fatal_s == 3
    cfg_path.write_text('[alerts]\ncommand = ["true"]\n' + body)
    assert load_config(cfg_path).alerts.hold_fatal_s == 10
    cfg_path.write_text('[alerts]\ncommand = ["true"]\nhold_fatal = "soon"\n' + body)
    with pytest.raises(ConfigError) as e:
        load_config(cfg_path)
    assert "alerts.hold_fatal" in str(e.value) and "pipeline.toml:3" in str(e.value), str(e.value)


def test_a_hold_released_while_closing_is_still_sent(tmp_path: Path) -> None:
    # The worker is busy with a slow command when the hold runs out and the stop is
    # queued: the released page lands behind the stop and must still go out.
    argv, out = _recorder(tmp_path)
    slow = tmp_path / "slow.py"
    slow.write_text("import sys, time, runpy\ntime.sleep(0.8)\n"
                    "sys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")
    n = Notifier([sys.executable, str(slow), *argv[1:]], min_level="warning", hold_s=0.2)
    n.submit(Alert("warning", "log-warning", "first", stage="train", attempt=1))
    time.sleep(0.2)  # the worker is now running the slow command
    n.submit(_fatal())
    assert n.close(wait_s=20)
    assert _kinds(out) == ["log-warning", "fatal-log-event"]


# -- a harmless line never pages -------------------------------------------------
def test_log_warnings_stay_off_the_command_unless_asked_for_and_supervisor_warnings_go(
        tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    n = Notifier(argv, min_level="warning", log_warnings=False)
    n.submit(Alert("warning", "log-warning", "a WARNING line of the log", stage="train", attempt=1))
    n.submit(Alert("warning", "stall", "no output for 20 min", stage="train", attempt=1))
    assert n.close(wait_s=20)
    assert _kinds(out) == ["stall"]
    (tmp_path / "on").mkdir()
    argv2, out2 = _recorder(tmp_path / "on")
    n = Notifier(argv2, min_level="warning", log_warnings=True)
    n.submit(Alert("warning", "log-warning", "a WARNING line of the log", stage="train", attempt=1))
    assert n.close(wait_s=20)
    assert _kinds(out2) == ["log-warning"]


def test_log_warnings_is_off_by_default_and_a_bad_value_names_the_key(tmp_path: Path) -> None:
    cfg_path = tmp_path / "pipeline.toml"
    body = '[[stage]]\nname = "a"\ncommand = ["true"]\n'
    cfg_path.write_text('[alerts]\ncommand = ["true"]\n' + body)
    assert load_config(cfg_path).alerts.log_warnings is False
    cfg_path.write_text('[alerts]\ncommand = ["true"]\nlog_warnings = true\n' + body)
    assert load_config(cfg_path).alerts.log_warnings is True
    cfg_path.write_text('[alerts]\ncommand = ["true"]\nlog_warnings = "yes"\n' + body)
    with pytest.raises(ConfigError) as e:
        load_config(cfg_path)
    assert "alerts.log_warnings" in str(e.value) and "pipeline.toml:3" in str(e.value), str(e.value)
