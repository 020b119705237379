"""The read model in Prometheus's text format, for scrapers and ``eagle3tui metrics``.

``PipelineCollector`` is a ``prometheus_client`` collector that asks the one
question every front end asks (``load_view``) on each scrape and answers it
as metric families: per stage its state, attempt, progress fraction, ETA and
its drift, the GPU memory it holds per GPU, a service's acceptance length;
per GPU its memory and use; the alerts written so far by level. The format
is prometheus_client's, never written by hand.

``MetricsServer`` serves the same on ``/metrics`` from the driver
(``[metrics] listen``): loopback only unless ``allow_remote`` says otherwise,
on its own thread, so a slow scraper never holds the driver's loop.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from eagle3tui.alerts.log import JsonlTail
from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import LEVELS, PipelineConfig
from eagle3tui.listen import listen_address
from eagle3tui.supervisor.state import StageState

PREFIX = "eagle3tui"
ENDPOINT_FILE = "metrics.json"  # in the state directory: where the driver serves, once bound


class _AlertCounts:
    """Alerts written so far, by level, read incrementally from the alerts file."""

    def __init__(self, path: Path) -> None:
        self.tail = JsonlTail(path, from_start=True)
        self.counts: Counter[str] = Counter()

    def read(self) -> Counter[str]:
        ino = self.tail._ino
        new = self.tail.read()
        if self.tail._ino != ino and ino is not None:
            self.counts.clear()  # a new file: count it from its start
        for a in new:
            self.counts[str(a.get("level"))] += 1
        return self.counts


class PipelineCollector:
    """A ``prometheus_client`` collector over ``load_view(config)``."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self._alerts = _AlertCounts(config.state_dir / "alerts.jsonl")
        self._lock = threading.Lock()  # scrapes may come on several threads

    def describe(self) -> list[Metric]:
        return []  # families depend on the pipeline; registering must not scrape

    def collect(self) -> Iterator[Metric]:
        from eagle3tui.view import load_view, remaining_now

        with self._lock:
            view = load_view(self.config)
            alert_counts = dict(self._alerts.read())
        p = PREFIX
        up = GaugeMetricFamily(f"{p}_driver_up", "1 while a driver runs the pipeline")
        up.add_metric([], 1.0 if view.driver_alive else 0.0)
        yield up
        state = GaugeMetricFamily(f"{p}_stage_state", "1 for the state each stage is in", labels=["stage", "state"])
        attempt = GaugeMetricFamily(f"{p}_stage_attempt", "the stage's latest attempt (0: never run)",
                                    labels=["stage"])
        progress = GaugeMetricFamily(f"{p}_stage_progress_ratio", "done fraction of the stage's progress (0..1)",
                                     labels=["stage"])
        eta = GaugeMetricFamily(f"{p}_stage_eta_seconds", "seconds left by the stage's ETA", labels=["stage"])
        drift = GaugeMetricFamily(f"{p}_stage_eta_drift_ratio",
                                  "projected duration over the estimate, minus 1 (0.25: 25% late)", labels=["stage"])
        accept = GaugeMetricFamily(f"{p}_stage_acceptance_length",
                                   "a service's mean speculative-decoding acceptance length", labels=["stage"])
        accept_rate = GaugeMetricFamily(f"{p}_stage_acceptance_ratio",
                                        "a service's accepted draft tokens over drafted ones", labels=["stage"])
        throughput = GaugeMetricFamily(f"{p}_stage_generation_tokens_per_second",
                                       "a service's generation throughput", labels=["stage"])
        for st in view.statuses:
            for s in StageState:
                state.add_metric([st.name, s.value], 1.0 if st.state == s else 0.0)
            attempt.add_metric([st.name], float(st.attempt))
            live = st.live or {}
            prog = live.get("progress") or {}
            frac = _fraction(prog)
            if st.state == StageState.SUCCEEDED:
                frac = 1.0
            if frac is not None:
                progress.add_metric([st.name], frac)
            e = live.get("eta") or {}
            if st.state.active and not e.get("stale"):
                left = remaining_now(e, view.time)
                if left is not None:
                    eta.add_metric([st.name], left)
                if isinstance(e.get("drift"), (int, float)):
                    drift.add_metric([st.name], float(e["drift"]))
            figs = live.get("figures") or {}
            if isinstance(figs.get("acceptance_length"), (int, float)):
                accept.add_metric([st.name], float(figs["acceptance_length"]))
            if isinstance(figs.get("acceptance_rate"), (int, float)):
                accept_rate.add_metric([st.name], float(figs["acceptance_rate"]))
            if isinstance(figs.get("throughput_tok_s"), (int, float)):
                throughput.add_metric([st.name], float(figs["throughput_tok_s"]))
        yield from (state, attempt, progress, eta, drift, accept, accept_rate, throughput)
        yield from _gpu_families(view)
        alerts = CounterMetricFamily(f"{p}_alerts", "alerts written to the alerts file, by level", labels=["level"])
        for level in LEVELS:
            alerts.add_metric([level], float(alert_counts.get(level, 0)))
        yield alerts


