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

from eagle3tui.config import PipelineConfig, load_config
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


# -- a message on a \r progress line (issue 16, finding 12) -------------------------

ROOT = Path(__file__).resolve().parent.parent
SIGTERM_MESSAGE = "received SIGTERM; stopping at the next safe point"

# The shipped pipeline's own progress bar, SIGTERM flag and log line: the bar's
# frames end without a newline, so the handler's message is glued to the last one.
BAR_UNTIL_SIGTERM = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from pipeline.common import install_sigterm_flag, log, progress
flag = install_sigterm_flag()
bar = progress(2500, desc="train", unit="step", mininterval=0.05)
step = 0
while step < 2500:
    time.sleep(0.02)
    bar.update(1)
    step += 1
    if flag.is_set() and step % 25 == 0:  # the safe point: a checkpoint boundary
        break
bar.close()
log(f"stopped at step {{step}}")
"""

# A bar whose last frame is followed by a message and no newline, still running.
BAR_THEN_MESSAGE_NO_NEWLINE = f"""
import sys, time
for i in range(0, 45, 5):
    sys.stderr.write(f"\\r{{i:3d}}%|{{'#' * (i // 10):10}}| {{i * 25}}/2500 [00:0{{i // 10}}<00:50, 43.00it/s]")
    sys.stderr.flush()
    time.sleep(0.01)
sys.stderr.write({SIGTERM_MESSAGE!r})
sys.stderr.flush()
time.sleep(120)
"""


def _one_stage(tmp_path: Path, script: str) -> PipelineConfig:
    (tmp_path / "train.py").write_text(script)
    (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
        [[stage]]
        name = "train"
        command = ["{sys.executable}", "train.py"]
        stop_grace = "10s"
        """))
    return load_config(tmp_path / "pipeline.toml")


def _screen_rows(app: EagleApp) -> list[str]:
    return ["".join(seg.text for seg in app.logview.render_line(y))
            for y in range(app.logview.size.height)]


def _wait_gone(cfg: PipelineConfig) -> None:
    from eagle3tui.view import load_view

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (load_view(cfg).active() or lock_held(cfg.state_dir)):
        time.sleep(0.1)


def test_sigterm_message_glued_to_a_bar_is_its_own_row_in_the_pane_and_in_logs(
        tmp_path: Path) -> None:
    import asyncio
    import re
    import subprocess

    cfg = _one_stage(tmp_path, BAR_UNTIL_SIGTERM)
    assert send_command(cfg, "start", ["train"])["ok"]
    cli = [sys.executable, "-m", "eagle3tui", "--config", str(cfg.path)]
    log_path = cfg.state_dir / "logs" / "train.log"
    follow = None
    try:
        async def run() -> tuple[list[str], list[str]]:
            app = EagleApp(cfg, poll_s=0.1, log_poll_s=0.05)
            async with app.run_test(size=(80, 24)) as pilot:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not any(
                        "/2500" in ln.text for ln in app.logview.model.lines):
                    await pilot.pause(0.05)
                nonlocal follow
                follow = subprocess.Popen(cli + ["logs", "train", "-f"], stdout=subprocess.PIPE,
                                          text=True)
                assert send_command(cfg, "stop", ["train"])["ok"]
                while time.monotonic() < deadline and not any(
                        "stopped at step" in ln.text for ln in app.logview.model.lines):
                    await pilot.pause(0.05)
                await pilot.pause(0.3)
                return [ln.text for ln in app.logview.model.lines], _screen_rows(app)

        rows, screen = asyncio.run(run())
        data = log_path.read_bytes()
        # The scenario happened: the message is glued to a bar frame in the file.
        assert re.search(rb"/s\]\[[-\d: ]+\] " + SIGTERM_MESSAGE.encode(), data), data[-400:]
        # The pane: the bar's last frame, then the message as a row of its own, on screen at 80 columns.
        msg = next(i for i, r in enumerate(rows) if r.endswith(SIGTERM_MESSAGE))
        assert rows[msg].startswith("[") and "/2500" not in rows[msg], rows
        assert "/2500" in rows[msg - 1], rows
        assert any(r.rstrip().endswith(SIGTERM_MESSAGE) for r in screen), screen
        # `logs` and `logs -f`: the same, one line each.
        out = subprocess.run(cli + ["logs", "train"], capture_output=True, text=True,
                             timeout=60, check=True).stdout.splitlines()
        assert follow is not None
        followed = follow.communicate(timeout=60)[0].splitlines()
        for lines in (out, followed):
            i = next(i for i, ln in enumerate(lines) if SIGTERM_MESSAGE in ln)
            assert re.fullmatch(r"\[[-\d: ]+\] " + SIGTERM_MESSAGE, lines[i]), lines[i]
            assert "/2500" in lines[i - 1] and lines[i - 1].count("/2500") == 1, lines[i - 1]
            assert any(ln.startswith("[") and "stopped at step" in ln for ln in lines[i + 1:])
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
        send_command(cfg, "stop", ["train"])
        _wait_gone(cfg)


