"""The log pane's model and hostile log text.

Log lines are data: markup-like text, escape sequences and invalid UTF-8
written by a real stage must show as plain text and crash nothing.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

from eagle3tui.config import load_config
from eagle3tui.supervisor.protocol import send_command
from eagle3tui.supervisor.lock import lock_held
from eagle3tui.frontends.tui.app import EagleApp, skip_to_tail
from eagle3tui.frontends.tui.format import alert_text
from eagle3tui.frontends.tui.logmodel import LogModel

HOSTILE = textwrap.dedent("""
    import sys
    out = sys.stdout.buffer
    out.write(b"A [bold]x[/] then [/] and [link=https://evil.example]click[/link]\\n")
    out.write(b"colour \\x1b[31mred\\x1b[0m and title \\x1b]0;pwned\\x07 done\\n")
    out.write(b"bad utf8 \\xff\\xfe\\xc3( end\\n")
    out.write(b"[red on white]not a style[/red on white] \\x07bell\\n")
    out.write(b"progress 10%\\rprogress 50%\\rprogress 100%\\n")
    out.flush()
""")


def test_hostile_lines_from_a_real_stage_show_as_plain_text(tmp_path: Path) -> None:
    import asyncio

    (tmp_path / "evil.py").write_text(HOSTILE)
    (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
        [pipeline]
        name = "evil [bold]pipe[/]"
        [[stage]]
        name = "evil"
        command = ["{sys.executable}", "evil.py"]
        """))
    cfg = load_config(tmp_path / "pipeline.toml")
    reply = send_command(cfg, "start", ["evil"])
    assert reply["ok"], reply

    async def run() -> list[str]:
        app = EagleApp(cfg, poll_s=0.1, log_poll_s=0.05)
        async with app.run_test(size=(100, 30)) as pilot:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(app.logview.model.lines) < 5:
                await pilot.pause(0.05)
            texts = [ln.text for ln in app.logview.model.lines]
            # Rendered rows carry the same plain text (the widget adds no markup parsing).
            rows = ["".join(seg.text for seg in app.logview.render_line(y))
                    for y in range(app.logview.size.height)]
            assert any("A [bold]x[/] then [/] and [link=https://evil.example]click[/link]" in r
                       for r in rows), rows
            assert not any("\x1b" in r or "\x07" in r for r in rows)
            # The title shows the pipeline name literally too.
            assert "evil [bold]pipe[/]" in str(app.title_bar.render())
            app.save_screenshot(str(tmp_path / "shot.svg"))
            return texts

    texts = asyncio.run(run())
    assert texts == [
        "A [bold]x[/] then [/] and [link=https://evil.example]click[/link]",
        "colour red and title  done",
        "bad utf8 \ufffd\ufffd\ufffd( end",
        "[red on white]not a style[/red on white]  bell",
        "progress 100%",
    ]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and lock_held(cfg.state_dir):
        time.sleep(0.1)


def test_carriage_return_bars_collapse_to_their_latest_state() -> None:
    m = LogModel()
    m.add(1, "epoch 1")
    for pct in range(0, 101, 10):
        m.add(2, f"train {pct}%|{'#' * (pct // 10)}|")
    m.add(3, "epoch 2")
    assert [(ln.no, ln.text) for ln in m.lines] == [
        (1, "epoch 1"), (2, "train 100%|##########|"), (3, "epoch 2")]


def test_model_is_bounded_and_keeps_line_numbers() -> None:
    m = LogModel(max_lines=100)
    fell = sum(m.add(i, f"line {i}") for i in range(1, 1001))
    assert len(m.lines) == 100 and fell == 900 and m.dropped == 900
    assert m.lines[0].no == 901
    assert m.index_of(950) == 49
    assert m.index_of(5) == 0  # older than the buffer: the first kept line


def test_filters_and_search() -> None:
    m = LogModel()
    m.add(1, "loading")
    m.add(2, "UserWarning: x", "warning")
    m.add(3, "CUDA out of memory", "fatal")
    m.add(4, "ignored error", "benign")
    m.add(5, "done loading")
    m.set_filter("events")
    assert [ln.no for ln in m.view] == [2, 3, 4]
    m.set_filter("fatal")
    assert [ln.no for ln in m.view] == [3]
    assert m.next_filter() == "all"
    assert m.search("LOADING", -1) == 0
    assert m.search("loading", 0) == 4
    assert m.search("loading", 4) == 0  # wraps
    assert m.search("loading", 4, backwards=True) == 0
    assert m.search("nothing here", 0) is None


def test_alert_text_is_never_markup() -> None:
    t = alert_text({"level": "critical", "kind": "fatal-log-event", "stage": "s[/]",
                    "attempt": 1, "message": "[bold]boom[/] \x1b[31m",
                    "details": {"explanation": "[link=x]y[/link]", "line": 7}, "time": 0})
    assert "[bold]boom[/]" in t.plain and "[link=x]y[/link]" in t.plain
    assert "\x1b" not in t.plain and "[line 7]" in t.plain


def test_skip_to_tail_counts_the_skipped_lines(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    header = b"previous attempt\n" * 3
    body = b"".join(f"line {i}\n".encode() for i in range(1, 20001))
    p.write_bytes(header + body)
    offset, before = skip_to_tail(str(p), len(header), keep=1000)
    with open(p, "rb") as f:
        f.seek(offset)
        first = f.readline()
    assert first == f"line {before + 1}\n".encode()
    assert p.stat().st_size - offset <= 1000


def test_sparkline_and_bar_scale() -> None:
    from eagle3tui.frontends.tui.format import bar, sparkline

    assert sparkline([50.0] * 4, 10, top=100.0) == "▅▅▅▅"
    assert sparkline([0.0, 100.0], 10, top=100.0) == "▁█"
    assert sparkline(list(range(100)), 5)[-1] == "█" and len(sparkline(list(range(100)), 5)) == 5
    assert bar(0.5, 4) == "██··" and bar(1.0, 4) == "████" and bar(None, 4) == ""
