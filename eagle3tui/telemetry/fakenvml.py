"""An NVML-like stand-in for machines without a GPU (CI, demos).

It has the function names, argument shapes, return objects and error class
of ``pynvml`` for the calls the sampler makes, and can be told to lose a
GPU, invalidate a handle, lack newer functions (no v3 process list, no v2
memory) or fail a function with a given NVML error code. The sampler's
code path is the same as with the real ``pynvml``. Keep it thin: it models
the API's behaviour, not a GPU.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_UNKNOWN = 999
NVML_TEMPERATURE_GPU = 0
nvmlMemory_v2 = 0x02000028

_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH: "Argument version mismatch",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    """Like ``pynvml.NVMLError``: carries the NVML return code in ``value``."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


@dataclass
class FakeGpu:
    """One simulated GPU. ``used`` is what is in use besides the listed
    processes (the driver's own share); processes add to it."""

    name: str = "NVIDIA H200"
    total: int = 143771 * (1 << 20)
    used: int = 0
    reserved: int = 615 * (1 << 20)  # what the v1 API wrongly counts as used
    util: int = 0
    temp: int = 30
    power_mw: int = 75000
    processes: dict[int, int | None] = field(default_factory=dict)  # pid -> bytes
    lost: bool = False
    uuid: str = ""


@dataclass(frozen=True)
class _Handle:
    index: int
    generation: int


class FakeNvml:
    """The object to pass as ``GpuSampler(nvml=FakeNvml(...))``.

    ``missing``: function or constant names that do not exist (like an old
    binding). ``fail``: function name -> NVML error code it raises.
    ``init_error``: code nvmlInit raises (e.g. library not found).
    ``calls`` counts calls per function name.
    """

    NVMLError = NVMLError
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    nvmlMemory_v2 = nvmlMemory_v2

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        missing: set[str] | None = None,
        fail: dict[str, int] | None = None,
        init_error: int | None = None,
    ) -> None:
        self.gpus = gpus if gpus is not None else [FakeGpu()]
        for i, g in enumerate(self.gpus):
            if not g.uuid:
                g.uuid = f"GPU-fake-{i:04d}"
        self.missing = set(missing or ())
        self.fail = dict(fail or {})
        self.init_error = init_error
        self.calls: Counter[str] = Counter()
        self.initialized = False
        self._generation = [0] * len(self.gpus)
        self._lock = threading.Lock()

    def __getattribute__(self, name: str) -> Any:
        # Names listed in ``missing`` behave as if the binding lacked them.
        if name.startswith("nvml") and name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    # ---------------------------------------------------------------- helpers

    def invalidate_handle(self, index: int) -> None:
        """Old handles of GPU ``index`` now fail (as after a reset)."""
        self._generation[index] += 1

    def _enter(self, fn: str) -> None:
        with self._lock:
            self.calls[fn] += 1
        if fn in self.fail:
            raise NVMLError(self.fail[fn])
        if fn not in ("nvmlInit", "nvmlShutdown") and not self.initialized:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _gpu(self, fn: str, handle: _Handle) -> FakeGpu:
        self._enter(fn)
        if not isinstance(handle, _Handle) or handle.index >= len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if handle.generation != self._generation[handle.index]:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        gpu = self.gpus[handle.index]
        if gpu.lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return gpu

    # ------------------------------------------------------------------- API

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return "580.159.04-fake"

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._enter("nvmlDeviceGetHandleByIndex")
        if index >= len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if self.gpus[index].lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return _Handle(index, self._generation[index])

    def nvmlDeviceGetUUID(self, handle: _Handle) -> str:
        return self._gpu("nvmlDeviceGetUUID", handle).uuid

    def nvmlDeviceGetName(self, handle: _Handle) -> bytes:
        # Older bindings return bytes; the sampler must cope with both.
        return self._gpu("nvmlDeviceGetName", handle).name.encode()

    def _used(self, gpu: FakeGpu) -> int:
        return gpu.used + sum(b or 0 for b in gpu.processes.values())

    def nvmlDeviceGetMemoryInfo(
        self, handle: _Handle, version: int | None = None
    ) -> SimpleNamespace:
        if version:
            fn = "nvmlDeviceGetMemoryInfo_v2"
            if fn in self.missing:
                self._enter(fn)
                raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
            gpu = self._gpu(fn, handle)
            used = self._used(gpu)
            return SimpleNamespace(
                version=version,
                total=gpu.total,
                reserved=gpu.reserved,
                free=gpu.total - gpu.reserved - used,
                used=used,
            )
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        used = self._used(gpu) + gpu.reserved
        return SimpleNamespace(total=gpu.total, free=gpu.total - used, used=used)

    def nvmlDeviceGetUtilizationRates(self, handle: _Handle) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=gpu.util, memory=0)

    def nvmlDeviceGetTemperature(self, handle: _Handle, sensor: int) -> int:
        return self._gpu("nvmlDeviceGetTemperature", handle).temp

    def nvmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        return self._gpu("nvmlDeviceGetPowerUsage", handle).power_mw

    def _procs(self, fn: str, handle: _Handle) -> list[SimpleNamespace]:
        gpu = self._gpu(fn, handle)
        return [
            SimpleNamespace(
                pid=pid,
                usedGpuMemory=b,
                gpuInstanceId=0xFFFFFFFF,
                computeInstanceId=0xFFFFFFFF,
            )
            for pid, b in gpu.processes.items()
        ]

    def nvmlDeviceGetComputeRunningProcesses_v3(
        self, handle: _Handle
    ) -> list[SimpleNamespace]:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v3", handle)

    def nvmlDeviceGetComputeRunningProcesses_v2(
        self, handle: _Handle
    ) -> list[SimpleNamespace]:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v2", handle)

    def nvmlDeviceGetComputeRunningProcesses(
        self, handle: _Handle
    ) -> list[SimpleNamespace]:
        return self._procs("nvmlDeviceGetComputeRunningProcesses", handle)


class FileNvml(FakeNvml):
    """The stand-in, described by a JSON file that may change while it is used.

    For a process the test cannot reach into (a stage wrapper in a Slurm job):
    the test writes ``{"gpus": [{"name": ..., "total": bytes, "used": bytes,
    "util": pct, "processes": {"<pid>": bytes}}]}`` and rewrites it as the
    scene changes; every NVML call sees the file's latest content. A GPU
    missing from the file keeps its last figures.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._mtime: float | None = None
        super().__init__([FakeGpu() for _ in self._read().get("gpus", [{}])])
        self._reload()

    def _read(self) -> dict[str, Any]:
        with open(self.path, encoding="utf-8") as f:
            doc = json.load(f)
        return doc if isinstance(doc, dict) else {}

    def _reload(self) -> None:
        try:
            mtime = os.stat(self.path).st_mtime
            if mtime == self._mtime:
                return
            doc = self._read()
        except (OSError, ValueError):
            return  # mid-rewrite or gone: keep the last scene
        self._mtime = mtime
        for gpu, spec in zip(self.gpus, doc.get("gpus") or [], strict=False):
            for key in ("name", "total", "used", "util", "temp"):
                if key in spec:
                    setattr(gpu, key, spec[key])
            gpu.processes = {int(pid): b for pid, b in (spec.get("processes") or {}).items()}

    def _enter(self, fn: str) -> None:
        if fn == "nvmlDeviceGetMemoryInfo" or fn == "nvmlDeviceGetMemoryInfo_v2":
            self._reload()  # once per GPU and sample: the scene changes between samples
        super()._enter(fn)
