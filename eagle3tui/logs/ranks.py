"""Root cause across the processes of a distributed job: who failed first, and what followed.

When one rank of a torchrun job dies, the others do not die quietly: the launcher sends
SIGTERM to the survivors ("Sending process N closing signal SIGTERM"), ranks blocked in a
collective time out ("[Rank 3] Watchdog caught collective operation timeout"), and the
launcher raises ChildFailedError with a report box that lists every failed rank and names
one "Root Cause (first observed failure)". Each of those lines reads fatal; together they
are one incident, whose cause is the first failing rank and whose other lines are its
consequences (NVIDIA's resiliency extension reads NCCL timeouts the same way).

:func:`find_incident` reads the attempt's fatal events and the log lines around the
launcher's report, and names the cause in the words a person needs: which rank, what
happened (the signal's name, the exit code, an OOM with the size it tried to allocate,
the rank's own exception), and lists the consequences by what they are.
"""

from __future__ import annotations

import re
import signal as _signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eagle3tui.logs import catalog
from eagle3tui.alerts.kinds import consequence_kind

ROOT_CAUSE = "Root Cause (first observed failure)"
# torchrun's line for the first child it saw fail: "failed (exitcode: -9) local_rank: 0 (pid: 10398) of binary: ...".
_FAILED_LINE = re.compile(r"\bfailed \(exitcode: (-?\d{1,4})\) local_rank: (\d{1,5}) \(pid: (\d{1,9})\)")
# The fields of an entry of torchrun's box ("  rank      : 1 (local_rank: 1)").
_FIELD = re.compile(r"^\s{0,8}(rank|exitcode|traceback|time|host|error_file)\s{0,12}:\s?(.*)$")
_RANK_FIELD = re.compile(r"^(\d{1,6})(?: \(local_rank: (\d{1,5})\))?")
_EXIT_FIELD = re.compile(r"^(-?\d{1,4})(?: \(pid: (\d{1,9})\))?")
_SIGNAL_FIELD = re.compile(r"\bSignal (\d{1,2}) \((SIG[A-Z]{2,7})\)")
_ENTRY = re.compile(r"^\[(\d{1,5})\]:\s*$")
# The launcher stopping a sibling: torchrun's two wordings.
_SIBLING_STOPPED = re.compile(r"\bSending process (\d{1,9}) closing signal (SIG[A-Z]{2,7})"
                              r"|\bClosing process (\d{1,9}) via signal (SIG[A-Z]{2,7})")
# An OOM, and the size it tried to allocate (the caching allocator's own words).
_OOM = re.compile(r"\b(CUDA |HIP |XPU )?out of memory\b", re.IGNORECASE)
_OOM_SIZE = re.compile(r"\bTried to allocate (\d[\d.]{0,12} ?[KMGTP]?i?B)")
# The rank a worker prefix names ("[rank15]: ", torch's own; split off by logs.workers).
_WORKER_RANK = re.compile(r"^rank(\d{1,6})$", re.IGNORECASE)
# A collective that timed out, in ProcessGroupNCCL's and gloo's words.
_TIMEOUT = re.compile(r"\bWatchdog caught collective operation timeout\b|\btimed out\b|\btimeout\b", re.IGNORECASE)
_BOX_LINES = 80  # lines after the ChildFailedError line the box may take
# An exception raised by the collective layer itself (gloo's transport, ProcessGroupNCCL,
# torch's Dist*Error classes): a rank whose collective broke because a peer went away.
_COLLECTIVE_SITE = re.compile(r"\bgloo/transport/|\bProcessGroup(?:NCCL|Gloo)\.cpp\b"
                              r"|\bDist(?:Backend|Network)Error\b|\bNCCL communicator was aborted\b")
# Signals the launcher itself sends its children when one has failed (or it was told to stop).
_LAUNCHER_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP"})

