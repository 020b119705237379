"""Finding the lines of a block worth reading: the progress markers and where they sit.

The monitor's scans (by line, and by line template) read only the lines a rule's
keyword or a progress marker points at; this module finds the marker lines.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from bisect import insort
from itertools import accumulate
from itertools import compress
import gc

from eagle3tui.logs.anatomy import Shape
from eagle3tui.logs.judge import is_recovery, is_request_source, Verdict
from eagle3tui.logs.monitor_terms import (
    event as _event,
    FATAL_LEVEL as _FATAL_LEVEL,
    GENERIC_RULES as _GENERIC_RULES,
    HELD_RULES as _HELD_RULES,
    NO_BLOCK as _NO_BLOCK,
    SPECIAL_RULES as _SPECIAL_RULES,
    TEMPLATE_BLOCK as _TEMPLATE_BLOCK,
)
from eagle3tui.logs.progress import PROGRESS_SHAPE, RESULT_MARKERS
from eagle3tui.logs.templates import BY_TEMPLATE, QUIET, SENSITIVE, Template, TemplateIndex, TO_ZERO


try:
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover
    _ahocorasick = None  # type: ignore[assignment]

# Literals that every line parse_progress can use contains one of, but for
# the counters and meter rows that progress.PROGRESS_SHAPE finds by shape.
PROGRESS_MARKERS = [
    b"it/s",
    b"s/it",
    b"/s]",
    b"/s,",
    b"/s ",
    b"%|",
    b"Completed |",
    "━".encode(),
    b"'loss'",
    b'"loss"',
    b"'epoch'",
    b"throughput",
    b"Throughput",
    b"step",
    b"Step",
    b"STEP",
    b"loss",
    b"Loss",
    b"Epoch",
    b"epoch",
    b"iter",
    b"Iter",
    b"PerSec",
    b"per second",
    b"/sec",
    b"acc",
    b"Acc",
    b"metric",
    b"progress",
    b"Decode batch",
    b"Prefill batch",
    b"/step",
    b"t/s",
    b"/s)",
    b"Progress",
    b"Batch",  # "Pass 0, Batch 100, Cost 2.261713"
    b"elapsed",  # a counter and the time spent: "boosting round 0, 1 sec elapsed"
    b"% complete",
    b"BLEU",
    b"bleu",
    b"rouge",
    b"ROUGE",
    b"ppl",
    b"perplexity",
    b"Perplexity",
    b"reward",
    b"samples/s",
    # counter shapes: a count's percentage "(45%)", an ETA field
    b"%)",
    b"ETA",
    b"eta",
    # a rate that ends the line ("eval rate:  24.61 tokens/s")
    b"/s\n",
    b"/s\r",
    # a boosting round's evaluation record ("[12]\tvalid-auc:0.81", "[64]  train-rmse:1.66")
    b"]\t",
    b"]:\t",  # LightGBM's cross-validation rounds ("[3]:\tvalid's l2:0.0003+0.0006")
    b"-rmse:",
    b"-auc:",
    b"logloss:",
    # counter shapes, not words (round progress3): a percentage then its count ("45% (184/408)"), a
    # remaining time ("remaining: 1h 39m 38s"), a round led by its number ("0:\tlearn: ..."), a figure
    # with its spread ("0.7054|±  |0.0094"), a rate by its name ("tokens_per_sec"), wget's dots, a drawn
    # bar's head ("[==>   ]", "[>   ]"), seconds per spaced unit ("2.13s/ examples]")
    b"% (",
    b"remaining",
    b":\t",
    "±".encode(),
    b"per_sec",
    b"........ ",
    b"=>",
    b"[>",
    b"s/ ",
    # a percentage that ends the line or says it is done ("Downloading: 45%", "Uploading 45% done")
    b"%\n",
    b"%\r",
    b"% done",
    *RESULT_MARKERS,  # a report's measured figures (progress.RESULT_MARKERS)
]


class Markers:
    """Finds progress-marker lines in a block of bytes."""

    def __init__(self) -> None:
        self._ac = (
            _ahocorasick.BytesAhoCorasick(PROGRESS_MARKERS, implementation=_ahocorasick.Implementation.DFA)
            if _ahocorasick
            else None
        )
        self._rx = re.compile(b"|".join(re.escape(m) for m in PROGRESS_MARKERS))

    def positions(self, data: bytes, start: int = 0) -> list[int]:
        """Match positions (sorted) in ``data[start:]``; a shape counts where it starts."""
        view = data[start:] if start else data
        if self._ac is not None:
            got = [s + start for _k, s, _e in self._ac.find_matches_as_indexes(view)]
        else:
            got = [m.start() + start for m in self._rx.finditer(view)]
        rows = [m.start() + start for m in PROGRESS_SHAPE.finditer(view)]
        if rows:
            got = sorted(got + rows)
        return got

    def last_lines(self, data: bytes, k: int) -> list[int]:
        """Starts of the last ``k`` lines holding a marker, searching from the end."""
        n = len(data)
        window = 64 * 1024
        while True:
            start = max(0, n - window)
            # The first line of a window may be cut: begin at a line start.
            if start:
                start = data.find(b"\n", start) + 1 or n
            pos = self.positions(data, start)
            if pos:
                out: list[int] = []
                for p in reversed(pos):
                    ls = data.rfind(b"\n", 0, p) + 1
                    if not out or ls != out[-1]:
                        out.append(ls)
                        if len(out) == k:
                            break
                return out[::-1]
            if start == 0 or window >= n:
                return []
            window *= 8

    def line_starts(self, data: bytes) -> list[int]:
        """Starts of all lines holding a marker."""
        out: list[int] = []
        end = -1
        for p in self.positions(data):
            if p > end:
                ls = data.rfind(b"\n", 0, p) + 1
                end = data.find(b"\n", p)
                if end < 0:
                    end = len(data)
                out.append(ls)
        return out


_MARKERS: Markers | None = None


def markers() -> Markers:
    global _MARKERS
    if _MARKERS is None:
        _MARKERS = Markers()
    return _MARKERS


class BlockScan:
    """The block scans: by line (:meth:`_scan_block`) and by line template (:meth:`_scan_templates`), and the
    template scan's fast path (:meth:`_apply`, :meth:`_remember`).

    A part of :class:`~eagle3tui.logs.monitor.StageLogMonitor`, whose state it reads and keeps.
    """

    def _scan_block(self, data: bytes, first_no: int) -> int:
        """Visit the interesting lines of ``data``; returns its line count."""
        if self.progress_mode == "sample" and data.endswith(b"\n") and (
                len(data) >= _TEMPLATE_BLOCK or self.follower.offset >= _TEMPLATE_BLOCK):
            if self._templates is None:
                self._templates = TemplateIndex(self.rules, PROGRESS_MARKERS, PROGRESS_SHAPE)
            if self._templates.usable:
                # A block makes hundreds of thousands of short-lived objects
                # (lines, events) and no cycles: the cyclic collector would
                # run hundreds of times over everything alive for nothing.
                paused = gc.isenabled()
                if paused:
                    gc.disable()
                try:
                    return self._scan_templates(data, first_no, self._templates)
                finally:
                    if paused:
                        gc.enable()
        cands = self.rules.scan(data)
        if self.progress_mode == "all":
            prog = markers().line_starts(data)
        else:
            # The last few progress lines: the newest state for display, and
            # several samples for the ETA's median even when catching up.
            prog = markers().last_lines(data, self.samples_per_block)
        n = len(data)
        pos = 0
        no = first_no
        ci = 0
        pi = 0
        nc = len(cands)
        npg = len(prog)
        count = data.count
        find = data.find
        while pos < n:
            if not self._tb and no > self._watch_to:
                # Jump to the next line that a rule or progress marker points at.
                nxt = n
                if ci < nc:
                    nxt = cands[ci][0]
                if pi < npg and prog[pi] < nxt:
                    nxt = prog[pi]
                if nxt >= n:
                    no += count(b"\n", pos, n)
                    pos = n
                    break
                if nxt > pos:
                    no += count(b"\n", pos, nxt)
                    pos = nxt
            le = find(b"\n", pos)
            if le < 0:
                le = n
            idx: tuple[int, ...] | None = None
            while ci < nc and cands[ci][0] < pos:
                ci += 1
            if ci < nc and cands[ci][0] == pos:
                idx = cands[ci][2]
                ci += 1
            while pi < npg and prog[pi] < pos:
                pi += 1
            is_prog = pi < npg and prog[pi] == pos
            if is_prog:
                pi += 1
            if idx is not None or is_prog or self._tb or no <= self._watch_to:
                self._line(data[pos:le], no, idx, is_prog)
            pos = le + 1
            no += 1
        return no - first_no

    def _scan_templates(self, data: bytes, first_no: int, tix: TemplateIndex) -> int:
        """:meth:`_scan_block` by line template (see :mod:`templates`): same visits, same events."""
        temps = data.translate(TO_ZERO).split(b"\n")
        temps.pop()  # data ends with a newline
        n = len(temps)
        # A template is as long as its line: the lines' offsets come from the
        # templates' lengths (in C), and only the visited lines are cut out.
        # ``cum[i]`` is the length of the lines before line i, their newlines
        # left out: line i is data[cum[i] + i : cum[i + 1] + i] (i newlines
        # come before it), one iterator layer less than adding 1 per line.
        cum = list(accumulate(map(len, temps), initial=0))
        table = tix.by_template
        try:
            ents = list(map(table.__getitem__, temps))
        except KeyError:  # templates not seen before
            uniq = set(temps)
            new = uniq.difference(table)
            tix.learn(uniq if tix.full(len(new)) else new)
            ents = list(map(table.__getitem__, temps))
        # Lines whose template holds a keyword, but for quiet and inert ones.
        visit = list(compress(range(n), ents))
        if tix.quiet:
            got = ents.count(QUIET)  # each is an info event, counted
            if got:
                self.counts["info"] += got
        prog: set[int] = set()
        for i in self._last_progress_lines(data, temps, tix.progress, self.samples_per_block):
            prog.add(i)
            k = bisect_left(visit, i)
            if k == len(visit) or visit[k] != i:
                insort(visit, i)
        below = 0
        tb = self._tb  # the same dict throughout (only cleared)
        if first_no <= self._watch_to:
            # An error held at the end of the block before: its next lines count.
            j = 0
            while (tb or first_no + j <= self._watch_to) and j < n:
                ej = ents[j]
                if ej is QUIET:
                    self.counts["info"] -= 1  # counted above; _visit counts what it finds
                self._visit(data[cum[j] + j : cum[j + 1] + j], first_no + j, tix.template(ej, temps[j]), j in prog)
                j += 1
            below = j
        counts = self.counts
        tally = dict.fromkeys(("fatal", "warning", "info"), 0)  # the fast path's counts, added at the end
        last_verdict = self._last_verdict
        pywarn_at = self._pywarn_at
        line_rules = tix.line_rules
        value_key = tix.value_key
        cap = self.list_per_rule
        hot_listed = self._hot_listed
        capped: set[Template] = set()  # this block's hot templates whose rule has its listed events
        skipped: dict[Template, int] = {}  # and how many of their lines were only counted
        if cap is not None:
            self._tail_block = (data, cum, first_no)  # what _make_unlisted_tail reads a line from
        for i in visit:
            e = ents[i]
            hot = e.hot if e else None
            if hot is not None and not tb and i >= below and i not in prog and first_no + i > self._watch_to:
                # The hot path: one event of a fixed verdict (made by _list_verdict,
                # as on the general path below, which this skips the branches of).
                rest_off, wspan, generic, category, kind, rule, expl, action, listed = hot
                no = first_no + i
                if listed and cap is not None and (e in capped or kind != "fatal" and hot_listed[kind, rule] >= cap):
                    # Counted, not made (list_per_rule): the line is decoded only when
                    # its worker matters to what follows.
                    capped.add(e)
                    text = None
                    worker = None
                    if wspan is not None and (category or generic and last_verdict):
                        text = data[cum[i] + i : cum[i + 1] + i].decode("utf-8", "replace")
                        worker = text[wspan[0] : wspan[1]]
                    if category:
                        pywarn_at[worker] = no
                    if generic and last_verdict:
                        prev = last_verdict.get(worker)
                        if prev is not None and prev[0] == no - 1 and prev[2].kind == "benign":
                            # may continue a harmless message
                            self._apply(e.layout, e.fixed[0], data[cum[i] + i : cum[i + 1] + i], no, text)
                            continue
                    skipped[e] = skipped.get(e, 0) + 1  # counted at the end of the block
                    if kind != "info":
                        self._unlisted_tail = (i, hot)
                    continue
                raw = data[cum[i] + i : cum[i + 1] + i]
                text = raw.decode("utf-8", "replace")
                worker = text[wspan[0] : wspan[1]] if wspan is not None else None
                if category:
                    pywarn_at[worker] = no
                if generic:
                    prev = last_verdict.get(worker)
                    if prev is not None and prev[0] == no - 1 and prev[2].kind == "benign":
                        self._apply(e.layout, e.fixed[0], raw, no, text)  # may continue a harmless message
                        continue
                if listed:
                    if cap is not None:
                        hot_listed[kind, rule] += 1
                    self._list_verdict(no, kind, rule, text[rest_off:], worker, expl, action)
                else:
                    tally[kind] += 1  # an unlisted event (info): counted only
                continue
            if i < below:
                continue  # visited while a traceback was open
            if not e or tb or i in prog or e.mode == SENSITIVE or first_no + i <= self._watch_to:
                if e is QUIET:
                    counts["info"] -= 1  # counted above; _visit counts what it finds
                self._visit(data[cum[i] + i : cum[i + 1] + i], first_no + i, tix.template(e, temps[i]), i in prog)
            else:
                raw = data[cum[i] + i : cum[i + 1] + i]
                if e.mode == BY_TEMPLATE:
                    idx = e.idx
                    got = e.fixed
                elif e.projection is not None:  # EXACT, same rules on every line
                    idx = e.idx
                    got = e.verdicts.get((idx, raw.translate(e.projection))) if e.verdicts is not None else None
                elif e.one_kw is not None:  # EXACT, one place a keyword with digits can sit
                    start, end, by_kw = e.one_kw
                    ent = by_kw.get(raw[start:end])
                    if ent is None:
                        idx = line_rules(e, raw)
                        table = tix.projection_of(idx) if idx is not None else None
                        if len(by_kw) < 64:
                            # Kept when no rule is named too: an access log's "200"s
                            # are most of its lines.
                            by_kw[raw[start:end]] = (idx, table)
                    else:
                        idx, table = ent
                    if idx is None:
                        continue
                    got = (e.verdicts.get((idx, raw.translate(table) if table is not None else b""))
                           if e.verdicts is not None else None)
                else:  # EXACT: this line's own keywords, and its digits its rules can tell apart
                    idx = line_rules(e, raw)
                    if idx is None:
                        continue
                    got = e.verdicts.get((idx, value_key(idx, raw))) if e.verdicts is not None else None
                no = first_no + i
                if got is None:
                    self._line(raw, no, idx, False, e)
                else:
                    v, fast = got
                    if fast is None:
                        self._apply(e.layout, v, raw, no)
                    elif fast:
                        # The common cases, by _apply's steps without its branches: no
                        # verdict, or a warning, fatal or info event (made by _list_verdict,
                        # as on the slow path); a Python warning and the source line it echoes.
                        rest_off, wspan, generic, category, echo, kind, rule, expl, action, listed = fast
                        if not listed and wspan is None and not (generic or category or echo):
                            if kind is not None:
                                tally[kind] += 1  # an unlisted event (info): counted only
                            continue
                        text = raw.decode("utf-8", "replace")
                        worker = text[wspan[0] : wspan[1]] if wspan is not None else None
                        if echo and 0 < no - pywarn_at.get(worker, -99) <= 3:
                            pass  # the source line Python's warnings module echoes after a warning
                        elif kind is not None:
                            if category:
                                pywarn_at[worker] = no
                            prev = last_verdict.get(worker) if generic else None
                            if prev is not None and prev[0] == no - 1 and prev[2].kind == "benign":
                                self._apply(e.layout, v, raw, no, text)  # may continue a harmless message
                            else:
                                # Not recorded for _continuation: only a benign
                                # verdict on the line just before changes anything.
                                if listed:
                                    self._list_verdict(no, kind, rule, text[rest_off:], worker, expl, action)
                                else:
                                    tally[kind] += 1  # an unlisted event (info): counted only
                        elif category:
                            pywarn_at[worker] = no
            if tb or first_no + i < self._watch_to:
                # Inside a traceback, and while an error is held, every line
                # counts, as in _scan_block.
                j = i + 1
                while (tb or first_no + j <= self._watch_to) and j < n:
                    ej = ents[j]
                    if ej is QUIET:
                        counts["info"] -= 1  # counted above; _visit counts what it finds
                    self._visit(data[cum[j] + j : cum[j + 1] + j], first_no + j, tix.template(ej, temps[j]), j in prog)
                    j += 1
                below = j
        for kind, k in tally.items():
            if k:
                counts[kind] += k
        if skipped:
            unlisted = self.unlisted
            for e, k in skipped.items():
                kind, rule = e.hot[4], e.hot[5]
                counts[kind] += k
                unlisted[kind, rule] += k
        if self._unlisted_tail is not None:
            self._make_unlisted_tail()  # while this block is at hand
        self._tail_block = _NO_BLOCK  # not kept past its scan
        return n

    @staticmethod
    def _last_progress_lines(data: bytes, temps: list[bytes], progress: set[bytes], k: int) -> list[int]:
        """What ``markers().last_lines(data, k)`` finds, as line indices, by template.

        The last ``k`` lines holding a progress marker within the last 64 KiB
        (or the first of 512 KiB, 4 MiB, ... that holds one), walking back
        from the end over line lengths instead of searching the bytes.
        """
        n = len(data)
        window = 64 * 1024

        def window_start(w: int) -> int:
            start = max(0, n - w)
            if start:
                start = data.find(b"\n", start) + 1 or n
            return start

        start = window_start(window)
        out: list[int] = []
        end = n
        i = len(temps) - 1
        while i >= 0:
            ls = end - len(temps[i]) - 1
            if ls < start:
                if out or start == 0 or window >= n:
                    break
                window *= 8
                start = window_start(window)
                continue
            if temps[i] in progress:
                out.append(i)
                if len(out) == k:
                    break
            end = ls
            i -= 1
        return out[::-1]

    def _make_unlisted_tail(self) -> None:
        """Make the event the hot path last counted without making it, into the tail."""
        assert self._unlisted_tail is not None
        i, hot = self._unlisted_tail
        data, cum, first_no = self._tail_block
        self._unlisted_tail = None
        rest_off, wspan, _generic, _category, kind, rule, expl, action, _listed = hot
        no = first_no + i
        text = data[cum[i] + i : cum[i + 1] + i].decode("utf-8", "replace")
        worker = text[wspan[0] : wspan[1]] if wspan is not None else None
        self._tail.append(_event(no, kind, rule, text[rest_off:], worker, expl, action))

    def _visit(self, raw: bytes, no: int, e: Template | None, is_prog: bool) -> None:
        """One line of a template scan, with what :meth:`RuleSet.scan` would give it."""
        if e is None:
            idx = None
        elif e.mode == BY_TEMPLATE:
            idx = e.idx
        else:
            assert self._templates is not None
            idx = self._templates.line_rules(e, raw)
        if idx is None and not is_prog and not self._tb and no > self._watch_to:
            return
        self._line(raw, no, idx, is_prog)

    def _apply(self, layout: tuple, verdict: Verdict | None, raw: bytes, no: int, text: str | None = None) -> None:
        """What :meth:`_line` does for a line whose template's meaning is known."""
        rest_off, wspan, src, level, category, recovery, request, echo = layout
        worker = None
        if wspan is not None:
            if text is None:
                text = raw.decode("utf-8", "replace")
            worker = text[wspan[0] : wspan[1]]
        if recovery and self._pending:
            self._recovered(no)
        if no <= self._watch_to and (self._held or self._pending):
            if text is None:
                text = raw.decode("utf-8", "replace")
            self._next_step(text[rest_off:], no, text[:rest_off])
        if echo and 0 < no - self._pywarn_at.get(worker, -99) <= 3:
            return  # the source line Python's warnings module echoes after a warning
        if category:
            self._pywarn_at[worker] = no
        if verdict is None:
            return
        if text is None:
            text = raw.decode("utf-8", "replace")
        rest = text[rest_off:]
        source = src if type(src) is str else rest[src[0] : src[1]]
        v = verdict
        if v.kind == "warning" and v.rule in _GENERIC_RULES or v.rule == _FATAL_LEVEL and level is None:
            v = self._continuation(v, worker, no, (level, source), rest)
        else:
            self._last_verdict[worker] = (no, (level, source), v)  # what _continuation records
        if request or v.rule in _SPECIAL_RULES or v.pending or v.recoverable or v.rule in _HELD_RULES or v.held:
            self._verdict_event(v, rest, worker, no, request, text[:rest_off])
            return
        self._list_verdict(no, v.kind, v.rule, rest, worker, v.explanation, v.action)

    def _remember(self, tmpl: Template, key: object, text: str, worker: str | None, rest: str, sh: Shape,
                  verdict: Verdict | None) -> None:
        """Keep what this line means for the other lines of its template."""
        if tmpl.layout is None:
            rest_off = len(text) - len(rest)
            if text[rest_off:] != rest:
                return
            wspan = None
            if worker is not None:
                a = text.rfind(worker, 0, rest_off)
                if a < 0:
                    return
                wspan = (a, a + len(worker))
            src: str | tuple[int, int] = sh.source
            if any(c.isdigit() for c in src):
                a = rest.find(src)
                if a < 0:
                    return
                src = (a, a + len(src))
            tmpl.layout = (
                rest_off,
                wspan,
                src,
                sh.level,
                bool(sh.category),
                is_recovery(rest),
                self.stage_kind == "service" and is_request_source(rest),
                rest.startswith("  "),
            )
            tmpl.verdicts = {}
        assert tmpl.verdicts is not None
        if len(tmpl.verdicts) < 4096:
            rest_off, wspan, _src, _level, category, recovery, request, echo = tmpl.layout
            fast: tuple | None = None  # None: _apply; (): nothing to do; else what the scan needs
            if not recovery and not request:
                if verdict is None:
                    fast = (rest_off, wspan, False, category, echo, None, "", "", "", False) if category or echo else ()
                elif (verdict.kind in ("fatal", "warning", "info") and verdict.rule not in _SPECIAL_RULES
                      and verdict.rule not in _HELD_RULES and not verdict.held and not verdict.pending
                      and not verdict.recoverable):
                    generic = verdict.kind == "warning" and verdict.rule in _GENERIC_RULES
                    listed = verdict.kind != "info" or self.include_info
                    fast = (rest_off, wspan, generic, category, echo, verdict.kind, verdict.rule,
                            verdict.explanation, verdict.action, listed)
            tmpl.verdicts[key] = (verdict, fast)
            if key is None:
                tmpl.fixed = (verdict, fast)
                if fast and fast[5] is not None and not fast[4]:
                    tmpl.hot = (fast[0], fast[1], fast[2], fast[3], *fast[5:])
        if key is None and not any(tmpl.layout[4:]):
            # No flag: its lines change nothing (no verdict) or only the info
            # count (an info verdict nobody lists), whatever comes before.
            if verdict is None:
                if self._templates is not None:
                    self._templates.mark(tmpl, quiet=False)
            elif (verdict.kind == "info" and not self.include_info and verdict.rule not in _SPECIAL_RULES
                  and not verdict.pending and not verdict.recoverable and self._templates is not None
                  and len(self._templates.quiet) < 32):
                self._templates.mark(tmpl, quiet=True)
