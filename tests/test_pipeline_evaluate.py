"""Evaluation that can fail: batched speculative decoding, its caches, and acceptance lengths that mean something.

The target is a tiny random Llama with large weights (init std 0.4), so its
greedy continuations are chaotic rather than loops: the next token cannot be
guessed from the current one, and a draft only predicts it through the target's
features. The corpus is the target's own greedy continuations of eight prompts;
a draft trained on it must reach a high acceptance length on those prompts, an
untrained one and prompt lookup must not, and the same draft fed the layers one
off from those it trained on must fall back to about 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
VOCAB = 96
PROMPT, NEW = 6, 48


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = subprocess.run([PY, "-m", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args[0]} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def _chaotic_target(path: Path) -> object:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, bos_token_id=1,
                      eos_token_id=2, tie_word_embeddings=True, initializer_range=0.4)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    model.save_pretrained(path)
    return model


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Target, corpus (its greedy continuations), vocab, extraction, a trained draft with epoch checkpoints."""
    from pipeline.tokenized_dataset import write_tokenized_dataset

    w = tmp_path_factory.mktemp("evalchain")
    model = _chaotic_target(w / "target")
    g = torch.Generator().manual_seed(1)
    samples = []
    for i in range(8):
        prompt = torch.randint(3, VOCAB, (PROMPT,), generator=g)
        ids = model.generate(prompt[None], max_new_tokens=NEW, do_sample=False, eos_token_id=None,  # type: ignore[attr-defined]
                             pad_token_id=0)[0].tolist()
        samples.append((f"s{i}", ids, [0] * PROMPT + [1] * NEW))
    write_tokenized_dataset(w / "prepared", samples, {"tokenizer": "tiny", "max_len": 64})
    _run(["pipeline.vocab", "--prepared", str(w / "prepared"), "--output", str(w / "vocab.safetensors"),
          "--draft-vocab-size", str(VOCAB), "--target-vocab-size", str(VOCAB)])
    _run(["pipeline.extract", "--prepared-data", str(w / "prepared"), "--out", str(w / "hidden"), "--model",
          str(w / "target"), "--device", "cpu", "--disk-reserve-gb", "0"])
    _run(["pipeline.train", "--data", str(w / "hidden"), "--vocab-map", str(w / "vocab.safetensors"), "--out",
          str(w / "ckpt"), "--device", "cpu", "--batch-size", "8", "--epochs", "200", "--keep-epochs", "100",
          "--ttt-steps", "4", "--lr", "3e-3", "--warmup-steps", "5", "--save-every", "1000"])
    _run(["pipeline.export", "export", "--checkpoint", str(w / "ckpt"), "--out", str(w / "draft"), "--extraction",
          str(w / "hidden")])
    return {"dir": w, "target": w / "target", "prepared": w / "prepared", "draft": w / "draft", "ckpt": w / "ckpt"}


def _evaluate(t: dict[str, Path], draft: Path, out: Path, *extra: str) -> dict:
    _run(["pipeline.evaluate", "--draft", str(draft), "--model", str(t["target"]), "--prepared-data",
          str(t["prepared"]), "--num-prompts", "8", "--max-new-tokens", str(NEW), "--device", "cpu", "--eos", "-1",
          "--out", str(out), *extra])
    return json.loads(out.read_text())


def test_trained_draft_reaches_high_acceptance_on_its_corpus(tmp_path: Path, trained: dict[str, Path]) -> None:
    res = _evaluate(trained, trained["draft"], tmp_path / "eval.json", "--k", "3", "5", "--curve",
                    str(trained["ckpt"]))
    m = res["methods"]
    for name, r in m.items():
        assert r["lossless"] == "8/8", name  # float32: exact, no near-ties allowed
        assert r["near_ties"] == [] and r["failures"] == [], name
    assert m["eagle3@K=3"]["acceptance_length"] >= 3.0, m["eagle3@K=3"]
    assert m["eagle3@K=3"]["per_position_acceptance"][0] >= 0.8
    assert m["eagle3@K=5"]["acceptance_length"] >= m["eagle3@K=3"]["acceptance_length"]
    assert m["untrained@K=3"]["acceptance_length"] <= 1.2  # the same architecture knows nothing before training
    assert m["ngram@K=3"]["acceptance_length"] <= 1.3  # chaotic continuations: nothing to look up
    # Teacher-forced along the greedy text: the trained draft predicts nearly every next token, the untrained none.
    acc = res["next_token_accuracy"]
    assert acc["eagle3"] >= 0.8 and acc["untrained"] <= 0.1, acc
    assert res["draft_vocab_coverage"] == 1.0  # the draft vocabulary is the whole target vocabulary here
    curve = res["learning_curve"]
    assert [p["epoch"] for p in curve] == [100, 200]
    assert curve[0]["train_tokens"] < curve[1]["train_tokens"]
    assert all(p["lossless"] == "8/8" for p in curve)
    # The last epoch's weights are the exported ones (export stores them in bf16: allow a few flips).
    assert abs(curve[1]["next_token_accuracy"] - acc["eagle3"]) <= 0.05, (curve[1], acc)