CONSEQUENCE_RULES = catalog.with_flag("consequence")
# Who failed, when only the others' collective timeouts are in the log.
UNSEEN = "a collective timed out waiting for a rank that left no error in this log"
_LAUNCHER_OWN = catalog.with_flag("launcher-report") | catalog.with_flag("launcher-kill")
_REPORT_RULE = catalog.one_with("launcher-report")
_REPORTS = catalog.with_flag("launcher-report")


@dataclass(frozen=True)
class RankFailure:
    """How one process of the job failed, as far as the log says."""

    line: int
    rank: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None
    signal: str | None = None  # the signal's name ("SIGKILL") when a signal ended it
    what: str = ""  # the process's own words: an OOM with its size, an exception line
    rule: str = ""
    unseen: bool = False  # only its consequences are in the log (other ranks timed out waiting for it)

    def who(self) -> str:
        """``rank 1 (local_rank 1)``, ``local_rank 0 (pid 10398)``, ``rank 15``."""
        if self.unseen:
            return UNSEEN
        if self.rank is not None:
            extra = [f"local_rank {self.local_rank}"] if self.local_rank is not None and self.local_rank != self.rank else []
            extra += [f"pid {self.pid}"] if self.pid else []
            return f"rank {self.rank}" + (f" ({', '.join(extra)})" if extra else "")
        if self.local_rank is not None:
            return f"local_rank {self.local_rank}" + (f" (pid {self.pid})" if self.pid else "")
        return f"process {self.pid}" if self.pid else "a process"

    def how(self) -> str:
        """What ended it: ``was killed by SIGKILL (exitcode -9)``, ``ran out of CUDA memory ...``."""
        if self.unseen:
            return ""
        if self.signal:
            return f"was killed by {self.signal}" + (f" (exitcode {self.exitcode})" if self.exitcode is not None else "")
        if self.what and _OOM.search(self.what):
            m = _OOM_SIZE.search(self.what)
            kind = (_OOM.search(self.what).group(1) or "").strip()  # type: ignore[union-attr]
            mem = f"{kind} memory" if kind else "memory"
            return f"ran out of {mem}" + (f" (tried to allocate {m.group(1)})" if m else "")
        if self.exitcode is not None:
            return f"exited with code {self.exitcode}"
        return "failed first"

    def headline(self) -> str:
        """One line: who, how, and its own words when they are not the OOM already told."""
        out = f"{self.who()} {self.how()}".rstrip()
        if self.what and not (_OOM.search(self.what) and _OOM_SIZE.search(self.what)):
            out += f": {self.what}"
        elif self.signal == "SIGKILL" and not self.what:
            out += " and wrote no error of its own (the kernel's OOM killer or a scheduler kills with SIGKILL)"
        return out[:400]


@dataclass(frozen=True)
class Consequence:
    """A line that another process's failure explains."""

    line: int
    kind: str  # a consequence kind of alerts/kinds.toml: sibling-stopped, rank-failed, ...
    text: str

    def __post_init__(self) -> None:
        consequence_kind(self.kind)  # a kind the registry does not hold is a bug, not a new kind


@dataclass(frozen=True)
class Incident:
    """One failure of a distributed job: its cause and what followed from it."""

    cause: RankFailure
    consequences: tuple[Consequence, ...] = field(default=())

    def summary(self) -> str:
        """The consequences, counted by what they are (for the failure alert)."""
        if not self.consequences:
            return ""
        parts: list[str] = []
        by: dict[str, list[Consequence]] = {}
        for c in self.consequences:
            by.setdefault(c.kind, []).append(c)
        if "sibling-stopped" in by:
            n = len(by["sibling-stopped"])
            parts.append(f"the launcher stopped {n} other process{'es' if n != 1 else ''}")
        if "rank-failed" in by:
            parts.append("then " + ", ".join(c.text for c in by["rank-failed"][:6])
                         + (f" and {len(by['rank-failed']) - 6} more" if len(by["rank-failed"]) > 6 else ""))
        if "collective-failed" in by:
            n = len(by["collective-failed"])
            parts.append(f"{n} collective{'s' if n != 1 else ''} broken on other ranks "
                         f"({by['collective-failed'][0].text[:120]})")
        if "collective-timeout" in by:
            n = len(by["collective-timeout"])
            parts.append(f"{n} collective timeout{'s' if n != 1 else ''} on other ranks")
        if "launcher-report" in by:
            parts.append("the launcher's ChildFailedError report")
        return "consequences: " + "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able record (for the alert's details and the front ends)."""
        c = self.cause
        return {"line": c.line, "rank": c.rank, "local_rank": c.local_rank, "exitcode": c.exitcode, "pid": c.pid,
                "signal": c.signal, "what": c.what, "headline": c.headline(),
                "consequences": [{"line": x.line, "kind": x.kind, "text": x.text} for x in self.consequences]}


