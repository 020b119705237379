"""``[alerts] notify``: pages through Apprise to a real HTTP receiver on loopback.

Real ``eagle3tui --watch`` processes and stages; the receiver is an HTTP server
in this test process that Apprise's ``json://`` service posts to, counting what
arrives. One death pages once, leading with its cause; a receiver that fails
is retried; one that hangs delays nothing else, and the alerts file keeps every
record whatever the delivery does. The secret in the URL comes from the
environment and is written nowhere.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import Pipeline, wait_for
from test_watch_e2e import Watch

from eagle3tui.alerts.apprise_notify import AppriseNotifier, read_notify_file
from eagle3tui.config import load_config
from eagle3tui.errors import ConfigError

PY = json.dumps(sys.executable)
SECRET = "s3cret-token-0192"
OOM = textwrap.dedent("""
    print("Loading safetensors checkpoint shards: 4/64", flush=True)
    class OutOfMemoryError(RuntimeError):
        pass
    OutOfMemoryError.__module__ = "torch"
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                           "capacity of 139.81 GiB of which 1.12 GiB is free.")
""")


class Receiver:
    """A webhook on 127.0.0.1: records each POST; fails the first ``fail_first`` with 500,
    or holds every request ``hang_s`` before answering."""

    def __init__(self, fail_first: int = 0, hang_s: float = 0.0) -> None:
        self.requests: list[dict] = []
        self.delivered: list[dict] = []
        self.fail_first = fail_first
        self.hang_s = hang_s
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                doc = {"path": self.path, "headers": dict(self.headers), "json": json.loads(body or b"{}")}
                outer.requests.append(doc)
                if outer.hang_s:
                    time.sleep(outer.hang_s)
                if len(outer.requests) <= outer.fail_first:
                    self.send_response(500)
                    self.end_headers()
                    return
                outer.delivered.append(doc)
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def receiver(**kw: float) -> Iterator[Receiver]:
    r = Receiver(**kw)
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_TOKEN", SECRET)  # the --watch child inherits it


def _write(p: Pipeline, url: str, stages: str, extra: str = "") -> None:
    (p.root / "oom.py").write_text(OOM)
    p.write(f"""
        [alerts]
        notify = [{json.dumps(url)}]
        min_level = "critical"
        {extra}
        """ + textwrap.dedent(stages))


def test_one_death_one_page_cause_first(pipeline: Pipeline, secret_env: None) -> None:
    with receiver() as r:
        _write(pipeline, f"json://127.0.0.1:{r.port}/hook?+X-Token=${{HOOK_TOKEN}}", f"""
            [[stage]]
            name = "extract"
            command = [{PY}, "oom.py"]
            """)
        w = Watch(pipeline, "--run-all")
        assert w.wait() == 1, w.text()
        # The record: the fatal line and the failure; the page: the failure only.
        kinds = [a["kind"] for a in pipeline.alerts() if a["level"] == "critical"]
        assert kinds == ["fatal-log-event", "stage-failed"], pipeline.alerts()
        assert len(r.delivered) == 1, r.requests
        page = r.delivered[0]
        assert page["path"] == "/hook"
        assert page["headers"]["X-Token"] == SECRET  # from the environment
        assert page["json"]["message"].startswith("failed: torch.OutOfMemoryError: CUDA out of memory"), page
        assert "extract#1 critical" in page["json"]["title"]
        assert page["json"]["type"] == "failure"
    # The secret is in no file the supervisor wrote or read.
    for f in [pipeline.config, *pipeline.state_dir.rglob("*")]:
        if f.is_file():
            assert SECRET not in f.read_text(errors="replace"), f


def test_a_failing_receiver_is_retried_and_gets_it_once(pipeline: Pipeline, secret_env: None) -> None:
    with receiver(fail_first=2) as r:
        _write(pipeline, f"json://127.0.0.1:{r.port}/hook", f"""
            [[stage]]
            name = "extract"
            command = [{PY}, "oom.py"]
            """)
        w = Watch(pipeline, "--run-all")
        assert w.wait() == 1, w.text()
        assert len(r.requests) == 3 and len(r.delivered) == 1, r.requests
        assert r.delivered[0]["json"]["message"].startswith("failed: torch.OutOfMemoryError")
        assert not [a for a in pipeline.alerts() if a["kind"].startswith("notifier-")], pipeline.alerts()


def test_a_hung_receiver_delays_nothing_and_loses_no_record(pipeline: Pipeline) -> None:
    # Every delivery hangs past Apprise's read timeout (rto): three tries take seconds.
    with receiver(hang_s=2.5) as r:
        gate = pipeline.root / "gate"
        _write(pipeline, f"json://127.0.0.1:{r.port}/hook?rto=1&cto=1", f"""
            [[stage]]
            name = "extract"
            command = [{PY}, "oom.py"]
            [[stage]]
            name = "other"
            command = ["sh", "-c", "while [ ! -e '{gate}' ]; do sleep 0.05; done; echo done"]
            """)
        w = Watch(pipeline, "--run-all")
        wait_for(lambda: any(a["kind"] == "stage-failed" for a in pipeline.alerts()), timeout=30,
                 what="the failure in the alerts file")
        wait_for(lambda: r.requests, timeout=30, what="the first delivery try")
        gate.touch()
        # The other stage ends and is recorded while the page is still being tried.
        wait_for(lambda: any(a["kind"] == "stage-succeeded" and a["stage"] == "other"
                             for a in pipeline.alerts()), timeout=10, what="the other stage's end")
        assert not [a for a in pipeline.alerts() if a["kind"] == "notifier-failed"], pipeline.alerts()
        assert w.wait(timeout=60) == 1, w.text()
        failed = [a for a in pipeline.alerts() if a["kind"] == "notifier-failed"]
        assert len(failed) == 1 and "3 tries" in failed[0]["message"], pipeline.alerts()
        assert f"127.0.0.1:{r.port}" in failed[0]["message"]
        assert len(r.requests) == 3
        assert [a["kind"] for a in pipeline.alerts() if a["stage"] == "extract" and a["level"] == "critical"] \
            == ["fatal-log-event", "stage-failed"]


def test_receiver_down_is_retried_then_reported(pipeline: Pipeline) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens: every try is refused
    _write(pipeline, f"json://127.0.0.1:{port}/hook", f"""
        [[stage]]
        name = "extract"
        command = [{PY}, "oom.py"]
        """)
    t0 = time.monotonic()
    w = Watch(pipeline, "--run-all")
    assert w.wait() == 1, w.text()
    failed = [a for a in pipeline.alerts() if a["kind"] == "notifier-failed"]
    assert len(failed) == 1 and "3 tries" in failed[0]["message"], pipeline.alerts()
    assert any(a["kind"] == "stage-failed" for a in pipeline.alerts())
    assert time.monotonic() - t0 < 30


def test_unset_secret_is_said_once_and_the_run_goes_on(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOOK_TOKEN", raising=False)
    _write(pipeline, "json://127.0.0.1:9/hook?+X-Token=${HOOK_TOKEN}", """
        [[stage]]
        name = "ok"
        command = ["true"]
        """)
    w = Watch(pipeline, "--run-all")
    assert w.wait() == 0, w.text()
    off = [a for a in pipeline.alerts() if a["kind"] == "notifier-off"]
    assert len(off) == 1 and "${HOOK_TOKEN} is not set" in off[0]["message"], pipeline.alerts()


def test_notify_file_must_be_private(tmp_path: Path) -> None:
    f = tmp_path / "notify"
    f.write_text("# pages\njson://127.0.0.1:9/hook\n")
    os.chmod(f, 0o644)
    with pytest.raises(ConfigError) as e:
        read_notify_file(f)
    assert "chmod 600" in str(e.value)
    os.chmod(f, 0o600)
    assert read_notify_file(f) == ["json://127.0.0.1:9/hook"]
    (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
        [alerts]
        notify_file = "{f}"
        [[stage]]
        name = "a"
        command = ["true"]
        """))
    cfg = load_config(tmp_path / "pipeline.toml")
    n = AppriseNotifier.from_alerts(cfg.alerts, cfg.name)
    try:
        assert len(n.services) == 1
    finally:
        n.close(0.5)


