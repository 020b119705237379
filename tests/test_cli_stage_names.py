"""A stage name the pipeline does not have gets a "did you mean" on every command."""

from __future__ import annotations

import sys


def test_a_misspelt_stage_name_gets_a_did_you_mean(pipeline) -> None:
    pipeline.write(f"""
        [pipeline]
        name = "names"
        [[stage]]
        name = "evaluate"
        command = ["{sys.executable}", "-c", "pass"]
        [[stage]]
        name = "export"
        command = ["{sys.executable}", "-c", "pass"]
    """)
    for args in (("logs", "evalute"), ("start", "exprot"), ("restart", "evaluat"), ("stop", "evaluat")):
        proc = pipeline.cli(*args)
        assert proc.returncode == 2, proc
        want = "evaluate" if args[1].startswith("eva") else "export"
        assert f"no stage named {args[1]!r}" in proc.stderr, proc.stderr
        assert f"did you mean {want!r}?" in proc.stderr and "(stages: evaluate, export)" in proc.stderr, proc.stderr
