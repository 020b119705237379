"""A log that repeats itself is not activity: hung jobs that keep printing the
same wait still stall; progress, counters and idle servers do not.

Every line below is copied from a public thread (URL beside it); the tests
replay them on a clock they control, at the interval the thread shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import Pipeline, wait_for

from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.repeats import RepeatFilter
from eagle3tui.logs.rules import build_ruleset
from eagle3tui.telemetry.signals import GpuWitness

RULES = build_ruleset()
PY = json.dumps(sys.executable)

# vLLM V1's engine while a worker hangs, every 60 s.
# https://github.com/vllm-project/vllm-ascend/issues/3717
SHM = ("(EngineCore_DP0 pid=323240) INFO 12-09 11:{m:02d}:53 [shm_broadcast.py:466] No available shared memory "
       "broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing "
       "some time-consuming work (e.g. compilation).")
# The same, from several data-parallel engines interleaved (16 workers, distinct pids).
# https://github.com/vllm-project/vllm-ascend/issues/12725
SHM_DP = [
    "(EngineCore_DP4 pid=3431) INFO 07-21 21:{m:02d}:22 [shm_broadcast.py:705] No available shared memory broadcast "
    "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
    "time-consuming work (e.g. compilation, weight/kv cache quantization).",
    "(EngineCore_DP7 pid=3526) INFO 07-21 21:{m:02d}:22 [shm_broadcast.py:705] No available shared memory broadcast "
    "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
    "time-consuming work (e.g. compilation, weight/kv cache quantization).",
    "(EngineCore_DP0 pid=4318) INFO 07-21 21:{m:02d}:22 [shm_broadcast.py:705] No available shared memory broadcast "
    "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
    "time-consuming work (e.g. compilation, weight/kv cache quantization).",
    "(EngineCore_DP12 pid=3518) INFO 07-21 21:{m:02d}:22 [shm_broadcast.py:705] No available shared memory broadcast "
    "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
    "time-consuming work (e.g. compilation, weight/kv cache quantization).",
]
# torch's store barrier while a rank never comes, every 10 s.
# https://github.com/uzh-rpg/RVT/issues/18
BARRIER = ("[2023-07-16 13:17:{s:02d},147][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier "
           "to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, worker_count={n}, "
           "timeout=0:30:00)")
# A client retrying a server that never comes up, every 2 s (trl's GRPO client).
# https://github.com/huggingface/open-r1/issues/543 (and #568, unslothai/unsloth#2962: "Infinite retry")
RETRY = "2025-03-26 05:{m:02d}:{s:02d} - INFO - trl.extras.vllm_client - Server is not up yet. Retrying in 2.0 seconds..."
# A client polling for a server, its attempt counter advancing, every ~1 s.
# https://github.com/chatdoc-com/OCRFlux/issues/73
ATTEMPT = "2025-08-20 06:{m:02d}:{s:02d},458 - __main__ - WARNING - Attempt {n}: Please wait for vllm server to become ready..."
# An idle vLLM server's stats (nothing running or waiting), every 10 s.
# https://github.com/vllm-project/vllm/issues/8803
IDLE = ("INFO 10-21 14:42:{s:02d} metrics.py:345] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, "
        "CPU KV cache usage: 0.0%.")
# A server with a request running and nothing generated.
# https://github.com/vllm-project/vllm/issues/17972
STUCK_STATS = ("DEBUG 05-11 18:07:{s:02d} [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
               "generation throughput: 0.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, "
               "Prefix cache hit rate: 0.0%")
# The seed run's checkpoint load: a bar that advances every ~30 s.
SEED = Path(__file__).parent / "fixtures/logs/issues/seed_extraction.log"


class Replay:
    """A monitor over a log the test appends to, on the test's clock."""

    def __init__(self, tmp_path: Path, floor_s: float, **kw: object) -> None:
        self.path = tmp_path / "stage.log"
        self.path.write_text("")
        self.mon = StageLogMonitor(self.path, rules=RULES, stall_floor_s=floor_s, started_at=0.0, **kw)
        self.stalls: list = []

    def at(self, t: float, *lines: str, gpu: GpuWitness | None = None) -> None:
        if lines:
            with open(self.path, "a") as f:
                f.write("".join(line + "\n" for line in lines))
        self.mon.poll(now=t)
        self.stalls += [(t, ev) for ev in self.mon.check(now=t, gpu=gpu)]


def test_vllm_shm_broadcast_every_minute_stalls(tmp_path: Path) -> None:
    r = Replay(tmp_path, floor_s=300)
    for i in range(12):  # twelve minutes of the same wait
        r.at(60.0 * (i + 1), SHM.format(m=(25 + i) % 60))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]
    t, ev = r.stalls[0]
    assert t == 60.0 * 7  # the first line at 60 s was news; 360 s later nothing was
    assert ev.text.startswith("Stalled: no news for 6:00 (limit 5:00): only 'No available shared memory broadcast")
    assert "repeated 6 times" in ev.text and "no progress seen yet" in ev.text
    assert ev.details["repeated"][0]["count"] == 6
    assert r.mon.last_output_at == 720.0 and r.mon.last_news_at == 60.0  # output went on; news did not


