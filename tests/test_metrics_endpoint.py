"""Metrics others can scrape: the driver's /metrics and `eagle3tui metrics`, parsed by prometheus_client.

A real run: the driver (in-process, on the NVML stand-in since CI has no GPU)
launches a training stage that draws a progress bar and holds GPU memory, and
a service that reports its speculative decoding (a real vLLM V1 line,
vllm-project/vllm#24127). The test scrapes the endpoint the driver binds
over HTTP and parses it with ``prometheus_client.parser``; the CLI command,
a separate process, prints the same families from the same state.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import wait_for
from prometheus_client.parser import text_string_to_metric_families

from eagle3tui.config import load_config
from eagle3tui.errors import ConfigError
from eagle3tui.metrics import listen_address
from eagle3tui.supervisor.driver import Driver
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml

GIB = 1 << 30
V1_LINE = ("(APIServer pid=2236552) INFO 09-09 11:51:35 [metrics.py:96] SpecDecoding metrics: Draft acceptance "
           "rate: 88.8%, Mean acceptance length: 5.44, Accepted throughput: 4.37 tokens/s, Drafted throughput: "
           "4.92 tokens/s, Accepted: 262 tokens, Drafted: 295 tokens, Per-position acceptance rate: 0.983, 0.949, "
           "0.915, 0.881, 0.712")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by (name, sorted labels), parsed by the client's own parser."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
        return r.read().decode()


@contextmanager
def running(pipeline, gpu: FakeGpu):
    drv = Driver(load_config(pipeline.config), nvml=FakeNvml([gpu]), exit_when_idle=False)
    stop = threading.Event()
    t = threading.Thread(target=drv.run, args=(stop,), daemon=True)
    drv.execute({"op": "start", "all": True})
    t.start()
    try:
        yield drv
    finally:
        for name in ("train", "serve"):
            drv.stop_stage(name)
        stop.set()
        t.join(15)


def test_scrape_during_a_run_matches_the_cli(pipeline, tmp_path: Path) -> None:
    (tmp_path / "serve.py").write_text(f"import time\nprint({V1_LINE!r}, flush=True)\n"
                                       "while True:\n    time.sleep(0.2)\n")
    (tmp_path / "train.py").write_text(
        "import time\n"
        "for i in range(1, 1000):\n"
        "    print(f'Training:  {i // 10}%|#  | {i}/1000 [00:{i // 10:02d}<10:00,  1.00it/s]', flush=True)\n"
        "    time.sleep(0.1)\n")
    pipeline.write(f"""
        [pipeline]
        gpu_interval = "0.1s"
        [metrics]
        listen = "127.0.0.1:0"
        [[stage]]
        name = "serve"
        kind = "service"
        command = ["{sys.executable}", "serve.py"]
        stop_grace = "3s"
        [[stage]]
        name = "train"
        gpus = [0]
        estimate = "20s"
        command = ["{sys.executable}", "train.py"]
        stop_grace = "3s"
        [[stage]]
        name = "after"
        depends_on = ["train"]
        command = ["true"]
        """)
    gpu = FakeGpu(util=80)
    with running(pipeline, gpu):
        endpoint = pipeline.state_dir / "metrics.json"
        url = wait_for(lambda: endpoint.exists() and json.loads(endpoint.read_text())["url"], what="metrics.json")
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        pid = wait_for(lambda: pipeline.stage("train")["pid"], what="train's pid")
        gpu.processes[pid] = 12 * GIB
        gpu.used = 13 * GIB

        def ready() -> dict | None:
            got = samples(scrape(url))
            want = [("eagle3tui_stage_gpu_memory_bytes", (("gpu", "0"), ("stage", "train"))),
                    ("eagle3tui_stage_acceptance_length", (("stage", "serve"),)),
                    ("eagle3tui_stage_progress_ratio", (("stage", "train"),)),
                    ("eagle3tui_stage_eta_seconds", (("stage", "train"),))]
            return got if all(k in got for k in want) else None

        got = wait_for(ready, timeout=30, what="a scrape with every figure")
        assert got[("eagle3tui_driver_up", ())] == 1.0
        for stage in ("serve", "train", "after"):
            assert ("eagle3tui_stage_attempt", (("stage", stage),)) in got
        assert got[("eagle3tui_stage_state", (("stage", "train"), ("state", "running")))] == 1.0
        for stage in ("serve", "train", "after"):  # one state each
            assert sum(v for (n, lab), v in got.items() if n == "eagle3tui_stage_state"
                       and ("stage", stage) in lab) == 1.0
        assert got[("eagle3tui_stage_state", (("stage", "after"), ("state", "waiting")))] == 1.0
        assert got[("eagle3tui_stage_attempt", (("stage", "train"),))] == 1.0
        assert got[("eagle3tui_stage_acceptance_length", (("stage", "serve"),))] == 5.44
        assert got[("eagle3tui_stage_acceptance_ratio", (("stage", "serve"),))] == pytest.approx(0.888)
        assert 0.0 < got[("eagle3tui_stage_progress_ratio", (("stage", "train"),))] < 1.0
        assert got[("eagle3tui_stage_gpu_memory_bytes", (("gpu", "0"), ("stage", "train")))] == 12 * GIB
        assert got[("eagle3tui_gpu_memory_total_bytes", (("gpu", "0"),))] == gpu.total
        assert got[("eagle3tui_gpu_utilization_ratio", (("gpu", "0"),))] == pytest.approx(0.8)
        for level in ("info", "warning", "critical"):
            assert ("eagle3tui_alerts_total", (("level", level),)) in got
        infos = sum(1 for a in pipeline.alerts() if a["level"] == "info")
        assert got[("eagle3tui_alerts_total", (("level", "info"),))] <= infos

        # The command prints the same families from the same state.
        cli = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(pipeline.config), "metrics"],
                             capture_output=True, text=True, timeout=60, check=True)
        from_cli = samples(cli.stdout)
        assert {k[0] for k in from_cli} == {k[0] for k in got}
        assert from_cli[("eagle3tui_stage_acceptance_length", (("stage", "serve"),))] == 5.44
        assert from_cli[("eagle3tui_stage_gpu_memory_bytes", (("gpu", "0"), ("stage", "train")))] == 12 * GIB

        # Only /metrics is served.
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url.replace("/metrics", "/"), timeout=10)
        assert e.value.code == 404
    assert not endpoint.exists()  # the driver took its endpoint back


def test_listen_is_loopback_unless_allowed(pipeline) -> None:
    assert listen_address("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert listen_address("[::1]:9464") == ("::1", 9464)
    assert listen_address("localhost:9464") == ("127.0.0.1", 9464)
    assert listen_address("0.0.0.0:9464", allow_remote=True) == ("0.0.0.0", 9464)
    pipeline.write("""
        [metrics]
        listen = "0.0.0.0:9464"
        [[stage]]
        name = "a"
        command = ["true"]
        """)
    with pytest.raises(ConfigError) as e:
        load_config(pipeline.config)
    err = str(e.value)
    assert "metrics.listen" in err and "not loopback" in err and "allow_remote" in err, err
    pipeline.write("""
        [metrics]
        listen = "0.0.0.0:9464"
        allow_remote = true
        [[stage]]
        name = "a"
        command = ["true"]
        """)
    assert load_config(pipeline.config).metrics.listen == "0.0.0.0:9464"
    for bad in ("9464", "127.0.0.1:port", "example.com:9464"):
        with pytest.raises(ValueError):
            listen_address(bad)


def test_port_taken_warns_and_the_run_goes_on(pipeline, tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        pipeline.write(f"""
            [metrics]
            listen = "127.0.0.1:{port}"
            [[stage]]
            name = "a"
            command = ["sh", "-c", "echo hi"]
            """)
        pipeline.cli("start", "--all", "--wait", "--timeout", "60", check=True)
        off = [a for a in pipeline.alerts() if a["kind"] == "metrics-off"]
        assert len(off) == 1 and f"127.0.0.1:{port}" in off[0]["message"], pipeline.alerts()
        assert pipeline.stage("a")["state"] == "succeeded"
    finally:
        taken.close()


def test_endpoint_of_a_detached_driver_goes_with_it(pipeline, tmp_path: Path) -> None:
    import os
    import signal

    import psutil

    pipeline.write(f"""
        [metrics]
        listen = "127.0.0.1:0"
        [[stage]]
        name = "long"
        command = ["{sys.executable}", "-c", "import time; time.sleep(60)"]
        stop_grace = "2s"
        """)
    pipeline.cli("start", "--all", check=True)  # the detached driver, as a user starts it
    endpoint = pipeline.state_dir / "metrics.json"
    doc = wait_for(lambda: endpoint.exists() and json.loads(endpoint.read_text()), timeout=30, what="metrics.json")
    got = wait_for(lambda: (s := samples(scrape(doc["url"])))
                   .get(("eagle3tui_stage_state", (("stage", "long"), ("state", "running")))) == 1.0 and s,
                   timeout=30, what="the running stage in a scrape")
    assert got[("eagle3tui_driver_up", ())] == 1.0
    child = psutil.Process(doc["pid"])
    driver = pipeline.driver_pid()
    assert driver and child.ppid() == driver
    os.kill(driver, signal.SIGKILL)  # a driver that dies without stopping it
    wait_for(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, timeout=10,
             what="the endpoint's process to exit after its driver")
