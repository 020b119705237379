"""Command line: ``eagle3tui [--config PATH] [SUBCOMMAND]``.

With no subcommand it opens the TUI; ``--watch`` runs headless. Exit codes:
0 ok, 1 a stage or command failed, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3tui.durations import format_duration
from eagle3tui.errors import ConfigError
from eagle3tui.textsafe import printable
from eagle3tui.trusted import UntrustedFile

if TYPE_CHECKING:
    from eagle3tui.config import PipelineConfig

# The pipeline's modules (config, supervisor, view, telemetry) are imported by the
# commands that use them: ``classify`` reads a log and needs none of them, and its
# start-up counts on every log it reads.

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _load(args: argparse.Namespace, *, running_driver_ok: bool = False) -> PipelineConfig:
    """The configuration; with ``running_driver_ok``, a broken file on disk gives way to
    the running driver's own configuration (said on stderr), so ``status`` and ``stop``
    keep working while someone fixes the file."""
    from eagle3tui.config import load_config, parse_overrides

    try:
        return load_config(args.config, parse_overrides(args.set))
    except ConfigError as e:
        if not running_driver_ok:
            raise
        from eagle3tui.supervisor.last_config import driver_config

        kept = driver_config(args.config, e)
        if kept is None:
            raise
        print(f"warning: {kept[1]}", file=sys.stderr)
        return kept[0]


def cmd_check(args: argparse.Namespace) -> int:
    from eagle3tui.supervisor.records import RunStore

    from eagle3tui.config import missing_executables, uncreatable_dirs

    config = _load(args)
    errors = [str(e) for e in missing_executables(config) + uncreatable_dirs(config)]
    store = RunStore(config.state_dir)
    for s in config.stages:
        store.records(s.name)
    errors += store.problems
    from eagle3tui.preflight import alert_command_problems

    errors += [str(e) for e in alert_command_problems(config)]
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        return EXIT_USAGE
    n_rules = len(config.rules)
    print(f"{config.path}: ok — pipeline {config.name!r}, {len(config.stages)} stages"
          + (f", {n_rules} user rules" if n_rules else "") + f", state in {config.state_dir}")
    for s in config.stages:
        deps = f" after {', '.join(s.depends_on)}" if s.depends_on else ""
        est = f", estimate {format_duration(s.estimate_s)}" if s.estimate_s else ""
        gpus = f", gpus {s.gpus.describe()}" if not s.gpus.empty else ""
        if s.slurm is not None:  # the sbatch options it will be submitted with
            gpus += ", slurm " + " ".join(s.slurm.sbatch_options())
        print(f"  {s.name:14} {s.kind}{deps}{est}{gpus}")
    from eagle3tui.supervisor.executors import storage_warnings

    sys.stdout.flush()
    for w in storage_warnings(config):
        print(f"warning: {w}", file=sys.stderr)
    return EXIT_OK


def _unknown_stage(config: PipelineConfig, name: str) -> int:
    """Say that ``name`` is no stage of ``config``, with the closest one; the usage exit code."""
    import difflib

    close = difflib.get_close_matches(name, config.names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    print(f"error: no stage named {name!r} in {config.path}{hint} (stages: {', '.join(config.names)})",
          file=sys.stderr)
    return EXIT_USAGE


def _reply(reply: dict[str, Any]) -> int:
    msg = reply.get("message", "")
    if msg:
        print(msg, file=sys.stdout if reply.get("ok") else sys.stderr)
    return EXIT_OK if reply.get("ok") else EXIT_FAILED


def cmd_start(args: argparse.Namespace) -> int:
    config = _load(args)
    if not args.stages and not args.all:
        print("error: name the stages to start, or pass --all", file=sys.stderr)
        return EXIT_USAGE
    for n in args.stages:
        if n not in config.names:
            return _unknown_stage(config, n)
    from eagle3tui.config import missing_executables
    from eagle3tui.supervisor.scheduler import dependency_closure

    # Only what will run: the named stages and their dependencies, or all.
    errors = missing_executables(config, None if args.all else dependency_closure(config, args.stages))
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        return EXIT_USAGE
    rc = _reply(_send(config, "start", args.stages, all=args.all))
    if rc == EXIT_OK and args.wait:
        return _wait(config, args.stages or config.names, args.timeout)
    return rc


def _send(config: PipelineConfig, op: str, stages: list[str], **extra: Any) -> dict[str, Any]:
    """``send_command``; a state directory that cannot be made is the configuration's error."""
    from eagle3tui.supervisor.protocol import send_command

    try:
        return send_command(config, op, stages, **extra)
    except OSError as e:
        if not (e.filename and Path(str(e.filename)).is_relative_to(config.state_dir)):
            raise
        from eagle3tui.preflight import state_dir_error

        raise state_dir_error(config, e) from None


