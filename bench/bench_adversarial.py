"""Adversarial log lines: can what a stage prints slow the driver down?

    PYTHONPATH=$PWD .venv/bin/python bench/bench_adversarial.py [--sizes 32768,65536] [--repeat 3]
        [--only SUBSTRING] [--top 15] [--json OUT]

Log text is untrusted: a stage can print anything, and the driver reads it on
the same thread that supervises every other stage. Each case below is one
line of ``L`` bytes for each size ``L`` (by default ``n`` = 32 KiB and
``2n`` = 64 KiB, the longest line the follower keeps: ``LogFollower.max_line``)
fed through the whole line pipeline two ways:

- **catch-up**: ``classify_log`` on a file of 5 copies of the line (a block of
  over 256 KiB, so the template path of catching up runs too);
- **live**: a ``StageLogMonitor`` following an empty file, the line appended
  and one ``poll`` (the path a running stage's new lines take).

Each time is the best of ``--repeat`` runs, divided per line, and is reported
as a RATIO against an ordinary line of the same length in the same run (a real
warning line from the corpus repeated: a line the whole pipeline judges; a line
of INFO words no rule looks at is printed beside it), so that the machine's
speed cancels out; and the
ratio of its time at ``2n`` to its time at ``n``, the worst of the doublings
measured (linear ≈ 2, quadratic ≈ 4).
The cases: a run of one character for every printable ASCII character and a
few non-ASCII ones; repeated tokens that half-match the builtin patterns (log
levels, worker prefixes, numbers with separators, paths, nesting, ``\\r``
bars, ANSI escapes...); and real lines from the corpus's tune split (URL
printed) padded to the length; and a user ``[[rule]]`` RE2 accepts with a
large repetition count (``user rule ...`` cases), run on lines its repetition
fits, with the shipped rules beside it. Results: the README's Benchmarks table; the measurements behind it:
docs/history/logs-notebook.md, "Log text cannot slow the driver down".
"""

from __future__ import annotations

import argparse
import json
import os
import string
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eagle3tui.logs.follower import LogFollower
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.offline import classify_log
from eagle3tui.errors import ConfigError
from eagle3tui.logs.rules import Rule, RuleSet, build_ruleset, load_shipped_rules

MAX_LINE = LogFollower("/dev/null").max_line
TEMPLATE_BLOCK = 256 * 1024  # the monitor reads blocks this big by line template


def copies(length: int) -> int:
    """How many copies of a line make a block the template path reads (at every size alike)."""
    return TEMPLATE_BLOCK // length + 2

# An ordinary line: words of real INFO lines (vLLM's and the HF Trainer's), repeated.
ORDINARY = ("INFO 04-28 02:37:03 [async_llm.py:252] Added request 15_chatcmpl-c78d39a6d1d8469f90f3bda9bd41ca6a. "
            "Saving model checkpoint to output/checkpoint-500 and configuration file saved in output ")

# Tokens that half-match what the builtin patterns look for: each repeated to the length.
TOKENS = [
    "ERROR ", "ERROR: ", "Error: ", "error ", "[ERROR] ", "WARNING ", "W1206 ", "E1206 18:44:12.715298746 ",
    "[rank0]: ", "[rank0]:", "rank0: ", "(EngineCore_DP0 pid=1) ", "[1,0]<stderr>:", "worker-0 | ",
    "1,234,567 ", "1.234.567 ", "12:34:56 ", "2024-01-01 ", "0.5, ", "1e-5 ", "123", "0x7f3a ", "50%|",
    "/a", "/usr/lib/python3/", "a/b ", "\\a", "C:\\x\\",
    "(", "(a", "((", "[", "[a", "{", "{\"a\":", "\"", "\"a\": ", "'a', ",
    "\r", " 50%|█████     | 5/10 [00:01<00:01,  4.99it/s]\r", "it/s ", "loss=0.5 ", "'loss': 0.5, ",
    "\x1b[31m", "\x1b[", "\x1b", "^[[31m", "^[[", "\x1b]8;;", "\x1b[0;", 
    "Traceback ", "Traceback (most recent call last):", "  File \"x.py\", line 1, in ", "File \"", "line 1, in ",
    "raise ", "Error", "Exception: ", "torch.", "a.b.", "CUDA out of memory ", "out of memory. ",
    "Killed ", "Segmentation fault ", "exit code ", "exitcode: 1 ", "NCCL ", "Watchdog ", "timeout ",
    "key=value ", "level=error ", "msg=\"", "time=", "| ", " - ", " -- ", ": ", "::", "..", "--", "==",
    "=", "#", "*", "~", "\t", " \t", "é", "█", "\u00a0", "\u2028", "\ufffd",
    # what tests/test_logs_patterns_bounded.py found searched quadratically (fixed since)
    "a.", "StepId=", "slurmstepd-", "triton_kernels ", "Exception in thread ",
]


