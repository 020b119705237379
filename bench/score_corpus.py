"""Score the log classifier on the real-log corpus (tests/fixtures/corpus).

    .venv/bin/python bench/score_corpus.py [--split tune|heldout|all] [--show-failures] [--from-row N] [--to-row M]
                                           [--structure-only] [--corpus PATH]

Each excerpt is written to a file and classified by
:func:`eagle3tui.logs.offline.classify_log` (what ``eagle3tui classify --json
--all --kind KIND`` runs), with the excerpt's ``kind`` as the stage kind. The
excerpt's verdict is the most serious event kind found: fatal, then warning,
then benign, then progress, else info. Prints the confusion table (rows: the
label a person gave, columns: the verdict) and the four scores the corpus
test holds the classifier to:

* fatal recall: fatal excerpts judged fatal;
* false fatal: non-fatal excerpts judged fatal;
* benign recognised: benign excerpts judged benign;
* progress recognised: progress excerpts judged progress.

``--show-failures`` prints the mislabelled excerpts of the chosen split; use
it on ``tune`` only, so that the held-out split keeps measuring something the
rules were not fitted to.

``--structure-only`` scores with the rules that name one program's wording
switched off (:func:`structure_only_ruleset`): the shipped catalog of known
notices, the families written in one program's or library's words (vLLM's
engine death, torchrun's ChildFailedError, NCCL's, Hugging Face's, Kubernetes'
and Slurm's wording, ...). What is left is the judge's structural steps and the
rules that only route a line to them or name what every program shares (a
Python traceback's header, a log level, error and death words, the OS's and
the CUDA runtime's own errors, signals, an HTTP access line). A line that only
a program-specific rule catches is one that a fresh log will say in another
program's words: the score with ``--structure-only`` is a proxy for fresh data
that the tune split itself can give.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eagle3tui.logs.offline import classify_log  # noqa: E402
from eagle3tui.logs.rules import RuleSet, build_ruleset, load_builtin_rules  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "corpus" / "corpus.jsonl"
LABELS = ("fatal", "benign", "warning", "progress", "info")
_SEVERITY = ("fatal", "warning", "benign", "progress")
THRESHOLDS = {
    "fatal_recall": (">=", 0.95),
    "false_fatal": ("<=", 0.03),
    "benign_recognised": (">=", 0.85),
    "progress_recognised": (">=", 0.95),
}


# The shipped rules kept by ``--structure-only``: each names a shape or a word class that
# many programs share, or only brings a line to the judge. Every other builtin rule
# (and the whole Slurm pack) names one program's or one library's wording.
GENERAL_RULES = frozenset({
    # structure: a Python traceback's header, a level in a header, catch-all levels and
    # error words, death and stop words (what the judge then weighs by structure)
    "traceback", "level-header", "python-warning", "error-line", "failure-words",
    # the grammar of a harmless notice in any program's words
    "optional-import", "retry", "says-ignore", "deprecation", "trouble-predicted", "timeout",
    # an HTTP access line's status, an OpenAI-compatible error body: any server's shape
    "request-error-survived", "request-failed",
    # what the OS, the shell, the kernel, the C/C++ runtime and the CUDA runtime say for
    # every program they run: signals and crashes, a kill, a full disk, a taken port,
    # memory exhausted, CUDA's own error names
    "crash-signal", "killed", "shell-job-died", "disk-full", "port-in-use", "oom", "cuda-error",
    # a loss or gradient norm that is not a number, in any trainer's dict or line
    "nan-loss",
})


def structure_only_ruleset() -> RuleSet:
    """The shipped rules with every program-specific one switched off (see :data:`GENERAL_RULES`).

    The Slurm pack goes too (it matches only slurmstepd's and srun's wording); the
    structural keywords of the prefilter stay, so a line still reaches the judge.
    """
    return RuleSet([r for r in load_builtin_rules() if r.id in GENERAL_RULES])


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    """The corpus rows, in file order."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def verdict(row: dict[str, Any], rules: RuleSet, tmp: Path) -> tuple[str, list[str]]:
    """The excerpt's verdict and the ``kind:rule`` of each event that led to it."""
    log = tmp / f"{row['id']}.log"
    log.write_text(row["text"] + "\n", encoding="utf-8")
    events, _mon = classify_log(
        log, rules=rules, stage_kind=row["kind"], progress_events=True, include_info=True
    )
    kinds = {e.kind for e in events}
    found = next((k for k in _SEVERITY if k in kinds), "info")
    return found, [f"{e.kind}:{e.rule}" for e in events if e.kind == found]


