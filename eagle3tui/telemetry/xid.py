"""GPU hardware faults: NVIDIA Xid events from the kernel log, with NVIDIA's documented action.

The NVIDIA driver reports GPU faults as Xid events in the kernel log
(``NVRM: Xid (PCI:0000:cb:00): 13, pid=1797828, name=python3, Graphics SM
Warp Exception ...``). Some are the application's fault (13, 31, 43: restart
it), some the GPU's (48, 63, 64, 94, 95: ECC and row remapping; reset it),
some the node's (79, fallen off the bus: reboot it). ``XID_CATALOG`` holds
NVIDIA's catalog, each code with its resolution bucket (the catalog's
"Immediate Action"), so an alert says what to do, not only the number.

``KernelLog`` reads new kernel-log lines without blocking: ``/dev/kmsg``
(what ``dmesg`` reads; root or ``CAP_SYSLOG`` when ``kernel.dmesg_restrict``
is 1), or a text file named by ``EAGLE3TUI_KERNEL_LOG`` (a syslog
``kern.log``, or a stand-in kernel log for tests). Where neither can be read,
``XidWatch.open`` says why once and Xid reading is off.

``XidWatch.poll`` attributes each event to a stage: by the pid the line
names (a process of the stage's tree), else by its GPU (PCI bus id -> GPU
UUID, from the driver's own ``GPU at PCI:... GPU-<uuid>`` line or
``/proc/driver/nvidia/gpus``, -> the stage holding memory on it).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from eagle3tui.telemetry.oom_kill import OomKillWatch

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
SOURCE_ENV = "EAGLE3TUI_KERNEL_LOG"
KMSG = "/dev/kmsg"
_PROC_GPUS = Path("/proc/driver/nvidia/gpus")

# The catalog's resolution buckets (its "Resolution Bucket (Immediate Action)" column).
ACTIONS = {
    "RESTART_APP": "restart the application; the GPU itself is fine",
    "RESET_GPU": "stop the GPU's processes and reset it (nvidia-smi -r) before it runs work again",
    "RESTART_BM": "drain the node and reboot it; the GPU cannot be reached until then",
    "IGNORE": "no action of its own; it reports the consequence of an earlier error",
    "CONTACT_SUPPORT": "collect nvidia-bug-report.sh and contact NVIDIA support if it repeats",
}
# Buckets whose event leaves the GPU or the node unusable for the next attempt.
HARDWARE_ACTIONS = frozenset({"RESET_GPU", "RESTART_BM"})


@dataclass(frozen=True)
class XidEntry:
    """One code of NVIDIA's Xid catalog."""

    code: int
    name: str
    action: str  # an ACTIONS key


def _catalog(*rows: tuple[int, str, str]) -> dict[int, XidEntry]:
    return {code: XidEntry(code, name, action) for code, name, action in rows}


# From NVIDIA's Xid catalog for Ampere and newer GPUs (CATALOG_URL); codes a
# data-centre GPU reports. An unlisted code is looked up there.
XID_CATALOG = _catalog(
    (8, "GPU stopped processing", "RESTART_APP"),
    (11, "invalid or corrupted push buffer stream", "RESTART_APP"),
    (13, "graphics engine exception", "RESTART_APP"),
    (31, "GPU memory page fault", "RESTART_APP"),
    (32, "invalid or corrupted push buffer stream", "RESTART_APP"),
    (38, "driver firmware error", "RESET_GPU"),
    (43, "GPU stopped processing (a fault of the application)", "RESTART_APP"),
    (45, "preemptive cleanup, due to previous errors", "IGNORE"),
    (48, "double bit ECC error", "RESET_GPU"),
    (61, "internal micro-controller breakpoint/warning", "RESET_GPU"),
    (62, "internal micro-controller halt", "RESET_GPU"),
    (63, "ECC page retirement or row remapping recorded (reset to activate)", "RESET_GPU"),
    (64, "ECC page retirement or row remapping failure", "RESET_GPU"),
    (68, "video decoder exception", "RESTART_APP"),
    (69, "graphics engine class error", "RESTART_APP"),
    (74, "NVLink error", "RESET_GPU"),
    (79, "GPU has fallen off the bus", "RESTART_BM"),
    (92, "high single-bit ECC error rate", "IGNORE"),
    (94, "contained ECC error", "RESTART_APP"),
    (95, "uncontained ECC error", "RESET_GPU"),
    (109, "context switch timeout", "RESTART_APP"),
    (119, "GSP RPC timeout", "RESET_GPU"),
    (120, "GSP error", "RESET_GPU"),
    (121, "C2C link error", "RESET_GPU"),
    (140, "unrecovered ECC error", "RESET_GPU"),
)
# Xid 154 names the recovery action itself: "... changed from 0x0 (None) to 0x2 (Node Reboot Required)".
_RECOVERY = (("reboot", "RESTART_BM"), ("reset", "RESET_GPU"), ("drain", "RESTART_BM"), ("none", "IGNORE"))

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?\): "
                  r"(?P<code>\d{1,4}),\s?(?P<rest>.{0,2000})")
