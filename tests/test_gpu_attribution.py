"""Attribution with REAL process trees; the NVML stand-in reports their pids."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest
from conftest import wait_for

from eagle3tui.telemetry.attribution import OTHER, attribute
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml
from eagle3tui.telemetry.sampler import GpuSampler

GiB = 1 << 30



def kill_tree(proc: subprocess.Popen) -> None:
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        kids = []
    for p in [*kids]:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.kill()
    proc.wait(5)
    psutil.wait_procs(kids, timeout=5)


@pytest.fixture
def stage_tree() -> Iterator[tuple[int, int, int]]:
    """root (sh) -> child (sh) -> grandchild (sleep): like a wrapper script
    starting vLLM which starts its tensor-parallel workers."""
    root = subprocess.Popen(["sh", "-c", 'sh -c "sleep 120; true" & wait'])
    try:

        def tree():
            kids = psutil.Process(root.pid).children(recursive=True)
            names = [k.name() for k in kids]
            return kids if len(kids) >= 2 and "sleep" in names else None

        kids = wait_for(tree)
        child = next(k.pid for k in kids if k.ppid() == root.pid)
        grandchild = next(k.pid for k in kids if k.name() == "sleep")
        yield root.pid, child, grandchild
    finally:
        kill_tree(root)


@pytest.fixture
def stranger() -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "someone-elses-job"]
    )
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(5)


def test_grandchildren_are_attributed_to_their_stage(stage_tree, stranger) -> None:
    root, child, grandchild = stage_tree
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    nvml = FakeNvml(
        [
            FakeGpu(processes={grandchild: 3 * GiB, stranger: 2 * GiB}),
            FakeGpu(processes={child: GiB, gone.pid: 5 * GiB}),
        ]
    )
    snap = GpuSampler(nvml=nvml).sample()
    a = attribute(snap, {"extract": root, "idle-stage": stranger + 10_000_000})
    ex = a.stages["extract"]
    assert ex.bytes == 4 * GiB
    assert ex.gpus == [0, 1]
    assert ex.pids == sorted([child, grandchild])
    assert ex.bytes_by_gpu == {0: 3 * GiB, 1: GiB}
    assert a.stage_of(grandchild) == "extract" and a.stage_of(child) == "extract"
    # a stage that holds nothing is still listed, with 0 bytes
    assert a.stages["idle-stage"].bytes == 0 and a.stages["idle-stage"].gpus == []
    # someone else's job and an invisible pid are "other", with command lines
    others = {p.pid: p for p in a.other}
    assert set(others) == {stranger, gone.pid}
    assert a.stage_of(stranger) == OTHER
    assert "someone-elses-job" in (others[stranger].cmdline or [])
    assert not others[gone.pid].visible
    assert a.other_bytes == 7 * GiB


def test_stage_root_itself_on_gpu_and_two_stages(stage_tree, stranger) -> None:
    root, _child, _grandchild = stage_tree
    nvml = FakeNvml([FakeGpu(processes={root: GiB, stranger: 2 * GiB})])
    snap = GpuSampler(nvml=nvml).sample()
    a = attribute(snap, {"serve": root, "train": stranger})
    assert a.stages["serve"].bytes == GiB and a.stages["serve"].pids == [root]
    assert a.stages["train"].bytes == 2 * GiB and a.stages["train"].gpus == [0]
    assert a.other == []


def test_without_stages_everything_is_other(stage_tree) -> None:
    _, _, grandchild = stage_tree
    snap = GpuSampler(nvml=FakeNvml([FakeGpu(processes={grandchild: GiB})])).sample()
    a = attribute(snap, {})
    assert a.stages == {} and [p.pid for p in a.other] == [grandchild]


def test_stage_memory_drops_to_zero_when_its_process_exits(stage_tree) -> None:
    root, _, grandchild = stage_tree
    nvml = FakeNvml([FakeGpu(processes={grandchild: 8 * GiB})])
    sampler = GpuSampler(nvml=nvml)
    assert (
        attribute(sampler.sample(), {"extract": root}).stages["extract"].bytes
        == 8 * GiB
    )
    psutil.Process(grandchild).kill()
    nvml.gpus[0].processes.clear()  # the driver releases the memory of a dead process
    a = attribute(sampler.sample(), {"extract": root})
    assert a.stages["extract"].bytes == 0 and a.other == []


def test_proc_walk_matches_psutil_and_survives_odd_process_names(stage_tree) -> None:
    from eagle3tui.telemetry.attribution import _ancestors, _ancestors_psutil

    root, child, grandchild = stage_tree
    assert _ancestors(grandchild)[:3] == [grandchild, child, root]
    assert _ancestors(grandchild) == _ancestors_psutil(grandchild)
    # A process may name itself anything, ") 1 2" included: the parse must not break.
    code = (
        "import time\nopen('/proc/self/comm', 'w').write(') 7 8 (x')\n"
        "print('ok', flush=True)\ntime.sleep(60)\n"
    )
    odd = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    try:
        assert odd.stdout is not None and odd.stdout.readline().strip() == "ok"
        assert psutil.Process(odd.pid).name() == ") 7 8 (x"
        chain = _ancestors(odd.pid)
        assert chain[:2] == [odd.pid, psutil.Process().pid]
        assert chain == _ancestors_psutil(odd.pid)
    finally:
        odd.kill()
        odd.wait(5)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert _ancestors(gone.pid) == [] and _ancestors_psutil(gone.pid) == []
