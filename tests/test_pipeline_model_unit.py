"""Fast tests of the model stages on tiny Llama models built from configs.

Real files, real subprocesses for the CLIs; the tiny target is a randomly
initialised 8-layer LlamaForCausalLM saved to a temp dir (no download).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pipeline.eagle3_model import EXPORT_WEIGHT_NAMES, DraftConfig, Eagle3Draft, export_weight_shapes

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
VOCAB = 96
HIDDEN = 32


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(args: list[str], check: bool = True, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([PY, "-m", *args], check=False, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args[0]} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def _tiny_config(n_layers: int = 8) -> DraftConfig:
    return DraftConfig(hidden_size=HIDDEN, target_hidden_size=HIDDEN, intermediate_size=64, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=8, vocab_size=VOCAB, draft_vocab_size=48,
                       num_target_layers=n_layers, aux_layers=[1, 3, 4])


@pytest.fixture(scope="module")
def tiny_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An 8-layer random Llama saved as a local HF model directory."""
    from transformers import LlamaConfig, LlamaForCausalLM

    d = tmp_path_factory.mktemp("tiny_target")
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=8,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tiny_prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 samples of 10..40 tokens with a repeating pattern (learnable), prompt part unmasked."""
    from pipeline.tokenized_dataset import write_tokenized_dataset

    d = tmp_path_factory.mktemp("prep") / "prepared"
    g = torch.Generator().manual_seed(1)
    samples = []
    for i in range(20):
        n = int(torch.randint(10, 41, (1,), generator=g))
        base = torch.randint(3, VOCAB, (5,), generator=g)
        ids = base.repeat(n // 5 + 1)[:n].tolist()
        mask = [0] * 4 + [1] * (n - 4)
        samples.append((f"s{i}", ids, mask))
    write_tokenized_dataset(d, samples, {"tokenizer": "tiny", "max_len": 64})
    return d


def _vocab_map(path: Path, prepared: Path, draft_vocab: int = 48) -> Path:
    """d2t/t2d from the vocab stage (the most frequent assistant tokens)."""
    _run(["pipeline.vocab", "--prepared", str(prepared), "--output", str(path), "--draft-vocab-size",
          str(draft_vocab), "--target-vocab-size", str(VOCAB)])
    return path


@pytest.fixture(scope="module")
def tiny_extracted(tmp_path_factory: pytest.TempPathFactory, tiny_target: Path, tiny_prepared: Path) -> Path:
    out = tmp_path_factory.mktemp("ext") / "hidden"
    _run(["pipeline.extract", "--prepared-data", str(tiny_prepared), "--out", str(out), "--model", str(tiny_target),
          "--device", "cpu", "--shard-tokens", "150", "--batch-tokens", "256", "--disk-reserve-gb", "0"])
    return out


def test_ttt_training_rows_match_serving_chain() -> None:
    """Step i of the TTT unroll at row t equals drafting i+1 tokens after a context ending at t."""
    torch.manual_seed(0)
    c = _tiny_config()
    d = Eagle3Draft(c).eval()
    d.d2t.copy_(torch.arange(c.draft_vocab_size) * 0 + 1)
    L = 12
    ids = torch.randint(0, VOCAB, (1, L))
    aux = torch.randn(1, L, 3 * HIDDEN)
    with torch.no_grad():
        cache: list = []
        hid = d.fuse(aux[:, : L - 1])
        train_logits = []
        pos = torch.arange(L - 1)[None]
        pad = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
        for i in range(3):
            lg, hid = d.step(pad[:, 1 + i : L + i], hid, pos + i, cache)
            train_logits.append(lg)
        for t in (3, 7):
            n = t + 1
            cache2: list = []
            lg, g = d.step(ids[:, 1 : n + 1], d.fuse(aux[:, :n]), torch.arange(n)[None], cache2)
            assert torch.allclose(lg[0, -1], train_logits[0][0, t], atol=1e-5)
            h = g[:, -1:]
            for i in range(1, 3):
                lg, h = d.step(ids[:, n + i : n + i + 1], h, torch.tensor([[n - 1 + i]]), cache2,
                               query_index=torch.tensor([n - 1]))
                assert torch.allclose(lg[0, -1], train_logits[i][0, t], atol=1e-5), (t, i)


def test_extract_outputs_match_hf_hidden_states(tiny_extracted: Path, tiny_target: Path, tiny_prepared: Path) -> None:
    """Shards hold outputs of layers (1, N/2-1, N-4) and the final normed state; manifest has both numberings."""
    from transformers import LlamaForCausalLM

    from pipeline.hidden_states import HiddenStatesDataset
    from pipeline.tokenized_dataset import TokenizedDataset

    m = json.loads((tiny_extracted / "manifest.json").read_text())
    assert m["layer_ids"] == {"output_0based": [1, 3, 4], "input_numbering_vllm_sglang": [2, 4, 5]}
    assert m["num_samples"] == 20 and len(m["shards"]) > 3
    model = LlamaForCausalLM.from_pretrained(tiny_target).eval()
    ex = HiddenStatesDataset(tiny_extracted)
    prep = TokenizedDataset(tiny_prepared)
    pos = {sid: i for i, sid in enumerate(prep.ids)}
    for j in (0, 7, 19):
        sid = ex.ids[j]
        ids, mask, hs = ex[j]
        _s, pids, pmask = prep[pos[sid]]
        assert ids.tolist() == pids.tolist() and mask.tolist() == pmask.tolist()
        with torch.no_grad():
            out = model(input_ids=ids[None], output_hidden_states=True)
        want = torch.stack([out.hidden_states[2], out.hidden_states[4], out.hidden_states[5],
                            out.hidden_states[-1]], dim=2)[0].to(torch.bfloat16)
        assert hs.dtype == torch.bfloat16 and hs.shape == (ids.numel(), 4, HIDDEN)
        assert torch.allclose(hs.float(), want.float(), atol=2e-2)


def test_extract_resume_redoes_torn_shard_only(tmp_path: Path, tiny_extracted: Path, tiny_target: Path,
                                               tiny_prepared: Path) -> None:
    import shutil

    out = tmp_path / "hidden"
    shutil.copytree(tiny_extracted, out)
    shards = sorted(out.glob("shard-*.safetensors"))
    original = {p.name: p.read_bytes() for p in shards}
    torn, kept = shards[1], shards[2]
    torn.write_bytes(original[torn.name][: len(original[torn.name]) // 2])  # a shard cut off mid-write
    kept_mtime = kept.stat().st_mtime_ns
    (out / "manifest.json").unlink()
    proc = _run(["pipeline.extract", "--prepared-data", str(tiny_prepared), "--out", str(out), "--model",
                 str(tiny_target), "--device", "cpu", "--shard-tokens", "150", "--batch-tokens", "256",
                 "--disk-reserve-gb", "0"])
    assert f"{torn.name} is torn" in proc.stderr
    assert f"{len(shards) - 1} complete, 1 to do" in proc.stderr
    from safetensors.torch import load, load_file

    redone, before = load_file(str(torn)), load(original[torn.name])
    assert redone.keys() == before.keys()
    for k in before:  # the same tensors again (header key order may differ byte-wise)
        assert torch.equal(redone[k], before[k]), k
    assert kept.stat().st_mtime_ns == kept_mtime  # complete shards are not rewritten
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


def test_extract_sigterm_finishes_current_shard(tmp_path: Path, tiny_target: Path, tiny_prepared: Path) -> None:
    out = tmp_path / "hidden"
    args = ["pipeline.extract", "--prepared-data", str(tiny_prepared), "--out", str(out), "--model",
            str(tiny_target), "--device", "cpu", "--shard-tokens", "40", "--batch-tokens", "40",
            "--max-batch", "1", "--disk-reserve-gb", "0"]
    proc = subprocess.Popen([PY, "-m", *args], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(out.glob("shard-*.safetensors")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _stdout, stderr = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("extraction finished before SIGTERM arrived")
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr
    assert not (out / "manifest.json").exists()
    assert not list(out.glob(".*partial"))
    from pipeline.hidden_states import plan_shards, shard_name, validate_shard
    from pipeline.tokenized_dataset import TokenizedDataset

    lengths = [int(x) for x in TokenizedDataset(tiny_prepared).lengths()]
    plan = plan_shards(lengths, 40)
    present = sorted(out.glob("shard-*.safetensors"))
    assert 0 < len(present) < len(plan)
    for p in present:  # every shard on disk is whole
        k = int(p.stem.split("-")[1])
        assert validate_shard(out / shard_name(k), plan[k], lengths, HIDDEN) is None
    _run(args)  # the rerun completes
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


def test_disk_check_refuses_when_too_small(tmp_path: Path) -> None:
    import shutil

    from pipeline.common import StageError
    from pipeline.hidden_states import check_disk, required_bytes

    assert required_bytes(1000, 576) == 1000 * 4 * 576 * 2
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(StageError, match="not enough disk space"):
        check_disk(tmp_path / "new", free + (1 << 30), reserve=0)
    check_disk(tmp_path / "new", 1 << 20, reserve=0)


def test_shard_writer_streams_a_valid_safetensors_file(tmp_path: Path) -> None:
    """Header first, rows batch by batch, small tensors last: safetensors reads it; errors do not hang."""
    from safetensors.torch import load_file

    from pipeline.common import StageError
    from pipeline.hidden_states import (
        HostBuffers,
        ShardWriter,
        shard_header,
        shard_name,
        small_tensors,
        validate_shard,
    )

    hidden, lengths = 8, [3, 5, 2]
    hs = torch.randn(10, 4, hidden).to(torch.bfloat16)
    ids = [torch.arange(n, dtype=torch.int32) for n in lengths]
    masks = [torch.ones(n, dtype=torch.uint8) for n in lengths]
    w = ShardWriter(tmp_path, fsync=True, maxsize=2)
    w.start()
    pool = HostBuffers(8, hidden, pinned=False, max_buffers=2, writer=w)
    w.put(("open", 0, shard_header(0, 10, 3, hidden)))
    for a, b in ((0, 3), (3, 8), (8, 10)):  # three batches through two pooled buffers
        buf, release = pool.take(b - a)
        buf.copy_(hs[a:b])
        w.put(("rows", buf, None, release))
    w.put(("close", 0, small_tensors([0, 1, 2], lengths, ids, masks)))
    w.q.put(None)
    w.join()
    assert w.error is None and pool.created == 2
    got = load_file(str(tmp_path / shard_name(0)))
    assert torch.equal(got["hidden_states"], hs)
    assert got["offsets"].tolist() == [0, 3, 8, 10] and got["sample_index"].tolist() == [0, 1, 2]
    assert got["input_ids"].dtype == torch.int32 and got["loss_mask"].dtype == torch.uint8
    assert validate_shard(tmp_path / shard_name(0), [0, 1, 2], lengths, hidden) is None
    # A writer that fails (rows that do not add up) reports it and drops the partial file.
    w = ShardWriter(tmp_path, fsync=False, maxsize=1)
    w.start()
    w.put(("open", 1, shard_header(1, 10, 3, hidden)))
    w.put(("rows", hs[:4].clone(), None, None))
    with pytest.raises(StageError, match="writing a shard failed"):
        for _ in range(5):
            w.put(("close", 1, small_tensors([0, 1, 2], lengths, ids, masks)))
            time.sleep(0.05)
    w.q.put(None)
    w.join()
    assert not (tmp_path / shard_name(1)).exists() and not list(tmp_path.glob(".*partial"))


def _train(out: Path, data: Path | list[str], vmap: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``data``: an extraction directory, or the source arguments themselves (``--target M --prepared D``)."""
    source = ["--data", str(data)] if isinstance(data, Path) else data
    return _run(["pipeline.train", *source, "--vocab-map", str(vmap), "--out", str(out),
                 "--device", "cpu", "--batch-size", "4", "--max-steps", "8", "--save-every", "100",
                 "--ttt-steps", "3", "--lr", "3e-3", "--warmup-steps", "2", *extra])


