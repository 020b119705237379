"""Replay whole recorded logs through the real supervisor and score its alerts.

    .venv/bin/python bench/score_whole_logs.py [--only ID ...] [--json OUT] [--fixtures DIR] [--pace P]

Excerpt scoring (bench/score_corpus.py) judges a few lines at a time; it
cannot say whether one failure gives one clear alert, because "what the
process does next" is not in an excerpt. Here each log of
tests/fixtures/whole_logs (real logs from public repositories, with the
outcome their source establishes; see manifest.jsonl) is replayed as a stage:
a real subprocess prints the log line by line and ends the way the recorded
process ended, while ``eagle3tui --watch --run-all`` supervises it. The
alerts file and the driver's per-line verdicts are then scored:

* ``died``: one alert per failure (at most one ``fatal-log-event`` critical
  and one ``stage-failed``) and one page: the replay's ``[alerts] command``
  records what it is run for (``min_level = "critical"``), and a death must
  run it once. Does the
  ``stage-failed`` alert lead with the cause (its cause event spans the
  line the source names; for a death with no line of its own, no cause is
  quoted and the message is the exit code and its hint)? Fatal verdicts on
  other lines before the cause are false fatals; after it they are counted
  as the failure's echoes (a launcher's report, other ranks).
* ``completed`` / ``serving``: any critical alert, page or fatal verdict is
  a false alarm, and ``--watch`` must exit 0.

A ``service`` log is replayed as a service with a client stage that
depends on it: the client ends once the service has printed its log (or
after a while, if it died), and the supervisor then stops the unneeded
service, as in a real pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from log_timestamps import replay_pauses  # noqa: E402

from eagle3tui.logs.ranks import signal_name  # noqa: E402
FIXTURES = ROOT / "tests" / "fixtures" / "whole_logs"
MANIFEST = FIXTURES / "manifest.jsonl"
OUTCOMES = ("died", "completed", "serving")
# The exception a line states, from its class name on ("ValueError: To serve ...").
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)\b:.*$")
# torchrun's report of the first child it saw fail (eagle3tui.logs.ranks reads the same line).
_LAUNCHER_FAILED = re.compile(r"\bfailed \(exitcode: (-?\d{1,4})\) local_rank: (\d{1,5}) \(pid: (\d{1,9})\)")
# Fatal verdicts this many lines apart are one error written in parts (the
# failure alert joins them the same way: stage_alerts.CAUSE_GAP_LINES).
GAP = 2

# Prints the recorded log as the process did, then ends as it ended. Before each line it
# pauses as long as the file of pauses says: the gap the log's own timestamps give (capped,
# bench/log_timestamps.py), or a fixed 3 ms per line for a log without timestamps, so that
# the driver sees the log grow over several polls, as it would a live process, without
# making a long job take its hours.
REPLAY = textwrap.dedent("""
    import json, signal, sys, time
    log, code, marker, linger, stop, pauses = (sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]),
                                               int(sys.argv[5]), sys.argv[6])
    lines = open(log, encoding="utf-8").read().splitlines(keepends=True)
    pause = json.load(open(pauses))
    def show(lo, hi):
        for i in range(lo, hi):
            if pause[i] > 0:
                time.sleep(pause[i])
            sys.stdout.write(lines[i])
            sys.stdout.flush()
    def on_term(signum, frame):
        show(stop - 1, len(lines))  # what the recorded process printed once it was told to stop
        sys.exit(code)
    if stop:
        signal.signal(signal.SIGTERM, on_term)
    show(0, stop - 1 if stop else len(lines))
    if marker != "-":
        open(marker, "w").close()
    if linger > 0:
        time.sleep(linger)
    sys.exit(code)
