"""Stages on Slurm: options, submission, and what the scheduler says about a job.

Pure building blocks for the driver's Slurm executor; nothing here holds state
or loops. Every Slurm command is an argv list run with a timeout. The facts
this module relies on were measured on a real Slurm 22.05 (see
docs/slurm.md and ``tests/fixtures/slurm/``):

- The batch script never holds the stage's command as shell text. It is the
  constant :data:`BATCH_SCRIPT`, which ``exec``\\ s its arguments, and the
  wrapper + stage argv travel as ``sbatch`` script arguments. So no quoting,
  and the wrapper *is* the batch step's process: ``scancel --batch/--full
  --signal=TERM`` and the time limit's SIGTERM reach it directly. A plain
  ``scancel --signal=TERM`` reaches nothing in a job without steps.
- Slurm sends SIGTERM (time limit, scancel) to the batch step's process group
  only; a process in a session of its own (the stage under stagewrap) gets
  only the final SIGKILL (with cgroup tracking) or nothing at all (process
  group tracking). The wrapper must forward SIGTERM, as stagewrap does.
- When slurmctld is down, ``squeue``/``scontrol`` retry for ~18 s and
  ``sbatch``/``scancel`` for ~9 s before failing; timeouts here are longer so
  that "controller unreachable" is reported as such.
- ``scontrol show job`` knows a job for MinJobAge (300 s by default) after it
  ends, then ``Invalid job id specified``; ``sacct`` remembers it for good
  where accounting is configured.
"""

from __future__ import annotations

import datetime as _dt
import re
import subprocess
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from eagle3tui.slurm_options import (  # noqa: F401  (re-exported)
    RESERVED_OPTIONS,
    SlurmOptions,
    parse_time_limit,
)

# --------------------------------------------------------------- submission ----

#: The whole batch script. Its arguments are the wrapper's argv followed by the
#: stage's; ``exec`` makes the wrapper the batch step's process, so Slurm's
#: SIGTERM (scancel --batch/--full, time limit) reaches it and it forwards the
#: signal to the stage. No user text is ever parsed by a shell.
BATCH_SCRIPT = """#!/bin/sh
# Written by eagle3tui. The command is in this script's arguments (see
# `scontrol show job -d` or `sacct -o SubmitLine`), never in its text.
exec "$@"
"""


@dataclass(frozen=True)
class Submission:
    """One attempt's submission: write ``script`` to ``script_path``, then run
    ``argv``. sbatch sends the script to slurmctld, so the file is not needed
    once sbatch returned."""

    argv: list[str]
    script: str
    script_path: str


def build_submission(
    options: SlurmOptions,
    *,
    job_name: str,
    stage_argv: Sequence[str],
    wrapper_argv: Sequence[str],
    log_path: str,
    workdir: str,
    script_path: str,
    sbatch: str = "sbatch",
) -> Submission:
    """The ``sbatch`` argv and batch script for one stage attempt.

    ``wrapper_argv`` is the prefix that runs the stage under the stage-wrapper
    semantics (result file written atomically, SIGTERM forwarded); the Slurm
    executor passes ``[python, "-I", stagewrap.py, "--record", prefix,
    "--gpu-report", ..., "--"]``, whose record prefix must be on storage the
    compute nodes share. Pass ``[]`` to run the stage bare.

    The job's environment is sbatch's (``--export=ALL`` is Slurm's default),
    so run the argv with the stage's env. The job is ``--no-requeue``: after a
    node failure Slurm would otherwise rerun the same job id from scratch two
    minutes later, behind the supervisor's back (measured: NODE_FAIL, then
    PENDING with reason BeginTime, Restarts=1); retries are eagle3tui's.
    """
    if not stage_argv:
        raise ValueError("stage_argv is empty")
    if not job_name or any(c.isspace() for c in job_name):
        raise ValueError(f"job name {job_name!r} must be non-empty and without spaces")
    argv = [
        sbatch, "--parsable",
        f"--job-name={job_name}",
        f"--output={log_path}", f"--error={log_path}", "--open-mode=append",
        f"--chdir={workdir}",
        "--no-requeue",
        *options.sbatch_options(),
        script_path,
        *wrapper_argv, *stage_argv,
    ]
    return Submission(argv=argv, script=BATCH_SCRIPT, script_path=script_path)


