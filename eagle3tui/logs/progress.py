"""Parse progress out of log lines: tqdm, rich, ``step N/M``, trainer dicts.

Every parser here scans a line left to right or right to left a bounded
number of times (``str.find``/``rfind``/``split``) and only runs small
anchored patterns on short tokens, so no input can make it backtrack
catastrophically: a line of twenty concatenated tqdm updates costs about as
much as twenty single updates, not exponentially more. (A popular log viewer
spends 92 s on such a line with general format regexes.)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from eagle3tui.logs.acceptance import MARKERS as ACCEPTANCE_MARKERS
from eagle3tui.logs.acceptance import parse_acceptance

_SI = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_RICH_BAR = "━╸╺╾╼─"
# A number as Python's float() reads it, and a figure (a number, nan or inf): the
# spelling the patterns below build on.
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_FIG = _NUM + "|nan|inf"
# Used with .match() on a token or .finditer() over a line. Every repetition
# is bounded or is followed by nothing that can fail, so a failed attempt
# costs at most the length of one key (<= 64 chars).
_NUMBER = re.compile(_NUM)


def _pair_pattern(key: str, value: str, single_quoted: bool) -> re.Pattern[str]:
    """A ``'key': value`` pair of a dict or JSON record, the value bare or quoted.

    JSON loggers quote a figure ("train_loss": "486.917") and Python's repr
    quotes with ' ({'loss': '7.6250'}); a quoted value counts when the quotes
    hold the whole number ("eta": "0:21:51" does not). Each quote is a branch
    of its own, not a backreference to the opening one. Groups: 1 the key,
    2 the bare value, 3 the double-quoted one, 4 the single-quoted one (if
    ``single_quoted``).
    """
    single = "|'(" + value + ")'" if single_quoted else ""
    return re.compile(
        "['\"](" + key + ")['\"]" + r"\s{0,3}:\s{0,3}"
        + "(?:(" + value + ')|"(' + value + ')"' + single + ")" + r"(?=\s{0,3}[,}])"
    )


# A figure in a dict or JSON record.
_DICT_PAIR = _pair_pattern(r"[A-Za-z_][\w./-]{0,63}", _FIG, single_quoted=True)
_KV_PAIR = re.compile(r"([A-Za-z_][\w./-]{0,63})=(" + _FIG + ")")
_METRIC_HINTS = ("loss", "acc", "lr", "grad", "ppl", "perplex", "reward", "step", "epoch", "throughput", "persec",
                 "per_sec", "per_second", "samples_per", "tflop", "wps", "ups")
# Training / evaluation / serving figures: a key whose lower-cased name
# contains one of these is a metric ("train_loss", "eval_accuracy",
# "gen throughput (token/s)", "RunningAvgSamplesPerSec", "learning rate").
_METRIC_WORDS = ("loss", "learning rate", "learning_rate", "grad_norm", "grad norm", "gnorm", "ppl",
                 "perplexity", "reward", "throughput", "persec", "per_sec", "per second", "per_second",
                 "samples/s", "tokens/s", "token/s", "tflop", "f1", "bleu", "rouge", "precision", "recall",
                 "auc", "metric", "score", "mfu", "progress", "exact_match")
_METRIC_EXACT = ("lr", "wps", "ups", "tau", "tg", "acc", "mae", "mse", "rmse", "em")
# Counter keys: "step", "iteration", "epoch", "global_step", "num_updates", "batch".
_COUNTER_KEYS = ("step", "iter", "iteration", "epoch", "global_step", "num_updates", "batch", "consumed samples",
                 "consumed_samples", "#running-req", "running")
# "key: value", "key=value", "key = value"; keys may hold spaces, '#', '/', '()' ("gen throughput (token/s)");
# a summary aligns its values in a column ("Total Output Throughput (tokens/sec):             6957.3030").
_PAIR = re.compile(
    r"(?:^|(?<=[\s,|<\[{(:]))([A-Za-z#_][\w#./()@\- ]{0,48}?)\s{0,3}(?:=|: ?)\s{0,40}"
    r"([-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?![\w/:(-])"
)
# Space-separated figures: "iter 100: loss 4.2", "Loss 3.0156 (6.4026)", "| lr 20.00 | ppl 166 |",
# a rate by its name ("tokens_per_sec 43.09").
_SPACE_METRIC = re.compile(
    r"(?:^|(?<=[\s,|<\[(]))((?:(?:[a-z_]{1,12})?(?:loss|Loss|LOSS)|acc|Acc|accuracy|Accuracy|lr|ppl|perplexity|grad_norm|mfu|"
    r"reward|throughput|Throughput|[A-Za-z]{1,12}/s|[A-Za-z_]{0,40}_per_sec(?:ond)?)(?:@\d{1,3}(?:\.\d{1,3})?)?)\s{1,8}([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(?![\w/:(-])"
)
# The figure before its name: "11.8750 loss, 0.0001 LR, 19644.30 GFLOPS", "2330 tok/s".
_NUM_FIRST_METRIC = re.compile(
    r"(?:^|(?<=[\s,|(]))([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s{1,3}"
    r"(loss|Loss|LR|lr|ppl|acc|accuracy|[GTMP]?FLOPS|[A-Za-z]{1,10}/s)(?=[\s,|)]|$)"
)
# Counter shapes that need no metric name: an ETA field ("ETA: 0:01:23", "eta 2h 3m"), a
# percentage of a count ("450/1000 (45%)", "45 of 100 (45.0%)"), an -ing verb's percentage
# ("Downloading: 45%"), seconds per item ("3.21 s/it").
_ETA_FIELD = re.compile(
    r"\b(?:ETA|eta|Eta|time left|remaining)\s{0,2}[:=]?\s{0,2}"
    r"(\d{1,4} days?, \d{1,2}:\d\d:\d\d|\d{1,3}(?::\d\d){1,2}|\d{1,5}(?:\.\d{1,9})?\s?(?:days?|hours?|hrs?|minutes?|mins?|seconds?|secs?|[dhms])"
    r"(?:\s?\d{1,5}(?:\.\d{1,9})?\s?(?:hours?|hrs?|minutes?|mins?|seconds?|secs?|[hms])){0,3}\b)"
)
_COUNT_PERCENT = re.compile(
    r"\b(\d{1,12})\s{0,2}(?:/|of|out of)\s{0,2}(\d{1,12})\b[^%\n]{0,24}?\(\s?(\d{1,3}(?:\.\d{1,3})?)\s?%\)"
    r"|\((\d{1,3}(?:\.\d{1,3})?)\s?%\)\s{0,2}\(?(\d{1,12})\s{0,2}(?:/|of)\s{0,2}(\d{1,12})\b"
    # the percentage first, its count in parentheses: "Receiving objects:  45% (184/408)"
    r"|(?<![\d.])(\d{1,3}(?:\.\d{1,3})?)\s?%\s{1,3}\((\d{1,12})/(\d{1,12})\)"
)
_VERB_PERCENT = re.compile(r"(?:^|(?<=[\s\]]))[A-Z]?[a-z]{2,20}ing\b[\w ]{0,30}?:?\s{1,3}(\d{1,3}(?:\.\d{1,3})?)\s?%(?![\w|])")
# A number starts where no digit stands before it: a search then tries each run of
# digits once, not once per digit (which is quadratic in a 5,000-digit run).
_SECONDS_PER = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s?s/(?:it|step|iter|batch)\b")
# A count, then its percentage: "Transferred:   12102 / 22114, 55%" (rclone); the two must agree.
_FRACTION_PERCENT = re.compile(
    r"(?<![\w./:-])(\d{1,12})\s{0,3}/\s{0,3}(\d{1,12}),?\s{1,3}(\d{1,3}(?:\.\d{1,3})?)\s?%"
)
# A drawn bar and its percentage: "|-----| 2.0% Complete", "[#####     ] 45%"; or "45% complete".
_BAR_PERCENT = re.compile(
    r"[|\[][-=#>█▉▊▋▌▍▎▏ .*]{5,200}[|\]]\s{0,3}(\d{1,3}(?:\.\d{1,3})?)\s?%"
    r"|(?:^|(?<=\s))(\d{1,3}(?:\.\d{1,3})?)\s?%\s(?:[Cc]omplete|[Cc]ompleted|[Dd]one)\b"
    # tqdm's own left half, the rest cut at the terminal's width: "576: 100%|█"
    r"|(?:^|(?<=[\s:]))(\d{1,3}(?:\.\d{1,3})?)%\|[█▉▊▋▌▍▎▏#]{1,200}(?:\s{0,200}$|\s{0,200}\|)"
    # wget's dotted bar: the offset, groups of dots, the percentage ("32768K ........ ........  6%  453M 2s")
    r"|(?:^|(?<=\s))\d{1,12}[KMG]\s{1,6}(?:\.{1,10} {1,3}){1,12}\s{0,4}(\d{1,3})%"
    # a bar of line glyphs padded to its width, the percentage last ("x.gguf ───────────────      61%")
    r"|[─━═█#]{3,200} {1,200}(\d{1,3}(?:\.\d{1,3})?)%\s*$"
)
# A measured figure and its spread, as benchmark and evaluation tables print it:
# "|acc     |0.7054|±  |0.0094|" (lm-eval), "|         pp512 |         18.46 ± 1.73 |" (llama-bench).
_PLUS_MINUS = re.compile(r"(?<![\w.])([-+]?\d{1,12}(?:\.\d{1,12})?)\s{0,3}\|?\s{0,3}±\s{0,3}\|?\s{0,3}\d")
# A drawn bar, then how much of how much: "Downloading: [==>      ]  2.055MB/50.38MB" (docker), "[####  ] 3/8".
_SIZE = r"\d{1,12}(?:\.\d{1,6})?\s?(?:[kKMGTP]i?B|B|[kKMGTP])?"
_BAR_COUNT = re.compile(r"[\[|▕][-=#>█▉▊▋▌▍▎▏ .*]{5,200}[\]|▏]\s{0,3}(" + _SIZE + r")\s?/\s?(" + _SIZE + r")(?![\w/])")
# Bytes of bytes, no bar drawn: "Downloading 130.2 MB/143.4 MB" (docker), "48.4 MiB/1.1 GiB (4.41%)",
# "401.16 MB / 746.51 MB" (git-lfs). Both sides carry a byte unit; a gauge of memory or disk has the
# same shape, so _size_count also asks what the line says around it.
_BYTES = r"(\d{1,12}(?:\.\d{1,6})?)\s?([kKMGTP]i?B|B)"
_SIZE_OF_SIZE = re.compile(r"(?<![\w.])" + _BYTES + r"\s{0,8}/\s{0,8}" + _BYTES + r"(?![\w/])")
# A word ending in -ing names a transfer or a pass under way ("Downloading", "Extracting", "Pulling").
_ING_WORD = re.compile(r"\b[A-Za-z]{2,20}ing\b")
# What a gauge of capacity says: memory, cache, disk, how much is used or free.
_GAUGE_WORD = re.compile(r"(?i)\b(?:mem\w{0,12}|v?ram|usage|used|free|cache|disk|capacity|swap)\b")
# A count of items and the share of the whole it is: "Completed 1 files (25.0%) in 0.007 min".
_COUNT_SHARE = re.compile(r"(?<![\w.])(\d{1,12}) [A-Za-z]{2,20} \((\d{1,3}(?:\.\d{1,3})?)\s?%\)")
# Keys of a record that count (normalised: lower case, no blanks, "_" or "-"):
# {"iter":60,...} (TRT-LLM iteration stats), {"Iteration Counter":200,...}, {"step": 500, ...}.
_RECORD_COUNTERS = frozenset({"iter", "iteration", "iterationcounter", "step", "globalstep", "epoch", "currentstep",
                              "currentsteps", "numupdates"})
_KEY_NOISE = re.compile(r"[\s_-]")
# A record's pair; its key may hold blanks ("Active Request Count"), its number may be quoted.
_RECORD_PAIR = _pair_pattern(r"[A-Za-z_][\w ./-]{0,63}", _NUM, single_quoted=False)
# "acc" is a figure as a word ("acc", "train_acc", "acc_norm", "accuracy", a draft's "accept rate"),
# not as the start of another word ("Accounting Mode Buffer Size" in nvidia-smi -q, "accumulation").
_ACC_WORD = re.compile(r"acc(?:uracy|ept[a-z]{0,6}|s)?(?![a-z])")
# A transfer meter's row: numbers, sizes and clocks ("  12 1431M   12  177M    0     0  2826k      0  0:08:38
# 0:01:04  0:07:34 2869k", curl): the percentage first, time total, spent and left among the columns.
_METER_CLOCK = re.compile(r"\d{1,3}:\d\d:\d\d|--:--:--")
_SPACE_COUNTER = re.compile(
    r"(?:^|(?<=[\s,|\[(]))(iter|iteration|step|epoch|batch|round|Iter|Iteration|Step|Epoch|Batch|Round)\s{1,4}(\d{1,12})\b"
)
_RATE = re.compile(
    r"(?<!\d)(\d+(?:\.\d+)?)\s{0,2}((?:it|step|steps|tok|toks|token|tokens|t|samples?|seq|img|images|B|kB|KB|MB|GB|"
    r"KiB|MiB|GiB|words?|images?|imgs?)/(?:sec|s)|tokens per second|samples per second)\b"
)
# A boosting library's evaluation record: the round in brackets, then its figures
# ("[64]\ttrain-rmse:1.665028", "[1620]\tcv_agg's l1: 0.598669",
# "[3]\tvalidation_0-auc:0.489583\tvalidation_0-logloss:0.862967"): a counter and a metric.
# CatBoost leads with the bare round and a colon ("0:\tlearn: 56.259\ttest: 56.098\tbest: 56.098 (0)").
_ROUND_RECORD = re.compile(r"(?:^|(?<=\s))\[(\d{1,9})\]:?\s{1,12}(?=[A-Za-z_])|^\s{0,8}(\d{1,9}):\s{1,12}(?=[A-Za-z_])")
# The round a record's best figure came from, after that figure: "best: 0.8356368 (1)".
_BEST_ROUND = re.compile(r"\(\d{1,9}\)\s*$")
_ROUND_FIGURE = re.compile(
    r"([A-Za-z_][\w.'-]{0,40}(?: [\w.'-]{1,20})?)\s{0,2}:\s{0,2}([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
    # cross-validation prints the mean and its spread: "0.000307+0.000614"
    r"(?:\+(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)?(?=\s|$)"
)
# "N of M" is the same count in words ("Progress 10240 of 8239447", "(99 of 201 files)").
_FRACTION = re.compile(r"(?<![\w./:-])(\d{1,9})(?:\s{0,3}/\s{0,3}| of )(\d{1,9})(?![\w./:-])")
# A month/day stamp is no counter: "04/21 21:03:53 - mmengine - ...", "[08/14 10:26:13 d2.utils.events]".
_DATE_THEN_TIME = re.compile(r"\s\d{1,2}:\d\d")
# Time spent so far, said in words: "3.704867 seconds elapsed", "elapsed: 12.5s", "Total running
# time: 8s", "(running for 00:00:44.94)". Alone it is no progress ("Time elapsed: 3s"); beside a
# counter ("finished iteration 1") it is.
_ELAPSED = re.compile(
    r"(\d{1,9}(?:\.\d{1,9})?)\s?(?:seconds|secs?|s) elapsed\b"
    r"|\b(?:elapsed|running time|running for):?\s(\d{1,3}(?::\d\d){1,2}(?:\.\d{1,6})?|\d{1,9}(?:\.\d{1,9})?\s?s)\b"
)
# A figure after its capitalised name: "Cost 2.261713", "Loss 0.31" (a decimal point: a count is no
# figure; a capital: "took 12.5 s" or "version 1.5" in a sentence is none either).
_WORD_FIGURE = re.compile(r"(?:^|(?<=[\s,|]))([A-Z][a-z]{1,20})\s{1,3}([-+]?\d{1,9}\.\d{1,12}(?:[eE][-+]?\d+)?)(?=[\s,|]|$)")
# Shapes of progress lines that no digit-free literal marks, searched for among a block's bytes and among
# line templates (digits zeroed: the same shape matches digit for digit), each at the start of its line:
# - a row of numbers led by its counter: "      0/89     5.61G   0.07745 ..." (YOLO trainers print one
#   per epoch, the columns named once in a header above);
# - a line led by its counter in brackets: "[12/56] /usr/local/cuda/bin/nvcc ...", "[ 3/8] Building ...";
# - a transfer meter's row, its percentage, size, percentage, size ("  12 1431M   12  177M    0 ...", curl).
# - bytes of bytes anywhere in a line ("Downloading 130.2 MB/143.4 MB"), both sides with a byte unit.
# (A bare counter anywhere in a line is no such shape: month/day stamps, ranks "0/8", shard names and
# ratios look the same, and a held-out info line was judged progress when this pattern took them.)
PROGRESS_SHAPE = re.compile(
    rb"(?m)^[ \t]{0,40}\d{1,6}/\d{1,6}[ \t]{1,40}[-+.\d]"
    rb"|^\[ {0,4}\d{1,6}/\d{1,6}\] "
    rb"|^[ \t]{0,3}\d{1,3} {1,4}\d[\d.]{0,5}[kMGT]? {1,4}\d{1,3} {1,4}\d[\d.]{0,5}[kMGT]? "
    # bytes of bytes anywhere in a line ("Downloading 130.2 MB/143.4 MB"): the first unit, the slash, a
    # number and its unit; _size_count decides whether the line is a transfer or a gauge
    rb"|[kKMGT]i?B {0,8}/ {0,8}\d[\d.]{0,12} ?[kKMGT]i?B"
    # a row of a results table: three figure cells in a row, each after a run of blanks or a rule
    # ("Gets  0.00  0.00  0.00", "| 0.4003|±  |0.0135|"); _result_row decides
    rb"|(?<![ \t])(?:(?:[ \t]{2,}|[ \t]{0,8}(?:\||\xe2\x94\x82)[ \t]{0,8})"
    rb"(?:[-+]?\d[\d,]{0,14}(?:\.\d{1,12})?(?:%| ?[mun]?s\b)?(?: ?\([\d.]{1,12}\))?|-{1,3})){3}"
)
# Literals of result reports that no progress marker holds: a figure's unit of time in
# parentheses ("Mean TTFT (ms):", "Benchmark duration (s):"), a statistic of a named figure
# ("TTST p50:", "P99 ITL"), an evaluation's score or precision/recall ("Overall Score: 7.00",
# "Average Precision  (AP) @[...] = 0.49"), a JSON member holding a fraction ('"acc": 0.61,').
RESULT_MARKERS = [b"(ms)", b" (s)", b" (sec)", b"Mean ", b"Median ", b" mean", b" median", b"P50", b"P90", b"P95",
                  b"P99", b"p50", b"p90", b"p95", b"p99", b"Score", b"score", b"Precision", b"Recall", b'": 0.',
                  *ACCEPTANCE_MARKERS]  # a server's speculative-decoding report (logs/acceptance.py)
# Counter words, as a line names them: the unit the counter counts.
_COUNTER_UNITS = {"step": "step", "steps": "step", "global_step": "step", "iter": "iter", "iters": "iter",
                  "iteration": "iteration", "iterations": "iteration", "num_updates": "update", "epoch": "epoch",
                  "batch": "batch", "round": "round"}
_PROGRESS_WORDS = ("epoch", "iter", "step", "batch", "sample", "shard", "chunk", "prompt", "progress", "training",
                   "train", "eval", "valid", "test", "loading", "download", "processed", "request", "example")
# tqdm's "[elapsed<remaining, rate]" block: text glued after its "]" is a new message.
_TQDM_BLOCK = re.compile(r"\[(?:\d{1,3}:)?\d{1,3}:\d\d<(?:(?:\d{1,3}:)?\d{1,3}:\d\d|\?)[^\]\n]{0,400}\]")


@dataclass(slots=True)
class ProgressUpdate:
    """One progress observation.

    ``rate`` is items per second whatever the bar printed (``27.30s/it``
    becomes ``rate=1/27.3``); ``unit`` is the item unit without SI prefix.
    """

    desc: str = ""
    n: float | None = None
    total: float | None = None
    elapsed_s: float | None = None
    remaining_s: float | None = None
    rate: float | None = None
    unit: str = "it"
    worker: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    percent: float | None = None
    source: str = "tqdm"  # tqdm | rich | step | trainer | metrics | throughput

    @property
    def fraction(self) -> float | None:
        """Done fraction in [0, 1], if known."""
        if self.n is not None and self.total:
            return min(1.0, self.n / self.total)
        if self.percent is not None:
            return self.percent / 100.0
        return None


def _num(tok: str) -> tuple[float | None, str]:
    """Leading number of ``tok`` (with SI suffix applied) and the rest."""
    m = _NUMBER.match(tok)
    if not m:
        return None, tok
    val = float(m.group())
    rest = tok[m.end() :]
    if rest and rest[0] in _SI and (len(rest) == 1 or rest[1:2].isalpha() or rest[1:2] in "/"):
        val *= _SI[rest[0]]
        rest = rest[1:]
    return val, rest


def parse_clock(tok: str) -> float | None:
    """``"01:33"`` / ``"1:02:03"`` / ``"1d, 2:03:04"`` to seconds; None for ``?``."""
    tok = tok.strip()
    days = 0.0
    if "d" in tok:
        d, _, tok = tok.partition("d")
        if not d.strip().isdigit():
            return None
        days = float(d) * 86400
        tok = tok.lstrip(", ")
    parts = tok.split(":")
    if len(parts) < 2 or len(parts) > 3:
        return None
    total = 0.0
    for p in parts:
        if not p.isdigit():
            return None
        total = total * 60 + int(p)
    return days + total


def _parse_rate(tok: str) -> tuple[float | None, str | None]:
    """``1.79it/s`` -> (1.79, "it"); ``27.30s/it`` -> (1/27.3, "it")."""
    tok = tok.strip()
    if tok.startswith("?"):
        return None, tok[1:].split("/", 1)[0] or None
    val, rest = _num(tok)
    if val is None:
        return None, None
    if rest.startswith("s/") and not rest.endswith("/s"):
        unit = rest[2:].strip() or "it"
        return (1.0 / val if val > 0 else None), unit
    if rest.endswith("/s"):
        return val, rest[:-2].strip() or "it"
    return None, None


def _parse_tqdm(s: str) -> ProgressUpdate | None:
    s = s.rstrip()
    if not s.endswith("]"):
        return None
    lb = s.rfind("[")
    if lb < 0:
        return None
    inner = s[lb + 1 : -1]
    parts = inner.split(", ")
    times = parts[0]
    elapsed_tok, lt, remaining_tok = times.partition("<")
    elapsed = parse_clock(elapsed_tok)
    if elapsed is None:
        return None
    remaining = parse_clock(remaining_tok) if lt else None
    rate = None
    unit: str | None = None
    postfix: dict[str, float] = {}
    if len(parts) > 1:
        rate, unit = _parse_rate(parts[1])
        for extra in parts[2:]:
            for m in _KV_PAIR.finditer(extra):
                postfix[m.group(1)] = _to_float(m.group(2))
    pre = s[:lb].rstrip()
    # The counter token: "450/1000", "1.2k/3.4k" or "123it" (no total).
    sp = max(pre.rfind(" "), pre.rfind("|"))
    tok = pre[sp + 1 :]
    head = pre[: sp + 1].rstrip()
    if unit and tok == unit and not tok[:1].isdigit():
        # tqdm(unit=" examples") puts a blank between count and unit: "2 examples [00:04,  2.13s/ examples]"
        sp = max(head.rfind(" "), head.rfind("|"))
        tok, head = head[sp + 1 :], head[: sp + 1].rstrip()
    n: float | None
    total: float | None = None
    if "/" in tok:
        a, _, b = tok.partition("/")
        n, _ = _num(a)
        total, _ = _num(b)
        if b.startswith("?"):
            total = None
    else:
        n, rest = _num(tok)
        if rest and unit is None:
            unit = rest
    if n is None:
        return None
    percent = None
    if head.endswith("|"):
        head = head[:-1].rstrip()
        bar = head.rfind("|")
        if bar >= 0 and head[bar - 1 : bar] == "%":
            head = head[:bar]
        elif head.endswith("Completed"):
            head = head[: -len("Completed")].rstrip()
    if head.endswith("%"):
        j = len(head) - 1
        i = j
        while i > 0 and (head[i - 1].isdigit() or head[i - 1] == "."):
            i -= 1
        if i < j:
            percent = float(head[i:j])
            head = head[:i]
    desc = head.strip().rstrip(":").strip()
    return ProgressUpdate(
        desc=desc,
        n=n,
        total=total,
        elapsed_s=elapsed,
        remaining_s=remaining,
        rate=rate,
        unit=unit or "it",
        metrics=postfix,
        percent=percent,
        source="tqdm",
    )


def _to_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _parse_rich(s: str) -> ProgressUpdate | None:
    i = 0
    while i < len(s) and s[i] not in _RICH_BAR:
        i += 1
    if i == len(s):
        return None
    j = i
    while j < len(s) and (s[j] in _RICH_BAR or s[j] == " " and j + 1 < len(s) and s[j + 1] in _RICH_BAR):
        j += 1
    upd = ProgressUpdate(desc=s[:i].strip().rstrip(":"), source="rich")
    clocks: list[float | None] = []
    for tok in s[j:].split():
        if tok.endswith("%"):
            v, _ = _num(tok[:-1])
            upd.percent = v
        elif "/" in tok and tok[:1].isdigit() and not tok.endswith("/s"):
            a, _, b = tok.partition("/")
            upd.n, _ = _num(a)
            upd.total, _ = _num(b)
        elif ":" in tok:
            clocks.append(parse_clock(tok))  # "-:--:--" (unknown) gives None
        elif tok.endswith("/s") or "s/" in tok:
            upd.rate, unit = _parse_rate(tok)
            upd.unit = unit or "it"
    if len(clocks) >= 2:
        upd.elapsed_s, upd.remaining_s = clocks[0], clocks[1]
    elif clocks:
        upd.remaining_s = clocks[0]  # rich's default columns show time remaining
    if upd.n is None and upd.percent is None:
        return None
    return upd


def _is_figure_key(key: str) -> bool:
    low = key.lower()
    return (low in _METRIC_EXACT or low in _COUNTER_KEYS or any(w in low for w in _METRIC_WORDS)
            or _ACC_WORD.search(low) is not None)


def _parse_trainer_dict(s: str) -> ProgressUpdate | None:
    t = s.strip()
    if len(t) > 4096 or not t.endswith("}"):
        return None
    start = t.find("{")
    if start < 0 or start > 200:
        return None
    metrics = {m.group(1): _to_float(m.group(2) or m.group(3) or m.group(4)) for m in _DICT_PAIR.finditer(t, start)}
    if not metrics:
        return None
    if start > 0 and (len(metrics) < 2 or not any(_is_figure_key(k) for k in metrics)):
        # A record after a logger's header ("| INFO | train | {...}", "json_stats: {...}"):
        # a training record names its figures; any other JSON payload is not progress.
        return None
    upd = ProgressUpdate(desc="train", metrics=metrics, source="trainer", unit="epoch")
    if "epoch" in metrics:
        upd.n = metrics["epoch"]
    elif "iter" in metrics:
        upd.n, upd.unit = metrics["iter"], "it"
    return upd


def _parse_step(s: str) -> ProgressUpdate | None:
    low = s.lower()
    for word in ("step", "iter", "epoch", "batch"):
        i = low.find(word)
        while i >= 0:
            j = i + len(word)
            # Allow "steps", "step:", "[step 3/10]", "iteration 3 / 10".
            while j < len(s) and (s[j].isalpha()):
                j += 1
            while j < len(s) and s[j] in " :=[#(":
                j += 1
            k = j
            while k < len(s) and s[k].isdigit():
                k += 1
            if k > j:
                m = k
                while m < len(s) and s[m] == " ":
                    m += 1
                if m < len(s) and s[m] == "/":
                    m += 1
                    while m < len(s) and s[m] == " ":
                        m += 1
                    e = m
                    while e < len(s) and s[e].isdigit():
                        e += 1
                    if e > m:
                        metrics = _kv_metrics(s)
                        return ProgressUpdate(
                            desc=word,
                            n=float(s[j:k]),
                            total=float(s[m:e]),
                            unit=word,
                            metrics=metrics,
                            source="step",
                        )
            i = low.find(word, i + 1)
    return None


def _kv_metrics(s: str) -> dict[str, float]:
    if "=" not in s:
        return {}
    return {m.group(1): _to_float(m.group(2)) for m in _KV_PAIR.finditer(s)}


def _parse_kv(s: str) -> ProgressUpdate | None:
    metrics = _kv_metrics(s)
    if not metrics:
        return None
    if not any(_metric_key(k) for k in metrics):
        return None  # a configuration dump ("max_epochs=1", "max_tokens=61"), not figures
    upd = ProgressUpdate(desc="metrics", metrics=metrics, source="metrics")
    if "/" in s:
        # "| epoch 001:    450 / 1891 loss=11.521, ...": the counter a progress word names.
        frac = _find_fraction(s, False)
        if frac is not None:
            upd.n, upd.total = frac
            upd.unit = "it"
            return upd
    for k in ("step", "global_step", "iter", "iteration"):
        if k in metrics:
            upd.n = metrics[k]
            upd.unit = "step"
            break
    for k in ("total_steps", "max_steps", "num_steps"):
        if k in metrics:
            upd.total = metrics[k]
    return upd


def _parse_throughput(s: str) -> ProgressUpdate | None:
    metrics: dict[str, float] = {}
    rate = None
    unit = "it"
    for part in s.split(", "):
        name, sep, value = part.rpartition(": ")
        if not sep:
            continue
        name = name.rsplit("] ", 1)[-1].strip()
        v, rest = _num(value.strip())
        if v is None or not name:
            continue
        metrics[name] = v
        if "throughput" in name.lower() and rest.strip().endswith("/s"):
            # vLLM prints prompt then generation throughput: the last wins.
            rate = v
            unit = rest.strip()[:-2] or "it"
    if rate is None:
        return None
    return ProgressUpdate(desc="throughput", rate=rate, unit=unit, metrics=metrics, source="throughput")


def split_glued(segs: list[str]) -> list[str]:
    """Split text glued after a tqdm bar into its own segment.

    A bar that was drawn without a final newline is followed on the same
    physical line by whatever was printed next: ``...[00:02<00:03,
    1.28it/s]Killed``, ``...it/s]Traceback (most recent call last):``. On
    screen the bar was overwritten; for meaning they are two messages.
    """
    out: list[str] = []
    for seg in segs:
        pos = 0
        while True:
            m = _TQDM_BLOCK.search(seg, pos)
            if m is None:
                break
            end = m.end()
            if end < len(seg) and not seg[end].isspace():
                out.append(seg[:end])
                seg = seg[end:]
                pos = 0
            else:
                pos = end
        out.append(seg)
    return out


# A name whose shape says it was measured: a rate per unit time ("global_step/sec",
# "Request throughput (req/s)"), a ranked evaluation at a cutoff ("Acc@1", "pass@1", "mAP@0.5"),
# a time or share with its unit in parentheses, apart from the name ("Mean TTFT (ms)", "Benchmark
# duration (s)", "Time taken for tests (s)"; "NUMA node(s)", "Socket(s)" are plurals), or a
# statistic of something named ("Mean TTFT", "TTST p50", "P99 Time To First Token"). The
# statistic needs its name beside it: a bare
# "Avg :" or "Max :" is a field of a device report (nvidia-smi -q's power samples), and min/max
# name limits in settings ("Max Runtime Batch Size") as often as results.
_MEASURED_NAME = re.compile(
    r"/s(?:ec(?:ond)?)?\)?$|\w@\d"
    r"|\s\((?:ms|s|sec|secs|seconds|us|µs|ns|min|mins|%|time in [mµun]?s)\)$"
    r"|^(?:mean|median|avg|average|std|stddev|stdev|p\d\d(?:\.\d{1,2})?) +\S"
    r"|\S +(?:mean|median|avg|average|std|stddev|stdev|p\d\d(?:\.\d{1,2})?)$"
)
# A server's gauges (SGLang's batch lines, vLLM's stats line).
_GAUGE_KEYS = ("#running-req", "#queue-req", "token usage", "#token", "#new-seq", "#new-token", "#cached-token",
               "gpu kv cache usage", "kv cache usage", "waiting", "pending", "swapped")


# A key naming a threshold: "score_thr", "iou_thr", "mask_thr_binary", "score_threshold", "SCORE_THRESH_TEST".
_THRESHOLD_KEY = re.compile(r"(?:^|[_ .])thr(?:esh(?:old)?)?(?:$|[_ .])")
# A source file's name, as glog/absl/c10d/vLLM headers give it before ":line".
_SOURCE_FILE = re.compile(r"(?:^|[\s\[(])[\w/-]{1,80}\.(?:cc|cpp|cxx|c|h|hpp|cu|cuh|py|go|rs|java|js|ts)$")


def _metric_key(key: str) -> str | None:
    """``"metric"``, ``"counter"`` or None for a key of a metric pair."""
    k = key.strip().lower()
    if not k:
        return None
    if "." in k and _SOURCE_FILE.search(k):
        # A logger header's source location ("I1024 04:13:54 169 metrics.cc:810] ..."):
        # the number is a line of the program, whatever the file is called.
        return None
    if k in _GAUGE_KEYS:
        return "metric"
    if _THRESHOLD_KEY.search(k):
        # A threshold is a setting a figure is held to ("score_thr=0.05", "iou_threshold"), as
        # printed in a detector's config dump, not a figure.
        return None
    last = k.rsplit(" ", 1)[-1]
    if k in _COUNTER_KEYS or last in ("step", "iteration", "epoch", "iter"):
        return "counter"
    if k in _METRIC_EXACT or last in _METRIC_EXACT:
        return "metric"
    # "gradient accumulation steps" is a setting, not an accuracy; the fp16 loss
    # scaler's "loss scale" is a setting the scaler adjusts, not a loss
    if ((any(w in k for w in _METRIC_WORDS) or _ACC_WORD.search(k) is not None) and "penalty" not in k and "max_" not in k and "accum" not in k
            and "scale" not in k):
        return "metric"
    if _MEASURED_NAME.search(k):
        return "metric"
    return None


_DURATION_PART = re.compile(r"(\d{1,5}(?:\.\d{1,9})?)\s?([dhms])")  # Go prints nine decimals: "1m48.55284203s"
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def _duration(tok: str) -> float | None:
    """Seconds in ``1:23``, ``0:01:23``, ``45s``, ``2.5 m``, ``3h``, ``1 day, 18:57:37``."""
    tok = tok.strip()
    if "day" in tok and "," in tok:  # "1 day, 18:57:37"; "3 days", "2 days 4 hours" are parts below
        days, _, clock = tok.partition(" ")
        rest = parse_clock(clock.partition(",")[2])
        return int(days) * 86400.0 + rest if days.isdigit() and rest is not None else None
    if ":" in tok:
        clock, _, frac = tok.partition(".")  # "00:00:44.94": a clock with its fraction of a second
        whole = parse_clock(clock)
        return whole + float("0." + frac) if whole is not None and frac.isdigit() else whole
    parts = _DURATION_PART.findall(tok)
    if len(parts) > 1:  # "1h 39m 38s", "21m46s"
        return sum(float(v) * _UNIT_SECONDS[u] for v, u in parts)
    v, rest = _num(tok)
    if v is None:
        return None
    return v * _UNIT_SECONDS.get(rest.strip()[:1], 1.0)


def _round_record(s: str) -> ProgressUpdate | None:
    """A boosting round's evaluation record (``[12]\tvalid-auc:0.81``), or None.

    The bracketed round must be followed directly by ``name:value`` figures,
    each separated by blanks; anything else after the bracket is not one.
    """
    m = _ROUND_RECORD.search(s)
    if m is None:
        return None
    metrics: dict[str, float] = {}
    pos = m.end()
    while True:
        fm = _ROUND_FIGURE.match(s, pos)
        if fm is None:
            break
        metrics[fm.group(1)] = _to_float(fm.group(2))
        pos = fm.end()
        while pos < len(s) and s[pos] in " \t":
            pos += 1
    if not metrics or (s[pos:].strip() and _BEST_ROUND.match(s, pos) is None):
        return None
    if m.group(2) is not None and not any(math.isfinite(v) and v != int(v) for v in metrics.values()):
        return None  # "0:\tcuda:0" numbers a device; a round's record measures something (a decimal figure)
    return ProgressUpdate(desc="metrics", n=float(m.group(1) or m.group(2)), unit="round", metrics=metrics,
                          source="metrics")


def _find_fraction(s: str, have_figures: bool) -> tuple[float, float] | None:
    """The counter ``n/total`` of a free-form line, or None.

    A fraction counts when a progress word stands just before it
    (``epoch 001:    450 / 1891``, ``Epoch [1][2400/7517]``), when it opens a
    drawn bar (``32/768 [>.....]``) or follows one (``100%|███| 1849/1849``),
    or when the line carries figures. A month/day stamp before a time
    (``04/21 21:03:53``) and a fraction past its total are no counter.
    """
    low = s.lower()
    for fm in _FRACTION.finditer(s):
        a, b = int(fm.group(1)), int(fm.group(2))
        if b == 0 or a > b:
            continue
        end = fm.end()
        after = s[end : end + 2]
        if (len(fm.group(1)) == 2 and len(fm.group(2)) == 2 and _DATE_THEN_TIME.match(s, end)):
            continue
        near = low[max(0, fm.start() - 40) : fm.start()]
        if after.startswith((" [", "]", " |", "|")) and ("[" in after or any(w in near for w in _PROGRESS_WORDS)):
            return float(a), float(b)
        if after[:1] == "]" and s[: fm.start()].strip() == "[":
            return float(a), float(b)  # a line led by its counter: "[12/56] nvcc ...", "[ 3/8] Building ..."
        if have_figures or any(w in near for w in _PROGRESS_WORDS) or ("%|" in near and near.rstrip().endswith("|")):
            return float(a), float(b)
    return None


def _size_count(s: str) -> tuple[float, float] | None:
    """Bytes done and bytes in all (``130.2 MB/143.4 MB``), or None.

    The same shape reports a gauge (``43MiB /  2002MiB`` in a device table,
    ``Memory: 12 GiB / 80 GiB``); a transfer says it is moving: a word in
    -ing before the count, a percentage, a rate, an ETA or a count of files.
    A table row (led by ``|``), a line that names memory, cache or disk
    anywhere (``2.0GiB/8.0GiB memory``) and a row of several such pairs
    (``docker stats``: memory used of its limit, network and block I/O in and
    out; a transfer counts one quantity) are gauges.
    """
    if s.lstrip()[:1] == "|":
        return None
    pairs = list(_SIZE_OF_SIZE.finditer(s))
    if len(pairs) > 1:
        return None
    for m in pairs:
        a, _ = _num(m.group(1) + m.group(2))
        b, _ = _num(m.group(3) + m.group(4))
        if a is None or not b or a > b:
            continue
        if _GAUGE_WORD.search(s):
            return None
        head = s[: m.start()]
        if (_ING_WORD.search(head) or "%" in s or "/s" in s or "ETA" in s or "eta" in s
                or _FRACTION.search(head)):
            return a, b
    return None


def _record(s: str) -> ProgressUpdate | None:
    """A JSON or dict record that counts (``{"iter":60,"iterLatencyMS":13.0,...}``), or None.

    The record must hold a counter key with a number and at least one more
    figure; a record that only names things is not progress.
    """
    t = s.rstrip().rstrip(",").rstrip()
    if len(t) > 8192 or not t.endswith("}"):
        return None
    start = t.find("{")
    if start < 0 or start > 200:
        return None
    pairs = {m.group(1): _to_float(m.group(2) or m.group(3)) for m in _RECORD_PAIR.finditer(t, start)}
    if len(pairs) < 2:
        return None
    for key, val in pairs.items():
        if _KEY_NOISE.sub("", key.lower()) in _RECORD_COUNTERS and math.isfinite(val) and val >= 0:
            return ProgressUpdate(desc="record", n=val, unit="iter", metrics=pairs, source="trainer")
    return None


def _meter_row(s: str) -> ProgressUpdate | None:
    """A transfer meter's row of numbers and clocks (curl's progress meter), or None.

    Every column is a number (an SI suffix allowed) or a clock (``0:08:38``,
    ``--:--:--`` while unknown); at least two clocks, and the row starts with
    the percentage done. With three clocks they are total, spent and left.
    """
    toks = s.split()
    if len(toks) < 6 or len(toks) > 16 or not toks[0].isdigit() or int(toks[0]) > 100:
        return None
    clocks: list[str] = []
    for tok in toks:
        if _METER_CLOCK.fullmatch(tok):
            clocks.append(tok)
            continue
        v, rest = _num(tok)
        if v is None or rest not in ("", "B"):
            return None
    if len(clocks) < 2:
        return None
    upd = ProgressUpdate(desc="transfer", percent=float(toks[0]), source="metrics")
    if len(clocks) >= 3:
        upd.elapsed_s = parse_clock(clocks[-2])
        upd.remaining_s = parse_clock(clocks[-1])  # "--:--:--" (not known yet) gives None
    return upd


def _table_row(s: str) -> ProgressUpdate | None:
    """A row of numbers led by its counter (``  7/89  5.61G  0.0359 ... 640``), or None.

    Every column after the counter must be a number (an SI or ``%`` suffix
    allowed); at least three of them, so a lone ``3/4 5`` is not one.
    """
    toks = s.split()
    if len(toks) < 4 or len(toks) > 64:
        return None
    a, sep, b = toks[0].partition("/")
    if not (sep and a.isdigit() and b.isdigit()) or int(b) == 0 or int(a) > int(b):
        return None
    for tok in toks[1:]:
        v, rest = _num(tok)
        if v is None or rest not in ("", "%", "B"):
            return None
    return ProgressUpdate(desc="progress", n=float(a), total=float(b), source="metrics")


# Measured results by their layout: the report an evaluation or benchmark prints at its end or per
# epoch. A table cell is what stands between two runs of blanks or between rules (|, │, ┃); a cell
# of a measured figure is a plain number (thousands grouped with ",", a "%" or an "x" of speed-up
# after it, a unit of time: "81778.9 ms", its ratio to the best run in parentheses: "2.0069 (1.0)").
# A size with its unit ("7.9G", "41.16 MiB") is no such cell: tables of sizes are gauges (df,
# docker stats, nvidia-smi, torch's memory summary).
_CELL_SPLIT = re.compile(r"(?<![ \t])[ \t]{0,200}[|│┃][ \t]{0,200}|(?<![ \t])[ \t]{2,}")
_FIGURE_CELL = re.compile(
    r"(?<![\d,.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d{1,15})(?:\.\d{1,12})?(?:[eE][-+]?\d{1,3})?(?:[%x]| ?[mµun]?s)?"
    r"(?: ?\((?:[<>]?\d{1,9}(?:\.\d{1,6})?|inf)\))?"
)
# Cells that say "no figure here" in a row of figures.
_EMPTY_CELLS = frozenset({"-", "--", "---", "n/a", "N/A", "nan", "NaN", "None"})
# A pretty-printed JSON member holding a figure, one to a line ("exact_match,get-answer": 0.1736,).
_JSON_MEMBER = re.compile(r'^\s{0,40}"([^"\n]{1,80})"\s{0,3}:\s{0,3}(' + _NUM + r')\s{0,3},?\s{0,3}$')
# A figure that ends its line after " = ", its name and conditions before it
# ("Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.492").
_TRAILING_FIGURE = re.compile(r"^\s{0,8}([A-Za-z][^\n]{0,200}?)\s=\s{1,3}([-+]?\d{1,9}\.\d{1,12})\s{0,8}$")


def _result_row(s: str) -> ProgressUpdate | None:
    """A row of a results table (``Sets  25378.16  ---  10.07100``, ``class 0  0.50  1.00  0.67  1``), or None.

    The row leads with its name (a letter first) and the cells after it are
    figures: at least three of them, one with a fraction, and few other cells
    (at most one in three; "0;0" outlier counts, a name's second column). One
    or two figures do if the name says it was measured (``| Time to First
    Token (ms) | 24.44 | 25.59 |``) and nothing else follows. A row drawn
    between rules may lead with its settings instead of a name (``| 128 | 128
    |  1 |  8 |  650.5 | ...``) if every cell is a figure. A row of sizes, of
    integers only, or led by a number outside rules (a process id, a tensor's
    values, a count of lint errors) is no result.
    """
    cells = [c for c in _CELL_SPLIT.split(s.strip()) if c]
    if len(cells) < 2 or len(cells) > 40:
        return None
    if not cells[0][:1].isalpha():
        ruled = s.lstrip()[:1] in "|│"
        if not ruled or len(cells) < 3 or not all(_FIGURE_CELL.fullmatch(c) for c in cells):
            return None
        if not any("." in c for c in cells):
            return None
        first, _ = _num(cells[-1].replace(",", ""))
        return ProgressUpdate(desc="result", metrics={"value": first if first is not None else 0.0}, source="metrics")
    name = cells[0]
    figures: list[str] = []
    others = 0
    for cell in cells[1:]:
        if _FIGURE_CELL.fullmatch(cell):
            figures.append(cell)
        elif cell not in _EMPTY_CELLS:
            others += 1
            if not figures:
                name = cell  # the name's second column ("test_fig (NOW)", after a container's prefix)
    if not figures:
        return None
    many = len(figures) >= 3 and others <= len(figures) // 3 and any("." in f for f in figures)
    if not many and (others or _metric_key(name) != "metric"):
        return None
    first, _ = _num(figures[0].replace(",", ""))
    return ProgressUpdate(desc="result", metrics={name.strip()[-64:]: first if first is not None else 0.0},
                          source="metrics")


def _result_figure(s: str) -> ProgressUpdate | None:
    """A result printed one figure to a line: a JSON member or ``name ... = 0.492``, or None.

    The name must be a metric's (``exact_match``, ``loose_acc``, ``Average
    Precision``); a setting printed the same way (``"batch_size": 8``) is not.
    """
    m = _JSON_MEMBER.match(s) if '"' in s else None
    if m is None and " = " in s:
        m = _TRAILING_FIGURE.match(s)
    if m is None or _metric_key(m.group(1)[:120]) != "metric":
        return None
    return ProgressUpdate(desc="result", metrics={m.group(1).strip()[-64:]: _to_float(m.group(2))}, source="metrics")


def _parse_figures(s: str) -> ProgressUpdate | None:
    """Metric pairs, rates and counters in a free-form line.

    ``iteration 122/ 250000 | lm loss: 2.50E+00``, ``0/17,
    SamplesPerSec=158.3``, ``epoch=0 step=38 train_loss=8.28``, ``Decode
    batch. #running-req: 5, gen throughput (token/s): 144.95``, ``eval time
    = 319.58 ms / 10 tokens (31.29 tokens per second)``, ``178/178 [=====]
    - 0s 76us/step - loss: 0.0636``. A line is progress when it carries a
    training, evaluation or serving figure, a rate, or a counter with its
    total; configuration dumps (``max_tokens=61``, ``n_ctx = 512``) are not.
    """
    if len(s) > 4096:
        s = s[:4096]
    if "]" in s or ":\t" in s or s[:1].isdigit():
        rec = _round_record(s)
        if rec is not None:
            return rec
    if s[:1] in " \t0123456789" and "/" in s:
        row = _table_row(s)
        if row is not None:
            return row
    if s[:1] in " \t0123456789" and ":" in s:
        meter = _meter_row(s)
        if meter is not None:
            return meter
    if "  " in s or "|" in s or "│" in s:
        row = _result_row(s)
        if row is not None:
            return row
    if '"' in s or " = " in s:
        fig = _result_figure(s)
        if fig is not None:
            return fig
    metrics: dict[str, float] = {}
    counters: dict[str, float] = {}
    for m in _PAIR.finditer(s):
        # A key starts after a sentence's end: "Decode batch. #running-req: 5".
        key = m.group(1).rsplit(". ", 1)[-1].strip()
        kind = _metric_key(key)
        if kind is None:
            continue
        val = _to_float(m.group(2).replace(",", ""))
        if kind == "counter":
            # "root - INFO - step: 4", "completed step: 15107": the counter is the last word.
            last = key.rsplit(" ", 1)[-1].lower()
            if last in _COUNTER_UNITS:
                key = last
            counters[key] = val
        else:
            metrics[key] = val
    for m in _SPACE_METRIC.finditer(s):
        metrics.setdefault(m.group(1), _to_float(m.group(2)))
    if "/s" in s or "loss" in s or "LR" in s or "lr" in s or "FLOPS" in s or "ppl" in s or "acc" in s:
        for m in _NUM_FIRST_METRIC.finditer(s):
            metrics.setdefault(m.group(2), _to_float(m.group(1)))
    if "±" in s:
        # A figure with its spread is a measurement; its name is the table cell before it.
        for m in _PLUS_MINUS.finditer(s):
            cells = s[: m.start()].split("|")
            name = next((c.strip()[-64:] for c in reversed(cells) if any(ch.isalpha() for ch in c)), "value")
            metrics.setdefault(name, _to_float(m.group(1)))
    elapsed = None
    if "elapsed" in s or "running " in s:
        em = _ELAPSED.search(s)
        if em:
            elapsed = float(em.group(1)) if em.group(1) else _duration(em.group(2))
    if metrics or elapsed is not None:
        for m in _SPACE_COUNTER.finditer(s):
            counters.setdefault(m.group(1).lower(), float(m.group(2)))
    elif "." in s:
        # "Pass 0, Batch 100, Cost 2.261713": a counter word and its number, then a
        # decimal figure after its name; a counter alone ("at step 500.") is no figure.
        spaced = {m.group(1).lower(): float(m.group(2)) for m in _SPACE_COUNTER.finditer(s)}
        if spaced:
            for m in _WORD_FIGURE.finditer(s):
                if m.group(1).lower() not in _COUNTER_UNITS:
                    metrics.setdefault(m.group(1), _to_float(m.group(2)))
            if metrics:
                for k, v in spaced.items():
                    counters.setdefault(k, v)
    rate = None
    unit = "it"
    rm = _RATE.search(s)
    if rm:
        rate = float(rm.group(1))
        unit = rm.group(2).split("/")[0].split(" ")[0]
    n = total = None
    frac = _find_fraction(s, bool(metrics))
    if frac is not None:
        n, total = frac
    if rate is None and "s/" in s:
        sm = _SECONDS_PER.search(s)
        if sm and float(sm.group(1)) > 0:
            rate = 1.0 / float(sm.group(1))
            unit = "it"
    if total is None and "%" in s:
        cm = _COUNT_PERCENT.search(s)
        if cm:
            a, b = next((cm.group(i), cm.group(i + 1)) for i in (1, 5, 8) if cm.group(i))
            if 0 < int(b) and int(a) <= int(b):
                n, total = float(a), float(b)
        if total is None:
            fp = _FRACTION_PERCENT.search(s)
            if fp and 0 < int(fp.group(2)) and abs(100.0 * int(fp.group(1)) / int(fp.group(2)) - float(fp.group(3))) <= 1.0:
                n, total = float(fp.group(1)), float(fp.group(2))
    if total is None and ("[" in s or "|" in s or "▕" in s):
        bm = _BAR_COUNT.search(s)
        if bm:
            a_val, _ = _num(bm.group(1).replace(" ", ""))
            b_val, b_unit = _num(bm.group(2).replace(" ", ""))
            if a_val is not None and b_val and a_val <= b_val:
                n, total = a_val, b_val
                if b_unit[:1] == "B":
                    unit = "B"
    if total is None and "B" in s and "/" in s:
        sized = _size_count(s)
        if sized is not None:
            n, total = sized
            unit = "B"
    remaining = None
    if ("ETA" in s or "eta" in s or "Eta" in s or "remaining" in s or "time left" in s):
        em = _ETA_FIELD.search(s)
        if em:
            remaining = _duration(em.group(1))
    if not metrics and rate is None and total is None:
        pm = "%" in s and (_BAR_PERCENT.search(s) or _VERB_PERCENT.search(s))
        if pm:
            pct = float(next(g for g in pm.groups() if g))
            if pct <= 100.0:
                return ProgressUpdate(desc="progress", percent=pct, source="metrics", remaining_s=remaining)
        sm = "%)" in s and _COUNT_SHARE.search(s)
        if sm and float(sm.group(2)) <= 100.0:
            return ProgressUpdate(desc="progress", n=float(sm.group(1)), percent=float(sm.group(2)), unit="item",
                                  source="metrics", remaining_s=remaining)
        if remaining is not None:
            return ProgressUpdate(desc="progress", remaining_s=remaining, source="metrics", metrics=counters)
        if not counters:
            return None
        # A lone counter ("> working on iteration: 10", "global_step = 9").
    upd = ProgressUpdate(desc="metrics", metrics={**counters, **metrics}, source="metrics", rate=rate, unit=unit,
                         remaining_s=remaining, elapsed_s=elapsed)
    if total is not None:
        upd.n, upd.total = n, total
    else:
        for k, v in counters.items():
            unit_name = _COUNTER_UNITS.get(k.lower())
            if unit_name is not None:
                upd.n = v
                upd.unit = unit_name
                break
    if serving_figures(upd.metrics):
        upd.source = "throughput"  # a server's live figures, like vLLM's throughput line
        upd.desc = "throughput"
    return upd


def serving_figures(metrics: dict[str, float]) -> dict[str, float]:
    """A server's live figures from a metrics dict, under stable names.

    ``throughput_tok_s`` (generation throughput, tokens/s),
    ``prompt_throughput_tok_s``, ``running_reqs``, ``queued_reqs`` and
    ``kv_usage`` (0..1), from vLLM (``Avg generation throughput``,
    ``Running``, ``Waiting``, ``GPU KV cache usage``) and SGLang (``gen
    throughput (token/s)``, ``#running-req``, ``#queue-req``, ``token usage``)
    lines, and llama.cpp timings.
    """
    out: dict[str, float] = {}
    for k, v in metrics.items():
        key = k.lower()
        if "throughput" in key and ("gen" in key or "generation" in key or "decode" in key):
            out["throughput_tok_s"] = v
        elif "throughput" in key and ("prompt" in key or "input" in key or "prefill" in key):
            out["prompt_throughput_tok_s"] = v
        elif key in ("#running-req", "running", "num_running_reqs"):
            out["running_reqs"] = v
        elif key in ("#queue-req", "waiting", "num_queue_reqs"):
            out["queued_reqs"] = v
        elif key in ("token usage", "gpu kv cache usage", "kv cache usage"):
            out["kv_usage"] = v / 100.0 if v > 1.0 else v
        elif key in ("acceptance_length", "acceptance_rate", "draft_positions"):
            out[key] = v  # from logs/acceptance.py, already under these names
    return out

def parse_progress(text: str, worker: str | None = None) -> ProgressUpdate | None:
    """Parse one ``\\r`` segment (worker prefix already removed), or None."""
    upd: ProgressUpdate | None = None
    accepted = parse_acceptance(text)
    if accepted is not None and accepted.whole_line:
        # A server's speculative-decoding report is its acceptance, nothing else.
        return ProgressUpdate(desc="throughput", source="throughput", metrics=accepted.figures(), worker=worker)
    if text.endswith("]") or text.rstrip().endswith("]"):
        upd = _parse_tqdm(text)
    if upd is None and "━" in text:
        upd = _parse_rich(text)
    if upd is None and ("'loss'" in text or '"loss"' in text or "'epoch'" in text or '"epoch"' in text):
        upd = _parse_trainer_dict(text)
    if upd is None and "throughput" in text:
        upd = _parse_throughput(text)
    if upd is None and "/" in text:
        upd = _parse_step(text)
    if upd is None and "=" in text:
        upd = _parse_kv(text)
    if upd is None and "{" in text and "}" in text:
        upd = _record(text)
    if upd is None:
        upd = _parse_figures(text)
    if accepted is not None:
        # SGLang's decode-batch line: its throughput and requests, and its acceptance.
        upd = upd or ProgressUpdate(desc="throughput", source="throughput")
        upd.metrics.update(accepted.figures())
    if upd is not None:
        upd.worker = worker
    return upd
