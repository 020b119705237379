"""``eagle3tui metrics``: the read model once, in Prometheus's text format.

The same families as the driver's ``/metrics`` (``[metrics] listen``), from
the same collector (eagle3tui/metrics.py), for a node exporter's textfile
directory or a look by hand.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", metavar="PATH",
                   help="write the text to PATH (atomically, for a textfile collector) instead of stdout")
    p.add_argument("--serve", action="store_true",
                   help="serve /metrics on [metrics] listen until stopped (the driver runs this itself)")
    p.add_argument("--parent", type=int, default=None, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from eagle3tui.config import load_config, parse_overrides
    from eagle3tui.metrics import render

    config = load_config(args.config, parse_overrides(args.set))
    if args.serve:
        return _serve(config, args.parent)
    body = render(config)
    if args.output:
        from eagle3tui.atomic import atomic_write_bytes

        atomic_write_bytes(args.output, body)
    else:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
    return 0


def _serve(config: object, parent: int | None) -> int:
    import signal
    import threading

    from eagle3tui.metrics import serve_until_parent_exits

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    why = serve_until_parent_exits(config, parent, stop)  # type: ignore[arg-type]
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 1
    return 0
