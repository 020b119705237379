"""The state of a Slurm attempt, read from its run record alone.

Used by ``state.record_state`` for records that ``executors.SlurmExecutor``
wrote: the local rule ("alive while its pid runs") cannot see another node,
so the last state Slurm reported (kept in ``rec.extra["slurm"]`` by the
driver) stands in. It returns state *names* ("queued", "running") so that it
needs nothing from ``state`` (which imports it).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Callable

from eagle3tui.config import StageConfig
from eagle3tui.supervisor import slurm
from eagle3tui.supervisor.records import RunRecord

SLURM = "slurm"

#: How long a finished job may lack its result file before Slurm's word is
#: taken (the file travels over shared storage, whose caches lag); also how
#: long a result waits for Slurm's verdict on the job.
RESULT_GRACE_S = 10.0

# StageState values (state.py imports this module, so not the enum itself).
QUEUED, RUNNING, FAILED = "queued", "running", "failed"


def short_duration(seconds: float) -> str:
    """``45s``, ``12m``, ``3h05m``."""
    s = int(max(0, seconds))
    if s < 90:
        return f"{s}s"
    if s < 5400:
        return f"{round(s / 60)}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def slurm_record_state(rec: RunRecord, stage: StageConfig,
                       local: Callable[[RunRecord, StageConfig], tuple[str, str, str]]
                       ) -> tuple[str, str, str]:
    """A Slurm attempt's (state, reason, hint) from its record alone.

    ``local`` is the rule for an attempt on this host, applied to a finished
    attempt (exit code, signal, stop requested...); its state names compare
    equal to the ones returned here.
    """
    info = rec.extra.get(SLURM, {})
    now = time.time()
    if rec.finished:
        if "final" not in info and not rec.error and now - (rec.ended_at or now) < 2 * RESULT_GRACE_S:
            return RUNNING, "ending: waiting for Slurm's word on the job", ""
        state, reason, hint = local(rec, stage)
        final = info.get("final")
        if state == FAILED and final not in (None, "COMPLETED", "FAILED") and not hint:
            hint = slurm.SlurmJobState(job_id=int(info.get("job_id") or 0), state=str(final)).describe()
        return state, reason, hint
    if rec.error:
        return FAILED, rec.error, ""
    jid = info.get("job_id")
    job_state = info.get("state")
    stale = ""
    if info.get("unreachable"):
        stale = f"; Slurm unreachable, last known state shown ({info['unreachable'][:80]})"
    if jid is None:
        return QUEUED, f"submitting to Slurm as {info.get('job_name')}{stale}", ""
    if job_state is None or job_state in slurm.PENDING_STATES:
        if rec.stop_requested_at:
            return QUEUED, "stopping", ""
        why = info.get("reason")
        text = f"Slurm job {jid} queued" + (f" ({why})" if why and why != "None" else "")
        start = info.get("start")
        if start:
            left = start - now
            clock = datetime.fromtimestamp(start).strftime("%H:%M:%S")
            text += (f", expected start {clock} (in {short_duration(left)})" if left > 0
                     else f", expected start {clock} (overdue)")
        return QUEUED, text + stale, ""
    if rec.stop_requested_at:
        return RUNNING, "stopping", ""
    if job_state in slurm.TERMINAL_STATES:
        return RUNNING, f"ending: Slurm says {job_state}, waiting for the result file{stale}", ""
    where = f" on {info['nodes']}" if info.get("nodes") else ""
    gpus = info.get("gpu_indices")
    if gpus:
        where += f", GPUs {','.join(str(g) for g in gpus)}"
    return RUNNING, f"Slurm job {jid}{where}{stale}", ""