# User patterns RE2 accepts whose repetition makes a big program, each with the line it fits:
# one with no keyword (searched over whole blocks) and one with a keyword (met line by line).
USER_RULES = [
    (r"(?i)(?:\w+ ){2,1000}boom", "INFO fatal word "),
    (r"(?:\w+\s){1,200}fatal", "INFO fatal word "),
    (r"(?i)(?:\w+ ){2,166}boom", "INFO fatal word "),  # the first, cut to what check accepts
]


def user_ruleset(pattern: str) -> tuple[RuleSet, str]:
    """The shipped rules plus one user rule of ``pattern``, and what ``check`` says of it.

    A pattern ``check`` refuses is still measured, compiled by RE2 as before
    the check: what it would cost if it were let through.
    """
    spec = {"id": "user-rule", "pattern": pattern, "kind": "warning", "explanation": "bench"}
    try:
        return build_ruleset([spec]), "accepted"
    except ConfigError as e:
        import re2

        from eagle3tui.logs.rules import derive_keywords
        rule = Rule(id="user-rule", pattern=pattern, kind="warning", explanation="bench",
                    keywords=derive_keywords(pattern), source="user", regex=re2.compile(pattern))
        return RuleSet.from_specs(load_shipped_rules(), [rule]), f"refused at check ({str(e).splitlines()[0][:90]}...)"