""")
PACES = ("timestamps", "fixed")
PACE = "timestamps"  # --pace: the log's own gaps, or the fixed 3 ms per line of earlier runs

# The service's client: done once the service printed its whole log, or
# after ``wait`` seconds (the service died before that). Then it idles a
# little so that the driver judges the service's last lines while it lives.
CLIENT = textwrap.dedent("""
    import os, sys, time
    marker, wait = sys.argv[1], float(sys.argv[2])
    deadline = time.monotonic() + wait
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3.0)
""")


def load_manifest(path: Path = MANIFEST) -> list[dict[str, Any]]:
    """The manifest rows, in file order."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# The pager: what the ``[alerts] command`` is run for, one JSON object per run.
PAGER = textwrap.dedent("""
    import json, sys
    with open(sys.argv[1], "a") as f:
        f.write(json.dumps(json.load(sys.stdin)) + "\\n")
""")


def _pipeline_toml(row: dict[str, Any], work: Path, pager: dict[str, Any] | None = None
                   ) -> tuple[str, str]:
    """The pipeline text for one replay and the name of the stage under test."""
    stages, stage = _stages_toml(row, work)
    return _alerts_toml(work, pager or {}) + stages, stage


def _alerts_toml(work: Path, pager: dict[str, Any]) -> str:
    """The pager's ``[alerts]``: ``min_level`` critical unless ``pager`` says otherwise.

    ``pager`` may set ``min_level``, ``hold_fatal`` and ``log_warnings`` (the
    command-line options below); absent keys keep the config's defaults.
    """
    py = json.dumps(sys.executable)
    argv = f"[{py}, {json.dumps(str(work / 'pager.py'))}, {json.dumps(str(work / 'pages.jsonl'))}]"
    keys = {"min_level": "critical", **{k: v for k, v in pager.items() if v is not None}}
    return f"""
[alerts]
command = {argv}
""" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())


