"""On a GPU host: the real NVML path through the driver, and the README's GPU screenshot.

    python bench/gpu_tui_screenshot.py OUT_DIR [--gib 6]

A real pipeline in a temp dir with one GPU stage: it allocates ``--gib`` GiB on
GPU 0 with torch in a *grandchild* process (so attribution must walk the
tree) and draws a tqdm bar. The real driver samples NVML (no stand-in) and
writes its GPU document to state.json; the real TUI (Textual, headless through
``App.run_test``) shows it. The script waits until the GPU panel attributes
memory to the stage, compares the attributed bytes with what ``nvidia-smi``
reports for the stage's processes, saves an SVG screenshot at 160x48 into
OUT_DIR, prints the figures as JSON, then stops the stage (and checks that the
stop left no process on the GPU).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eagle3tui.config import load_config  # noqa: E402
from eagle3tui.frontends.tui.app import EagleApp  # noqa: E402
from eagle3tui.supervisor.protocol import send_command  # noqa: E402
from eagle3tui.view import load_view  # noqa: E402

HOLDER = """
import subprocess, sys
# The GPU work runs in a grandchild, as a launcher's workers would.
sys.exit(subprocess.call([sys.executable, "work.py", sys.argv[1]]))
"""
WORK = """
import sys, time, torch
from tqdm import tqdm
gib = float(sys.argv[1])
x = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda:0")
x.fill_(1)
for _ in tqdm(range(600), desc="training steps"):
    y = torch.randn(2048, 2048, device="cuda:0") @ torch.randn(2048, 2048, device="cuda:0")
    torch.cuda.synchronize()
    time.sleep(0.5)
"""


def nvidia_smi_bytes(pids: set[int]) -> int:
    """Memory nvidia-smi reports for ``pids`` (bytes)."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True,
                         timeout=30).stdout
    total = 0
    for line in out.splitlines():
        pid, mib = (s.strip() for s in line.split(","))
        if int(pid) in pids:
            total += int(mib) << 20
    return total


async def main(out_dir: Path, gib: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="e3t-gpu-shot-") as tmp:
        root = Path(tmp)
        (root / "holder.py").write_text(HOLDER)
        (root / "work.py").write_text(WORK)
        (root / "pipeline.toml").write_text(
            '[pipeline]\nname = "h200-gpu-panel"\n[[stage]]\nname = "train"\n'
            f'command = ["{sys.executable}", "holder.py", "{gib}"]\ngpus = 0\nestimate = "4m"\n'
            '[[stage]]\nname = "export"\ncommand = ["true"]\ndepends_on = ["train"]\n')
        cfg = load_config(root / "pipeline.toml")
        reply = send_command(cfg, "start", ["train"])
        assert reply["ok"], reply
        app = EagleApp(cfg, poll_s=0.5)
        figures: dict = {}
        try:
            async with app.run_test(size=(160, 48)) as pilot:
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline:
                    view = app.view
                    held = ((view.gpu or {}).get("stages") or {}).get("train") if view else None
                    if held and held.get("bytes", 0) >= gib * 0.9 * (1 << 30):
                        break
                    await pilot.pause(0.5)
                else:
                    raise SystemExit("the driver never attributed the stage's GPU memory")
                await pilot.pause(3.0)  # a few samples for the sparkline
                view = load_view(cfg)
                held = view.gpu["stages"]["train"]
                figures = {"attributed_bytes": held["bytes"], "pids": held["pids"],
                           "nvidia_smi_bytes": nvidia_smi_bytes(set(held["pids"])),
                           "gpu_name": view.gpu["gpus"][0].get("name"),
                           "panel": str(app.gpu_panel.render())[:400]}
                app.save_screenshot(filename="screenshot-h200.svg", path=str(out_dir))
        finally:
            send_command(cfg, "stop", ["train"])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and load_view(cfg).active():
                time.sleep(0.5)
        time.sleep(2.0)
        figures["left_on_gpu_after_stop"] = nvidia_smi_bytes(set(figures.get("pids", [])))
        return figures


if __name__ == "__main__":
    out = Path(sys.argv[1])
    gib = float(sys.argv[sys.argv.index("--gib") + 1]) if "--gib" in sys.argv else 6.0
    out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(asyncio.run(main(out, gib)), indent=1))
