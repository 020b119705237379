"""Progress parsing: tqdm shapes (incl. real captured output), rich, trainer, metrics."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from eagle3tui.logs.follower import LogFollower
from eagle3tui.logs.progress import parse_clock, parse_progress

FIX = Path(__file__).parent / "fixtures" / "logs"


def test_vllm_shards_bar() -> None:
    u = parse_progress("Loading safetensors checkpoint shards:   6% Completed | 4/64 [01:33<27:17, 27.30s/it]")
    assert u is not None
    assert (u.desc, u.n, u.total, u.elapsed_s, u.remaining_s, u.percent) == (
        "Loading safetensors checkpoint shards", 4, 64, 93, 1637, 6
    )
    assert u.rate == pytest.approx(1 / 27.30)
    assert u.unit == "it"


def test_processed_prompts_with_postfix() -> None:
    u = parse_progress(
        "Processed prompts:  45%|████▌     | 450/1000 [00:30<00:36, 15.2it/s, est. speed input: 1234.56 toks/s, output: 456.78 toks/s]"
    )
    assert u is not None
    assert (u.desc, u.n, u.total, u.elapsed_s, u.remaining_s, u.rate) == ("Processed prompts", 450, 1000, 30, 36, 15.2)


def test_no_total_and_unknown_rate() -> None:
    u = parse_progress("Processing: 123it [00:01, 99.5it/s]")
    assert u is not None and (u.n, u.total, u.rate, u.remaining_s) == (123, None, 99.5, None)
    u = parse_progress("Loading: 0%|          | 0/64 [00:00<?, ?it/s]")
    assert u is not None and (u.n, u.total, u.rate, u.remaining_s) == (0, 64, None, None)


def test_unit_scaling_and_postfix_metrics() -> None:
    u = parse_progress("train:  12%|█▏        | 1.2k/10.0k [01:02<07:40, 19.1it/s, loss=1.23, lr=2e-05]")
    assert u is not None
    assert (u.n, u.total) == (1200, 10000)
    assert u.metrics == {"loss": 1.23, "lr": 2e-05}
    u = parse_progress("download: 100%|██████████| 5.00M/5.00M [00:02<00:00, 2.41MB/s]")
    assert u is not None and u.unit == "B" and u.rate == pytest.approx(2.41e6) and u.total == 5e6
    u = parse_progress("x: 100%|##########| 5/5 [00:12<00:00,  2.50s/B]")
    assert u is not None and u.unit == "B" and u.rate == pytest.approx(0.4)


def test_hours_in_clock() -> None:
    assert parse_clock("1:02:03") == 3723
    assert parse_clock("?") is None
    u = parse_progress("Epoch 0:   6%|██        | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, v_num=95nc]")
    assert u is not None and u.elapsed_s == 6 * 3600 + 28 * 60 + 43 and u.remaining_s == 94 * 3600 + 39 * 60 + 17


def test_rich_bar() -> None:
    u = parse_progress("Training ━━━━━━━━━━━━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━ 45/100 0:00:12 0:00:30")
    assert u is not None and (u.desc, u.n, u.total, u.elapsed_s, u.remaining_s) == ("Training", 45, 100, 12, 30)
    u = parse_progress("Downloading ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━  62% -:--:--")
    assert u is not None and u.percent == 62 and u.remaining_s is None


def test_trainer_dict_step_and_metrics() -> None:
    u = parse_progress("{'loss': 1.2, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.5}")
    assert u is not None and u.source == "trainer" and u.n == 0.5 and u.metrics["loss"] == 1.2
    u = parse_progress("[step 100/1000] loss=1.23 lr=2e-5 tok/s=4500")
    assert u is not None and (u.source, u.n, u.total) == ("step", 100, 1000)
    assert u.metrics["loss"] == 1.23
    u = parse_progress("Epoch 2/3")
    assert u is not None and (u.desc, u.n, u.total) == ("epoch", 2, 3)
    u = parse_progress("global_step=40 loss=0.91 grad_norm=1.5")
    assert u is not None and u.source == "metrics" and u.n == 40
    assert parse_progress("max_model_len=4096 tensor_parallel_size=8") is None  # config, not metrics


def test_vllm_throughput_line() -> None:
    u = parse_progress(
        "INFO 03-01 10:00:00 [loggers.py:116] Engine 000: Avg prompt throughput: 1234.5 tokens/s, "
        "Avg generation throughput: 456.7 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%"
    )
    assert u is not None and u.source == "throughput" and u.rate == 456.7 and u.unit == "tokens"
    assert u.metrics["Running"] == 12


def test_plain_text_is_not_progress() -> None:
    for s in ["hello world", "INFO starting server", "[WARN] x", "a/b/c path"]:
        assert parse_progress(s) is None, s


def test_real_captured_tqdm_output() -> None:
    """Every \\r segment of real tqdm output parses; final values are right."""
    lines = LogFollower(FIX / "captured_tqdm.log").poll()
    bars = [ln for ln in lines if "|" in ln.text or "it [" in ln.text]
    assert len(bars) > 50
    parsed = [parse_progress(ln.text) for ln in bars]
    assert all(p is not None for p in parsed), [ln.text for ln, p in zip(bars, parsed) if p is None][:3]
    finals = {p.desc: p for p, ln in zip(parsed, bars) if not ln.is_update}
    assert finals["Processed prompts"].n == 40 and finals["Processed prompts"].total == 40
    assert finals["slow shards"].rate is not None and finals["slow shards"].rate < 1  # printed as s/it
    assert finals["streaming"].total is None and finals["streaming"].n == 25
    assert finals["bytes"].unit == "B" and finals["bytes"].metrics["loss"] == 1.25


def test_twenty_concatenated_updates_parse_fast() -> None:
    one = "Processed prompts:  45%|████▌     | 450/1000 [00:30<00:36, 15.2it/s, est. speed input: 1234.56 toks/s]"
    for count in (10, 20, 200):
        line = "".join(one for _ in range(count))
        t = time.perf_counter()
        u = parse_progress(line)
        dt = time.perf_counter() - t
        assert u is not None and u.n == 450
        assert dt < 0.010, (count, dt)


@pytest.mark.parametrize(
    "hostile",
    [
        "[" * 50_000,
        "1" * 50_000 + "/" + "2" * 50_000 + " [00:00<00:00, 1it/s]",
        "step " * 20_000,
        "a=" * 30_000 + "1",
        "{'loss': " * 1000 + "}",
        "━ " * 30_000,
        "x: " + "%|" * 30_000 + "]",
        "'" + "a" * 50_000 + "': 1",
    ],
)
def test_hostile_inputs_stay_linear(hostile: str) -> None:
    t = time.perf_counter()
    parse_progress(hostile)
    assert time.perf_counter() - t < 0.5