def write_pauses(log: Path, work: Path, pace: str | None = None) -> float:
    """Write the replay's pause before each line of ``log`` to ``work``/pauses.json; their sum."""
    with open(log, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    pauses = replay_pauses(lines) if (pace or PACE) == "timestamps" else [0.003] * len(lines)
    (work / "pauses.json").write_text(json.dumps(pauses))
    return sum(pauses)


def _stages_toml(row: dict[str, Any], work: Path) -> tuple[str, str]:
    py = json.dumps(sys.executable)
    log = json.dumps(str(FIXTURES / f"{row['id']}.log"))
    pauses = json.dumps(str(work / "pauses.json"))
    replay_s = write_pauses(FIXTURES / f"{row['id']}.log", work)
    replay = json.dumps(str(work / "replay.py"))
    marker = work / "printed"
    code = int(row.get("exit_code") if row.get("exit_code") is not None else
               (1 if row["outcome"] == "died" else 0))
    if row["kind"] != "service":
        return (f"""
[[stage]]
name = "job"
command = [{py}, {replay}, {log}, "{code}", "-", "0", "0", {pauses}]
stop_grace = "3s"
""", "job")
    # A serving log lingers (it is still serving); a dead or finished one ends.
    # With ``stop_line`` the recorded stop is the supervisor's own: the lines
    # from there on are printed once its SIGTERM arrives.
    linger = 3600 if row["outcome"] == "serving" else 0
    stop = int(row.get("stop_line") or 0)
    client = json.dumps(str(work / "client.py"))
    return (f"""
[[stage]]
name = "serve"
kind = "service"
command = [{py}, {replay}, {log}, "{code}", {json.dumps(str(marker))}, "{linger}", "{stop}", {pauses}]
stop_grace = "3s"

[[stage]]
name = "client"
depends_on = ["serve"]
command = [{py}, {client}, {json.dumps(str(marker))}, "{20 + replay_s:.1f}"]
""", "serve")


def _to_fixture_lines(d: dict[str, Any], offset: int) -> None:
    """Shift ``line``/``end_line`` of ``d`` from the stage log's numbering to the fixture's."""
    for key in ("line", "end_line"):
        if isinstance(d.get(key), int):
            d[key] -= offset


def replay_one(row: dict[str, Any], work: Path, timeout: float = 180.0,
               pager: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one log as a stage under ``eagle3tui --watch --run-all``; return what came out."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "replay.py").write_text(REPLAY)
    (work / "client.py").write_text(CLIENT)
    (work / "pager.py").write_text(PAGER)
    text, stage = _pipeline_toml(row, work, pager)
    cfg = work / "pipeline.toml"
    cfg.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    started = time.monotonic()
    with open(work / "watch.out", "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "eagle3tui", "--config", str(cfg), "--watch",
                                 "--run-all"], stdout=out, stderr=subprocess.STDOUT, cwd=work,
                                stdin=subprocess.DEVNULL, env=env)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
    state = work / ".eagle3tui"
    alerts_path = state / "alerts.jsonl"
    alerts = ([json.loads(x) for x in alerts_path.read_text().splitlines() if x.strip()]
              if alerts_path.exists() else [])
    verdicts: list[dict[str, Any]] = []
    for p in sorted((state / "runs" / stage).glob("*.verdicts.jsonl")):
        verdicts += [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
    # Alerts and verdicts number lines as the stage's log file does (grep -n), and the
    # wrapper's header line comes first: the manifest numbers the fixture's own lines.
    offset = 0
    first = state / "runs" / stage / "0001.json"
    if first.exists():
        offset = int(json.loads(first.read_text()).get("log_line") or 0)
    for v in verdicts:
        _to_fixture_lines(v, offset)
    for a in alerts:
        details = a.get("details") or {}
        _to_fixture_lines(details, offset)
        if isinstance(details.get("cause"), dict):
            _to_fixture_lines(details["cause"], offset)
    pages_path = work / "pages.jsonl"
    pages = ([json.loads(x) for x in pages_path.read_text().splitlines() if x.strip()]
             if pages_path.exists() else [])
    return {"id": row["id"], "stage": stage, "watch_rc": rc, "seconds": round(time.monotonic() - started, 1),
            "alerts": [a for a in alerts if a.get("stage") == stage], "verdicts": verdicts,
            "pages": [a for a in pages if a.get("stage") == stage]}


def judge(row: dict[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    """Score one replay against the outcome its source establishes."""
    alerts = got["alerts"]
    # The hub writes the repeats of an alert inside its dedup window as one
    # later record with a count ("details.merged"): the same alert counted,
    # not a new one. Pages are the other critical records.
    every = [a for a in alerts if a.get("level") == "critical"]
    crit = [a for a in every if not (a.get("details") or {}).get("merged")]
    # "early-exit" quotes the log's last lines because the stage ended soon
    # after it started (a replay always does); it is no verdict on a line.
    early = [v for v in got["verdicts"] if v.get("rule") == "early-exit"]
    fatal = [v for v in got["verdicts"] if v.get("kind") == "fatal" and v.get("rule") != "early-exit"]
    out: dict[str, Any] = {"id": row["id"], "outcome": row["outcome"], "kind": row["kind"],
                           "watch_rc": got["watch_rc"], "criticals": len(crit),
                           "pages": [a["kind"] for a in got.get("pages", [])],
                           "critical_pages": [a["kind"] for a in got.get("pages", [])
                                              if a.get("level") == "critical"],
                           "critical_kinds": [a["kind"] for a in crit], "early_exit": bool(early),
                           "repeat_counts": len(every) - len(crit)}
    fatal_alerts = [a for a in crit if a["kind"] == "fatal-log-event"]
    if row["outcome"] != "died":
        # What a server prints after the stop the supervisor sent is shown in
        # its log pane, but it is no alarm (the stop ended it).
        stop = row.get("stop_line")
        out["after_stop_fatal_lines"] = sorted({v["line"] for v in fatal if stop and v["line"] >= stop})
        fatal = [v for v in fatal if not stop or v["line"] < stop]
        out["false_alarm"] = bool(crit or fatal or out["pages"])
        out["fatal_lines"] = sorted({v["line"] for v in fatal})
        out["ok"] = not out["false_alarm"] and got["watch_rc"] == 0
        return out
    cause_line = row.get("cause_line")
    failed = [a for a in crit if a["kind"] == "stage-failed"]
    cause = (failed[0]["details"].get("cause") if failed else None) or None
    if cause is not None and cause.get("rule") == "early-exit":
        cause = None  # the message says "failed: exit N", as for no cause
    if cause_line is None:
        cause_ok = bool(failed) and cause is None
    else:
        first = int((cause or {}).get("line") or 0)
        last = int((cause or {}).get("end_line") or first)
        cause_ok = first <= cause_line <= last if first else False
    # The cause's span: the fatal verdict on the cause line, grown over the
    # fatal verdicts written right before or after it (a logged message and
    # its traceback are one error), as the failure alert itself joins them.
    span = (cause_line, cause_line)
    if cause_line is not None:
        grown = True
        while grown:
            grown = False
            for v in fatal:
                lo, hi = v["line"], v.get("end_line") or v["line"]
                if lo <= span[1] + GAP + 1 and hi >= span[0] - GAP - 1 and (lo < span[0] or hi > span[1]):
                    span = (min(lo, span[0]), max(hi, span[1]))
                    grown = True
    before = sorted({v["line"] for v in fatal if cause_line is None or
                     (v.get("end_line") or v["line"]) < span[0]})
    after = sorted({v["line"] for v in fatal if cause_line is not None and v["line"] > span[1]})
    message = failed[0]["message"] if failed else ""
    if cause_line is None:
        names_cause = message.startswith("failed: exit") or message.startswith("failed: signal")
    else:
        # The message quotes the cause's own words (its exception, else its text).
        line = (FIXTURES / f"{row['id']}.log").read_text(encoding="utf-8").splitlines()[cause_line - 1]
        m = _EXCEPTION.search(line)
        needle = (m.group(0) if m else line.strip())[:50]
        names_cause = message.startswith("failed: ") and needle in message
        if (k := _LAUNCHER_FAILED.search(line)) is not None and message.startswith("failed: "):
            # torchrun's "failed (exitcode: -9) local_rank: 4 (pid: 208585)": named when the
            # message says which process and how it ended, in whatever words.
            code = int(k.group(1))
            how = signal_name(code) if code < 0 else f"code {code}"
            names_cause = f"pid {k.group(3)}" in message and bool(how) and str(how) in message
    out.update(one_critical=len(crit) == 1, stage_failed=len(failed), message_names_cause=names_cause,
               one_page=out["critical_pages"] == ["stage-failed"],
               one_alert_per_failure=len(fatal_alerts) <= 1 and len(failed) == 1,
               cause_quoted=cause_ok, cause_line=cause_line,
               quoted_line=(cause or {}).get("line"), quoted_rule=(cause or {}).get("rule"),
               message=(failed[0]["message"][:160] if failed else None),
               false_fatal_lines=before, echo_fatal_lines=after)
    out["ok"] = (out["one_alert_per_failure"] and out["one_page"] and cause_ok and names_cause
                 and not before and got["watch_rc"] == 1)
    return out


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals the test holds the supervisor to."""
    died = [r for r in results if r["outcome"] == "died"]
    calm = [r for r in results if r["outcome"] != "died"]

    def frac(n: int, d: int) -> float | None:
        return round(n / d, 3) if d else None

    return {
        "logs": len(results), "died": len(died), "completed_or_serving": len(calm),
        "died_one_critical": frac(sum(r["one_critical"] for r in died), len(died)),
        "died_one_alert_per_failure": frac(sum(r["one_alert_per_failure"] for r in died), len(died)),
        "died_one_page": frac(sum(r["one_page"] for r in died), len(died)),
        "died_cause_quoted": frac(sum(r["cause_quoted"] for r in died), len(died)),
        "died_message_names_cause": frac(sum(r["message_names_cause"] for r in died), len(died)),
        "died_with_false_fatals": sum(bool(r["false_fatal_lines"]) for r in died),
        "calm_false_alarms": sum(r["false_alarm"] for r in calm),
        "calm_runs_paged": sum(bool(r["pages"]) for r in calm),
        "all_ok": frac(sum(r["ok"] for r in results), len(results)),
    }


def table(results: list[dict[str, Any]]) -> str:
    """The per-log table, as printed and as kept under bench/results/."""
    head = ("| log | outcome | criticals (fatal-log-event + stage-failed) | pages | cause quoted | "
            "message names it | false fatal lines | watch exit | ok |")
    rows = [head, "|" + "---|" * 9]
    for r in results:
        if r["outcome"] == "died":
            want = "none (exit code)" if r["cause_line"] is None else f"line {r['cause_line']}"
            quoted = f"{'yes' if r['cause_quoted'] else 'no'}: want {want}, got {r['quoted_line']} ({r['quoted_rule']})"
            names = "yes" if r["message_names_cause"] else "no"
            ff = ", ".join(map(str, r["false_fatal_lines"])) or "-"
        else:
            quoted = names = "n/a"
            ff = ", ".join(map(str, r["fatal_lines"])) or "-"
            if r.get("after_stop_fatal_lines"):
                ff += f" (after the stop: {', '.join(map(str, r['after_stop_fatal_lines']))})"
        kinds = r["critical_kinds"]
        crit = f"{r['criticals']} ({kinds.count('fatal-log-event')} + {kinds.count('stage-failed')})"
        if r.get("repeat_counts"):
            crit += f" + {r['repeat_counts']} repeat count"
        pages = ", ".join(r.get("pages", [])) or "-"
        rows.append(f"| {r['id']} | {r['outcome']} | {crit} | {pages} | "
                    f"{quoted} | {names} | {ff} | {r['watch_rc']} | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(rows)


def run(rows: list[dict[str, Any]], keep: Path | None = None,
        pager: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Replay and judge every row; one temp directory per log."""
    results = []
    with tempfile.TemporaryDirectory(prefix="wholelogs-") as tmp:
        base = keep or Path(tmp)
        for row in rows:
            got = replay_one(row, base / row["id"], pager=pager)
            results.append(judge(row, got))
    return results


def main(argv: list[str] | None = None) -> int:
    global FIXTURES, PACE  # --fixtures points the replay (_stages_toml) and the judge at another folder
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="ids to replay (default: all)")
    ap.add_argument("--json", type=Path, help="write the per-log results and totals here")
    ap.add_argument("--fixtures", type=Path, default=FIXTURES, metavar="DIR",
                    help="replay the logs of this folder and its manifest.jsonl (default: tests/fixtures/whole_logs)")
    ap.add_argument("--keep", type=Path, help="keep each replay's directory under this folder")
    ap.add_argument("--hold-fatal", help="the pager's [alerts] hold_fatal (default: the config's)")
    ap.add_argument("--pager-level", default="critical",
                    help="the pager's [alerts] min_level (default critical; deaths are scored on "
                         "one page at critical, calm runs on none at any level)")
    ap.add_argument("--log-warnings", choices=("true", "false"),
                    help="the pager's [alerts] log_warnings (default: the config's)")
    ap.add_argument("--pace", choices=PACES, default=PACE,
                    help="pause before each line: the gap the log's own timestamps give, each capped at 2 s "
                         "and 20 s in all (default), or a fixed 3 ms per line")
    args = ap.parse_args(argv)
    FIXTURES = args.fixtures.resolve()
    PACE = args.pace
    rows = [r for r in load_manifest(FIXTURES / "manifest.jsonl") if not args.only or r["id"] in args.only]
    pager = {"min_level": args.pager_level, "hold_fatal": args.hold_fatal,
             "log_warnings": None if args.log_warnings is None else args.log_warnings == "true"}
    results = run(rows, args.keep, pager)
    totals = summarise(results)
    print(table(results))
    print()
    print(json.dumps(totals, indent=1))
    for r in results:
        if r["outcome"] == "died":
            print(f"{r['id']}: {r['message']}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "totals": totals}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
