"""Benign recognition by structure alone: the corpus scored without the notice catalog.

    PYTHONPATH=$PWD .venv/bin/python bench/benign_without_catalog.py [--split tune] [--to-row 1618] [--show-catalog-only]

The shipped pack holds, next to its generic harmless families, a catalog of
known harmless notices: one rule per notice of one program (``*-notice``,
``tokenizers-fork``, ``gbdt-no-split``...). A fresh program's harmless notice,
in its own words, meets none of them: what recognises it then is the judge's
structure (level and source, a fallback or an absent optional part, a
decision stated, a failed probe or auxiliary part, what comes next). So the
benign score with the catalog switched off is a proxy, computable on the tune
split, for how benign recognition carries to programs never seen.

Kept: the generic benign families (their words are shared by many programs:
an import that failed with a fallback, a 4xx access line, a retry, Python's
shutdown noise, a line that says to ignore it, a deprecation), every
non-benign rule, every structural cue of the judge and the monitor.
Switched off: every other benign rule of ``builtin_rules.toml`` (its
keywords too, so that a line only they made a candidate is no longer one,
as a fresh line in other words would not be).

``--show-catalog-only`` lists the benign rows recognised with the catalog
and not without it (tune split only: the held-out split stays unseen).

Its sibling, ``score_corpus.py --structure-only``, switches off more: every
rule in one program's wording, fatal and warning ones included (its
``GENERAL_RULES`` are what stays). This tool isolates the benign catalog,
so that what structure alone recognises of the harmless lines is read apart
from what happens to fatal endings; both reuse one scorer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from eagle3tui.logs.rules import RuleSet, build_ruleset, load_shipped_rules  # noqa: E402
from score_corpus import load_corpus, score  # noqa: E402

# Benign families of the pack written in words many programs share: a shape, not a notice.
GENERIC_BENIGN = frozenset(
    {"optional-import", "request-error-survived", "retry", "shutdown-noise", "says-ignore", "deprecation"}
)


def catalog_ids() -> frozenset[str]:
    """Ids of the shipped benign rules that name one program's notice."""
    return frozenset(
        r.id for r in load_shipped_rules() if r.source == "builtin" and r.kind == "benign" and r.id not in GENERIC_BENIGN
    )


def without_catalog_ruleset() -> RuleSet:
    """The shipped rule set less the notice catalog (see the module's doc)."""
    off = catalog_ids()
    return RuleSet([r for r in load_shipped_rules() if r.id not in off])


def benign_figures(rows: list[dict]) -> dict[str, object]:
    """Benign recognised with every rule and without the catalog, and the rows only the catalog catches."""
    benign = [r for r in rows if r["label"] == "benign"]
    full = score(benign, build_ruleset())
    bare = score(benign, without_catalog_ruleset())
    missed_full = {f["row"]["id"] for f in full["failures"]}
    bare_fail = {f["row"]["id"]: f for f in bare["failures"]}
    only_catalog = [bare_fail[i] for i in bare_fail if i not in missed_full]
    return {
        "n": len(benign),
        "with_catalog": len(benign) - len(missed_full),
        "without_catalog": len(benign) - len(bare_fail),
        "only_catalog": only_catalog,
        "full_failures": full["failures"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("tune", "heldout"), default="tune")
    ap.add_argument("--from-row", type=int, default=0)
    ap.add_argument("--to-row", type=int, default=None)
    ap.add_argument("--show-catalog-only", action="store_true", help="list the rows only the catalog catches (tune only)")
    args = ap.parse_args(argv)
    rows = [r for r in load_corpus()[args.from_row : args.to_row] if r["split"] == args.split]
    res = benign_figures(rows)
    n = res["n"]
    w, wo = res["with_catalog"], res["without_catalog"]
    print(f"{args.split} benign rows {args.from_row}..{args.to_row}: {n}")
    print(f"  recognised with every rule:      {w}/{n} = {w / n:.3f}")
    print(f"  recognised without the catalog:  {wo}/{n} = {wo / n:.3f}")
    if args.show_catalog_only:
        if args.split != "tune":
            print("(rows of the held-out split are not shown)")
            return 0
        for f in res["only_catalog"]:
            row = f["row"]
            print(f"--- {row['id']} [{row['kind']}] without-catalog verdict={f['verdict']} {f['events']}")
            print("    " + row["text"][:400].replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
