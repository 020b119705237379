"""A finished pipeline raises one alert that reaches the ``[alerts] command``.

A real ``--watch --run-all`` with a real recording alert command at the default
``min_level`` (warning): the command receives exactly one ``pipeline-complete``
alert, which quotes the last stage's result lines; a second run-all with
nothing to do (a new driver) announces nothing again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from eagle3tui.supervisor.completion import result_text

RECORDER = "import sys\nopen(sys.argv[1], 'a').write(sys.stdin.read().replace('\\n', ' ') + '\\n')\n"
# The last stage prints a progress bar, its result and a closing line.
EVAL = ("import sys\n"
        "for i in range(1, 4):\n"
        "    sys.stdout.write(f'\\reval: {i}/3 [00:0{i}<00:00]'); sys.stdout.flush()\n"
        "print()\n"
        "print('evaluate: K=3 acceptance length 2.41 (eagle3), 1.20 (ngram)')\n"
        "print('evaluate: K=7 acceptance length 2.87 (eagle3), 1.23 (ngram)')\n"
        "print('evaluate: 4 prompts in 1.0s')\n")


def _pipeline(pipeline, result: bool = True) -> Path:
    root = pipeline.root
    (root / "recorder.py").write_text(RECORDER)
    (root / "eval.py").write_text(EVAL)
    sent = root / "sent.jsonl"
    pipeline.write(f"""
        [pipeline]
        name = "done"

        [alerts]
        command = ["{sys.executable}", "{root / 'recorder.py'}", "{sent}"]

        [[stage]]
        name = "prep"
        command = ["{sys.executable}", "-c", "print('prepared')"]

        [[stage]]
        name = "evaluate"
        depends_on = ["prep"]
        command = ["{sys.executable}", "eval.py"]
        {'result = "acceptance length"' if result else ''}
    """)
    return sent


def _sent(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_one_completion_alert_reaches_the_command_with_the_result(pipeline) -> None:
    sent = _pipeline(pipeline)
    proc = pipeline.cli("--watch", "--run-all", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [a for a in _sent(sent) if a["kind"] == "pipeline-complete"]
    assert len(done) == 1, _sent(sent)
    msg = done[0]["message"]
    assert msg.startswith("pipeline complete: 2 stage(s) succeeded in "), msg
    assert "evaluate: evaluate: K=3 acceptance length 2.41 (eagle3), 1.20 (ngram); " \
           "evaluate: K=7 acceptance length 2.87 (eagle3), 1.23 (ngram)" in msg, msg
    assert done[0]["details"]["last_stage"] == "evaluate"
    # Stage successes stay below the default min_level: the completion is the one page.
    assert [a["kind"] for a in _sent(sent)] == ["pipeline-complete"], _sent(sent)
    assert "pipeline-complete" in proc.stdout
    # In the alerts file once too; a new driver with nothing to do says nothing again.
    again = pipeline.cli("--watch", "--run-all", timeout=120)
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    assert len([a for a in _sent(sent) if a["kind"] == "pipeline-complete"]) == 1
    assert len([a for a in pipeline.alerts() if a["kind"] == "pipeline-complete"]) == 1


def test_without_a_result_pattern_the_last_line_is_quoted(pipeline) -> None:
    sent = _pipeline(pipeline, result=False)
    assert pipeline.cli("--watch", "--run-all", timeout=120).returncode == 0
    done = [a for a in _sent(sent) if a["kind"] == "pipeline-complete"]
    assert len(done) == 1 and done[0]["message"].endswith("; evaluate: evaluate: 4 prompts in 1.0s"), done


def test_result_text_reads_the_attempts_own_lines(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_text("[eagle3tui] header of attempt 1\nold: acceptance length 9.99\n")
    offset = log.stat().st_size
    with open(log, "a") as f:
        f.write("[eagle3tui] header of attempt 2\nbar 1/2\rbar 2/2\nnew: acceptance length 1.50\n"
                "[eagle3tui] result {}\n")
    assert result_text(str(log), offset, "acceptance length") == "new: acceptance length 1.50"
    assert result_text(str(log), offset, None) == "new: acceptance length 1.50"
    assert result_text(str(tmp_path / "missing.log"), 0, None) == ""
