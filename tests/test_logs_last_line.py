"""A stage whose last line has no newline: that line is read, judged and named.

Before, the follower kept an unfinished line waiting for its newline, so an
error printed without one at the very end (``printf``, a C library's abort
message) was neither alerted nor the failure's cause.
"""

from __future__ import annotations

from conftest import wait_for

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def test_a_last_line_without_newline_is_the_failures_cause(pipeline) -> None:
    pipeline.write(f"""
        [[stage]]
        name = "a"
        command = ["sh", "-c", "echo starting; printf '{OOM}'; exit 3"]
        """)
    pipeline.cli("start", "a", "--wait")
    failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"],
                      timeout=20, what="the failure alert")
    assert OOM in failed[0]["message"], failed[0]
    fatal = [a for a in pipeline.alerts() if a["kind"] == "fatal-log-event"]
    assert fatal and fatal[0]["details"]["line"] == 3, fatal  # the file's line: the header is line 1