_PID = re.compile(r"\bpid=(?:'?(?P<pid>\d{1,10})'?|'?<unknown>'?)(?:,\s?name=(?P<name>[^,]{0,64}))?")
_GPU_AT = re.compile(r"NVRM: GPU at PCI:(?P<bus>[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?: "
                     r"(?P<uuid>GPU-[0-9A-Fa-f-]{36})")


def _norm_bus(bus: str) -> str:
    """``0000:CB:00`` -> ``0000:cb:00`` (the domain padded to four digits)."""
    domain, b, dev = bus.lower().split(":")
    return f"{int(domain, 16):04x}:{b}:{dev}"


@dataclass
class XidEvent:
    """One Xid line: its GPU, code, the process it names, and NVIDIA's action."""

    bus: str
    code: int
    text: str
    pid: int | None = None
    process: str | None = None
    gpu: int | None = None
    stage: str | None = None

    @property
    def entry(self) -> XidEntry | None:
        return XID_CATALOG.get(self.code)

    @property
    def action(self) -> str:
        if self.code == 154:
            low = self.text.lower().rsplit(" to ", 1)[-1]
            for word, bucket in _RECOVERY:
                if word in low:
                    return bucket
        entry = self.entry
        return entry.action if entry else "CONTACT_SUPPORT"

    @property
    def hardware(self) -> bool:
        """True when the GPU or node needs a reset or reboot before it runs work again."""
        return self.action in HARDWARE_ACTIONS

    def describe(self) -> str:
        """``GPU 0 (PCI 0000:2b:00) Xid 79, GPU has fallen off the bus: drain the node ...``."""
        entry = self.entry
        what = entry.name if entry else f"not in eagle3tui's catalog (see {CATALOG_URL})"
        where = f"GPU {self.gpu} (PCI {self.bus})" if self.gpu is not None else f"GPU at PCI {self.bus}"
        who = f", process {self.pid} ({self.process})" if self.pid and self.process else \
            (f", process {self.pid}" if self.pid else "")
        return f"{where} Xid {self.code}, {what}{who}: {ACTIONS[self.action]} ({self.action} in NVIDIA's Xid catalog)"

    def to_json(self) -> dict[str, Any]:
        return {"bus": self.bus, "code": self.code, "text": self.text, "pid": self.pid, "process": self.process,
                "gpu": self.gpu, "stage": self.stage, "action": self.action,
                "name": self.entry.name if self.entry else None}


def parse_xid(line: str) -> XidEvent | None:
    """The Xid event of one kernel-log line, or None."""
    if "Xid" not in line:
        return None
    m = _XID.search(line)
    if m is None:
        return None
    rest = m.group("rest").strip()
    pm = _PID.search(rest)
    pid = int(pm.group("pid")) if pm and pm.group("pid") else None
    name = pm.group("name").strip() if pm and pm.group("name") and pm.group("name") != "<unknown>" else None
    return XidEvent(bus=_norm_bus(m.group("bus")), code=int(m.group("code")), text=line[m.start():].strip()[:500],
                    pid=pid, process=name)


def parse_gpu_at(line: str) -> tuple[str, str] | None:
    """``NVRM: GPU at PCI:0000:2b:00: GPU-0b11...``: (bus, uuid), or None."""
    m = _GPU_AT.search(line) if "GPU at PCI" in line else None
    return (_norm_bus(m.group("bus")), m.group("uuid")) if m else None


def _proc_uuids() -> dict[str, str]:
    """PCI bus id -> GPU UUID from the driver's /proc files (real hosts)."""
    out = {}
    try:
        entries = list(_PROC_GPUS.iterdir())
    except OSError:
        return out
    for d in entries:
        try:
            for ln in (d / "information").read_text().splitlines():
                if ln.startswith("GPU UUID:"):
                    out[_norm_bus(d.name.rsplit(".", 1)[0])] = ln.split(":", 1)[1].strip()
        except (OSError, ValueError):
            continue
    return out


class KernelLog:
    """New lines of the kernel log, read without blocking."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._buf = b""
        self._pos = 0
        self._kmsg = path == KMSG

    def open(self) -> str | None:
        """Start at the log's end; None on success, else why the log cannot be read."""
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            if self._kmsg:
                os.lseek(self._fd, 0, os.SEEK_END)  # only what happens from now on
                os.read(self._fd, 8192)  # a restricted kmsg refuses the read, not the open
            else:
                self._pos = os.lseek(self._fd, 0, os.SEEK_END)
        except BlockingIOError:
            return None  # readable, nothing new
        except OSError as e:
            self.close()
            why = e.strerror or str(e)
            if self._kmsg and e.errno in (errno.EPERM, errno.EACCES):
                why += (" (kernel.dmesg_restrict is set: the driver needs root or CAP_SYSLOG, "
                        f"or point {SOURCE_ENV} at a readable kernel log such as /var/log/kern.log)")
            return f"{self.path}: {why}"
        return None

    def read_lines(self) -> list[str]:
        """The complete lines written since the last call."""
        if self._fd is None:
            return []
        out: list[str] = []
        if self._kmsg:
            while True:  # one record per read
                try:
                    rec = os.read(self._fd, 8192)
                except BlockingIOError:
                    break
                except OSError as e:
                    if e.errno == errno.EPIPE:
                        continue  # records were overwritten before we read them
                    break
                if not rec:
                    break
                text = rec.decode("utf-8", "replace")
                out.append(text.split(";", 1)[-1].split("\n", 1)[0])
            return out
        try:
            size = os.fstat(self._fd).st_size
            if size < self._pos:
                self._pos = 0  # rotated or truncated: from its start
            if size == self._pos:
                return []
            data = os.pread(self._fd, min(size - self._pos, 1 << 20), self._pos)
        except OSError:
            return []
        cut = data.rfind(b"\n") + 1
        self._pos += cut
        return data[:cut].decode("utf-8", "replace").splitlines()

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


