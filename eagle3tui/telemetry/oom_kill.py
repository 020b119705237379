"""The kernel's OOM killer, from the kernel log: which process of which stage it killed, and its size.

A process the kernel kills for host memory dies of SIGKILL and writes nothing: its log ends
mid-step, or its launcher reports "exitcode -9". The kernel says why, in the log that
``telemetry/xid.py`` already reads (``/dev/kmsg`` or ``EAGLE3TUI_KERNEL_LOG``), with the
victim's pid and its memory (mm/oom_kill.c, ``__oom_kill_process``)::

    oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/init.scope,task=python,pid=7899,uid=0
    Out of memory: Killed process 7899 (python) total-vm:26184840kB, anon-rss:15370088kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0

(older kernels: "Killed process 935 (python) total-vm:113656kB, anon-rss:102104kB, ...";
a cgroup's limit: "Memory cgroup out of memory: Killed process ..."). The victim is gone
by the time the line is read, so the pids of each stage's process tree are remembered
while they live, and a kill is the stage's when its victim was one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import psutil

# "Killed process 7899 (python) total-vm:...": the kernel's own sentence, after its prefix
# ("Out of memory: ", "Memory cgroup out of memory: ") or alone on kernels before 5.x.
_KILLED = re.compile(r"(?:^|\] |: |kernel: )(?:(Memory cgroup out of memory|Out of memory): )?"
                     r"Killed process (\d{1,9}) \((.{0,64}?)\)( total-vm:.{0,200})?$")
# "oom-kill:constraint=...,task=python,pid=7899,uid=0": the kernel's record of the same kill.
_OOM_KILL = re.compile(r"\boom-kill:constraint=(\w{1,40}),.{0,400}?\btask=(.{0,64}?),pid=(\d{1,9}),uid=\d{1,10}")
_SIZE = re.compile(r"\b(total-vm|anon-rss|file-rss|shmem-rss):([\d,]{1,24})kB")
MAX_PIDS = 4096  # pids remembered per stage: a tree bigger than that is a fork bomb, not a job


@dataclass
class OomKill:
    """One kill by the OOM killer, as the kernel logged it."""

    pid: int
    comm: str
    kb: dict[str, int] = field(default_factory=dict)  # total-vm, anon-rss, file-rss, shmem-rss
    cgroup: bool = False  # a memory cgroup's limit, not the host's memory, was reached
    stage: str | None = None
    root: bool = False  # the stage's own process, not one of its children

    def rss_kb(self) -> int | None:
        parts = [self.kb[k] for k in ("anon-rss", "file-rss", "shmem-rss") if k in self.kb]
        return sum(parts) if parts else None

    def describe(self) -> str:
        """``killed by the kernel's OOM killer (host memory), rss 14.7 GiB (pid 7899, python)``."""
        where = "a memory cgroup's limit" if self.cgroup else "host memory"
        rss = self.rss_kb()
        size = f", rss {_human_kb(rss)}" if rss is not None else ""
        who = f"pid {self.pid}, {self.comm}" if self.comm else f"pid {self.pid}"
        if not self.root:
            who += ", a process of the stage"
        return f"killed by the kernel's OOM killer ({where}){size} ({who})"

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "comm": self.comm, "kb": dict(self.kb), "cgroup": self.cgroup,
                "stage": self.stage, "root": self.root, "rss_kb": self.rss_kb()}


def _human_kb(kb: int) -> str:
    value, unit = float(kb), "KiB"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{value:.1f} {unit}" if unit != "KiB" else f"{kb} KiB"


def parse_oom_kill(line: str) -> OomKill | None:
    """The kill a kernel-log line reports, or None (the oom_reaper's "reaped process" is no kill)."""
    if "illed process" in line:
        m = _KILLED.search(line.rstrip())
        if m:
            kb = {k: int(v.replace(",", "")) for k, v in _SIZE.findall(m.group(4) or "")}
            return OomKill(int(m.group(2)), m.group(3), kb, cgroup=m.group(1) == "Memory cgroup out of memory")
    if "oom-kill:" in line:
        m = _OOM_KILL.search(line)
        if m:
            return OomKill(int(m.group(3)), m.group(2), cgroup=m.group(1) == "CONSTRAINT_MEMCG")
    return None


@dataclass
class OomKillWatch:
    """Kills by the OOM killer, attributed to the stage whose process tree held the victim."""

    pids: dict[str, set[int]] = field(default_factory=dict)  # stage -> pids seen in its tree
    roots: dict[str, int] = field(default_factory=dict)  # stage -> its root pid
    by_stage: dict[str, list[OomKill]] = field(default_factory=dict)

    def track(self, roots: dict[str, int]) -> None:
        """Remember the live process tree of each stage (call once a pass, before :meth:`feed`)."""
        for stage, root in roots.items():
            seen = self.pids.setdefault(stage, set())
            if self.roots.get(stage) != root:
                seen.clear()  # a new attempt: its predecessor's pids are not its own
                self.roots[stage] = root
            try:
                tree = [root] + [c.pid for c in psutil.Process(root).children(recursive=True)]
            except (psutil.Error, OSError):
                tree = [root]
            for pid in tree:
                if len(seen) < MAX_PIDS:
                    seen.add(pid)

    def feed(self, line: str) -> OomKill | None:
        """A kernel-log line; the kill it reports when its victim was a stage's process."""
        kill = parse_oom_kill(line)
        if kill is None:
            return None
        for stage, seen in self.pids.items():
            if kill.pid in seen:
                kill.stage, kill.root = stage, kill.pid == self.roots.get(stage)
                kills = self.by_stage.setdefault(stage, [])
                same = next((k for k in kills if k.pid == kill.pid), None)
                if same is not None:  # the oom-kill: record and the "Killed process" line are one kill
                    same.kb.update(kill.kb)
                    same.comm = same.comm or kill.comm
                    return same
                kills.append(kill)
                return kill
        return None

    def take(self, stage: str) -> list[OomKill]:
        """The kills in ``stage``'s attempt (forgotten once taken: the attempt ended)."""
        self.pids.pop(stage, None)
        self.roots.pop(stage, None)
        return self.by_stage.pop(stage, [])


def failure_lead(kills: list[OomKill]) -> str | None:
    """What a failed attempt's message leads with when the OOM killer took one of its processes."""
    if not kills:
        return None
    first = kills[0]
    more = f" (and {len(kills) - 1} more of its processes)" if len(kills) > 1 else ""
    return first.describe() + more
