"""The tiny wrapper that outlives every supervisor.

The launcher starts this wrapper in a new session; the wrapper starts the
stage in a process group of its own, writes ``<record>.started.json`` (pid,
create time, pgid), waits, and writes ``<record>.result.json`` (exit code or
signal, end time) atomically. So an exit code is recorded even when no
supervisor is alive at the moment the stage ends.

What else it guarantees, and why:

* **Every descendant ends with the stage.** The wrapper is a child subreaper
  (``prctl(PR_SET_CHILD_SUBREAPER)``), so a process the stage started that
  left its process group (``setsid``, ``setpgid``, a double fork) re-parents
  to the wrapper instead of init, and can still be found. On SIGTERM (a stop)
  the wrapper passes SIGTERM to the stage's group and every descendant of the
  run; once the main process has ended, whatever is left gets SIGTERM, then
  SIGKILL after the grace period, and the result is written only when the
  run's tree is empty. A GPU worker that ignores SIGTERM cannot outlive a stop.
* **The exit code survives a full or read-only state directory.** Before the
  stage starts, the wrapper reserves the result file (``.result.json.reserve``,
  pre-sized and fsynced), so the result can be written into blocks that are
  already allocated; failing that it goes to a fallback file outside the state
  directory (in an owner-only directory the launcher made with a random
  name, checked before writing), and always to the stage's log as a marker
  line that carries a MAC keyed by the attempt's record, so a log line that
  merely imitates it is refused. Every file it writes is owner-only (0600).
* **A driver runs while the stage runs and when it ends.** Every few seconds,
  and when the stage ends, the wrapper checks the driver lock and starts a
  driver if none holds it, so a driver killed at 3 a.m. does not leave the
  pipeline waiting for a human.
* **GPUs on another node are seen.** With ``--gpu-report PATH`` (stages on
  Slurm) a thread samples NVML on the node every ``--gpu-interval`` seconds
  and writes what the wrapper's tree holds to PATH
  (:mod:`eagle3tui.telemetry.node_report`), for the driver's GPU panel.

The wrapper ignores SIGHUP and SIGINT (an SSH hang-up must not end it).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import hmac
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time

# This file runs as a script under ``python -I`` (see launcher.py), so it
# imports nothing from eagle3tui: the stage's environment (PYTHONPATH, cwd)
# can never break the wrapper.

PR_SET_CHILD_SUBREAPER = 36
RESERVE_BYTES = 4096
# The driver escalates at the grace period; the wrapper waits a little longer,
# so with a driver alive the driver acts (and alerts), without one the wrapper does.
WRAPPER_GRACE_SLACK_S = 2.0
DRIVER_CHECK_S = 5.0
RESULT_MARKER = "[eagle3tui] result "
# Set in the environment of a driver the wrapper starts: that driver and what it
# launches are not part of this run, even though they descend from the wrapper.
DRIVER_ENV = "EAGLE3TUI_DRIVER_SPAWNED_BY"


def _private_open(path: str, flags: int) -> int:
    """Open for writing, owner-only (0600 whatever the umask), never through a symlink."""
    return os.open(path, flags | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def atomic_write_json(path: str, obj: object) -> None:
    tmp = f"{path}.{os.getpid()}.partial"
    try:
        try:
            os.unlink(tmp)  # a stale one from a wrapper of the same pid
        except FileNotFoundError:
            pass
        with os.fdopen(_private_open(tmp, os.O_CREAT | os.O_EXCL), "w", encoding="utf-8") as f:
            json.dump(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def slurm_placement(env: dict[str, str]) -> dict[str, object] | None:
    """Where Slurm ran this job: its node and the GPU indices it was given.

    The driver also learns these from ``scontrol`` while the job runs, but a
    job shorter than one poll is never seen running; the result keeps them."""
    node = env.get("SLURMD_NODENAME")
    if not node:
        return None
    gpus: list[int] | None = None
    raw = env.get("SLURM_JOB_GPUS") or env.get("SLURM_STEP_GPUS") or ""
    try:
        gpus = [int(g) for g in raw.split(",") if g.strip()] or None
    except ValueError:
        gpus = None  # a GPU named by UUID: scontrol's indices stay authoritative
    return {"node": node, "gpu_indices": gpus}


def start_gpu_report(path: str, interval: float) -> object | None:
    """Sample this node's GPUs for the driver (a stage on another node: Slurm).

    Imported here, not at the top: the wrapper of a local stage never needs
    NVML. Any failure leaves the stage alone; the report, if written, says why.
    """
    try:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if root not in sys.path:
            sys.path.append(root)  # the wrapper runs with -I; the package is beside it
        from eagle3tui.telemetry.node_report import NodeReporter, nvml_from_env

        node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
        reporter = NodeReporter(path, root_pid=os.getpid(), node=node, interval=interval,
                                nvml=nvml_from_env())
        reporter.start()
        return reporter
    except Exception as e:  # noqa: BLE001 (telemetry must never stop a stage)
        try:
            atomic_write_json(path, {"time": time.time(), "available": False,
                                     "error": f"GPU sampling on this node failed: {type(e).__name__}: {e}"})
        except OSError:
            pass
        return None


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (Linux >= 3.4)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reserve(path: str) -> str | None:
    """Pre-allocate ``path`` so the result can be written on a full disk; the error if not."""
    try:
        with os.fdopen(_private_open(path, os.O_CREAT | os.O_TRUNC), "wb") as f:
            f.write(b" " * RESERVE_BYTES)
            f.flush()
            os.fsync(f.fileno())
        return None
    except OSError as e:
        return f"cannot reserve {path}: {e.strerror or e}"


def write_result(prefix: str, result: dict[str, object], fallback: str | None) -> list[str]:
    """Record ``result`` durably; returns the errors met on the way (empty when clean).

    Order: a normal atomic write; else overwrite the reserved file in place
    (its blocks exist) and rename it; else the fallback path. The result is
    also printed to the stage log by the caller, the last resort.
    """
    path = prefix + ".result.json"
    reserved = path + ".reserve"
    errors: list[str] = []
    try:
        atomic_write_json(path, result)
        try:
            os.unlink(reserved)
        except OSError:
            pass
        return errors
    except OSError as e:
        errors.append(f"{path}: {e.strerror or e}")
    result = dict(result, write_errors=list(errors))
    data = json.dumps(result).encode()
    if len(data) <= RESERVE_BYTES:
        try:
            fd = _private_open(reserved, 0)
            try:
                # JSON allows trailing spaces: the padding of the reserve stays.
                os.pwrite(fd, data, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(reserved, path)
            return errors
        except OSError as e:
            errors.append(f"{reserved}: {e.strerror or e}")
    if fallback:
        try:
            private_parent(fallback)
            atomic_write_json(fallback, dict(result, write_errors=list(errors)))
            errors.append(f"result written to {fallback}")
        except OSError as e:
            errors.append(f"{fallback}: {e.strerror or e}")
    return errors


def private_parent(path: str) -> None:
    """Refuse to write ``path`` unless its directory is ours and closed to everyone else.

    The launcher made it (mkdtemp: 0700, a random name); anything else there
    (another user's directory, a symlink) could be read or replaced by them.
    """
    parent = os.path.dirname(path)
    st = os.lstat(parent)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise PermissionError(f"{parent} is not an owner-only directory of uid {os.geteuid()}; "
                              "refusing to write the result there")


def result_key(prefix: str) -> str | None:
    """The attempt's marker key, from its record (written before the wrapper started)."""
    try:
        fd = os.open(prefix + ".json", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if os.fstat(f.fileno()).st_uid != os.geteuid():
                return None
            key = json.loads(f.read(1 << 20).decode("utf-8")).get("extra", {}).get("result_key")
    except (OSError, ValueError, AttributeError):
        return None
    return key if isinstance(key, str) else None


def marker_line(result: dict[str, object], key: str | None) -> str:
    """The last-resort result line for the stage log: the marker, a MAC, the JSON."""
    payload = json.dumps(result)
    mac = hmac.new(key.encode(), payload.encode(), hashlib.sha256).hexdigest() if key else "-"
    return f"{RESULT_MARKER}{mac} {payload}"


def _env_of(proc: object) -> dict[str, str] | None:
    try:
        return proc.environ()  # type: ignore[attr-defined, no-any-return]
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return None


def run_members(run_id: str | None, pgid: int, tree: StageTree | None = None) -> list[int]:
    """Pids of the live descendants that belong to this run (never the wrapper).

    A descendant belongs to the run when it sits in the stage's process group,
    or descends from the stage's main process (by parentage, which no process
    can rewrite; ``tree`` remembers those seen, for after the chain breaks),
    or is any other orphan re-parented to the wrapper. A driver this wrapper
    started, and the stages that driver launched, are left alone: by
    parentage while that driver lives, by the mark it put in their
    environment (``DRIVER_ENV`` = this wrapper's pid) once it is gone.
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return []
    try:
        kids = psutil.Process(os.getpid()).children(recursive=True)
    except psutil.Error:
        return []
    parents = {}
    for p in kids:
        try:
            parents[p.pid] = p.ppid()
        except psutil.Error:
            continue
    out = []
    for p in kids:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            in_group = os.getpgid(p.pid) == pgid
        except (psutil.Error, OSError):
            continue
        ancestry = tree.ancestry(p.pid, parents) if tree else "unknown"
        if in_group or ancestry == "stage":
            if tree:
                tree.remember(p)
            out.append(p.pid)
            continue
        if ancestry == "driver":
            continue
        if tree and tree.seen(p):
            out.append(p.pid)
            continue
        # An orphan re-parented to us: the stage's, unless it comes from a
        # driver this wrapper started (that driver marked its environment).
        env = _env_of(p)
        if env is None:
            continue
        if env.get(DRIVER_ENV) == str(os.getpid()) and env.get("EAGLE3TUI_RUN_ID") != run_id:
            continue
        out.append(p.pid)
    return out


class StageTree:
    """What parentage says about the wrapper's descendants, and who was seen under the stage.

    A process cannot leave its parent chain (only its parent's death breaks
    it, and then it re-parents to this wrapper, the subreaper): a child that
    called ``setsid`` and rewrote ``EAGLE3TUI_RUN_ID`` still descends from the
    stage, and is remembered as the stage's once seen there.
    """

    def __init__(self, stage_pid: int, drivers: object) -> None:
        self.stage_pid = stage_pid
        self._drivers = drivers  # the DriverKeeper: its spawned drivers are not the run
        self._seen: set[tuple[int, float]] = set()

    def ancestry(self, pid: int, parents: dict[int, int]) -> str:
        """"stage", "driver" (a driver this wrapper started) or "unknown"."""
        drivers = {p.pid for p in getattr(self._drivers, "spawned", [])}
        me = os.getpid()
        while pid in parents and pid != me:
            if pid == self.stage_pid:
                return "stage"
            if pid in drivers:
                return "driver"
            pid = parents[pid]
        return "unknown"

    def remember(self, proc: object) -> None:
        try:
            self._seen.add((proc.pid, proc.create_time()))  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - gone already
            pass

    def seen(self, proc: object) -> bool:
        try:
            return (proc.pid, proc.create_time()) in self._seen  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001
            return False


def signal_members(run_id: str | None, pgid: int, sig: int, tree: StageTree | None = None) -> int:
    """Send ``sig`` to the stage's group and every descendant of the run; how many got it."""
    n = 0
    try:
        os.killpg(pgid, sig)
        n += 1
    except OSError:
        pass
    for pid in run_members(run_id, pgid, tree):
        try:
            if os.getpgid(pid) == pgid:
                continue  # the group signal reached it: a second SIGTERM can cut its clean-up short
            os.kill(pid, sig)
            n += 1
        except OSError:
            pass
    return n


def driver_lock_held(lock_path: str) -> bool:
    """True when some process holds the driver's flock (or we cannot tell)."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


class DriverKeeper:
    """Starts a driver when none holds the lock, with a back-off if it keeps dying."""

    def __init__(self, spec: dict[str, object] | None) -> None:
        self.spec = spec
        self.next_check = 0.0
        self.backoff = DRIVER_CHECK_S
        self.spawned: list[subprocess.Popen[bytes]] = []

    def check(self, now: float) -> None:
        if not self.spec or now < self.next_check:
            return
        self.next_check = now + self.backoff
        if driver_lock_held(str(self.spec["lock"])):
            self.backoff = DRIVER_CHECK_S
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3TUI_")}
        env[DRIVER_ENV] = str(os.getpid())
        try:
            with os.fdopen(_private_open(str(self.spec["log"]), os.O_CREAT | os.O_APPEND), "ab") as log:
                log.write(f"[stagewrap {os.getpid()}] no driver holds the lock: starting one\n"
                          .encode())
                self.spawned.append(subprocess.Popen(
                    [str(a) for a in self.spec["argv"]],  # type: ignore[attr-defined]
                    cwd=str(self.spec["cwd"]), env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True))
        except OSError:
            pass
        # A driver that dies at once (a broken config) is retried ever more slowly.
        self.backoff = min(self.backoff * 2, 300.0)
        for p in self.spawned:
            p.poll()  # reap the ones that ended


IDLE_MARKER = "driver.idle"
# The keeper stops restarting a driver that exits with an error this many
# times within the window (docs/reliability.md), and says so in an alert.
KEEPER_MAX_CRASHES = 5
KEEPER_CRASH_WINDOW_S = 600.0
DRIVER_LOCK_TAKEN = 3  # the driver's exit code when another driver holds the lock: no crash


def keeper_gives_up(state_dir: str, spec: dict[str, object], codes: list[int]) -> None:
    """Tell a person that the keeper stopped: a critical alert in the state directory.

    Written with the package's own alert log (imported only now: the keeper
    must run whatever happens to it); failing that, a line in the driver log.
    """
    message = (f"the driver exited with an error at each of its last {len(codes)} starts "
               f"within {KEEPER_CRASH_WINDOW_S / 60:.0f} min (exit codes "
               f"{', '.join(str(c) for c in codes)}); the keeper stopped restarting it. "
               f"See {spec.get('log')} for why, fix it (`eagle3tui check`), then run any "
               "eagle3tui command to start a driver again")
    try:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if root not in sys.path:
            sys.path.append(root)
        from eagle3tui.alerts.log import AlertLog
        from eagle3tui.alerts.model import Alert

        log = AlertLog(os.path.join(state_dir, "alerts.jsonl"))
        try:
            log.append(Alert(level="critical", kind="driver-keeps-crashing", message=message,
                             details={"exit_codes": codes, "driver_log": spec.get("log"),
                                      "fix": "run `eagle3tui check`, fix what it reports, "
                                             "then start the pipeline again"}))
        finally:
            log.close()
    except Exception:  # noqa: BLE001 - the driver log below still says it
        pass
    try:
        with open(str(spec["log"]), "ab") as f:
            f.write(f"[stagewrap {os.getpid()}] keeper: {message}\n".encode())
    except OSError:
        pass


def keep(state_dir: str, spec: dict[str, object]) -> int:
    """``--keep``: one per state directory; restarts the driver until it exits idle.

    Covers the moments no stage wrapper runs (between stages, a retry's
    back-off): a driver killed then would otherwise leave the pipeline
    waiting for a human. A driver that ends because nothing is left to do,
    or because it was asked to (SIGTERM), writes ``driver.idle``; then the
    keeper exits too.
    """
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fd = os.open(os.path.join(state_dir, "keeper.lock"),
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another keeper runs (or the directory is gone)
    try:
        atomic_write_json(os.path.join(state_dir, "keeper.json"), {"pid": os.getpid()})
    except OSError:
        pass
    keeper = DriverKeeper(spec)
    keeper.backoff = 1.0
    argv = [str(a) for a in spec["argv"]]  # type: ignore[attr-defined]
    config = argv[argv.index("--config") + 1] if "--config" in argv else None
    crashes: list[tuple[float, int]] = []  # (when, exit code) of drivers that failed on their own
    while True:
        time.sleep(0.5)
        if not os.path.isdir(state_dir) or (config and not os.path.exists(config)):
            return 0  # the pipeline is gone
        if driver_lock_held(str(spec["lock"])):
            keeper.backoff = 1.0
            continue
        if os.path.exists(os.path.join(state_dir, IDLE_MARKER)):
            return 0
        # Drivers that fail on their own (an invalid config: exit 2) are not
        # restarted forever; drivers killed by a signal are exactly what we are for.
        now = time.monotonic()
        crashes += [(now, p.returncode) for p in keeper.spawned
                    if p.poll() is not None and p.returncode > 0 and p.returncode != DRIVER_LOCK_TAKEN]
        keeper.spawned = [p for p in keeper.spawned if p.returncode is None]
        crashes = [c for c in crashes if now - c[0] < KEEPER_CRASH_WINDOW_S]
        if len(crashes) >= KEEPER_MAX_CRASHES:
            keeper_gives_up(state_dir, spec, [code for _, code in crashes])
            return 1
        keeper.check(now)


def _parse(args: list[str]) -> tuple[dict[str, str], list[str]] | None:
    if "--" not in args:
        return None
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    if len(opts) % 2 or not cmd:
        return None
    parsed = dict(zip(opts[::2], opts[1::2]))
    if "--record" not in parsed or any(not k.startswith("--") for k in parsed):
        return None
    return parsed, cmd


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 4 and args[0] == "--keep" and args[2] == "--driver":
        return keep(args[1], json.loads(args[3]))
    parsed = _parse(args)
    if parsed is None:
        print("usage: python -I stagewrap.py --record PREFIX [--grace S] [--fallback PATH] "
              "[--driver JSON] [--gpu-report PATH [--gpu-interval S]] -- ARGV...", file=sys.stderr)
        return 2
    opts, cmd = parsed
    prefix = opts["--record"]
    grace = float(opts.get("--grace", "30"))
    fallback = opts.get("--fallback")
    keeper = DriverKeeper(json.loads(opts["--driver"]) if "--driver" in opts else None)
    key = result_key(prefix)
    run_id = os.environ.get("EAGLE3TUI_RUN_ID")
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop_at: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: stop_at.append(time.monotonic()) if not stop_at else None)
    subreaper = become_subreaper()
    reserve_error = reserve(prefix + ".result.json.reserve")
    try:
        # New session for the stage too: its pgid is its pid, so stopping the
        # stage signals exactly the stage's tree and never the wrapper.
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                                 close_fds=True)
    except OSError as e:
        # Show the reason in the stage log (our stdout) and record exit 127 like a shell.
        print(f"eagle3tui: cannot start {cmd[0]!r}: {e.strerror or e}", flush=True)
        result: dict[str, object] = {"exit_code": 127, "signal": None, "ended_at": time.time(),
                                     "error": f"cannot start {cmd[0]!r}: {e.strerror or e}"}
        write_result(prefix, result, fallback)
        print(marker_line(result, key), flush=True)
        return 127
    pgid = child.pid
    try:
        import psutil

        created = psutil.Process(child.pid).create_time()
        wrapper_created = psutil.Process().create_time()
    except Exception:  # psutil missing or the child already gone
        created = wrapper_created = None
    # The wrapper's own identity too: a driver killed before saving the
    # wrapper's pid must still see the wrapper alive while it cleans up.
    if "--gpu-report" in opts:
        start_gpu_report(opts["--gpu-report"], float(opts.get("--gpu-interval", "2")))
    started = {"pid": child.pid, "pgid": pgid, "create_time": created,
               "wrapper_pid": os.getpid(), "wrapper_create_time": wrapper_created,
               "started_at": time.time(), "subreaper": subreaper}
    if reserve_error:
        started["reserve_error"] = reserve_error
    try:
        atomic_write_json(prefix + ".started.json", started)
    except OSError as e:
        print(f"[eagle3tui] cannot write {prefix}.started.json: {e.strerror or e}", flush=True)

    # Signals wake the loop through a pipe, so waiting needs no busy polling.
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    rc: int | None = None
    tree = StageTree(child.pid, keeper)
    term_sent_at: float | None = None
    killed = False
    while True:
        # Reap everything that ended: the stage, and orphans re-parented to us.
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == child.pid:
                rc = os.waitstatus_to_exitcode(status)
        now = time.monotonic()
        if stop_at and term_sent_at is None:
            term_sent_at = now
            signal_members(run_id, pgid, signal.SIGTERM, tree)
        if rc is not None:
            left = run_members(run_id, pgid, tree)
            if not left:
                break
            if term_sent_at is None:
                # The stage ended but left processes behind: they end with it.
                term_sent_at = now
                signal_members(run_id, pgid, signal.SIGTERM, tree)
        timeout = DRIVER_CHECK_S
        if term_sent_at is not None:
            kill_at = term_sent_at + grace + WRAPPER_GRACE_SLACK_S
            if now >= kill_at:
                if signal_members(run_id, pgid, signal.SIGKILL, tree):
                    killed = True
                timeout = 0.1
            else:
                timeout = min(timeout, max(0.05, kill_at - now), 0.5)
        if rc is None:
            keeper.check(now)
            run_members(run_id, pgid, tree)  # note who descends from the stage while the chain holds
        try:
            ready, _, _ = select.select([rfd], [], [], timeout)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            ready = []
        if ready:
            try:
                os.read(rfd, 512)
            except BlockingIOError:
                pass
    assert rc is not None
    result = {
        "exit_code": rc if rc >= 0 else None,
        "signal": -rc if rc < 0 else None,
        "ended_at": time.time(),
    }
    if killed:
        result["killed_after_grace"] = True
    if stop_at:
        result["stop_signalled"] = True
    placement = slurm_placement(dict(os.environ))
    if placement:
        result["slurm_placement"] = placement
    errors = write_result(prefix, result, fallback)
    if errors:
        # The last resort: the stage log, which the driver reads anyway.
        print(marker_line(dict(result, write_errors=errors), key), flush=True)
    sys.stdout.flush()
    keeper.next_check = 0.0
    keeper.check(time.monotonic())
    # The stage's own status, as a shell reports it: under Slurm the wrapper is
    # the batch step, and Slurm's ExitCode/state (FAILED for exit 3) come from it.
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    raise SystemExit(main())