def signal_name(exitcode: int | None) -> str | None:
    """The name of the signal a negative exit code stands for (-9: SIGKILL), or None."""
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return _signal.Signals(-exitcode).name
    except ValueError:
        return None


def launcher_failed_line(text: str) -> bool:
    """Whether ``text`` is torchrun's report of a child's failure ("failed (exitcode: -9) local_rank: 0 ...")."""
    return "failed (exitcode" in text and _FAILED_LINE.search(text) is not None


def _rank_of(worker: str | None) -> int | None:
    m = _WORKER_RANK.match(worker or "")
    return int(m.group(1)) if m else None


def parse_report(lines: Mapping[int, str], start: int) -> tuple[RankFailure | None, list[RankFailure]]:
    """torchrun's ChildFailedError box from line ``start`` on: its root cause and its other failures."""
    root: RankFailure | None = None
    others: list[RankFailure] = []
    section = ""
    entry: dict[str, Any] | None = None
    entry_line = 0

    def close() -> None:
        nonlocal root
        if entry is None:
            return
        f = _entry_failure(entry, entry_line)
        if section == "root" and root is None:
            root = f
        elif section == "failures":
            others.append(f)

    for no in range(start, start + _BOX_LINES):
        text = lines.get(no)
        if text is None:
            break
        s = text.strip()
        if s.startswith("Failures:"):
            close()
            section, entry = "failures", None
        elif s.startswith(ROOT_CAUSE):
            close()
            section, entry = "root", None
        elif _ENTRY.match(s):
            close()
            entry, entry_line = {}, no
        elif entry is not None and (m := _FIELD.match(text)):
            entry[m.group(1)] = m.group(2).strip()
            if m.group(1) == "rank":
                entry_line = no
        elif s.startswith("=====") and section == "root":
            break
    close()
    return root, others


def _entry_failure(entry: Mapping[str, str], line: int) -> RankFailure:
    rank = local = exitcode = pid = None
    if m := _RANK_FIELD.match(entry.get("rank", "")):
        rank = int(m.group(1))
        local = int(m.group(2)) if m.group(2) else None
    if m := _EXIT_FIELD.match(entry.get("exitcode", "")):
        exitcode = int(m.group(1))
        pid = int(m.group(2)) if m.group(2) else None
    sig = None
    if m := _SIGNAL_FIELD.search(entry.get("traceback", "")):
        sig = m.group(2)
    return RankFailure(line, rank, local, exitcode, pid, sig or signal_name(exitcode))


def _own_words(text: str) -> str:
    """The line of an event that says what happened: its last non-empty line, shortened."""
    last = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return last[-1][:300] if last else ""