def test_interleaved_engines_are_one_wait(tmp_path: Path) -> None:
    r = Replay(tmp_path, floor_s=300)
    for i in range(8):
        r.at(60.0 * (i + 1), *(line.format(m=(17 + i) % 60) for line in SHM_DP))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]
    assert r.stalls[0][0] == 60.0 * 7


def test_barrier_waiting_for_a_rank_that_never_comes(tmp_path: Path) -> None:
    r = Replay(tmp_path, floor_s=60)
    for i in range(10):
        r.at(10.0 * (i + 1), BARRIER.format(s=(36 + 10 * i) % 60, n=1))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]
    assert "Waiting in store based barrier to initialize process group" in r.stalls[0][1].text


def test_client_retrying_forever_stalls(tmp_path: Path) -> None:
    r = Replay(tmp_path, floor_s=60)
    for i in range(60):
        t = 13 + 2 * i
        r.at(2.0 * (i + 1), RETRY.format(m=53 + t // 60, s=t % 60))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]
    assert r.stalls[0][0] == 64.0  # news at 2 s (the first line), then 60 s of the same retry
    assert "only 'Server is not up yet. Retrying in 2.0 seconds...' repeated 31 times" in r.stalls[0][1].text


def test_hang_suspected_with_flat_gpu_and_quiet_but_working_with_busy_gpu(tmp_path: Path) -> None:
    """The seed's operator ran nvidia-smi beside tail: the GPU witness still qualifies the verdict."""
    flat = GpuWitness(memory_changing=False, busy=False)
    busy = GpuWitness(memory_changing=False, busy=True)
    for gpu, rule in ((flat, "hang-suspected"), (busy, "quiet-but-working")):
        (tmp_path / rule).mkdir()
        r = Replay(tmp_path / rule, floor_s=300)
        for i in range(8):
            r.at(60.0 * (i + 1), SHM.format(m=25 + i), gpu=gpu)
        assert [ev.rule for _t, ev in r.stalls] == [rule]


def test_stuck_server_stats_stall_a_service(tmp_path: Path) -> None:
    """A request running and no token generated, the same stats every 10 s: no news."""
    r = Replay(tmp_path, floor_s=60, stage_kind="service")
    for i in range(10):
        r.at(10.0 * (i + 1), STUCK_STATS.format(s=(24 + 10 * i) % 60))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]


def test_repeated_text_is_made_safe(tmp_path: Path) -> None:
    """vLLM colours its worker prefix (the thread shows the escape as ^[):
    https://github.com/vllm-project/vllm/issues/5901 . What reaches the message is plain text."""
    line = ("\x1b[1;36m(VllmWorkerProcess pid=340358)\x1b[0;0m WARNING 08-28 14:16:50 shm_broadcast.py:404] "
            "No available block found in 60 second.\x1b]0;owned\x07")
    r = Replay(tmp_path, floor_s=120)
    for i in range(5):
        r.at(60.0 * (i + 1), line)
    (_t, ev), = r.stalls
    assert "\x1b" not in ev.text and "\x07" not in ev.text
    assert "only 'No available block found in 60 second." in ev.text


# -- counter-cases: output that is news --------------------------------------


def test_advancing_attempt_counter_is_news(tmp_path: Path) -> None:
    r = Replay(tmp_path, floor_s=30)
    for i in range(120):
        n = 212 + i
        r.at(1.0 * (i + 1), ATTEMPT.format(m=30 + (55 + i) // 60, s=(55 + i) % 60, n=n))
    assert r.stalls == []


def test_idle_server_stats_are_not_a_hang(tmp_path: Path) -> None:
    r = Replay(tmp_path, floor_s=60, stage_kind="service")
    for i in range(30):
        r.at(10.0 * (i + 1), IDLE.format(s=(25 + 10 * i) % 60))
    assert r.stalls == []


def test_barrier_filling_is_news(tmp_path: Path) -> None:
    """The count against the world size moving is news. No thread I found shows
    the count moving, so this takes the RVT line with worker_count 1, then 2:
    torch logs the barrier's count every 10 s (https://github.com/pytorch/pytorch/pull/98000)."""
    r = Replay(tmp_path, floor_s=60)
    for i in range(5):
        r.at(10.0 * (i + 1), BARRIER.format(s=(36 + 10 * i) % 60, n=1))
    r.at(55.0, BARRIER.format(s=31, n=2))  # the second rank arrives
    for i in range(4):
        r.at(60.0 + 10 * i, BARRIER.format(s=(36 + 10 * i) % 60, n=2))
    assert r.stalls == []
    assert r.mon.last_news_at == 55.0


def test_advancing_load_bar_is_news(tmp_path: Path) -> None:
    """The seed run's shard bar: 1/64 ... 4/64, ~30 s apart, floor 60 s."""
    r = Replay(tmp_path, floor_s=60)
    bar = [line for line in SEED.read_text().splitlines() if "Loading safetensors" in line]
    assert len(bar) >= 4
    for i, line in enumerate(bar):
        r.at(30.0 * (i + 1), line)
    assert r.stalls == []
    assert r.mon.last_news_at == 30.0 * len(bar)


def test_bar_redrawn_at_the_same_count_is_not_progress(tmp_path: Path) -> None:
    """vllm-ascend 3717's bar sat at 0/4 while the engine printed its wait:
    a redraw that does not move is no news."""
    bar = ("Processed prompts:   0%|                                                         | 0/4 [00:00<?, ?it/s, "
           "est. speed input: 0.00 toks/s, output: 0.00 toks/s]")
    r = Replay(tmp_path, floor_s=120)
    for i in range(4):
        r.at(60.0 * (i + 1), bar, SHM.format(m=25 + i))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]


def test_repeat_filter_memory_is_bounded() -> None:
    f = RepeatFilter(max_templates=8, max_values=4)
    for i in range(100):
        f.feed(f"message kind {'x' * i}\n".encode())
        f.feed(f"attempt {i}\n".encode())
    assert len(f._seen) <= 8
    assert all(len(s.values) <= 4 for s in f._seen.values())


# -- end to end: a real process under the supervisor ----------------------------


def _watch(p: Pipeline) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(p.config), "--watch", "--run-all"],
                          capture_output=True, text=True, timeout=90, cwd=p.root, stdin=subprocess.DEVNULL)


