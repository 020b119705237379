"""``eagle3tui gpus [--json] [--watch SECONDS]``: GPUs and who holds them.

One sample (or a refreshing view) with per-GPU figures and each GPU
process attributed to a stage (or ``other``). The JSON schema is in
docs/gpu.md. Also runnable alone: ``python -m eagle3tui.frontends.gpus_cmd``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from eagle3tui.telemetry.attribution import Attribution
    from eagle3tui.telemetry.sampler import GpuSampler, GpuSnapshot

# The telemetry modules (psutil among them) are imported where they are used:
# the CLI builds every subcommand's parser from this module on each start,
# ``classify`` included, which needs none of them.

SCHEMA_VERSION = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``gpus`` options to ``parser``."""
    parser.add_argument(
        "--json", action="store_true", help="print JSON (one object per sample)"
    )
    parser.add_argument(
        "--watch",
        type=float,
        metavar="SECONDS",
        default=None,
        help="refresh every SECONDS until Ctrl-C",
    )
    parser.add_argument(
        "--stage",
        action="append",
        default=[],
        metavar="NAME=PID",
        help="attribute processes under PID to stage NAME (repeatable)",
    )
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        metavar="N",
        help="with --watch, stop after N samples",
    )


def parse_stage_args(values: list[str]) -> dict[str, int]:
    """``["serve=123", "extract=456"]`` -> ``{"serve": 123, "extract": 456}``."""
    roots: dict[str, int] = {}
    for value in values:
        name, sep, pid = value.partition("=")
        if not sep or not name or not pid.strip().isdigit():
            raise ValueError(
                f"--stage {value!r}: expected NAME=PID, e.g. --stage extract=4242"
            )
        roots[name] = int(pid)
    return roots


def snapshot_json(snapshot: GpuSnapshot, attribution: Attribution) -> dict[str, Any]:
    """The JSON object for one sample (schema in docs/gpu.md)."""
    data = snapshot.to_dict()
    data["schema"] = SCHEMA_VERSION
    for proc in data["processes"]:
        proc["stage"] = attribution.stage_of(proc["pid"])
    data["stages"] = {
        name: {
            "root_pid": u.root_pid,
            "gpus": u.gpus,
            "bytes": u.bytes,
            "pids": u.pids,
            "bytes_by_gpu": {str(k): v for k, v in sorted(u.bytes_by_gpu.items())},
        }
        for name, u in attribution.stages.items()
    }
    data["other_bytes"] = attribution.other_bytes
    return data