def find_incident(fatals: Sequence[Mapping[str, Any]], lines: Mapping[int, str],
                  lead: Mapping[str, Any] | None = None) -> Incident | None:
    """The incident the attempt's fatal events make, or None when no process of a group failed.

    ``fatals``: the attempt's fatal events in any order (``line``, ``end_line``, ``rule``,
    ``text``, ``worker``); ``lines``: log lines by number (at least those of the
    launcher's report, where there is one). A job is distributed here when its launcher
    reported a child's failure, or when ranks named in worker prefixes failed. ``lead``:
    the event the caller leads with when it is a process's own account of its failure
    (the earliest fatal one): it is the cause's own words, and its rank, when its prefix
    names one, is the cause's (torchrun's box names the first child whose *exit* it saw).
    """
    evs = sorted(fatals, key=lambda f: (int(f.get("line") or 0), int(f.get("end_line") or 0)))
    if not evs:
        return None
    cause: RankFailure | None = None
    others: list[RankFailure] = []
    launcher_lines: set[int] = set()
    # 1. torchrun's box: its root cause is the first observed failure.
    for f in evs:
        text = str(f.get("text") or "")
        if ROOT_CAUSE in text or "ChildFailedError" in text:
            launcher_lines.add(int(f.get("line") or 0))
    for f in evs:
        if "ChildFailedError" in str(f.get("text") or "") or ROOT_CAUSE in str(f.get("text") or ""):
            start = int(f.get("end_line") or f.get("line") or 0)
            start = min(start, int(f.get("line") or start))
            root, rest = parse_report(lines, start)
            if root is not None:
                cause, others = RankFailure(root.line, root.rank, root.local_rank, root.exitcode, root.pid,
                                            root.signal, rule=_REPORT_RULE), rest
                break
    # 2. torchrun's line for the first child it saw fail.
    failed_line: RankFailure | None = None
    for f in evs:
        m = _FAILED_LINE.search(str(f.get("text") or ""))
        if m:
            code = int(m.group(1))
            failed_line = RankFailure(int(f.get("line") or 0), None, int(m.group(2)), code, int(m.group(3)),
                                      signal_name(code), rule=str(f.get("rule") or ""))
            launcher_lines.add(failed_line.line)
            break
    if cause is None:
        cause = failed_line
    elif failed_line is not None and cause.exitcode is None and failed_line.local_rank == cause.local_rank:
        cause = RankFailure(cause.line, cause.rank, cause.local_rank, failed_line.exitcode, failed_line.pid,
                            failed_line.signal)
    elif (failed_line is not None and failed_line.line < cause.line and failed_line.pid == cause.pid
          and failed_line.local_rank == cause.local_rank):
        # The box repeats the failure its launcher reported first: the cause is at that first report.
        cause = RankFailure(failed_line.line, cause.rank, cause.local_rank, cause.exitcode, cause.pid,
                            cause.signal, cause.what, cause.rule)
    # 3. No launcher's report: the first rank that failed in its own words ("[rank15]: ...OutOfMemoryError").
    ranked = [f for f in evs if _rank_of(f.get("worker")) is not None and str(f.get("rule")) not in CONSEQUENCE_RULES]
    if cause is None:
        if not ranked:
            waiting = [f for f in evs if _rank_of(f.get("worker")) is not None]
            if not waiting:
                return None
            # Only consequences: ranks whose collectives timed out waiting for one that died unseen.
            cause = RankFailure(int(waiting[0].get("line") or 0), rule=str(waiting[0].get("rule") or ""), unseen=True)
            return Incident(cause, tuple(_consequences(evs, cause, None, (), launcher_lines)))
        first = ranked[0]
        cause = RankFailure(int(first.get("line") or 0), _rank_of(first.get("worker")),
                            what=_own_words(str(first.get("text") or "")), rule=str(first.get("rule") or ""))
    if lead is not None and str(lead.get("rule")) not in CONSEQUENCE_RULES and not launcher_failed_line(
            str(lead.get("text") or "")):
        own: Mapping[str, Any] | None = lead
        lead_rank = _rank_of(lead.get("worker"))
        if lead_rank is not None and lead_rank != cause.rank and peer_lost(lead, cause):
            # Its collective broke because the rank the launcher saw die was gone: that death,
            # which left no words of its own, is the cause; this rank's error is its echo.
            own = None
        elif lead_rank is not None and lead_rank != cause.rank:
            cause = RankFailure(int(lead.get("line") or 0), lead_rank, rule=str(lead.get("rule") or ""))
    else:
        own = _own_event(evs, cause, ranked, launcher_lines)
    if own is not None and not cause.what and not cause.signal:
        cause = RankFailure(cause.line, cause.rank, cause.local_rank, cause.exitcode, cause.pid, cause.signal,
                            _own_words(str(own.get("text") or "")), str(own.get("rule") or cause.rule))
    consequences = _consequences(evs, cause, own, others, launcher_lines)
    if not consequences and cause.rank is None and cause.local_rank is None:
        return None
    return Incident(cause, tuple(consequences))