def test_notify_must_be_urls(pipeline: Pipeline) -> None:
    pipeline.write("""
        [alerts]
        notify = "ntfy://topic"
        [[stage]]
        name = "a"
        command = ["true"]
        """)
    proc = pipeline.cli("check")
    assert proc.returncode == 2
    assert "alerts.notify" in proc.stderr + proc.stdout


def test_rate_limit_and_levels_are_the_commands(tmp_path: Path) -> None:
    from eagle3tui.alerts.model import Alert

    reports: list[Alert] = []
    with receiver() as r:
        n = AppriseNotifier([f"json://127.0.0.1:{r.port}/hook"], min_level="warning", rate_limit_per_min=2,
                            report=reports.append)
        try:
            n.submit(Alert(level="info", kind="stage-started", message="started", stage="a", attempt=1))
            for i in range(5):
                n.submit(Alert(level="warning", kind="stall", message=f"no output for {i}m", stage="a", attempt=1))
            wait_for(lambda: len(r.delivered) == 2, timeout=20, what="the two pages the rate limit lets through")
        finally:
            assert n.close(10)
        assert [d["json"]["message"].splitlines()[0] for d in r.delivered] == ["no output for 0m", "no output for 1m"]
        dropped = [a for a in reports if a.kind == "notifier-dropped"]
        assert len(dropped) == 1 and "alerts.notify" in dropped[0].message and "alerts file" in dropped[0].message