def parse_sbatch_parsable(stdout: str) -> int:
    """The job id from ``sbatch --parsable`` (``"42"`` or ``"42;cluster"``).

    Raises :class:`SlurmError` when stdout holds no job id.
    """
    for line in stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        head = line.split(";", 1)[0]
        if head.isdigit():
            return int(head)
    raise SlurmError(f"sbatch printed no job id: {stdout.strip()[:200]!r}",
                     fix="run the same sbatch by hand to see what it says")


# --------------------------------------------------------------- job state ----

PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
                            "CONFIGURING"})
ACTIVE_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING",
                           "STAGE_OUT", "RESIZING"})
#: A job in one of these states will not run again (with --no-requeue).
TERMINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                             "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED",
                             "SPECIAL_EXIT"})
# Slurm records an OOM kill as signal 125 (its SIG_OOM, 253, as a 7-bit signal).
OOM_SIGNAL = 125

_DESCRIPTIONS = {
    "TIMEOUT": "killed by Slurm at its time limit",
    "CANCELLED": "cancelled (scancel)",
    "NODE_FAIL": "its node failed",
    "PREEMPTED": "preempted by a higher-priority job",
    "OUT_OF_MEMORY": "killed by the out-of-memory handler (over its --mem)",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "past its deadline",
}


@dataclass(frozen=True)
class SlurmJobState:
    """One job as Slurm reports it. Times are epoch seconds (Slurm prints the
    client's local time); ``start`` is the expected start while pending, when
    the backfill scheduler has one. ``exit_code``/``signal`` follow the stage
    wrapper's convention: a job killed by a signal has exit_code None."""

    job_id: int
    state: str
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    start: float | None = None
    end: float | None = None
    nodes: str | None = None
    gpu_indices: tuple[int, ...] | None = None
    source: str = ""

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def describe(self) -> str:
        """One line for a person: what happened to the job."""
        if self.pending:
            why = f" ({self.reason})" if self.reason and self.reason != "None" else ""
            return f"pending{why}"
        if self.state == "COMPLETED":
            return "completed" if not self.exit_code else f"exit code {self.exit_code}"
        if self.state == "FAILED":
            if self.signal:
                return f"failed: killed by signal {self.signal}"
            return f"failed: exit code {self.exit_code}"
        if self.state in _DESCRIPTIONS:
            return _DESCRIPTIONS[self.state]
        return self.state.lower()


def parse_slurm_time(text: str | None) -> float | None:
    """Epoch seconds from Slurm's ``2026-11-30T16:37:55`` (local time); None for
    ``N/A``, ``Unknown``, ``NONE``, ``None`` and empty fields."""
    if not text:
        return None
    t = text.strip()
    if t in ("N/A", "Unknown", "NONE", "None", "(null)", "0"):
        return None
    try:
        return _dt.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


def parse_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """``"3:0"`` -> (3, None); ``"0:9"`` -> (None, 9): Slurm's ExitCode is
    ``code:signal``; a signal wins over the code, as in the wrapper's result."""
    if not text or ":" not in text:
        return None, None
    a, _, b = text.strip().partition(":")
    try:
        code, sig = int(a), int(b)
    except ValueError:
        return None, None
    if sig:
        return None, sig
    return code, None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip()
    return None if v in ("", "(null)", "N/A", "None") else v


#: squeue's output format: one line per job, fields split by "|" (none of them
#: can hold one): id, state, reason, start (expected while pending), end, nodes.
SQUEUE_FORMAT = "%i|%T|%r|%S|%e|%N"


def squeue_argv(job_ids: Sequence[int], squeue: str = "squeue") -> list[str]:
    """squeue for several jobs at once, finished ones included (for MinJobAge)."""
    return [squeue, "--noheader", "--states=all", f"--jobs={','.join(str(j) for j in job_ids)}",
            f"--format={SQUEUE_FORMAT}"]


