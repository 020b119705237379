"""NVML sampler: per-GPU figures and per-process GPU memory, in one snapshot.

``GpuSampler.sample()`` never raises: a missing library, a driver that is
not loaded, a GPU that falls off the bus mid-run, a binding without the
newer functions, or a pid that psutil cannot see all end up as text in the
snapshot (``GpuSnapshot.error``, ``GpuInfo.error``, ``GpuProcess.visible``),
so the rest of the supervisor keeps working.

The NVML object is the ``pynvml`` module (package ``nvidia-ml-py``) unless
one is injected; tests inject a small stand-in with the same function names,
and the code path is the same for both.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import psutil

# Calls into the binding are guarded with broad ``except Exception`` on
# purpose (the ``noqa: BLE001`` below): it is ctypes over a driver, it can
# fail in ways the binding does not wrap, and sample() must never raise.

# NVML return codes (nvml.h); stable across driver releases, so we do not
# depend on the binding exporting them.
_ERR_UNINITIALIZED = 1
_ERR_INVALID_ARGUMENT = 2
_ERR_NOT_SUPPORTED = 3
_ERR_NO_PERMISSION = 4
_ERR_NOT_FOUND = 6
_ERR_DRIVER_NOT_LOADED = 9
_ERR_LIBRARY_NOT_FOUND = 12
_NO_LIBRARY = "NVML unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver installed?)"
_ERR_FUNCTION_NOT_FOUND = 13
_ERR_GPU_IS_LOST = 15
_ERR_ARGUMENT_VERSION_MISMATCH = 25

# Errors that mean "this API does not exist here", as opposed to "the GPU is
# in trouble": we fall back to an older API, or stop asking.
_API_ABSENT = {
    _ERR_NOT_SUPPORTED,
    _ERR_FUNCTION_NOT_FOUND,
    _ERR_ARGUMENT_VERSION_MISMATCH,
}

_TEMPERATURE_GPU = 0  # NVML_TEMPERATURE_GPU

# Compute-process APIs, newest first. v3 is the one that matches the current
# process-info struct; older bindings/drivers only have v2 or the plain one.
_PROCESS_APIS = (
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses",
)

# How long to wait before trying nvmlInit again after it failed: a driver
# can be loaded after we start, but retrying every second wastes CPU.
_INIT_RETRY_S = 30.0


@dataclass(frozen=True)
class GpuInfo:
    """One GPU in one snapshot. Figures are None when not supported or failed."""

    index: int
    uuid: str | None = None
    name: str | None = None
    mem_used: int | None = None
    mem_total: int | None = None
    util_pct: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    error: str | None = None
    processes_error: str | None = None

    @property
    def mem_fraction(self) -> float | None:
        """Used / total memory in [0, 1], or None when unknown."""
        if self.mem_used is None or not self.mem_total:
            return None
        return self.mem_used / self.mem_total


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on one GPU. ``visible`` is False when psutil cannot
    see the pid (another PID namespace, e.g. a container, or already gone)."""

    gpu_index: int
    pid: int
    used_bytes: int | None
    name: str | None = None
    cmdline: list[str] | None = None
    visible: bool = True