def ordinary(length: int) -> str:
    return (ORDINARY * (length // len(ORDINARY) + 1))[:length]


def judged_line() -> tuple[str, str]:
    """(url, line): a real warning line of the corpus's tune split, which the whole pipeline judges."""
    corpus = ROOT / "tests" / "fixtures" / "corpus" / "corpus.jsonl"
    for raw in corpus.read_text(encoding="utf-8").splitlines():
        row = json.loads(raw)
        line = row["text"].split("\n")[0]
        if row["split"] == "tune" and row["label"] == "warning" and line.startswith("WARNING") and len(line) > 80:
            return row["url"], line
    raise SystemExit("no warning line in the corpus")


def judged(length: int) -> str:
    """An ordinary line that is judged (a real warning line, repeated to the length)."""
    return fill(judged_line()[1] + " ", length)


def fill(token: str, length: int) -> str:
    """``token`` repeated to ``length`` UTF-8 bytes (whole characters)."""
    b = len(token.encode())
    s = token * (length // b)
    rest = length - len(s.encode())
    return s + "x" * rest


def real_lines() -> list[tuple[str, str]]:
    """(url, line): the last line of a few tune-split corpus rows of each label."""
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    corpus = ROOT / "tests" / "fixtures" / "corpus" / "corpus.jsonl"
    for raw in corpus.read_text(encoding="utf-8").splitlines():
        row = json.loads(raw)
        if row["split"] != "tune":
            continue  # held-out rows are never looked at
        if seen.get(row["label"], 0) >= 4:
            continue
        line = row["text"].rstrip("\n").rsplit("\n", 1)[-1]
        if len(line) < 30:
            continue
        seen[row["label"]] = seen.get(row["label"], 0) + 1
        out.append((row["url"], line))
    return out


def cases(length: int) -> dict[str, str]:
    c: dict[str, str] = {}
    for ch in string.printable[:95]:
        c[f"run {ch!r}"] = fill(ch, length)
    for tok in TOKENS:
        c[f"repeat {tok!r}"] = fill(tok, length)
    for i, (_url, line) in enumerate(real_lines()):
        c[f"real #{i} + spaces"] = (line + " " * length)[:length]
        c[f"real #{i} + 'x'"] = (line + "x" * length)[:length]
        c[f"real #{i} repeated"] = fill(line + " ", length)
        c[f"spaces + real #{i}"] = (" " * length + line)[-length:]
    return c


def _time(fn, repeat: int) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def catch_up(line: str, d: Path, rules) -> float:  # noqa: ANN001
    p = d / "catchup.log"
    p.write_bytes(((line + "\n") * copies(len(line))).encode("utf-8", "replace"))
    return lambda: classify_log(p, rules=rules)


def live(line: str, d: Path, rules) -> float:  # noqa: ANN001
    p = d / "live.log"
    data = (line + "\n").encode("utf-8", "replace")

    def run() -> None:
        p.write_bytes(b"")
        mon = StageLogMonitor(p, rules=rules)
        mon.poll(now=1000.0)
        with open(p, "ab") as f:
            f.write(data)
        mon.poll(now=1001.0)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=f"{MAX_LINE // 4},{MAX_LINE // 2},{MAX_LINE}")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    rules = build_ruleset()
    user = {p: user_ruleset(p) for p, _tok in USER_RULES}
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        base: dict[tuple[str, int], float] = {}
        plain: dict[tuple[str, int], float] = {}
        for n in sizes:
            for path, mk, per in (("catch-up", catch_up, copies(n)), ("live", live, 1)):
                base[(path, n)] = _time(mk(judged(n), d, rules), a.repeat) / per
                plain[(path, n)] = _time(mk(ordinary(n), d, rules), a.repeat) / per
            todo = [(name, line, rules) for name, line in cases(n).items()]
            for pattern, token in USER_RULES:
                todo.append((f"user rule {pattern!r} on {token!r} repeated", fill(token, n), user[pattern][0]))
            for name, line, rs in todo:
                if a.only and a.only not in name:
                    continue
                for path, mk, per in (("catch-up", catch_up, copies(n)), ("live", live, 1)):
                    t = _time(mk(line, d, rs), a.repeat) / per
                    rows.setdefault(f"{path}|{name}", {})[str(n)] = t
    n0, n1 = str(sizes[0]), str(sizes[-1])
    table = []
    for key, t in rows.items():
        path, name = key.split("|", 1)
        ratio = t[n1] / base[(path, int(n1))]
        # time at 2n over time at n, for each doubling measured: the worst of them
        steps = [t[str(b)] / t[str(a)] for a, b in zip(sizes, sizes[1:]) if b == 2 * a and t[str(a)] > 0]
        scale = max(steps) if steps else float("nan")
        table.append((ratio, scale, path, name, t[n1]))
    table.sort(reverse=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; line lengths {sizes} bytes "
          f"(follower keeps {MAX_LINE}); {len(table)} cases; best of {a.repeat}")
    url, _line = judged_line()
    print(f"ordinary line: a real warning line repeated ({url}), judged by the whole pipeline")
    for path in ("catch-up", "live"):
        print(f"ordinary line, {path}: {base[(path, int(n1))] * 1e3:.2f} ms at {n1} B, "
              f"{base[(path, int(n1))] / base[(path, int(n0))]:.2f}x from {n0} B; a line of INFO words no rule "
              f"looks at: {plain[(path, int(n1))] * 1e3:.2f} ms")
    for p, (_rs, verdict) in user.items():
        print(f"user rule {p!r}: {verdict}")
    print(f"\n| case | path | ms/line at {n1} B | ratio to ordinary | time 2n/n (worst doubling) |")
    print("|---|---|---|---|---|")
    for ratio, scale, path, name, t in table[: a.top]:
        print(f"| {name} | {path} | {t * 1e3:.2f} | {ratio:.1f} | {scale:.2f} |")
    print(f"\nworst ratio {table[0][0]:.1f} ({table[0][3]}, {table[0][2]})")
    # Doublings of cases that take at least 2 ms: below that, timer noise and fixed costs dominate.
    for path in ("catch-up", "live"):
        sc = sorted(((s, name, t) for _r, s, p, name, t in table if p == path and t >= 0.002), reverse=True)
        if sc:
            print(f"{path}: worst time 2n/n of the {len(sc)} cases over 2 ms: {sc[0][0]:.2f} ({sc[0][1]}); "
                  f"median {sc[len(sc) // 2][0]:.2f}")
            print(f"{path}: worst per-line time {max(t for _s, _n, t in sc) * 1e3:.1f} ms")
    if a.json:
        Path(a.json).write_text(json.dumps({"sizes": sizes, "rows": rows,
                                            "base": {f"{p}|{n}": v for (p, n), v in base.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
