"""AlertHub merging, AlertLog crash safety, and the human line, on real files."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import wait_for

from eagle3tui.alerts import Alert, AlertHub, AlertLog, read_alerts, stdout_sink


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_storm_of_identical_alerts_is_merged_with_a_count(tmp_path: Path) -> None:
    hub = AlertHub(dedup_window_s=300)
    log = AlertLog(tmp_path / "alerts.jsonl")
    hub.add_sink(log.append)
    for i in range(10_000):
        hub.emit(Alert("warning", "log-warning", "disk is slow", stage="s", attempt=1,
                       details={"rule": "python-warning", "line": i + 1}))
    # A different alert in between is not swallowed by the storm.
    hub.emit(Alert("critical", "stage-failed", "failed: exit 1", stage="s", attempt=1))
    hub.close()
    log.close()
    rows = _lines(tmp_path / "alerts.jsonl")
    kinds = [r["kind"] for r in rows]
    assert kinds.count("log-warning") == 2, kinds
    first, merged = [r for r in rows if r["kind"] == "log-warning"]
    assert first["count"] == 1 and not first["details"].get("merged")
    assert merged["details"]["merged"] is True
    assert merged["count"] == 9_999
    assert first["count"] + merged["count"] == 10_000
    assert merged["details"]["line"] == 10_000  # the freshest details
    assert "stage-failed" in kinds


def test_window_closes_on_time_without_new_alerts(tmp_path: Path) -> None:
    hub = AlertHub(dedup_window_s=0.3)
    got: list[Alert] = []
    hub.add_sink(got.append)
    for _ in range(5):
        hub.emit(Alert("warning", "stall", "no output for 1s", stage="s", attempt=1))
    assert len(got) == 1
    # The flusher thread closes the window by itself.
    wait_for(lambda: len(got) == 2, timeout=5, what="merged alert after the window")
    assert got[1].count == 4 and got[1].details["merged"]
    # After the window the next one goes out at once again.
    hub.emit(Alert("warning", "stall", "no output for 1s", stage="s", attempt=1))
    assert len(got) == 3 and got[2].count == 1
    hub.close()


def test_different_stage_attempt_or_rule_is_not_merged() -> None:
    hub = AlertHub(dedup_window_s=60)
    got: list[Alert] = []
    hub.add_sink(got.append)
    hub.emit(Alert("critical", "fatal-log-event", "x", stage="a", attempt=1, details={"rule": "oom"}))
    hub.emit(Alert("critical", "fatal-log-event", "x", stage="a", attempt=2, details={"rule": "oom"}))
    hub.emit(Alert("critical", "fatal-log-event", "x", stage="b", attempt=1, details={"rule": "oom"}))
    hub.emit(Alert("critical", "fatal-log-event", "x", stage="a", attempt=1, details={"rule": "nccl"}))
    assert len(got) == 4
    hub.close()
    assert len(got) == 4  # nothing was pending


def test_dedup_off_delivers_everything() -> None:
    hub = AlertHub()
    got: list[Alert] = []
    hub.add_sink(got.append)
    for _ in range(3):
        hub.emit(Alert("info", "k", "same"))
    assert len(got) == 3


def test_a_failing_sink_does_not_stop_the_others(tmp_path: Path, capsys) -> None:
    hub = AlertHub()

    def broken(_a: Alert) -> None:
        raise OSError(28, "No space left on device")

    got: list[Alert] = []
    hub.add_sink(broken)
    hub.add_sink(got.append)
    hub.emit(Alert("info", "k", "one"))
    hub.emit(Alert("info", "k", "two"))
    assert [a.message for a in got] == ["one", "two"]
    err = capsys.readouterr().err
    assert "No space left on device" in err
    assert err.count("failed") == 1  # reported once, not per alert


def test_torn_last_line_is_repaired_and_said_so(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    good = json.dumps(Alert("info", "stage-started", "started").to_json())
    path.write_text(good + "\n" + good[: len(good) // 2])
    log = AlertLog(path)
    assert log.repaired and str(path) in log.repaired and "partial last line" in log.repaired
    log.append(Alert("info", "stage-succeeded", "ok"))
    log.close()
    rows = _lines(path)
    assert [r["kind"] for r in rows] == ["stage-started", "stage-succeeded"]
    # A clean file is left alone and says nothing.
    assert AlertLog(path).repaired is None


def test_torn_line_longer_than_the_lookback_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    good = json.dumps(Alert("info", "a", "b").to_json())
    path.write_bytes(good.encode() + b"\n" + b"{" + b"x" * 300_000)
    log = AlertLog(path)
    log.close()
    assert log.repaired
    assert path.read_text() == good + "\n"


def test_sigkill_while_appending_leaves_only_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
        from eagle3tui.alerts import Alert, AlertLog
        log = AlertLog({str(path)!r})
        i = 0
        while True:
            i += 1
            log.append(Alert("warning", "log-warning", "x" * (i % 5000), details={{"i": i}}))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        wait_for(lambda: path.exists() and path.stat().st_size > 200_000, timeout=30,
                 what="alerts being written")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # A kill can land between two pages of one write (the kernel checks for a fatal signal
    # there), so the last line may be torn; every line before it is whole and in order, and
    # the next open cuts the torn tail and says so.
    data = path.read_bytes()
    whole, _, torn = data.rpartition(b"\n")
    rows = [json.loads(x) for x in whole.splitlines()]
    assert len(rows) > 10
    assert [r["details"]["i"] for r in rows] == list(range(1, len(rows) + 1))
    reopened = AlertLog(path)
    reopened.close()
    assert (reopened.repaired is not None) == bool(torn)
    assert path.read_bytes() == whole + b"\n"


def test_human_line_is_safe_and_quotes_the_log_line() -> None:
    a = Alert("critical", "fatal-log-event", "The process ended with this uncaught exception.",
              stage="train", attempt=2, time=time.time(),
              details={"line": 41, "text": "Traceback...\n  x\nRuntimeError: \x1b]0;owned\x07bad\x1b[31m red"})
    line = a.human()
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line
    assert "CRITICAL" in line and "train#2" in line and "fatal-log-event" in line
    assert "line 41: RuntimeError: bad red" in line
    merged = Alert("warning", "stall", "quiet", details={"merged": True, "first_at": time.time()},
                   count=12)
    assert "repeated 12 more times since" in merged.human()


def test_from_json_round_trip_and_read_alerts_skips_torn(tmp_path: Path) -> None:
    a = Alert("warning", "eta-drift", "slower", stage="s", attempt=1, details={"drift": 0.4})
    assert Alert.from_json(json.loads(json.dumps(a.to_json()))) == a
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(a.to_json()) + "\n" + '{"kind": "x"')
    assert read_alerts(p) == [a]


def test_stdout_sink_survives_a_closed_stream() -> None:
    buf = io.StringIO()
    sink = stdout_sink(buf)
    sink(Alert("info", "k", "hello"))
    assert "hello" in buf.getvalue() and buf.getvalue().endswith("\n")
    buf.close()
    sink(Alert("info", "k", "after close"))  # no exception


def test_a_write_the_file_size_limit_cuts_short_is_an_error_not_a_silent_half_line(tmp_path: Path) -> None:
    # A write that crosses RLIMIT_FSIZE writes what fits and returns a short count; ignoring
    # that count delivered half an alert and reported success. The append now writes the
    # rest, which the limit refuses (EFBIG): the caller learns the alert was not stored.
    path = tmp_path / "alerts.jsonl"
    script = textwrap.dedent(f"""
        import os, resource, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
        from eagle3tui.alerts import Alert, AlertLog
        log = AlertLog({str(path)!r})
        log.append(Alert("warning", "log-warning", "first"))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        size = os.path.getsize({str(path)!r})
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, resource.RLIM_INFINITY))
        try:
            log.append(Alert("critical", "fatal-log-event", "x" * 5000))
        except OSError as e:
            print("refused", e.errno)
        else:
            print("stored")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "refused", out.stdout
    # The torn second line was cut by the failed append itself (nothing left for the
    # next open to repair), and the first alert is intact.
    log = AlertLog(path)
    log.close()
    assert log.repaired is None
    assert [json.loads(x)["message"] for x in path.read_bytes().splitlines()] == ["first"]