def test_online_batches_carry_the_extractions_hidden_states(tiny_target: Path, tiny_prepared: Path,
                                                           tiny_extracted: Path) -> None:
    """The target run inside training gives each sample the rows extract wrote for it, padded or not."""
    from pipeline.hidden_states import HiddenStatesDataset
    from pipeline.training_data import OnlineTargetStreams

    online = OnlineTargetStreams(tiny_prepared, str(tiny_target), "cpu")
    ext = HiddenStatesDataset(tiny_extracted)
    by_id = {sid: i for i, sid in enumerate(ext.ids)}
    assert sorted(by_id) == sorted(online.ids) and online.aux_layers == [1, 3, 4]
    longest = max(range(len(online.ids)), key=lambda i: online.tokens.lens_host[i])
    shortest = min(range(len(online.ids)), key=lambda i: online.tokens.lens_host[i])
    batch = online.batch([shortest, longest, 0], max_len=64)  # the short rows are right-padded
    assert batch["hidden"].dtype == torch.bfloat16 and batch["hidden"].requires_grad is False
    for row, i in enumerate([shortest, longest, 0]):
        ids, mask, hidden = ext[by_id[online.ids[i]]]
        n = ids.numel()
        assert torch.equal(batch["input_ids"][row, :n], ids) and torch.equal(batch["loss_mask"][row, :n], mask.bool())
        assert int(batch["valid"][row].sum()) == n and not batch["loss_mask"][row, n:].any()
        # bf16 keeps ~3 significant digits; the two runs differ only in batch shape.
        torch.testing.assert_close(batch["hidden"][row, :n].float(), hidden.float(), rtol=1e-2, atol=1e-4)
        # The tolerance is tight enough to tell the layers apart: a stream swapped for another would fail.
        assert not torch.allclose(batch["hidden"][row, :n, 0].float(), hidden[:, 1].float(), rtol=1e-2, atol=1e-4)