def _wait(config: PipelineConfig, names: list[str], timeout: float | None) -> int:
    """Block until ``names`` are all finished; 0 if all succeeded or were skipped."""
    from eagle3tui.supervisor.protocol import ensure_driver
    from eagle3tui.view import load_view

    deadline = time.monotonic() + timeout if timeout else None
    spawns = 0
    while True:
        settled = load_view(config).settled(names)
        if settled is not None:
            return EXIT_OK if settled else EXIT_FAILED
        if deadline and time.monotonic() > deadline:
            print("error: timed out waiting", file=sys.stderr)
            return EXIT_FAILED
        if ensure_driver(config):
            spawns += 1
            if spawns > 20:
                print(f"error: the driver keeps exiting; see {config.state_dir / 'driver.log'}",
                      file=sys.stderr)
                return EXIT_FAILED
        time.sleep(0.2)


def _simple(op: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        config = _load(args, running_driver_ok=op == "stop")
        if args.stage not in config.names:
            return _unknown_stage(config, args.stage)
        if op in ("restart", "resume"):
            from eagle3tui.config import missing_executables

            errors = missing_executables(config, [args.stage])
            for e in errors:
                print(f"error: {e}", file=sys.stderr)
            if errors:
                return EXIT_USAGE
        return _reply(_send(config, op, [args.stage]))
    return run


def cmd_status(args: argparse.Namespace) -> int:
    from eagle3tui.view import load_view

    config = _load(args, running_driver_ok=True)
    snap = load_view(config).to_json()
    if args.json:
        print(json.dumps(snap, indent=2))
    else:
        print(render_status(snap))
    failed = any(s["state"] in ("failed", "failing") for s in snap["stages"])
    return EXIT_FAILED if failed else EXIT_OK


def render_status(snap: dict[str, Any], now: float | None = None) -> str:
    """The human ``status`` table."""
    from eagle3tui.supervisor.state import describe_gpu_activity
    from eagle3tui.view import describe_figures, remaining_now

    now = now or time.time()
    drv = snap["driver"]
    lines = [f"pipeline {snap['pipeline']}  ({snap['config']})",
             f"driver: {'pid ' + str(drv['pid']) if drv['alive'] else 'not running'}"
             + (f" (the figures below are from {time.strftime('%H:%M:%S', time.localtime(drv['figures_time']))},"
                " when it last wrote them)" if drv.get("figures_stale") and drv.get("figures_time") else ""),
             ""]
    head = f"{'STAGE':14} {'STATE':10} {'TRY':>3} {'PID':>7} {'ELAPSED':>8} {'PROGRESS':>16} {'ETA':>8} {'DRIFT':>6}  NOTE"
    lines.append(head)
    for s in snap["stages"]:
        elapsed = None
        if s["started_at"]:
            elapsed = (s["ended_at"] or now) - s["started_at"]
        live = s.get("live") or {}
        prog = live.get("progress") or {}
        eta = live.get("eta") or {}
        ptxt = ""
        if prog.get("n") is not None:
            ptxt = f"{_num(prog['n'])}/{_num(prog.get('total')) if prog.get('total') else '?'}"
            if prog.get("unit"):
                ptxt += f" {prog['unit']}"
        elif s["state"] == "succeeded":
            ptxt = "100%"  # as the TUI shows it: done, whether or not it printed a bar
        drift = eta.get("drift")
        stale = bool(eta.get("stale") or live.get("stale")) or s["state"] == "failing"
        left = remaining_now(eta, now)
        eta_txt = format_duration(left) if left is not None else ''
        drift_txt = f'{drift:+.0%}' if drift is not None else ''
        if stale and (eta_txt or drift_txt):
            # Figures from before a fatal error: not a live projection.
            eta_txt, drift_txt = "stale", "stale"
        note = s["reason"] or ""
        if s["kind"] == "service" and s["state"] == "running":
            note = note or describe_figures(live.get("figures")) or ("ready" if s.get("ready") else "starting")
        if s.get("hint"):
            note += f" ({s['hint']})"
        shown_state = "changed" if s.get("changed") else s["state"]
        lines.append(
            f"{s['name'][:14]:14} {shown_state:10} {s['attempt'] or '':>3} {s['pid'] or '':>7} "
            f"{format_duration(elapsed) if elapsed is not None else '':>8} {ptxt[:16]:>16} "
            f"{eta_txt:>8} {drift_txt:>6}  {printable(note)}")
        if s.get("failing"):
            f = s["failing"]
            gpus = describe_gpu_activity(f.get("gpu")) or "GPU use unknown"
            lines.append(f"{'':14}   {gpus}; fatal line {f.get('line')}: "
                         f"{printable(str(f.get('text') or ''))[:80]}")
        shown: list[str] = []
        for err in s.get("errors") or []:
            last = (str(err.get("text", "")).splitlines() or [""])[-1]
            if last and last not in shown:
                shown.append(last)
        for text in shown[-2:]:
            lines.append(f"{'':14}   {printable(text)[:110]}")
    for p in snap.get("problems", []):
        lines.append(f"warning: {printable(p)}")
    return "\n".join(lines)


def _num(x: Any) -> str:
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.1f}"
    return str(int(x)) if isinstance(x, (int, float)) else str(x)