def test_message_after_the_last_frame_shows_before_its_newline(tmp_path: Path) -> None:
    import asyncio

    cfg = _one_stage(tmp_path, BAR_THEN_MESSAGE_NO_NEWLINE)
    assert send_command(cfg, "start", ["train"])["ok"]
    try:
        async def run() -> tuple[list[str], list[str]]:
            app = EagleApp(cfg, poll_s=0.1, log_poll_s=0.05)
            async with app.run_test(size=(80, 24)) as pilot:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not any(
                        ln.text == SIGTERM_MESSAGE for ln in app.logview.model.lines):
                    await pilot.pause(0.05)
                await pilot.pause(0.2)
                return [ln.text for ln in app.logview.model.lines], _screen_rows(app)

        rows, screen = asyncio.run(run())
        # The stage is still running and its line has no newline yet: the
        # pane shows what a terminal shows, with the message on a row of its own.
        assert rows[-2:] == [" 40%|####      | 1000/2500 [00:04<00:50, 43.00it/s]",
                             SIGTERM_MESSAGE], rows
        assert any(r.rstrip().endswith(SIGTERM_MESSAGE) for r in screen), screen
    finally:
        send_command(cfg, "stop", ["train"])
        _wait_gone(cfg)


def test_redrawn_line_rows() -> None:
    from eagle3tui.frontends.redraw import shown_rows

    def frame(i: int) -> str:
        return f"{i:3d}%|{'#' * (i // 10):10}| {i * 25}/2500 [00:0{i // 10}<00:50, 43.00it/s]"

    bar = "".join("\r" + frame(i) for i in range(0, 50, 5))
    assert shown_rows(bar) == [frame(45)]
    assert shown_rows(bar + "stopping") == [frame(45), "stopping"]  # glued to the frame
    assert shown_rows(bar + "\rstopping") == [frame(45), "stopping"]  # after a \r
    # A message the bar drew over stays, the bar shows its latest frame.
    assert shown_rows("\r" + frame(5) + "\rstopping\r" + frame(10) + "\r" + frame(15)) == [
        "stopping", frame(15)]
    # A spinner or counter redrawn without a progress frame: its last state only.
    assert shown_rows("load |\rload /\rload -") == ["load -"]
    assert shown_rows("plain [00:01<00:02, 1.0it/s]glued") == [
        "plain [00:01<00:02, 1.0it/s]glued"]  # no \r: the line as written
    # Bounded: a line of many messages keeps the last three and the frame.
    many = "".join(f"\rnote {i}" for i in range(100)) + "\r" + frame(45)
    assert shown_rows(many) == ["note 97", "note 98", "note 99", frame(45)]


# -- long lines: left/right when cut, `w` to wrap, kept across stages ------------------

async def test_wrap_toggle_is_kept_and_cut_lines_scroll_sideways(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_tui_snapshots import LONG_LINES, build_long_lines_state

    app = build_long_lines_state(tmp_path / "p")

    def rows() -> list[str]:
        view = app.logview
        return ["".join(seg.text for seg in view.render_line(y)) for y in range(view.size.height)]

    def title() -> str:
        return str(app.log_title.render())

    async with app.run_test(size=(80, 24)) as pilot:
        view = app.logview
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                ln.text == LONG_LINES[-1] for ln in view.model.lines):
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        # Cut: the NCCL line's end is off screen; right scrolls sideways to it.
        assert not any("END-OF-LINE" in r for r in rows())
        view.focus()
        for _ in range(40):
            await pilot.press("right")
        await pilot.pause(0.1)
        assert view.scroll_x > 0 and "from column" in title(), title()
        assert any("END-OF-LINE" in r for r in rows()), rows()
        # w wraps: the whole line is on screen, sideways scrolling is gone.
        await pilot.press("w")
        await pilot.pause(0.1)
        assert view.wrap and view.scroll_x == 0 and "wrapped" in title()
        assert any("END-OF-LINE" in r for r in rows()), rows()
        # Another stage's log is wrapped too, and coming back keeps it wrapped.
        app.table.focus()
        await pilot.press("down")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                app.log_target and app.log_target.stage == "regenerate" and view.model.lines):
            await pilot.pause(0.05)
        assert view.wrap and "wrapped" in title()
        await pilot.press("up")
        while time.monotonic() < deadline and not any(
                ln.text == LONG_LINES[-1] for ln in view.model.lines):
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        assert view.wrap and any("END-OF-LINE" in r for r in rows())
        # And w again cuts the lines once more.
        await pilot.press("w")
        await pilot.pause(0.1)
        assert not view.wrap and "w: wrap" in title()
        assert not any("END-OF-LINE" in r for r in rows())
        assert any(r.rstrip().endswith("…") for r in rows())