def test_draft_fed_the_wrong_layers_scores_low(tmp_path: Path, trained: dict[str, Path]) -> None:
    """The classic server mistake: layer ids read one off. The same weights then accept almost nothing."""
    bad = tmp_path / "draft"
    shutil.copytree(trained["draft"], bad)
    cfg = json.loads((bad / "config.json").read_text())
    shifted = [i + 1 for i in cfg["eagle3tui"]["trained_on_layer_outputs_0based"]]
    cfg["eagle3tui"]["trained_on_layer_outputs_0based"] = shifted
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = shifted
    cfg["eagle_aux_hidden_state_layer_ids"] = [i + 1 for i in shifted]
    (bad / "config.json").write_text(json.dumps(cfg))
    good = _evaluate(trained, trained["draft"], tmp_path / "good.json", "--k", "3", "--baselines")
    wrong = _evaluate(trained, bad, tmp_path / "wrong.json", "--k", "3", "--baselines")
    al_good = good["methods"]["eagle3@K=3"]["acceptance_length"]
    al_wrong = wrong["methods"]["eagle3@K=3"]["acceptance_length"]
    assert al_wrong <= 1.6 and al_good - al_wrong >= 1.5, (al_good, al_wrong)
    acc_good, acc_wrong = good["next_token_accuracy"]["eagle3"], wrong["next_token_accuracy"]["eagle3"]
    assert acc_good - acc_wrong >= 0.4, (acc_good, acc_wrong)
    assert wrong["methods"]["eagle3@K=3"]["lossless"] == "8/8"  # worse drafting, still the same output


def test_draft_vocab_coverage_counts_the_drafted_positions() -> None:
    """Each output's first token comes from the prompt's prefill, never from a draft: it is not counted."""
    from pipeline.evaluate import draft_vocab_coverage

    t2d = torch.zeros(10, dtype=torch.bool)
    t2d[[1, 2, 3]] = True
    assert draft_vocab_coverage([[9, 1, 2, 9], [9, 3], [4]], t2d) == 0.75
    assert draft_vocab_coverage([[1], []], t2d) != draft_vocab_coverage([[1], []], t2d)  # nothing drafted: NaN


def test_decode_without_drafter_is_plain_greedy(tmp_path: Path) -> None:
    """Prompts of different lengths in one batch (right padding, holes) give HF's own greedy output, eos included."""
    from pipeline.speculative import NgramDrafter, decode
    from pipeline.target_capture import TargetCapture

    model = _chaotic_target(tmp_path / "t")
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, VOCAB, (n,), generator=g).tolist() for n in (2, 9, 5, 13)]
    ref = [model.generate(torch.tensor([p]), max_new_tokens=30, do_sample=False, eos_token_id=None,  # type: ignore[attr-defined]
                          pad_token_id=0)[0, len(p):].tolist() for p in prompts]
    cap = TargetCapture(model, [1, 3, 4])
    greedy = decode(cap, prompts, 30, set())
    assert greedy.tokens == ref
    assert all(len(m) == 30 for m in greedy.margins) and min(min(m) for m in greedy.margins) >= 0
    stop = ref[1][7]  # a token the second prompt produces: that row must stop right after it
    got = decode(cap, prompts, 30, {stop})
    cut = ref[1].index(stop)
    assert got.tokens[1] == ref[1][: cut + 1]
    spec = decode(cap, prompts, 30, {stop}, NgramDrafter(), 4)
    assert spec.tokens == got.tokens