@dataclass(frozen=True)
class GpuSnapshot:
    """Everything one sample saw. ``available`` is False when NVML could not
    be used at all; ``error`` then says why in words a user can act on."""

    time: float
    available: bool
    error: str | None = None
    gpus: list[GpuInfo] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    driver: str | None = None
    # No NVIDIA driver on this host at all (libnvidia-ml is not installed): a CPU host,
    # where "no GPUs" is the answer rather than a fault.
    no_driver: bool = False

    def gpu(self, index: int) -> GpuInfo | None:
        """The GpuInfo with this index, or None."""
        for g in self.gpus:
            if g.index == index:
                return g
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (see docs/gpu.md for the schema)."""
        return asdict(self)


@dataclass
class _GpuCache:
    """Slow-changing facts about one GPU and which APIs work on it."""

    handle: Any
    uuid: str | None
    name: str | None
    total: int | None = None
    mem_v2: bool | None = None  # None: not tried yet
    process_api: str | None = None  # name of the API that worked
    no_util: bool = False
    no_temp: bool = False
    no_power: bool = False
    no_processes: bool = False


def _text(value: Any) -> str:
    """NVML strings are bytes in old bindings and str in new ones."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class GpuSampler:
    """Samples NVML, keeps the latest snapshot and a per-GPU history.

    ``nvml=None`` imports ``pynvml`` on first use; pass an NVML-like object
    to inject one. ``interval`` is the background thread's period in
    seconds; ``history_s`` how much history each GPU keeps.
    """

    def __init__(
        self,
        nvml: Any | None = None,
        interval: float = 1.0,
        history_s: float = 600.0,
        *,
        clock: Callable[[], float] = time.time,
        on_sample: Callable[[GpuSnapshot], object] | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(
                f"GpuSampler interval must be > 0 seconds, got {interval!r}"
            )
        self.interval = float(interval)
        self.history_s = float(history_s)
        self._nvml: Any = nvml
        self._clock = clock
        self._on_sample = on_sample
        self._lock = threading.Lock()
        self._initialized = False
        self._init_error: str | None = None
        self._init_failed_at: float | None = None
        self._driver: str | None = None
        self._gpus: dict[int, _GpuCache] = {}
        self._pid_info: dict[int, tuple[str | None, list[str] | None, bool]] = {}
        self._history: dict[int, deque[tuple[float, int, float | None]]] = {}
        self._latest: GpuSnapshot | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.callback_error: str | None = None

    # ------------------------------------------------------------------ public

    @property
    def latest(self) -> GpuSnapshot | None:
        """The most recent snapshot, or None before the first sample."""
        return self._latest

    def history(self, index: int) -> list[tuple[float, int, float | None]]:
        """(time, used_bytes, util_pct) for GPU ``index``, oldest first."""
        with self._lock:
            return list(self._history.get(index, ()))

    def sample(self) -> GpuSnapshot:
        """Take one sample synchronously. Never raises."""
        with self._lock:
            try:
                snap = self._sample_locked()
            except Exception as exc:  # noqa: BLE001 (last resort: a bug must not kill the UI)
                snap = GpuSnapshot(
                    time=self._clock(),
                    available=False,
                    error=f"GPU sampler failed: {type(exc).__name__}: {exc}",
                )
            self._record(snap)
            self._latest = snap
        return snap

    def start(self) -> None:
        """Start the background thread (daemon). Idempotent."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="eagle3tui-gpu-sampler", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the background thread; returns once it has ended (or timeout)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None

    @property
    def running(self) -> bool:
        """Whether the background thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Stop the thread and release NVML."""
        self.stop()
        with self._lock:
            if self._initialized and self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # noqa: BLE001, S110
                    pass  # shutting down: nothing useful to do with an error
            self._initialized = False
            self._gpus.clear()

    # ---------------------------------------------------------------- thread

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            snap = self.sample()
            if self._on_sample is not None:
                try:
                    self._on_sample(snap)
                except Exception as exc:  # noqa: BLE001 (a consumer's bug must not stop sampling)
                    self.callback_error = f"{type(exc).__name__}: {exc}"
            # Wait on the event so stop() is honoured at once, not after a tick.
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    # ---------------------------------------------------------------- NVML

    def _error_code(self, exc: BaseException) -> int | None:
        value = getattr(exc, "value", None)
        return value if isinstance(value, int) else None

    def _is_nvml_error(self, exc: BaseException) -> bool:
        cls = getattr(self._nvml, "NVMLError", None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return True
        return self._error_code(exc) is not None

    def _describe(self, exc: BaseException) -> str:
        try:
            text = str(exc)
        except Exception:  # noqa: BLE001
            text = ""
        return text or type(exc).__name__

    def _ensure_init(self, now: float) -> str | None:
        """Load and initialise NVML; returns an error text or None."""
        if self._initialized:
            return None
        if (
            self._init_failed_at is not None
            and now - self._init_failed_at < _INIT_RETRY_S
        ):
            return self._init_error
        error = self._try_init()
        if error is None:
            self._initialized = True
            self._init_error = None
            self._init_failed_at = None
        else:
            self._init_error = error
            self._init_failed_at = now
        return error

    def _try_init(self) -> str | None:
        if self._nvml is None:
            try:
                import pynvml  # lazy: the package must import without a driver
            except ImportError:
                return (
                    "NVML unavailable: the Python package nvidia-ml-py (module pynvml) "
                    "is not installed; fix: pip install nvidia-ml-py"
                )
            self._nvml = pynvml
        try:
            self._nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001
            code = self._error_code(exc)
            if code == _ERR_LIBRARY_NOT_FOUND:
                return _NO_LIBRARY
            if code == _ERR_DRIVER_NOT_LOADED:
                return "NVML unavailable: the NVIDIA driver is not loaded"
            if code == _ERR_NO_PERMISSION:
                return "NVML unavailable: no permission to open the NVIDIA device files"
            return f"NVML unavailable: nvmlInit failed: {self._describe(exc)}"
        try:
            self._driver = _text(self._nvml.nvmlSystemGetDriverVersion())
        except Exception:  # noqa: BLE001
            self._driver = None  # cosmetic only
        return None

    def _sample_locked(self) -> GpuSnapshot:
        now = self._clock()
        error = self._ensure_init(now)
        if error is not None:
            return GpuSnapshot(time=now, available=False, error=error,
                               no_driver=error == _NO_LIBRARY)
        nvml = self._nvml
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:  # noqa: BLE001
            if self._error_code(exc) == _ERR_UNINITIALIZED:
                self._initialized = (
                    False  # someone shut NVML down: init again next time
                )
            return GpuSnapshot(
                time=now,
                available=False,
                error=f"NVML error while counting GPUs: {self._describe(exc)}",
                driver=self._driver,
            )
        if count == 0:
            return GpuSnapshot(
                time=now,
                available=False,
                error="no NVIDIA GPU found (NVML reports 0 devices)",
                driver=self._driver,
            )
        for stale in [i for i in self._gpus if i >= count]:
            del self._gpus[stale]
        gpus: list[GpuInfo] = []
        processes: list[GpuProcess] = []
        for index in range(count):
            info, procs = self._sample_gpu(index)
            gpus.append(info)
            processes.extend(procs)
        self._forget_gone_pids(processes)
        return GpuSnapshot(
            time=now,
            available=True,
            gpus=gpus,
            processes=processes,
            driver=self._driver,
        )

    def _gpu_cache(self, index: int) -> _GpuCache:
        cache = self._gpus.get(index)
        if cache is not None:
            return cache
        nvml = self._nvml
        handle = nvml.nvmlDeviceGetHandleByIndex(index)  # errors go to the caller
        uuid = name = None
        try:
            uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        except Exception:  # noqa: BLE001, S110
            pass  # identity is nice to have; figures still work without it
        try:
            name = _text(nvml.nvmlDeviceGetName(handle))
        except Exception:  # noqa: BLE001, S110
            pass
        cache = _GpuCache(handle=handle, uuid=uuid, name=name)
        self._gpus[index] = cache
        return cache

    def _sample_gpu(self, index: int) -> tuple[GpuInfo, list[GpuProcess]]:
        try:
            cache = self._gpu_cache(index)
        except Exception as exc:  # noqa: BLE001
            return GpuInfo(
                index=index, error=f"GPU {index} not reachable: {self._describe(exc)}"
            ), []
        try:
            used, total = self._memory(cache)
        except Exception as exc:  # noqa: BLE001
            # The handle may be dead (GPU fell off the bus, Xid 79): forget it
            # so the next sample asks for a fresh one.
            self._gpus.pop(index, None)
            return (
                GpuInfo(
                    index=index,
                    uuid=cache.uuid,
                    name=cache.name,
                    mem_total=cache.total,
                    error=f"GPU {index}: {self._describe(exc)}",
                ),
                [],
            )
        util = self._optional(
            cache,
            "no_util",
            lambda: float(self._nvml.nvmlDeviceGetUtilizationRates(cache.handle).gpu),
        )
        temp = self._optional(
            cache,
            "no_temp",
            lambda: float(
                self._nvml.nvmlDeviceGetTemperature(cache.handle, _TEMPERATURE_GPU)
            ),
        )
        power = self._optional(
            cache,
            "no_power",
            lambda: float(self._nvml.nvmlDeviceGetPowerUsage(cache.handle)) / 1000.0,
        )
        procs, proc_error = self._processes(index, cache)
        info = GpuInfo(
            index=index,
            uuid=cache.uuid,
            name=cache.name,
            mem_used=used,
            mem_total=total,
            util_pct=util,
            temp_c=temp,
            power_w=power,
            processes_error=proc_error,
        )
        return info, procs

    def _memory(self, cache: _GpuCache) -> tuple[int, int]:
        """(used, total). Prefers the v2 API: v1 counts driver-reserved memory
        as used (~615 MiB on an idle H200)."""
        nvml = self._nvml
        if cache.mem_v2 is not False:
            version = getattr(nvml, "nvmlMemory_v2", None)
            if version is None:
                cache.mem_v2 = False
            else:
                try:
                    mem = nvml.nvmlDeviceGetMemoryInfo(cache.handle, version=version)
                    cache.mem_v2 = True
                except TypeError:
                    cache.mem_v2 = False  # binding predates the version argument
                except Exception as exc:
                    if cache.mem_v2 is None and self._error_code(exc) in _API_ABSENT:
                        cache.mem_v2 = False
                    else:
                        raise
                else:
                    cache.total = int(mem.total)
                    return int(mem.used), int(mem.total)
        mem = nvml.nvmlDeviceGetMemoryInfo(cache.handle)
        cache.total = int(mem.total)
        return int(mem.used), int(mem.total)

    def _optional(
        self, cache: _GpuCache, flag: str, read: Callable[[], float]
    ) -> float | None:
        """Read a figure a GPU may not support; stop asking once it says so."""
        if getattr(cache, flag):
            return None
        try:
            return read()
        except Exception as exc:  # noqa: BLE001
            if isinstance(exc, AttributeError) or self._error_code(exc) in _API_ABSENT:
                setattr(cache, flag, True)
            return None

    def _processes(
        self, index: int, cache: _GpuCache
    ) -> tuple[list[GpuProcess], str | None]:
        if cache.no_processes:
            return [], "per-process memory not supported on this GPU/driver"
        apis = (cache.process_api,) if cache.process_api else _PROCESS_APIS
        last_error: str | None = None
        for api in apis:
            fn = getattr(self._nvml, api, None)
            if fn is None:
                continue
            try:
                raw = fn(cache.handle)
            except Exception as exc:  # noqa: BLE001
                if self._error_code(exc) in _API_ABSENT and cache.process_api is None:
                    continue  # try the next older API
                return [], f"process list failed: {self._describe(exc)}"
            cache.process_api = api
            return [self._process(index, p) for p in raw], None
        if cache.process_api is None:
            cache.no_processes = True
            last_error = "per-process memory not supported on this GPU/driver"
        return [], last_error

    def _process(self, index: int, raw: Any) -> GpuProcess:
        pid = int(raw.pid)
        used = getattr(raw, "usedGpuMemory", None)
        info = self._pid_info.get(pid)
        if info is None:
            info = self._lookup_pid(pid)
            # Cache while the pid stays on a GPU; a pid cannot be reused while
            # its process still holds GPU memory.
            self._pid_info[pid] = info
        name, cmdline, visible = info
        return GpuProcess(
            gpu_index=index,
            pid=pid,
            used_bytes=None if used is None else int(used),
            name=name,
            cmdline=cmdline,
            visible=visible,
        )

    @staticmethod
    def _lookup_pid(pid: int) -> tuple[str | None, list[str] | None, bool]:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                name = proc.name()
                try:
                    cmdline: list[str] | None = proc.cmdline()
                except psutil.AccessDenied:
                    cmdline = None
            return name, cmdline, True
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return None, None, False
        except psutil.AccessDenied:
            return None, None, True

    def _forget_gone_pids(self, processes: list[GpuProcess]) -> None:
        live = {p.pid for p in processes}
        for pid in [p for p in self._pid_info if p not in live]:
            del self._pid_info[pid]

    def _record(self, snap: GpuSnapshot) -> None:
        horizon = snap.time - self.history_s
        for g in snap.gpus:
            if g.mem_used is None:
                continue
            ring = self._history.get(g.index)
            if ring is None:
                ring = self._history[g.index] = deque()
            ring.append((snap.time, g.mem_used, g.util_pct))
            while ring and ring[0][0] < horizon:
                ring.popleft()