def _printer(fmt: str, advancing: bool, lines: int = 20) -> str:
    """A stage that prints a real line every 0.2 s, with live timestamps."""
    return (
        "import sys, time\n"
        f"fmt = {fmt!r}\n"
        f"for i in range({lines}):\n"
        "    t = time.localtime()\n"
        f"    n = {'212 + i' if advancing else '1'}\n"
        "    print(fmt.format(m=t.tm_min, s=t.tm_sec, n=n), flush=True)\n"
        "    time.sleep(0.2)\n"
    )


def test_supervisor_alerts_a_barrier_that_keeps_printing(pipeline: Pipeline) -> None:
    script = pipeline.root / "wait.py"
    script.write_text(_printer(BARRIER, advancing=False, lines=40))
    p = pipeline.write(f"""
        [pipeline]
        stall_floor = "1s"
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}]
    """)
    with open(p.root / "watch.out", "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "eagle3tui", "--config", str(p.config), "--watch", "--run-all"],
                                stdout=out, stderr=subprocess.STDOUT, cwd=p.root, stdin=subprocess.DEVNULL)
    try:
        stall = wait_for(lambda: [a for a in p.alerts() if a["kind"] == "stall" and a["stage"] == "train"],
                         timeout=30, what="stall alert")[0]
        assert "no news" in stall["message"] and "Waiting in store based barrier" in stall["message"]
        time.sleep(1.0)  # five more repeats, polled: they do not clear the stall
        assert p.stage("train")["state"] == "stalled"
        assert proc.wait(timeout=60) == 0, (p.root / "watch.out").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_supervisor_does_not_alert_an_advancing_counter(pipeline: Pipeline) -> None:
    script = pipeline.root / "poll.py"
    script.write_text(_printer(ATTEMPT, advancing=True))
    p = pipeline.write(f"""
        [pipeline]
        stall_floor = "1s"
        [[stage]]
        name = "client"
        command = [{PY}, {json.dumps(str(script))}]
    """)
    r = _watch(p)
    assert r.returncode == 0, r.stdout + r.stderr
    kinds = [a["kind"] for a in p.alerts() if a.get("stage") == "client"]
    assert "stall" not in kinds and kinds[-1] == "stage-succeeded", kinds


def test_bar_drawn_in_place_is_news_when_it_moves(tmp_path: Path) -> None:
    """tqdm on a terminal-like log redraws its line with \\r and no newline: the
    line never completes, so only the progress it parses says whether it moved."""
    bar = [line.split(") ", 1)[1] for line in SEED.read_text().splitlines() if "Loading safetensors" in line]
    r = Replay(tmp_path, floor_s=60)
    for i, state in enumerate(bar):
        with open(r.path, "a") as f:
            f.write("\r" + state)
        r.at(30.0 * (i + 1))
    assert r.stalls == []
    # The follower shows a state once the next redraw begins (the open one may be partial).
    assert r.mon.last_news_at == 30.0 * len(bar)
    # The same state redrawn: no news. The limit is 10 x the bar's ~30 s per shard.
    for i in range(14):
        with open(r.path, "a") as f:
            f.write("\r" + bar[-1])
        r.at(30.0 * (len(bar) + i + 1))
    assert [ev.rule for _t, ev in r.stalls] == ["stalled"]