@dataclass
class XidWatch:
    """Reads Xid events, attributes them to stages, keeps the latest per GPU and per attempt."""

    source: str = KMSG
    log: KernelLog | None = None
    uuid_by_bus: dict[str, str] = field(default_factory=dict)
    by_gpu: dict[str, dict[str, Any]] = field(default_factory=dict)  # GPU index (or bus) -> last event
    by_stage: dict[str, list[XidEvent]] = field(default_factory=dict)  # stage -> events of its attempt
    ooms: OomKillWatch = field(default_factory=OomKillWatch)  # the OOM killer's kills, from the same lines

    @classmethod
    def from_env(cls) -> XidWatch:
        return cls(source=os.environ.get(SOURCE_ENV) or KMSG)

    def open(self) -> str | None:
        """Start reading; None when on, else the one sentence saying why Xid reading is off."""
        self.log = KernelLog(self.source)
        why = self.log.open()
        if why is not None:
            self.log = None
            return f"GPU Xid reading is off: {why}; hardware faults will not be named in failures"
        self.uuid_by_bus.update(_proc_uuids())
        return None

    def poll(self, gpu_summary: Callable[[], dict[str, Any] | None], stage_roots: dict[str, int]) -> list[XidEvent]:
        """The new Xid events, each attributed to a stage where one holds its process or GPU.

        ``gpu_summary`` gives the driver's last GPU sample (state.json's ``gpu``); it is
        asked only when an Xid line came.
        """
        if self.log is None:
            return []
        events = []
        gpu: dict[str, Any] | None = None
        self.ooms.track(stage_roots)
        for line in self.log.read_lines():
            self.ooms.feed(line)
            at = parse_gpu_at(line)
            if at is not None:
                self.uuid_by_bus[at[0]] = at[1]
            ev = parse_xid(line)
            if ev is None:
                continue
            if gpu is None:
                gpu = gpu_summary() or {}
            self._attribute(ev, gpu, stage_roots)
            key = str(ev.gpu) if ev.gpu is not None else ev.bus
            self.by_gpu[key] = ev.to_json()
            if ev.stage:
                self.by_stage.setdefault(ev.stage, []).append(ev)
            events.append(ev)
        return events

    def _attribute(self, ev: XidEvent, gpu: dict[str, Any], roots: dict[str, int]) -> None:
        uuid = self.uuid_by_bus.get(ev.bus)
        for d in gpu.get("gpus") or []:
            if uuid and d.get("uuid") == uuid:
                ev.gpu = int(d.get("index", 0))
        stages = gpu.get("stages") or {}
        if ev.pid:
            for name, use in stages.items():
                if ev.pid in (use.get("pids") or []):
                    ev.stage = name
                    return
            ev.stage = _stage_of_pid(ev.pid, roots)
            if ev.stage:
                return
        if ev.gpu is not None:
            holders = [(int((use.get("bytes_by_gpu") or {}).get(str(ev.gpu)) or 0), name)
                       for name, use in stages.items()]
            holders = [h for h in holders if h[0] > 0]
            if holders:
                ev.stage = max(holders)[1]

    def take(self, stage: str) -> list[XidEvent]:
        """The events of ``stage``'s attempt (forgotten once taken: the attempt ended)."""
        return self.by_stage.pop(stage, [])

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


def _stage_of_pid(pid: int, roots: dict[str, int]) -> str | None:
    """The stage whose root process is ``pid`` or one of its ancestors (a live pid only)."""
    by_root = {root: name for name, root in roots.items()}
    try:
        chain = [pid] + [p.pid for p in psutil.Process(pid).parents()]
    except (psutil.Error, OSError):
        chain = [pid]
    for p in chain:
        if p in by_root:
            return by_root[p]
    return None


def failure_lead(events: list[XidEvent]) -> str | None:
    """What a failed attempt's message leads with when its GPU faulted: the gravest event."""
    if not events:
        return None
    rank = {"RESTART_BM": 3, "RESET_GPU": 2, "CONTACT_SUPPORT": 1, "RESTART_APP": 1, "IGNORE": 0}
    worst = max(events, key=lambda e: rank.get(e.action, 0))
    if worst.action == "IGNORE":
        return None
    return worst.describe()