def test_train_online_learns_and_resumes_to_the_same_curve(tmp_path: Path, tiny_target: Path,
                                                          tiny_prepared: Path) -> None:
    """``--target --prepared``: no extraction on disk; the curve falls and a resumed run rewrites it exactly."""
    vmap = _vocab_map(tmp_path / "vocab.safetensors", tiny_prepared)
    online = ["--target", str(tiny_target), "--prepared", str(tiny_prepared)]
    steps = ["--max-steps", "40"]  # the repeating corpus is learnt within a few epochs
    full = tmp_path / "full"
    proc = _train(full, online, vmap, *steps)
    assert "train: 40 steps" in proc.stdout and "train: online:" in proc.stderr
    part = tmp_path / "part"
    _train(part, online, vmap, *steps, "--stop-after-steps", "3")
    _train(part, online, vmap, *steps, "--resume")
    a = [json.loads(x) for x in (full / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (part / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in b] == list(range(1, 41))
    assert [r["loss"] for r in a] == pytest.approx([r["loss"] for r in b], rel=1e-5, abs=1e-6)
    # The random target's distribution is nearly flat, so the loss cannot fall far; matching its argmax can rise.
    first, last = (sum(r["acc"][0] for r in part) / 5 for part in (a[:5], a[-5:]))
    assert last > max(0.1, 2 * first), (first, last)
    assert torch.load(full / "checkpoint-0000040.pt", weights_only=False)["extraction"].startswith("online:")
    # With no extraction, export checks the draft against the target itself.
    proc = _run(["pipeline.export", "export", "--checkpoint", str(full), "--out", str(tmp_path / "draft"),
                 "--target", str(tiny_target)])
    assert "check: ok" in proc.stdout
    assert json.loads((tmp_path / "draft" / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]


def test_train_needs_exactly_one_source(tmp_path: Path, tiny_target: Path, tiny_prepared: Path,
                                        tiny_extracted: Path) -> None:
    vmap = tmp_path / "vocab.safetensors"
    both = _run(["pipeline.train", "--data", str(tiny_extracted), "--target", str(tiny_target), "--prepared",
                 str(tiny_prepared), "--vocab-map", str(vmap), "--out", str(tmp_path / "o")], check=False)
    assert both.returncode == 2 and "two sources; pass one" in both.stderr
    half = _run(["pipeline.train", "--target", str(tiny_target), "--vocab-map", str(vmap), "--out",
                 str(tmp_path / "o")], check=False)
    assert half.returncode == 2 and "--prepared TOKENIZED_DIR" in half.stderr
    share = _run(["pipeline.train", "--data", str(tiny_extracted), "--val-share", "1", "--vocab-map", str(vmap),
                  "--out", str(tmp_path / "o")], check=False)
    assert share.returncode == 2 and "--val-share 1.0: must be at least 0 and below 1" in share.stderr
    assert not (tmp_path / "o").exists()


def test_online_refuses_tokens_outside_the_targets_vocabulary(tmp_path: Path, tiny_target: Path,
                                                              tiny_prepared: Path) -> None:
    """Data tokenized for another target is named with the token and the fix, before any training step."""
    from pipeline.tokenized_dataset import write_tokenized_dataset

    other = tmp_path / "other"
    write_tokenized_dataset(other, [("a", [5, 6, VOCAB + 3, 7], [0, 1, 1, 1])], {"tokenizer": "big", "max_len": 64})
    vmap = _vocab_map(tmp_path / "vocab.safetensors", tiny_prepared)
    proc = _run(["pipeline.train", "--target", str(tiny_target), "--prepared", str(other), "--vocab-map", str(vmap),
                 "--out", str(tmp_path / "o"), "--device", "cpu"], check=False)
    assert proc.returncode == 1, proc
    assert f"{other}: token id {VOCAB + 3} is outside" in proc.stderr and "fix: tokenize with this target" in proc.stderr
    assert not list((tmp_path / "o").glob("checkpoint-*"))


def test_validation_keeps_every_answer_of_a_prompt_on_one_side() -> None:
    from pipeline.train import split_validation

    prompts = [f"p{n}" for n in range(400)]
    ids = [sid for p in prompts for sid in (p, f"{p}#0", f"{p}#1", f"{p}#12")]
    train_idx, val_idx = split_validation(ids, 0.25)
    held = {ids[i] for i in val_idx}
    assert 40 < len(held) / 4 < 160  # about a quarter of the prompts
    for p in prompts:
        side = {sid in held for sid in (p, f"{p}#0", f"{p}#1", f"{p}#12")}
        assert len(side) == 1, p
    # A '#' that is not regenerate's sample suffix is part of the id.
    assert len({split_validation([f"q#a{n}"], 0.5)[1] == [0] for n in range(64)}) == 2


def test_validation_share_is_never_trained_on_and_survives_a_resume(tmp_path: Path, tiny_extracted: Path,
                                                                    tiny_prepared: Path) -> None:
    """``--val-share``: held-out samples are scored each epoch, never trained on; a resume rewrites the same records."""
    from pipeline.tokenized_dataset import TokenizedDataset
    from pipeline.train import split_validation

    vmap = _vocab_map(tmp_path / "vocab.safetensors", tiny_prepared)
    ds = TokenizedDataset(tiny_prepared)
    train_idx, val_idx = split_validation(ds.ids, 0.3)
    assert val_idx and train_idx and not set(val_idx) & set(train_idx)
    args = ["--batch-size", "1", "--epochs", "2", "--val-share", "0.3", "--max-len", "64"]

    def run(out: Path, *extra: str) -> list[dict]:
        _run(["pipeline.train", "--data", str(tiny_extracted), "--vocab-map", str(vmap), "--out", str(out),
              "--device", "cpu", "--ttt-steps", "3", "--lr", "3e-3", "--warmup-steps", "2", "--save-every", "100",
              *args, *extra])
        return [json.loads(x) for x in (out / "validation.jsonl").read_text().splitlines()]

    full = run(tmp_path / "full")
    assert [r["epoch"] for r in full] == [1, 2] and all(len(r["acc"]) == 3 for r in full)
    # Batches of one sample: an epoch's training tokens are exactly the training samples' tokens.
    per_epoch = sum(int(ds.offsets[i + 1] - ds.offsets[i]) for i in train_idx)
    assert [r["tokens_seen"] for r in full] == [per_epoch, 2 * per_epoch]
    # Scored positions: the held-out samples' loss positions whose target argmax is in the draft vocabulary.
    assert 0 < full[0]["positions"] <= sum(int(ds[i][2][1:].sum()) for i in val_idx)
    steps = len(train_idx)
    part = tmp_path / "part"
    run(part, "--stop-after-steps", str(steps + 2))  # past the first epoch's validation
    again = run(part, "--resume")
    assert again == full


def test_train_resume_reproduces_loss_curve(tmp_path: Path, tiny_extracted: Path, tiny_prepared: Path) -> None:
    vmap = _vocab_map(tmp_path / "vocab.safetensors", tiny_prepared)
    full = tmp_path / "full"
    proc = _train(full, tiny_extracted, vmap)
    assert "train: 8 steps" in proc.stdout
    assert "loss=" in proc.stderr and "acc0=" in proc.stderr  # tqdm postfix
    part = tmp_path / "part"
    _train(part, tiny_extracted, vmap, "--stop-after-steps", "3")
    assert (part / "checkpoint-0000003.pt").is_file()
    _train(part, tiny_extracted, vmap, "--resume")
    a = [json.loads(x) for x in (full / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (part / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in b] == list(range(1, 9))
    for ra, rb in zip(a, b):
        assert ra["loss"] == pytest.approx(rb["loss"], rel=1e-5, abs=1e-6), (ra, rb)
        assert ra["lr"] == pytest.approx(rb["lr"])
    assert a[-1]["loss"] < a[0]["loss"]  # it learns
    ca = torch.load(full / "checkpoint-0000008.pt", weights_only=False)["model"]
    cb = torch.load(part / "checkpoint-0000008.pt", weights_only=False)["model"]
    for k in ca:
        assert torch.allclose(ca[k].float(), cb[k].float(), atol=1e-6), k


def test_two_ranks_follow_one_rank_with_grad_accum(tmp_path: Path, tiny_extracted: Path, tiny_prepared: Path) -> None:
    """DDP (torchrun, 2 CPU ranks over gloo) sees the batches one process sees with --grad-accum 2: same curve.

    Also the streaming loader (--data-on-device no) against the resident one, and bucketed batches.
    """
    vmap = _vocab_map(tmp_path / "vocab.safetensors", tiny_prepared)
    common = ["--batch-tokens", "96", "--max-steps", "4"]
    one = tmp_path / "one"
    _train(one, tiny_extracted, vmap, *common, "--grad-accum", "2", "--data-on-device", "no")
    two = tmp_path / "two"
    proc = _run(["torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "pipeline.train",
                 "--data", str(tiny_extracted), "--vocab-map", str(vmap), "--out", str(two), "--device", "cpu",
                 "--batch-size", "4", "--max-steps", "8", "--save-every", "100", "--ttt-steps", "3", "--lr", "3e-3",
                 "--warmup-steps", "2", *common, "--data-on-device", "yes"], timeout=400)
    assert "train: 4 steps" in proc.stdout
    a = [json.loads(x) for x in (one / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (two / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in a] == [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b):
        assert ra["tokens"] == rb["tokens"] and ra["tokens_seen"] == rb["tokens_seen"]
        assert ra["loss"] == pytest.approx(rb["loss"], rel=1e-4), (ra, rb)
    wa = torch.load(one / "checkpoint-0000004.pt", weights_only=False)["model"]
    wb = torch.load(two / "checkpoint-0000004.pt", weights_only=False)["model"]
    for k in wa:
        assert torch.allclose(wa[k].float(), wb[k].float(), atol=1e-5), k


@pytest.fixture(scope="module")
def tiny_draft(tmp_path_factory: pytest.TempPathFactory, tiny_extracted: Path, tiny_prepared: Path) -> Path:
    d = tmp_path_factory.mktemp("draft")
    vmap = _vocab_map(d / "vocab.safetensors", tiny_prepared)
    _train(d / "ckpt", tiny_extracted, vmap)
    proc = _run(["pipeline.export", "export", "--checkpoint", str(d / "ckpt"), "--out", str(d / "draft"),
                 "--extraction", str(tiny_extracted)])
    assert "check: ok" in proc.stdout
    return d / "draft"


def test_export_layout_names_and_shapes(tiny_draft: Path) -> None:
    from safetensors import safe_open

    cfg = json.loads((tiny_draft / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLMEagle3"] and cfg["model_type"] == "llama"
    assert cfg["num_hidden_layers"] == 1 and cfg["draft_vocab_size"] == 48 and cfg["target_hidden_size"] == HIDDEN
    # vLLM reads the top-level list as layer inputs; SGLang adds one to the nested list.
    assert cfg["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    assert cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 3, 4]
    with safe_open(str(tiny_draft / "model.safetensors"), framework="pt") as fh:
        names = list(fh.keys())
        tensors = {k: fh.get_tensor(k) for k in names}
    assert sorted(names) == sorted(EXPORT_WEIGHT_NAMES)
    shapes = export_weight_shapes(DraftConfig(hidden_size=HIDDEN, target_hidden_size=HIDDEN, intermediate_size=64,
                                              num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                              vocab_size=VOCAB, draft_vocab_size=48))
    for k, t in tensors.items():
        assert tuple(t.shape) == shapes[k], k
    assert tensors["fc.weight"].shape == (HIDDEN, 3 * HIDDEN)
    assert tensors["midlayer.self_attn.q_proj.weight"].shape == (32, 2 * HIDDEN)
    assert tensors["d2t"].dtype == torch.int64 and tensors["t2d"].dtype == torch.bool
    assert tensors["lm_head.weight"].dtype == torch.bfloat16


def _mutate(src: Path, dst: Path, cfg_fn=None, w_fn=None) -> Path:  # type: ignore[no-untyped-def]
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    if cfg_fn:
        cfg = json.loads((dst / "config.json").read_text())
        cfg_fn(cfg)
        (dst / "config.json").write_text(json.dumps(cfg))
    if w_fn:
        w = load_file(str(dst / "model.safetensors"))
        w_fn(w)
        save_file(w, str(dst / "model.safetensors"))
    return dst


def test_exported_draft_is_readable_by_another_user(tiny_draft: Path, tiny_extracted: Path) -> None:
    """Under umask 022 the draft is 0755 with 0644 files, and a second real user reads it."""
    import stat

    from local_users import other_user, run_as, shared_dir

    with other_user() as user, shared_dir() as root:
        out = root / "draft"
        proc = subprocess.run([PY, "-m", "pipeline.export", "export", "--checkpoint",
                               str(tiny_draft.parent / "ckpt"), "--out", str(out), "--extraction",
                               str(tiny_extracted)], cwd=REPO, env=_env(), capture_output=True,
                              text=True, timeout=240, umask=0o022)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert stat.S_IMODE(out.stat().st_mode) == 0o755
        files = sorted(out.iterdir())
        assert {f.name for f in files} == {"config.json", "model.safetensors"}
        assert all(stat.S_IMODE(f.stat().st_mode) == 0o644 for f in files), \
            [oct(f.stat().st_mode) for f in files]
        listed = run_as(user, ["/bin/ls", str(out)])
        read = run_as(user, ["/bin/cat", *map(str, files)])
        assert listed.returncode == 0 and b"model.safetensors" in listed.stdout, listed
        assert read.returncode == 0, read.stderr


def test_check_catches_wrong_layer_id(tmp_path: Path, tiny_draft: Path, tiny_extracted: Path) -> None:
    def nested_only_inputs(c: dict) -> None:  # the classic mistake: input numbering in the nested key
        del c["eagle_aux_hidden_state_layer_ids"]
        c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 4, 5]

    bad = _mutate(tiny_draft, tmp_path / "d1", cfg_fn=nested_only_inputs)
    proc = _run(["pipeline.export", "check", str(bad), "--extraction", str(tiny_extracted)], check=False)
    assert proc.returncode == 1
    assert "sglang would feed the draft the outputs of layers [2, 4, 5]" in proc.stdout
    assert "key 'eagle_aux_hidden_state_layer_ids': missing" in proc.stdout

    bad2 = _mutate(tiny_draft, tmp_path / "d2", cfg_fn=lambda c: c.update(eagle_aux_hidden_state_layer_ids=[1, 3, 4]))
    proc = _run(["pipeline.export", "check", str(bad2), "--extraction", str(tiny_extracted)], check=False)
    assert proc.returncode == 1 and "vllm would feed the draft the outputs of layers [0, 2, 3]" in proc.stdout


def test_check_catches_wrong_draft_vocab_size(tmp_path: Path, tiny_draft: Path, tiny_extracted: Path) -> None:
    bad = _mutate(tiny_draft, tmp_path / "d", cfg_fn=lambda c: c.update(draft_vocab_size=64))
    proc = _run(["pipeline.export", "check", str(bad), "--extraction", str(tiny_extracted)], check=False)
    assert proc.returncode == 1
    assert "weight 'lm_head.weight' has shape (48, 32), expected (64, 32)" in proc.stdout


def test_check_catches_missing_d2t(tmp_path: Path, tiny_draft: Path, tiny_extracted: Path) -> None:
    bad = _mutate(tiny_draft, tmp_path / "d", w_fn=lambda w: w.pop("d2t"))
    proc = _run(["pipeline.export", "check", str(bad), "--extraction", str(tiny_extracted)], check=False)
    assert proc.returncode == 1 and "weight 'd2t' is missing" in proc.stdout
    bad2 = _mutate(tiny_draft, tmp_path / "e", w_fn=lambda w: w.update(extra_bias=torch.zeros(3)))
    proc = _run(["pipeline.export", "check", str(bad2), "--extraction", str(tiny_extracted)], check=False)
    assert proc.returncode == 1 and "unexpected weight 'extra_bias'" in proc.stdout


def test_evaluate_is_lossless_on_tiny_target(tmp_path: Path, tiny_draft: Path, tiny_target: Path,
                                             tiny_prepared: Path) -> None:
    out = tmp_path / "eval.json"
    proc = _run(["pipeline.evaluate", "--draft", str(tiny_draft), "--model", str(tiny_target), "--prepared-data",
                 str(tiny_prepared), "--num-prompts", "4", "--max-new-tokens", "24", "--device", "cpu",
                 "--eos", "-1", "--out", str(out)])
    assert "evaluate: K=3 acceptance length" in proc.stdout and "evaluate: K=7" in proc.stdout
    res = json.loads(out.read_text())
    # Acceptance lengths that mean something are asserted in test_pipeline_evaluate.py; here: the stage's contract.
    for name, r in res["methods"].items():
        assert r["lossless"] == "4/4", name
        assert len(r["per_position_acceptance"]) == r["k"]
        pp = r["per_position_acceptance"]
        assert all(pp[j] >= pp[j + 1] for j in range(len(pp) - 1))  # a later token needs all earlier ones


def test_cli_usage_errors_exit_2() -> None:
    for mod in ("pipeline.extract", "pipeline.train", "pipeline.export", "pipeline.evaluate"):
        proc = _run([mod], check=False)
        assert proc.returncode == 2, mod
        assert "usage: python -m " + mod in proc.stderr
