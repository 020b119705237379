"""The driver's ``/metrics`` endpoint (``[metrics] listen``), served by a process of its own.

The endpoint answers from the read model (eagle3tui/metrics.py over
eagle3tui/view.py), which reads what the driver writes; the driver, part of
the core, imports no front end. So it runs ``eagle3tui metrics --serve`` as
its child, the way it runs a stage: an argv list, its own session, stopped
with the driver (and gone by itself if the driver is killed, since it
watches its parent). The driver checks the address first, so a port that is
taken is one clear warning, not a silent child's death.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

from eagle3tui.config import PipelineConfig
from eagle3tui.listen import listen_address


class MetricsHost:
    """Starts and stops the endpoint's process; ``start`` returns why it could not, or None."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str | None:
        m = self.config.metrics
        if not m.listen:
            return None
        try:
            host, port = listen_address(m.listen, m.allow_remote)
            if port:  # taken? (port 0 picks a free one in the child)
                with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((host, port))
        except (OSError, ValueError) as e:
            return (f"[metrics] listen = {m.listen!r}: cannot serve /metrics ({e}); the pipeline runs on "
                    "without it: pick a free port, or stop what listens there")
        argv = [sys.executable, "-m", "eagle3tui", "--config", str(self.config.path)]
        for k, v in self.config.overrides.items():
            argv += ["--set", f"{k}={v}"]
        argv += ["metrics", "--serve", "--parent", str(os.getpid())]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True)
        except OSError as e:
            return f"[metrics] listen: could not start the endpoint's process ({e.strerror or e})"
        return None

    def close(self) -> None:
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
        except OSError:
            pass