def cmd_logs(args: argparse.Namespace) -> int:
    from eagle3tui.supervisor.records import RunStore
    from eagle3tui.view import load_view

    config = _load(args)
    if args.stage not in config.names:
        return _unknown_stage(config, args.stage)
    store = RunStore(config.state_dir)
    rec = store.latest(args.stage)
    path = Path(rec.log) if rec else config.stage(args.stage).log
    offset = 0 if (args.all_attempts or rec is None) else rec.log_offset
    if not path.exists():
        print(f"{args.stage}: no log yet ({path})", file=sys.stderr)
        return EXIT_FAILED if not args.follow else EXIT_OK
    out = sys.stdout
    from eagle3tui.trusted import NotRegularFile, open_regular

    try:
        fd = open_regular(path)  # never a FIFO (a hang) nor a symlink (any file, as root)
    except NotRegularFile as e:
        print(f"error: {args.stage}: {e}", file=sys.stderr)
        return EXIT_FAILED
    with os.fdopen(fd, "rb") as f:
        f.seek(offset)
        pending = b""
        while True:
            chunk = f.read(1 << 16)
            if chunk:
                data = pending + chunk
                cut = data.rfind(b"\n") + 1
                pending = data[cut:]
                if cut:
                    out.write(printable(last_frames(data[:cut].decode("utf-8", "replace")),
                                        keep_newlines=True))
                    out.flush()
                continue
            if not args.follow:
                break
            st = load_view(config).stage(args.stage)
            if not st.state.active and st.run_id == (rec.run_id if rec else None):
                break
            time.sleep(0.2)
        if pending:
            out.write(printable(last_frames(pending.decode("utf-8", "replace")),
                                keep_newlines=True) + "\n")
    return EXIT_OK