def score(rows: Iterable[dict[str, Any]], rules: RuleSet | None = None) -> dict[str, Any]:
    """Confusion counts, the four scores and the failures for ``rows``."""
    rules = rules if rules is not None else build_ruleset()
    confusion: Counter[tuple[str, str]] = Counter()
    failures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eagle3tui-corpus-") as d:
        for row in rows:
            got, why = verdict(row, rules, Path(d))
            confusion[(row["label"], got)] += 1
            if got != row["label"]:
                failures.append({"row": row, "verdict": got, "events": why})
    per_label = {lab: sum(n for (a, _b), n in confusion.items() if a == lab) for lab in LABELS}
    non_fatal = sum(per_label[lab] for lab in LABELS if lab != "fatal")

    def ratio(num: int, den: int) -> float:
        return num / den if den else float("nan")

    scores = {
        "fatal_recall": ratio(confusion[("fatal", "fatal")], per_label["fatal"]),
        "false_fatal": ratio(sum(confusion[(lab, "fatal")] for lab in LABELS if lab != "fatal"), non_fatal),
        "benign_recognised": ratio(confusion[("benign", "benign")], per_label["benign"]),
        "progress_recognised": ratio(confusion[("progress", "progress")], per_label["progress"]),
        "warning_recognised": ratio(confusion[("warning", "warning")], per_label["warning"]),
        "info_recognised": ratio(confusion[("info", "info")], per_label["info"]),
    }
    return {"confusion": confusion, "per_label": per_label, "scores": scores, "failures": failures}


def passes(scores: dict[str, float]) -> dict[str, bool]:
    """Which of the four thresholds hold."""
    out = {}
    for name, (op, limit) in THRESHOLDS.items():
        v = scores[name]
        out[name] = v >= limit if op == ">=" else v <= limit
    return out


def table(result: dict[str, Any], title: str) -> str:
    """Markdown confusion table plus the scores."""
    conf = result["confusion"]
    lines = [f"**{title}** ({sum(result['per_label'].values())} excerpts; rows: label, columns: verdict)", ""]
    lines.append("| label \\ verdict | " + " | ".join(LABELS) + " | total |")
    lines.append("| --- |" + " ---: |" * (len(LABELS) + 1))
    for lab in LABELS:
        cells = [str(conf[(lab, got)]) for got in LABELS]
        lines.append(f"| {lab} | " + " | ".join(cells) + f" | {result['per_label'][lab]} |")
    lines.append("")
    ok = passes(result["scores"])
    for name, v in result["scores"].items():
        mark = ""
        if name in THRESHOLDS:
            op, limit = THRESHOLDS[name]
            mark = f" (threshold {op} {limit:.2f}: {'pass' if ok[name] else 'FAIL'})"
        lines.append(f"- {name.replace('_', ' ')}: {v:.3f}{mark}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("tune", "heldout", "all"), default="all")
    ap.add_argument("--show-failures", action="store_true", help="print the misjudged excerpts (tune split only)")
    ap.add_argument(
        "--from-row", type=int, default=0, metavar="N",
        help="score only the excerpts from row N of the corpus on (0-based): a batch added later",
    )
    ap.add_argument(
        "--to-row", type=int, default=None, metavar="M",
        help="and only those before row M (0-based, exclusive): one batch among later ones",
    )
    ap.add_argument(
        "--corpus", type=Path, default=CORPUS, metavar="PATH",
        help="score the excerpts of this JSONL file (the corpus's format) instead of the corpus",
    )
    ap.add_argument(
        "--structure-only", action="store_true",
        help="switch off the rules that name one program's wording (GENERAL_RULES are kept): a proxy for fresh logs",
    )
    args = ap.parse_args(argv)
    rows = load_corpus(args.corpus)[args.from_row : args.to_row]
    splits = ("tune", "heldout") if args.split == "all" else (args.split,)
    rules = structure_only_ruleset() if args.structure_only else build_ruleset()
    for split in splits:
        part = [r for r in rows if r["split"] == split]
        res = score(part, rules)
        print(table(res, f"{split} split"))
        print()
        if args.show_failures:
            if split != "tune":
                print("(failures of the held-out split are not shown: it must stay unseen)\n")
                continue
            for f in res["failures"]:
                row = f["row"]
                print(f"--- {row['id']} [{row['kind']}] label={row['label']} verdict={f['verdict']} {f['events']}")
                print("    " + row["text"][:600].replace("\n", "\n    "))
    if args.split == "all":
        res = score(rows, rules)
        print(table(res, "whole corpus"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