def _fraction(prog: dict[str, Any]) -> float | None:
    n, total = prog.get("n"), prog.get("total")
    if isinstance(n, (int, float)) and isinstance(total, (int, float)) and total > 0:
        return max(0.0, min(1.0, float(n) / float(total)))
    return None


def _gpu_families(view: Any) -> Iterator[Metric]:
    p = PREFIX
    used = GaugeMetricFamily(f"{p}_gpu_memory_used_bytes", "memory in use on the GPU", labels=["gpu"])
    total = GaugeMetricFamily(f"{p}_gpu_memory_total_bytes", "the GPU's memory", labels=["gpu"])
    util = GaugeMetricFamily(f"{p}_gpu_utilization_ratio", "the GPU's utilization (0..1)", labels=["gpu"])
    held = GaugeMetricFamily(f"{p}_stage_gpu_memory_bytes", "GPU memory held by the stage's processes",
                             labels=["stage", "gpu"])
    other = GaugeMetricFamily(f"{p}_gpu_other_memory_bytes", "GPU memory of processes of no stage",
                              labels=["gpu"])
    xid = GaugeMetricFamily(f"{p}_gpu_last_xid", "code of the GPU's last NVIDIA Xid event, with NVIDIA's action",
                            labels=["gpu", "action", "stage"])
    for row in view.gpu_rows():
        label = row.label
        if row.mem_used is not None:
            used.add_metric([label], float(row.mem_used))
        if row.mem_total:
            total.add_metric([label], float(row.mem_total))
        if row.util_pct is not None:
            util.add_metric([label], float(row.util_pct) / 100.0)
        for stage, b in row.holders:
            held.add_metric([stage, label], float(b))
        other.add_metric([label], float(row.other_bytes))
        if row.xid and isinstance(row.xid.get("code"), int):
            xid.add_metric([label, str(row.xid.get("action") or ""), str(row.xid.get("stage") or "")],
                           float(row.xid["code"]))
    yield from (used, total, util, held, other, xid)


def registry_for(config: PipelineConfig) -> CollectorRegistry:
    """A registry holding only the pipeline's collector (no process metrics of the caller)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(PipelineCollector(config))  # type: ignore[arg-type]
    return reg


def render(config: PipelineConfig) -> bytes:
    """The text exposition of the read model now (``eagle3tui metrics``)."""
    return generate_latest(registry_for(config))


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a scrape every 15 s is no news for driver.log


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class MetricsServer:
    """``/metrics`` over HTTP on its own thread; ``close()`` stops it."""

    def __init__(self, config: PipelineConfig, listen: str, allow_remote: bool = False) -> None:
        host, port = listen_address(listen, allow_remote)
        registry = registry_for(config)

        def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
            if environ.get("PATH_INFO") != "/metrics" or environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"eagle3tui serves /metrics only\n"]
            try:
                body = generate_latest(registry)
            except Exception as e:  # noqa: BLE001 - a scrape must not kill the thread
                start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
                return [f"eagle3tui: {type(e).__name__}: {e}\n".encode()]
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
            return [body]

        cls = _Server6 if ":" in host else _Server
        self.httpd = make_server(host, port, app, server_class=cls, handler_class=_QuietHandler)
        bound = self.httpd.server_address
        self.host, self.port = str(bound[0]), int(bound[1])
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}/metrics"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="eagle3tui-metrics", daemon=True)
        self._thread.start()
        self.endpoint_file = config.state_dir / ENDPOINT_FILE
        atomic_write_json(self.endpoint_file, {"url": self.url, "pid": os.getpid()})

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)
        try:
            doc = json.loads(self.endpoint_file.read_text())
            if doc.get("pid") == os.getpid():
                self.endpoint_file.unlink()
        except (OSError, ValueError):
            pass



def serve_until_parent_exits(config: PipelineConfig, parent: int | None, stop: threading.Event) -> str | None:
    """``eagle3tui metrics --serve``: serve /metrics until ``stop`` is set or the driver ``parent`` is gone.

    Returns None after a clean stop, else why the endpoint could not be served.
    """
    m = config.metrics
    if not m.listen:
        return "[metrics] listen is not set in the pipeline's configuration"
    try:
        server = MetricsServer(config, m.listen, m.allow_remote)
    except (OSError, ValueError) as e:
        return f"[metrics] listen = {m.listen!r}: cannot serve /metrics ({e})"
    try:
        while not stop.wait(0.5):
            if parent is not None and os.getppid() != parent:
                break  # the driver died without stopping us: so do we
    finally:
        server.close()
    return None