def peer_lost(ev: Mapping[str, Any], cause: RankFailure) -> bool:
    """Whether ``ev`` is another rank's collective failing after ``cause`` died by a signal.

    A signal the launcher did not send (SIGKILL from the OOM killer, SIGSEGV, SIGABRT) ends
    a rank without a word; its peers then fail inside the collective they were in, and
    their errors name the transport, not a cause of their own.
    """
    return (cause.signal is not None and cause.signal not in _LAUNCHER_SIGNALS
            and _COLLECTIVE_SITE.search(str(ev.get("text") or "")) is not None)


def _own_event(evs: Sequence[Mapping[str, Any]], cause: RankFailure, ranked: Sequence[Mapping[str, Any]],
               launcher_lines: set[int]) -> Mapping[str, Any] | None:
    """The cause rank's own fatal event: its OOM, its exception (what it said before it ended)."""
    if cause.rank is not None:
        mine = [f for f in ranked if _rank_of(f.get("worker")) == cause.rank]
        if mine:
            return mine[0]
        if ranked:
            return None  # ranks are named, and this one said nothing
    if cause.signal:
        return None  # a signal ends a process without its words; another's exception is not its cause
    # Unprefixed output: the first event that is no launcher's line and no consequence, before the report.
    end = min(launcher_lines) if launcher_lines else None
    for f in evs:
        line = int(f.get("line") or 0)
        if end is not None and line >= end:
            break
        if str(f.get("rule")) not in CONSEQUENCE_RULES and line not in launcher_lines:
            return f
    return None


def _consequences(evs: Sequence[Mapping[str, Any]], cause: RankFailure, own: Mapping[str, Any] | None,
                  others: Sequence[RankFailure], launcher_lines: set[int], include_cause: bool = False
                  ) -> list[Consequence]:
    out: list[Consequence] = []
    own_line = int(own.get("line") or 0) if own is not None else None
    for f in evs:
        line = int(f.get("line") or 0)
        if line == own_line or line == cause.line and not include_cause:
            continue
        text = str(f.get("text") or "")
        rule = str(f.get("rule") or "")
        if m := _SIBLING_STOPPED.search(text):
            out.append(Consequence(line, "sibling-stopped", f"pid {m.group(1) or m.group(3)} sent {m.group(2) or m.group(4)}"))
        elif line in launcher_lines or rule in _REPORTS or _FAILED_LINE.search(text):
            out.append(Consequence(line, "launcher-report", _own_words(text)))
        elif rule in CONSEQUENCE_RULES and rule not in _LAUNCHER_OWN:
            # ProcessGroupNCCL's and gloo's lines on the other ranks: a collective that
            # timed out or was aborted because a peer is gone.
            out.append(Consequence(line, "collective-timeout", f"{f.get('worker') or 'a rank'}: {_own_words(text)[:160]}"))
        elif _rank_of(f.get("worker")) is not None and _COLLECTIVE_SITE.search(text):
            out.append(Consequence(line, "collective-failed", f"{f.get('worker')}: {_own_words(text)[:160]}"))
        elif _rank_of(f.get("worker")) is not None:
            out.append(Consequence(line, "rank-failed", f"{f.get('worker')}: {_own_words(text)[:120]}"))
    for o in others:
        if o.rank == cause.rank and o.local_rank == cause.local_rank:
            continue
        out.append(Consequence(o.line, "rank-failed", f"{o.who()} {o.how()}"))
    return sorted(out, key=lambda c: c.line)