def last_frames(text: str) -> str:
    """Each line as a terminal would leave it: the last of its ``\\r`` frames.

    A tqdm bar writes hundreds of ``\\r``-separated frames on one line; printed
    as they are, they make one huge line. The log file itself keeps them all.
    A message that shared the line with the bar (``...it/s]received SIGTERM``)
    is printed on a line of its own after the bar's last frame
    (:func:`eagle3tui.frontends.redraw.shown_rows`).
    """
    from eagle3tui.frontends.redraw import shown_rows

    if "\r" not in text:
        return text
    return "\n".join("\n".join(shown_rows(line)) for line in text.split("\n"))


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="eagle3tui",
        description="Supervise long-running GPU pipeline stages (EAGLE-3 training and friends). "
                    "With no COMMAND: open the TUI (or supervise headless with --watch).",
        epilog="Exit codes: 0 ok (--watch: the pipeline completed), 1 a stage or command failed, "
               "2 a usage or configuration error, 130 --watch stopped by Ctrl-C/SIGTERM "
               "(stages keep running).",
    )
    ap.add_argument("--config", default=os.environ.get("EAGLE3TUI_CONFIG", "pipeline.toml"),
                    help="pipeline file (default: ./pipeline.toml)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a [vars] value (repeatable)")
    ap.add_argument("--watch", action="store_true", help="run headless: supervise and print alerts")
    ap.add_argument("--alerts", metavar="PATH", help="with --watch: also append alerts here (JSONL)")
    ap.add_argument("--run-all", action="store_true", help="with --watch: start every stage")
    ap.add_argument("--alerts-from-start", action="store_true",
                    help="with --watch, when another process drives: print the alerts file from "
                         "its beginning")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        # Accept --config/--set after the subcommand too; SUPPRESS keeps the global value.
        p.add_argument("--config", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.add_argument("--set", action="append", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    p = sub.add_parser("check", help="validate pipeline.toml and the stages' executables")
    common(p)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("start", help="start stages (with their dependencies) or --all")
    common(p)
    p.add_argument("stages", nargs="*")
    p.add_argument("--all", action="store_true", help="start every stage in dependency order")
    p.add_argument("--wait", action="store_true", help="block until they finish; exit 1 on failure")
    p.add_argument("--timeout", type=float, default=None, help="with --wait: give up after SECONDS")
    p.set_defaults(func=cmd_start)
    p = sub.add_parser("status", help="show every stage's state")
    common(p)
    p.add_argument("--json", action="store_true", help="machine-readable (schema in README)")
    p.set_defaults(func=cmd_status)
    for op, text in (("stop", "stop a stage: SIGTERM to its process group, SIGKILL after the grace"),
                     ("restart", "run a finished stage again from scratch (a new attempt)"),
                     ("resume", "relaunch a failed or stopped stage with its resume arguments"),
                     ("skip", "mark a stage as skipped; dependents treat it as done"),
                     ("unskip", "undo skip")):
        p = sub.add_parser(op, help=text)
        common(p)
        p.add_argument("stage")
        p.set_defaults(func=_simple(op))
    p = sub.add_parser("logs", help="print a stage's log (current attempt)")
    common(p)
    p.add_argument("stage")
    p.add_argument("-f", "--follow", action="store_true", help="keep following until the stage ends")
    p.add_argument("--all-attempts", action="store_true", help="print the whole log file")
    p.set_defaults(func=cmd_logs)
    _optional_subcommands(sub, common, argv)
    return ap


def _optional_subcommands(sub: Any, common: Callable[[argparse.ArgumentParser], None],
                          argv: list[str] | None = None) -> None:
    """Subcommands implemented in their own modules.

    A module is imported only when its command may be the one asked for (its
    name is among the arguments): the classifier costs most of the start-up,
    and ``--help`` or ``status`` need none of it.
    """
    words = set(sys.argv[1:] if argv is None else argv)
    p = sub.add_parser("classify", help="classify a log offline: events, progress, ETA drift")
    if "classify" in words:
        from eagle3tui.frontends import classify_cmd as classify_cli

        classify_cli.add_arguments(p)
        p.set_defaults(func=classify_cli.run)
    p = sub.add_parser("gpus", help="per-GPU memory and which stage holds it")
    common(p)
    if "gpus" in words:
        from eagle3tui.frontends import gpus_cmd as gpus_cli

        gpus_cli.add_arguments(p)
    p.set_defaults(func=_gpus)
    from eagle3tui.frontends import metrics_cmd

    p = sub.add_parser("metrics", help="the pipeline's state in Prometheus text format")
    common(p)
    metrics_cmd.add_arguments(p)
    p.set_defaults(func=metrics_cmd.run)


def _gpus(args: argparse.Namespace) -> int:
    from eagle3tui.frontends import gpus_cmd as gpus_cli

    roots: dict[str, int] = {}
    try:
        config = _load(args)
    except ConfigError:
        config = None  # no pipeline here: show GPUs without attribution
    if config is not None:
        from eagle3tui.view import load_view

        roots = load_view(config).stage_roots()
    return gpus_cli.run(args, stage_roots=roots)


def main(argv: list[str] | None = None) -> int:
    ap = build_parser(argv)
    args = ap.parse_args(argv)
    try:
        if args.watch:
            from eagle3tui.frontends.watch import run_watch

            return run_watch(args)
        if args.command is None:
            from eagle3tui.frontends.tui.app import run_tui

            return run_tui(args)
        return int(args.func(args))
    except (ConfigError, UntrustedFile) as e:  # UntrustedFile: a state directory not ours
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