def parse_squeue(stdout: str) -> dict[int, SlurmJobState]:
    """Jobs from ``squeue --format=SQUEUE_FORMAT`` output, by id."""
    out: dict[int, SlurmJobState] = {}
    for line in stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6 or not parts[0].isdigit():
            continue
        jid, state, reason, start, end, nodes = parts
        out[int(jid)] = SlurmJobState(
            job_id=int(jid), state=state.strip(), reason=_clean(reason),
            start=parse_slurm_time(start), end=parse_slurm_time(end), nodes=_clean(nodes),
            source="squeue")
    return out


def scontrol_argv(job_id: int, scontrol: str = "scontrol") -> list[str]:
    """``scontrol show job`` on one line, with per-node details (GPU indices)."""
    return [scontrol, "--oneliner", "--details", "show", "job", str(job_id)]


# Splits "Key=value Key2=value with spaces" at each " Key=": keys are words
# (with / : . -), values may hold spaces (Reason=(ReqNodeNotAvail, UNAVAILABLE_NODES:x)).
_KEY_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:.\-]*)=")
_GRES_IDX_RE = re.compile(r"\bgpu(?::[^:(\s]+)?:\d+\(IDX:([0-9,\-]+)\)")


def parse_key_values(line: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol --oneliner`` line; a key seen twice
    (per-node ``Nodes=`` details) keeps its first value."""
    out: dict[str, str] = {}
    matches = list(_KEY_RE.finditer(line))
    for m, nxt in zip(matches, matches[1:] + [None]):
        value = line[m.end(): nxt.start() if nxt else len(line)].strip()
        out.setdefault(m.group(1), value)
    return out


def _expand_indices(text: str) -> tuple[int, ...]:
    idx: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            idx.extend(range(int(a), int(b) + 1))
        elif part:
            idx.append(int(part))
    return tuple(idx)


def parse_scontrol_job(stdout: str) -> SlurmJobState | None:
    """A job from ``scontrol --oneliner [--details] show job ID`` output."""
    for line in stdout.splitlines():
        if not line.startswith("JobId="):
            continue
        kv = parse_key_values(line)
        try:
            jid = int(kv["JobId"])
        except (KeyError, ValueError):
            continue
        code, sig = parse_exit_code(kv.get("ExitCode"))
        gpus: tuple[int, ...] | None = None
        found = _GRES_IDX_RE.findall(line)
        if found:
            gpus = tuple(i for f in found for i in _expand_indices(f))
        return SlurmJobState(
            job_id=jid, state=kv.get("JobState", "UNKNOWN").split()[0], reason=_clean(kv.get("Reason")),
            exit_code=code, signal=sig, start=parse_slurm_time(kv.get("StartTime")),
            end=parse_slurm_time(kv.get("EndTime")), nodes=_clean(kv.get("NodeList")),
            gpu_indices=gpus, source="scontrol")
    return None


#: sacct fields, in this order, with --parsable2 ("|" between, none at the end).
SACCT_FIELDS = ("JobID", "State", "ExitCode", "DerivedExitCode", "Start", "End", "NodeList")


def sacct_argv(job_id: int, *, completion: bool = False, sacct: str = "sacct") -> list[str]:
    """``sacct`` for one job. ``completion`` reads the job-completion log
    (``sacct -c``) where no slurmdbd stores accounting, as on the test cluster."""
    argv = [sacct, "--noheader", "--parsable2", f"--jobs={job_id}", f"--format={','.join(SACCT_FIELDS)}"]
    if completion:
        argv.insert(1, "--completion")
    return argv


def parse_sacct(stdout: str, job_id: int) -> SlurmJobState | None:
    """The job's own row (not ``.batch``/``.extern``/step rows) from sacct.

    With slurmdbd a cancelled job reads ``CANCELLED by 1000``; the state is
    its first word. Where the same id appears twice (a requeued job, or ids
    reused after the controller's state was wiped), the last row wins.
    """
    found: SlurmJobState | None = None
    for line in stdout.splitlines():
        parts = line.rstrip("\n").split("|")
        if len(parts) < len(SACCT_FIELDS) or parts[0].strip() != str(job_id):
            continue
        _, state, exit_code, _derived, start, end, nodes = parts[: len(SACCT_FIELDS)]
        code, sig = parse_exit_code(exit_code)
        words = state.split()
        found = SlurmJobState(
            job_id=job_id, state=words[0] if words else "UNKNOWN", exit_code=code, signal=sig,
            start=parse_slurm_time(start), end=parse_slurm_time(end), nodes=_clean(nodes),
            source="sacct")
    return found


# ------------------------------------------------------------------ scancel ----

def scancel_term_argv(job_id: int, scancel: str = "scancel") -> list[str]:
    """Ask the job to stop: SIGTERM to the batch step (the wrapper, which
    forwards it to the stage) and to every job step (srun tasks). Without
    ``--full`` Slurm signals only steps, and a batch-only job gets nothing."""
    return [scancel, "--full", "--signal=TERM", str(job_id)]


def scancel_argv(job_id: int, scancel: str = "scancel") -> list[str]:
    """End the job: Slurm sends SIGTERM, then SIGKILL after KillWait, to all
    its processes (a cgroup-tracked cluster reaches a setsid'd stage too); the
    job ends CANCELLED."""
    return [scancel, str(job_id)]


# ------------------------------------------------------------- running them ----

class SlurmError(Exception):
    """A Slurm command failed; ``str()`` says what, and ``fix`` what to do."""

    def __init__(self, message: str, *, fix: str | None = None, argv: Sequence[str] = ()) -> None:
        self.message = message
        self.fix = fix
        self.argv = list(argv)
        super().__init__(message + (f"\n  fix: {fix}" if fix else ""))


class SlurmUnavailable(SlurmError):
    """Slurm could not be asked (no client on PATH, controller unreachable, a
    command that timed out). Transient as far as a job is concerned: keep its
    last known state, do not declare it lost."""


_UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Connection refused",
                "Zero Bytes were transmitted", "Slurm backup controller in standby mode")
_INVALID_JOB = "Invalid job id specified"

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def run_slurm(argv: Sequence[str], *, timeout: float = 30.0, env: Mapping[str, str] | None = None,
              runner: Runner = subprocess.run) -> "subprocess.CompletedProcess[str]":
    """Run one Slurm command (an argv list, never a shell); raise
    :class:`SlurmUnavailable` when it could not be asked. A non-zero exit is
    returned to the caller, who knows which errors are answers."""
    try:
        proc = runner(list(argv), capture_output=True, text=True, timeout=timeout,
                      env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmUnavailable(f"{argv[0]}: command not found", argv=argv,
                               fix="install the Slurm client (Debian: apt-get install slurm-client) "
                                   "or put its bin directory on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"{' '.join(argv[:2])} did not answer within {timeout:.0f} s", argv=argv,
                               fix="check that slurmctld is up (scontrol ping)") from None
    if proc.returncode != 0 and any(s in proc.stderr for s in _UNREACHABLE):
        raise SlurmUnavailable(f"{argv[0]}: {_first_error(proc.stderr)}", argv=argv,
                               fix="check that slurmctld is up (scontrol ping) and that this host can reach it")
    return proc


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()]
    return (errs or lines or ["(no message)"])[-1][:300]


def submit(submission: Submission, *, env: Mapping[str, str] | None = None, timeout: float = 60.0,
           runner: Runner = subprocess.run) -> int:
    """Write the batch script and run ``sbatch``; return the job id.

    An sbatch that times out may still have queued the job: find it by its
    job name (``squeue --name``) before submitting again.
    """
    with open(submission.script_path, "w", encoding="utf-8") as f:
        f.write(submission.script)
    proc = run_slurm(submission.argv, timeout=timeout, env=env, runner=runner)
    if proc.returncode != 0:
        raise SlurmError(f"sbatch refused the job: {_first_error(proc.stderr)}", argv=submission.argv,
                         fix="check the stage's Slurm options (partition, account, gres, time_limit) "
                             "against sinfo and sacctmgr")
    return parse_sbatch_parsable(proc.stdout)


def query_jobs(job_ids: Sequence[int], *, timeout: float = 30.0, env: Mapping[str, str] | None = None,
               runner: Runner = subprocess.run) -> dict[int, SlurmJobState]:
    """squeue for several jobs in one call; jobs Slurm no longer knows are absent."""
    if not job_ids:
        return {}
    proc = run_slurm(squeue_argv(job_ids), timeout=timeout, env=env, runner=runner)
    if proc.returncode != 0:
        if _INVALID_JOB in proc.stderr:
            return {}  # squeue says so only when none of the ids is known
        raise SlurmError(f"squeue failed: {_first_error(proc.stderr)}", argv=squeue_argv(job_ids))
    return parse_squeue(proc.stdout)


def job_state(job_id: int, *, sacct_completion: bool = False, timeout: float = 30.0,
              env: Mapping[str, str] | None = None,
              runner: Runner = subprocess.run) -> SlurmJobState | None:
    """Everything Slurm still knows about one job: ``scontrol show job`` while
    slurmctld remembers it, then ``sacct``; None when neither does."""
    proc = run_slurm(scontrol_argv(job_id), timeout=timeout, env=env, runner=runner)
    if proc.returncode == 0:
        st = parse_scontrol_job(proc.stdout)
        if st is not None:
            return st
    elif _INVALID_JOB not in proc.stderr:
        raise SlurmError(f"scontrol show job {job_id} failed: {_first_error(proc.stderr)}",
                         argv=scontrol_argv(job_id))
    argv = sacct_argv(job_id, completion=sacct_completion)
    proc = run_slurm(argv, timeout=timeout, env=env, runner=runner)
    if proc.returncode != 0:
        if "accounting storage is disabled" in proc.stderr:
            return None
        raise SlurmError(f"sacct failed: {_first_error(proc.stderr)}", argv=argv)
    return parse_sacct(proc.stdout, job_id)


def find_job_by_name(name: str, *, timeout: float = 30.0, env: Mapping[str, str] | None = None,
                     runner: Runner = subprocess.run) -> list[int]:
    """Ids of the jobs named ``name`` that slurmctld knows, finished ones
    within MinJobAge included (after an sbatch that timed out: was the
    attempt queued after all?)."""
    argv = ["squeue", "--noheader", "--states=all", f"--name={name}", "--format=%i"]
    proc = run_slurm(argv, timeout=timeout, env=env, runner=runner)
    if proc.returncode != 0:
        raise SlurmError(f"squeue --name failed: {_first_error(proc.stderr)}", argv=argv)
    return [int(x) for x in proc.stdout.split() if x.isdigit()]


def cancel(job_id: int, *, term_only: bool, timeout: float = 30.0, env: Mapping[str, str] | None = None,
           runner: Runner = subprocess.run) -> bool:
    """``scancel`` (``term_only``: the SIGTERM request). False when Slurm says
    the job already ended; raises on other refusals."""
    argv = scancel_term_argv(job_id) if term_only else scancel_argv(job_id)
    proc = run_slurm(argv, timeout=timeout, env=env, runner=runner)
    if proc.returncode == 0:
        return True
    if "already completing or completed" in proc.stderr or _INVALID_JOB in proc.stderr:
        return False
    raise SlurmError(f"scancel {job_id} failed: {_first_error(proc.stderr)}", argv=argv)


__all__ = [
    "BATCH_SCRIPT", "SlurmError", "SlurmJobState", "SlurmOptions", "SlurmUnavailable", "Submission",
    "build_submission", "cancel", "find_job_by_name", "job_state", "parse_exit_code",
    "parse_key_values", "parse_sacct", "parse_sbatch_parsable", "parse_scontrol_job",
    "parse_slurm_time", "parse_squeue", "parse_time_limit", "query_jobs", "run_slurm",
    "sacct_argv", "scancel_argv", "scancel_term_argv", "scontrol_argv", "squeue_argv", "submit",
]