def test_incremental_draft_equals_full_recompute() -> None:
    """Context keys kept across rounds (with rejected slots as holes) give the logits a full recompute gives."""
    from pipeline.eagle3_model import DraftConfig, Eagle3Draft

    torch.manual_seed(0)
    c = DraftConfig(hidden_size=32, target_hidden_size=32, intermediate_size=64, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=8, vocab_size=VOCAB, draft_vocab_size=VOCAB, aux_layers=[1, 3, 4])
    d = Eagle3Draft(c).eval()
    n = 11
    tokens = torch.randint(0, VOCAB, (1, n))
    feats = torch.randn(1, n, 3 * 32)
    with torch.no_grad():
        # Full recompute over the n real rows, then a 3-step chain from the last one.
        cache: list = []
        full_logits, g = d.step(tokens, d.fuse(feats), torch.arange(n)[None], cache)
        h = g[:, -1:]
        tok = tokens[:, -1:]
        full_chain = []
        for j in range(1, 4):
            lg, h = d.step(tok, h, torch.tensor([[n - 1 + j]]), cache, query_index=torch.tensor([n - 1]))
            full_chain.append(lg[0, -1])
            tok = lg[:, -1:].argmax(-1)
        # Incremental: rows 0..4, then a round with rows 5..8 where 7 and 8 are rejected (junk), then 7..10.
        pieces = [(range(0, 5), [1] * 5), (range(5, 9), [1, 1, 0, 0]), (range(7, 11), [1, 1, 1, 1])]
        ctx = None
        for rows, valid in pieces:
            idx = torch.tensor(list(rows))
            junk = torch.tensor(valid) == 0
            tk = torch.where(junk, torch.randint(0, VOCAB, (len(idx),)), tokens[0, idx])[None]
            ft = torch.where(junk[:, None], torch.randn(len(idx), 96), feats[0, idx])[None]
            lg, out, ctx = d.extend_context(tk, ft, idx[None], torch.tensor(valid)[None].bool(), ctx)
            for r, i in enumerate(rows):
                if valid[r]:
                    assert torch.allclose(lg[0, r], full_logits[0, i], atol=1e-5), i
        diag: list = []
        h = out[:, -1:]
        tok = tokens[:, -1:]
        for j in range(1, 4):
            lg, h = d.chain_step(tok, h, torch.tensor([[n - 1 + j]]), ctx, diag)
            assert torch.allclose(lg[0, -1], full_chain[j - 1], atol=1e-5), j
            tok = lg[:, -1:].argmax(-1)


def test_speed_times_every_method_at_every_batch_and_says_whether_the_draft_beats_lookup(
        tmp_path: Path, trained: dict[str, Path]) -> None:
    """--speed-batches: one record per (batch, method), the same tokens for every method (lossless), greedy the
    reference; the summary says whether the draft beats prompt lookup, and --note is printed beside it."""
    out = tmp_path / "eval.json"
    proc = _run(["pipeline.evaluate", "--draft", str(trained["draft"]), "--model", str(trained["target"]),
                 "--prepared-data", str(trained["prepared"]), "--num-prompts", "8", "--max-new-tokens", str(NEW),
                 "--device", "cpu", "--eos", "-1", "--k", "3", "--baselines", "ngram", "--speed-batches", "1", "4",
                 "--speed-requests", "3", "--note", "a CPU demo shows the wiring, not the speed", "--out", str(out)])
    res = json.loads(out.read_text())
    speed = res["speed"]
    assert [(r["batch"], r["method"]) for r in speed] == [
        (b, m) for b in (1, 4) for m in ("greedy", "eagle3@K=3", "ngram@K=3")]
    for r in speed:
        assert r["requests"] == (3 if r["batch"] == 1 else 4), r
        assert r["tokens"] == r["requests"] * NEW, r  # every method writes the same tokens: eos is off
        assert r["seconds"] > 0 and r["tokens_per_s"] == pytest.approx(r["tokens"] / r["seconds"], rel=0.01)
        if r["batch"] == 1:  # one request a call: its latency is the call
            assert r["latency_s"] == pytest.approx(r["seconds"] / r["requests"], rel=0.01)
        if r["method"] == "greedy":
            assert r["speedup_over_greedy"] == 1.0
    assert "evaluate: the draft beats prompt lookup: K=3 " in proc.stdout, proc.stdout
    assert "evaluate: note: a CPU demo shows the wiring, not the speed" in proc.stdout
    assert "evaluate: speed at batch 1 (3 requests): greedy " in proc.stdout
    only = _run(["pipeline.evaluate", "--draft", str(trained["draft"]), "--model", str(trained["target"]),
                 "--prepared-data", str(trained["prepared"]), "--num-prompts", "2", "--max-new-tokens", "8",
                 "--device", "cpu", "--eos", "-1", "--k", "3", "--baselines", "ngram", "--speed-only",
                 "--speed-batches", "2", "--out", str(tmp_path / "speed.json")])
    res = json.loads((tmp_path / "speed.json").read_text())
    assert "methods" not in res and [r["method"] for r in res["speed"]] == ["greedy", "eagle3@K=3", "ngram@K=3"]
    assert "acceptance length" not in only.stdout


def test_prompts_file_start_skips_the_first_records(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from pipeline.evaluate import _prompts
    from pipeline.model_io import load_tokenizer

    tok = load_tokenizer("smollm2")
    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps({"prompt": f"question number {i}"}) + "\n" for i in range(6)), encoding="utf-8")
    args = SimpleNamespace(prepared_data=None, prompts=str(f), start=4, num_prompts=16)
    got = [tok.decode(p) for p in _prompts(args, tok)]
    assert len(got) == 2 and "question number 4" in got[0] and "question number 5" in got[1]
