"""Parse progress out of log lines: tqdm, rich, ``step N/M``, trainer dicts.

Every parser here scans a line left to right or right to left a bounded
number of times (``str.find``/``rfind``/``split``) and only runs small
anchored patterns on short tokens, so no input can make it backtrack
catastrophically: a line of twenty concatenated tqdm updates costs about as
much as twenty single updates, not exponentially more. (A popular log viewer
spends 92 s on such a line with general format regexes.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SI = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_RICH_BAR = "━╸╺╾╼─"
# Used with .match() on a token or .finditer() over a line. Every repetition
# is bounded or is followed by nothing that can fail, so a failed attempt
# costs at most the length of one key (<= 64 chars).
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_DICT_PAIR = re.compile(
    r"""['"]([A-Za-z_][\w./-]{0,63})['"]\s{0,3}:\s{0,3}([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"""
)
_KV_PAIR = re.compile(
    r"([A-Za-z_][\w./-]{0,63})=([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
)
_METRIC_HINTS = ("loss", "acc", "lr", "grad", "ppl", "perplex", "reward", "step", "epoch", "tok", "throughput")


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


def _parse_trainer_dict(s: str) -> ProgressUpdate | None:
    t = s.strip()
    if len(t) > 4096 or not (t.startswith("{") and t.endswith("}")):
        return None
    metrics = {m.group(1): _to_float(m.group(2)) for m in _DICT_PAIR.finditer(t)}
    if not metrics:
        return None
    upd = ProgressUpdate(desc="train", metrics=metrics, source="trainer", unit="epoch")
    if "epoch" in metrics:
        upd.n = metrics["epoch"]
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
    keys = " ".join(metrics).lower()
    if not any(h in keys for h in _METRIC_HINTS):
        return None
    upd = ProgressUpdate(desc="metrics", metrics=metrics, source="metrics")
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


def has_progress_marker(text: str) -> bool:
    """Cheap test: could :func:`parse_progress` find something in ``text``?"""
    return (
        "it/s" in text
        or "s/it" in text
        or "/s]" in text
        or "%|" in text
        or "Completed |" in text
        or "━" in text
        or "throughput" in text
        or "'loss'" in text
        or '"loss"' in text
        or "=" in text
        or "/" in text
    )


def parse_progress(text: str, worker: str | None = None) -> ProgressUpdate | None:
    """Parse one ``\\r`` segment (worker prefix already removed), or None."""
    upd: ProgressUpdate | None = None
    if text.endswith("]") or text.rstrip().endswith("]"):
        upd = _parse_tqdm(text)
    if upd is None and "━" in text:
        upd = _parse_rich(text)
    if upd is None and ("'loss'" in text or '"loss"' in text or "'epoch'" in text):
        upd = _parse_trainer_dict(text)
    if upd is None and "throughput" in text:
        upd = _parse_throughput(text)
    if upd is None and "/" in text:
        upd = _parse_step(text)
    if upd is None and "=" in text:
        upd = _parse_kv(text)
    if upd is not None:
        upd.worker = worker
    return upd
