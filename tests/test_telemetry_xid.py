"""GPU hardware faults: NVIDIA Xid events read from a kernel log, with NVIDIA's action, on the failed stage.

The lines are real, each from the public thread beside it; the action is the
"Immediate Action" of NVIDIA's Xid catalog
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html). Under
the real driver (in-process, NVML stand-in), a stand-in kernel log
(``EAGLE3TUI_KERNEL_LOG``) takes the place of /dev/kmsg: the test appends the
lines while a stage holds the GPU, and the Xid is attributed to that stage,
leads its ``stage-failed`` message, and shows on the GPU row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import driver_in_thread, wait_for

from eagle3tui.config import load_config
from eagle3tui.supervisor.driver import Driver
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml
from eagle3tui.telemetry.xid import SOURCE_ENV, KernelLog, parse_gpu_at, parse_xid
from eagle3tui.view import load_view

GIB = 1 << 30
# (url, line, code, bus, pid, action)
REAL = [
    ("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1151",
     "May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
     79, "0000:2b:00", None, "RESTART_BM"),
    ("https://github.com/leptonai/gpud/pull/46",
     ("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, "
      "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"),
     13, "0000:cb:00", None, "RESTART_APP"),
    ("https://github.com/leptonai/gpud/pull/46",
     ("[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, "
      "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"),
     109, "0000:cb:00", 1797828, "RESTART_APP"),
    (("https://raw.githubusercontent.com/stas00/ml-engineering/7bc7c3054eb93c277a4755c597ae0864d77a63f1/"
      "compute/accelerator/nvidia/debug.md"),
     "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
     63, "0000:10:1c", 1896, "RESET_GPU"),
    ("https://github.com/leptonai/gpud/pull/1174",
     "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error",
     94, "0000:9b:00", 1234, "RESTART_APP"),
    ("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150",
     "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
     45, "0000:dc:00", 1818990, "IGNORE"),
    ("https://github.com/Bumblebee-Project/Bumblebee/issues/677",
     "[24128.834365] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000",
     31, "0000:01:00", None, "RESTART_APP"),
    ("https://github.com/leptonai/gpud/pull/1174",
     ("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 "
      "0x00000000 0x00000000 0x00000000)"),
     149, "0019:01:00", None, "CONTACT_SUPPORT"),
    ("https://github.com/Bumblebee-Project/Bumblebee/issues/329",  # the old format, without "PCI:"
     "NVRM: Xid (0000:01:00): 16, Head 00000000 Count 00000000", 16, "0000:01:00", None, "CONTACT_SUPPORT"),
]
GPU_AT = ("May 18 19:02:39 kernel: NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
          "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1151")
UUID = "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae"


@pytest.mark.parametrize(("url", "line", "code", "bus", "pid", "action"), REAL,
                         ids=[f"xid{r[2]}-{i}" for i, r in enumerate(REAL)])
def test_real_lines_parse_with_nvidias_action(url: str, line: str, code: int, bus: str, pid: int | None,
                                              action: str) -> None:
    ev = parse_xid(line)
    assert ev is not None
    assert (ev.code, ev.bus, ev.pid, ev.action) == (code, bus, pid, action)
    text = ev.describe()
    assert f"Xid {code}" in text and action in text


def test_look_alikes_are_no_xid() -> None:
    for line in ("NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  530.41.03  Release Build",
                 "RuntimeError: CUDA error: an illegal memory access was encountered (Xid?)",
                 "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context"):
        assert parse_xid(line) is None
    assert parse_gpu_at(GPU_AT[0]) == ("0000:2b:00", UUID)


def test_recovery_action_154_names_its_action() -> None:
    ev = parse_xid("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) "
                   "to 0x2 (Node Reboot Required)")
    assert ev is not None and ev.action == "RESTART_BM" and ev.hardware


def test_file_source_reads_only_new_complete_lines(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(REAL[0][1] + "\n")  # before the watch: history, not news
    k = KernelLog(str(log))
    assert k.open() is None
    assert k.read_lines() == []
    with open(log, "a") as f:
        f.write(REAL[1][1] + "\npartial")
    assert k.read_lines() == [REAL[1][1]]
    with open(log, "a") as f:
        f.write(" line\n")
    assert k.read_lines() == ["partial line"]
    k.close()


RECORD = "import json, sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(json.dumps(json.load(sys.stdin)) + '\\n')\n"


def _gated_stage(pipeline, tmp_path: Path) -> Path:
    gate = tmp_path / "gate"
    (tmp_path / "record.py").write_text(RECORD)
    (tmp_path / "train.py").write_text(
        "import os, sys, time\n"
        "print('step 1/100 loss=2.1', flush=True)\n"
        f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.05)\n"
        "print('RuntimeError: CUDA error: unspecified launch failure', flush=True)\n"
        "sys.exit(1)\n")
    pipeline.write(f"""
        [pipeline]
        gpu_interval = "0.1s"
        [alerts]
        command = ["{sys.executable}", "{tmp_path / 'record.py'}", "{tmp_path / 'pages.jsonl'}"]
        min_level = "critical"
        [[stage]]
        name = "train"
        gpus = [0]
        command = ["{sys.executable}", "train.py"]
        stop_grace = "3s"
        """)
    return gate


def test_fallen_off_the_bus_is_the_cause_of_the_failure(pipeline, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("")
    monkeypatch.setenv(SOURCE_ENV, str(kern))
    gate = _gated_stage(pipeline, tmp_path)
    gpu = FakeGpu(uuid=UUID, util=90)
    with driver_in_thread(pipeline, gpu):
        pid = wait_for(lambda: pipeline.stage("train")["pid"], what="train's pid")
        gpu.processes[pid] = 40 * GIB
        gpu.used = 41 * GIB
        wait_for(lambda: (pipeline.status().get("gpu") or {}).get("stages", {}).get("train"),
                 what="the GPU sample attributing memory to train")
        with open(kern, "a") as f:  # the driver's own lines, as the kernel logged them
            f.write(GPU_AT[0] + "\n" + REAL[0][1] + "\n")
        xid = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "gpu-xid"], what="the Xid alert")[0]
        assert xid["level"] == "critical" and xid["stage"] == "train"
        assert xid["message"].startswith("GPU 0 (PCI 0000:2b:00) Xid 79, GPU has fallen off the bus: drain the node")
        assert xid["details"]["action"] == "RESTART_BM"
        gate.touch()
        failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"],
                          what="the failure")[0]
        assert failed["message"].startswith("GPU 0 (PCI 0000:2b:00) Xid 79, GPU has fallen off the bus"), failed
        assert "unspecified launch failure" in failed["message"]  # the log's line follows
        # One failure, one page: the Xid's page waited, and the failure that leads with it went out.
        pages = tmp_path / "pages.jsonl"
        wait_for(lambda: pages.exists() and pages.read_text().strip(), what="the page")
        got = [json.loads(x) for x in pages.read_text().splitlines()]
        assert [p["kind"] for p in got] == ["stage-failed"], got
        # The GPU row shows it, from the read model.
        rows = load_view(load_config(pipeline.config)).gpu_rows()
        assert rows[0].xid is not None and rows[0].xid["code"] == 79 and rows[0].xid["stage"] == "train"
        assert pipeline.status()["gpu"]["xid"]["0"]["action"] == "RESTART_BM"
        from prometheus_client.parser import text_string_to_metric_families

        from eagle3tui.metrics import render

        fams = {f.name: f for f in text_string_to_metric_families(render(load_config(pipeline.config)).decode())}
        (sample,) = fams["eagle3tui_gpu_last_xid"].samples
        assert sample.value == 79 and sample.labels == {"gpu": "0", "action": "RESTART_BM", "stage": "train"}


def test_an_app_fault_is_attributed_by_its_pid(pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("")
    monkeypatch.setenv(SOURCE_ENV, str(kern))
    _gated_stage(pipeline, tmp_path)
    with driver_in_thread(pipeline, FakeGpu()):
        pid = wait_for(lambda: pipeline.stage("train")["pid"], what="train's pid")
        # leptonai/gpud#46's line, naming this stage's process instead of the recorded one.
        line = REAL[2][1].replace("pid=1797828, name=pt_main_thread", f"pid={pid}, name=python3")
        with open(kern, "a") as f:
            f.write(line + "\n")
        xid = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "gpu-xid"], what="the Xid alert")[0]
        assert xid["stage"] == "train" and xid["level"] == "warning"
        assert "Xid 109, context switch timeout" in xid["message"] and "restart the application" in xid["message"]


def test_unreadable_kernel_log_is_said_once(pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOURCE_ENV, str(tmp_path / "no-such-kern.log"))
    pipeline.write("""
        [[stage]]
        name = "train"
        gpus = [0]
        command = ["sh", "-c", "echo step 1/2; echo step 2/2"]
        """)
    drv = Driver(load_config(pipeline.config), nvml=FakeNvml([FakeGpu()]), exit_when_idle=True)
    drv.execute({"op": "start", "all": True})
    assert drv.run() == 0
    off = [a for a in pipeline.alerts() if a["kind"] == "xid-off"]
    assert len(off) == 1 and "no-such-kern.log" in off[0]["message"] and "off" in off[0]["message"], off
    assert pipeline.stage("train")["state"] == "succeeded"
