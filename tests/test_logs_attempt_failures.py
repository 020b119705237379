"""Several failures in one attempt: the page leads with the first and counts the rest.

A sweep whose trials die one after another of the same CUDA OOM (the harness catches each
trial's exception and starts the next one) ends on the last trial's OOM; the stage-failed
message leads with the first time that failure happened and counts the repeats. A failure
of another kind that the job went on after is counted, not led with.
"""

from __future__ import annotations

import time
from pathlib import Path

from eagle3tui.config import load_config
from eagle3tui.supervisor.driver import failure_message
from eagle3tui.supervisor.records import RunRecord
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {size}. GPU 0 has a total capacity of "
       "79.19 GiB of which 1.02 GiB is free.")


def _trial(n: int, size: str) -> list[str]:
    return [
        f"trial {n}: lr=3e-4 batch={64 * n}",
        *(f"trial {n} step {s}/200 loss=2.{s}" for s in range(1, 6)),
        "Traceback (most recent call last):",
        '  File "/w/sweep.py", line 88, in run_trial',
        "    loss.backward()",
        OOM.format(size=size),
    ]


class _Status:
    reason = "exit 1"
    hint = ""


def _fail(tmp_path: Path, lines: list[str]) -> str:
    """The stage-failed message of an attempt that wrote ``lines`` poll by poll and exited 1."""
    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "s"\ncommand = ["true"]\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    log = tmp_path / "s.log"
    log.write_text("")
    now = time.time()
    rec = RunRecord(stage="s", attempt=1, run_id="r1", argv=["true"], cwd=str(tmp_path), log=str(log),
                    launched_at=now - 600, started_at=now - 600, pid=1)
    (cfg.state_dir / "runs" / "s").mkdir(parents=True, exist_ok=True)
    watch = StageWatch(cfg.stage("s"), rec, cfg, cfg.state_dir, ruleset_for(cfg))
    with open(log, "a", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            f.write(line + "\n")
            f.flush()
            watch.poll(now + i * 0.01)  # as the driver reads a live log: a poll per line
    rec.exit_code, rec.ended_at = 1, now + 60
    watch.finish(rec)
    return failure_message(_Status(), watch.cause())


def test_a_sweep_whose_trials_die_of_the_same_oom_leads_with_the_first(tmp_path: Path) -> None:
    lines = _trial(1, "8.00 GiB") + _trial(2, "12.00 GiB") + _trial(3, "16.00 GiB")
    msg = _fail(tmp_path, lines)
    first_oom = lines.index(OOM.format(size="8.00 GiB")) + 1
    assert "Tried to allocate 8.00 GiB" in msg and f"(line {first_oom - 3}, " in msg, msg
    assert "the same failure 3 times in this attempt" in msg, msg
    assert "more fatal event" not in msg, msg  # the last trial's OOM is one of the three, not one more


def test_an_earlier_failure_of_another_kind_is_counted_not_led_with(tmp_path: Path) -> None:
    lines = ["[rank0]:[E1026 04:01:29.500973224 ProcessGroupNCCL.cpp:2573] NCCL error: unhandled system error",
             *(f"step {s}/200 loss=2.{s}" for s in range(1, 6)),
             *_trial(1, "8.00 GiB")]
    msg = _fail(tmp_path, lines)
    assert "Tried to allocate 8.00 GiB" in msg, msg
    assert "1 earlier fatal event it went on after (first: line 1," in msg, msg