def _safe(text: str) -> str:
    """Command lines are untrusted: drop control characters (terminal escapes)."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def render_table(snapshot: GpuSnapshot, attribution: Attribution) -> str:
    """Plain-text view of one sample."""
    from eagle3tui.telemetry.attribution import OTHER
    from eagle3tui.telemetry.signals import format_bytes

    if not snapshot.available and snapshot.no_driver:
        return f"GPUs: none on this host ({snapshot.error}); nothing to show\n"
    if not snapshot.available:
        return f"GPUs: {snapshot.error}\n"
    lines = [
        f"{'GPU':<4}{'NAME':<22}{'MEMORY USED / TOTAL':<28}{'UTIL':>6}{'TEMP':>7}{'POWER':>9}"
    ]
    for g in snapshot.gpus:
        if g.error:
            lines.append(
                f"{g.index:<4}{_safe(g.name or '?')[:21]:<22}ERROR: {_safe(g.error)}"
            )
            continue
        pct = f" {100 * g.mem_fraction:.0f}%" if g.mem_fraction is not None else ""
        mem = f"{format_bytes(g.mem_used)} / {format_bytes(g.mem_total)}{pct}"
        util = f"{g.util_pct:.0f}%" if g.util_pct is not None else "-"
        temp = f"{g.temp_c:.0f}C" if g.temp_c is not None else "-"
        power = f"{g.power_w:.0f} W" if g.power_w is not None else "-"
        lines.append(
            f"{g.index:<4}{_safe(g.name or '?')[:21]:<22}{mem:<28}{util:>6}{temp:>7}{power:>9}"
        )
        if g.processes_error:
            lines.append(f"    processes: {_safe(g.processes_error)}")
    lines.append("")
    if not snapshot.processes:
        lines.append("No GPU compute processes.")
    else:
        lines.append(f"{'GPU':<4}{'PID':>8}  {'MEMORY':>10}  {'STAGE':<14}COMMAND")
        for p in sorted(snapshot.processes, key=lambda p: (p.gpu_index, p.pid)):
            stage = attribution.stage_of(p.pid)
            if p.cmdline:
                cmd = " ".join(p.cmdline)
            elif not p.visible:
                cmd = "(pid not visible here: another PID namespace?)"
            else:
                cmd = p.name or "?"
            lines.append(
                f"{p.gpu_index:<4}{p.pid:>8}  {format_bytes(p.used_bytes):>10}  "
                f"{_safe(stage)[:13]:<14}{_safe(cmd)[:120]}"
            )
    staged = [u for u in attribution.stages.values()]
    if staged:
        lines.append("")
        for u in staged:
            where = ",".join(map(str, u.gpus)) or "-"
            lines.append(
                f"stage {_safe(u.stage)}: {format_bytes(u.bytes)} on GPU {where}"
            )
        if attribution.other:
            lines.append(f"{OTHER}: {format_bytes(attribution.other_bytes)}")
    return "\n".join(lines) + "\n"


def run(
    args: argparse.Namespace,
    stage_roots: dict[str, int] | None = None,
    *,
    sampler: GpuSampler | None = None,
    out: TextIO | None = None,
) -> int:
    """Run ``eagle3tui gpus``. Returns 0 (also on a host with no NVIDIA driver at all),
    1 when NVML is there but unusable, 2 on
    bad arguments. ``stage_roots`` (stage name -> root pid) comes from the
    supervisor's state; ``--stage NAME=PID`` adds to it."""
    from eagle3tui.telemetry.attribution import attribute
    from eagle3tui.telemetry.sampler import GpuSampler

    out = out or sys.stdout
    try:
        roots = dict(stage_roots or {})
        roots.update(parse_stage_args(getattr(args, "stage", []) or []))
    except ValueError as exc:
        print(f"eagle3tui gpus: {exc}", file=sys.stderr)
        return 2
    watch = getattr(args, "watch", None)
    if watch is not None and watch <= 0:
        print(
            f"eagle3tui gpus: --watch {watch}: expected a number of seconds > 0",
            file=sys.stderr,
        )
        return 2
    owned = sampler is None
    sampler = sampler or GpuSampler()
    count = getattr(args, "count", None)
    as_json = bool(getattr(args, "json", False))
    clear = not as_json and watch is not None and out.isatty()
    taken = 0
    rc = 0
    try:
        while True:
            started = time.monotonic()
            snap = sampler.sample()
            attribution = attribute(snap, roots)
            # A host without an NVIDIA driver has no GPUs to show: that is an answer, not a fault.
            rc = 0 if snap.available or snap.no_driver else 1
            if as_json:
                out.write(json.dumps(snapshot_json(snap, attribution)) + "\n")
            else:
                if clear:
                    out.write("\x1b[H\x1b[2J")
                out.write(render_table(snap, attribution))
                if watch is not None and not clear:
                    out.write("\n")
            out.flush()
            taken += 1
            if watch is None or (count is not None and taken >= count):
                return rc
            time.sleep(max(0.0, watch - (time.monotonic() - started)))
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return rc  # `eagle3tui gpus --watch 1 | head` is fine
    finally:
        if owned:
            sampler.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``python -m eagle3tui.frontends.gpus_cmd``."""
    parser = argparse.ArgumentParser(
        prog="eagle3tui gpus", description=__doc__.splitlines()[0]
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
