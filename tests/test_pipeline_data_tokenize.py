"""tokenize stage with the real SmolLM2 tokenizer (from the packaged GGUF): loss mask on multi-turn chats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.tokenized_dataset import TokenizedDataset

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("transformers")
pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def tok() -> Any:
    from pipeline.model_io import ModelNotFoundError, load_tokenizer

    try:
        return load_tokenizer("smollm2")
    except ModelNotFoundError as exc:  # the real model is part of the setup: missing is a failure
        pytest.fail(str(exc))


MULTI = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name a colour."},
    {"role": "assistant", "content": "Blue."},
    {"role": "user", "content": "Another one?"},
    {"role": "assistant", "content": "Green, like grass."},
]


def masked_runs(tok: Any, ids: np.ndarray, mask: np.ndarray) -> list[str]:
    runs, i = [], 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            runs.append(tok.decode(ids[i:j].tolist()))
            i = j
        else:
            i += 1
    return runs


def test_multi_turn_mask_covers_exactly_the_answers(tok: Any) -> None:
    from pipeline.tokenize_data import tokenize_conversation, verify_mask

    ids, mask = tokenize_conversation(tok, MULTI)
    # Same tokens as the template's own tokenization: masking did not change the ids.
    ref = tok.apply_chat_template(MULTI, tokenize=True)
    ref = ref["input_ids"] if isinstance(ref, dict) or hasattr(ref, "keys") else ref
    assert ids.tolist() == list(ref)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    # Each answer plus its end-of-turn marker, and nothing else (no header, no user text).
    assert masked_runs(tok, ids, mask) == ["Blue.<|im_end|>", "Green, like grass.<|im_end|>"]
    assert int(mask.sum()) == len(tok("Blue.")["input_ids"]) + len(tok("Green, like grass.")["input_ids"]) + 2
    assert all(ids[np.flatnonzero(mask)[[-1]]] == end)
    assert verify_mask(tok, MULTI, ids, mask) is None
    # A deliberately shifted mask is caught by the verifier.
    bad = np.roll(mask, -3)
    assert verify_mask(tok, MULTI, ids, bad) is not None


def test_default_system_prompt_is_not_masked(tok: Any) -> None:
    from pipeline.tokenize_data import tokenize_conversation

    conv = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    ids, mask = tokenize_conversation(tok, conv)
    assert masked_runs(tok, ids, mask) == ["Hello!<|im_end|>"]


def test_reasoning_inline_is_trained_on(tok: Any) -> None:
    from pipeline.tokenize_data import _with_reasoning, tokenize_conversation

    conv = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "two plus two"}]
    ids, mask = tokenize_conversation(tok, _with_reasoning(conv, "inline"))
    (run,) = masked_runs(tok, ids, mask)
    assert run.startswith("<think>\ntwo plus two\n</think>") and run.endswith("4<|im_end|>")


def test_tokenize_file_stats_truncation_and_drops(tok: Any, tmp_path: Path) -> None:
    from pipeline.tokenize_data import summary_line, tokenize_file

    src = tmp_path / "regen.jsonl"
    rows = [
        {"id": "m", "conversations": MULTI},
        {"id": "long", "conversations": [{"role": "user", "content": "Count."},
                                         {"role": "assistant", "content": " ".join(["one"] * 400)}]},
        {"id": "noans", "conversations": [{"role": "user", "content": "?"}]},
        {"id": "empty", "conversations": [{"role": "user", "content": "?"}, {"role": "assistant", "content": ""}]},
        {"id": "m", "conversations": MULTI},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = tokenize_file(tok, src, tmp_path / "ds", max_len=128, tokenizer_name="smollm2", show_progress=False)
    ds = TokenizedDataset(tmp_path / "ds")
    assert ds.ids == ["m", "long"]
    assert len(ds[1][1]) == 128 and m["stats"]["truncated"] == 1
    assert m["stats"]["dropped"] == {"no assistant turn": 1, "empty assistant answer": 1, "duplicate id": 1}
    assert m["stats"]["verified"] == 1 and m["vocab_size"] == len(tok) == 49152
    assert m["num_loss_tokens"] == int(ds.loss_mask.sum())
    assert len(m["chat_template_sha256"]) == 64
    assert summary_line(m, tmp_path / "ds").startswith("tokenize: 2 samples, ")


def test_several_inputs_make_one_dataset_in_order(tok: Any, tmp_path: Path) -> None:
    """Greedy answers of many prompts plus sampled answers of a few: one dataset, the files' order kept."""
    from pipeline.tokenize_data import tokenize_file

    def answer(sid: str, text: str) -> dict[str, Any]:
        return {"id": sid, "conversations": [{"role": "user", "content": "Name a colour."},
                                             {"role": "assistant", "content": text}]}

    greedy, sampled = tmp_path / "regen.jsonl", tmp_path / "regen-sampled.jsonl"
    greedy.write_text("".join(json.dumps(answer(i, "Blue.")) + "\n" for i in ("p1", "p2")))
    sampled.write_text("".join(json.dumps(answer(i, t)) + "\n"
                               for i, t in (("p1#0", "Red."), ("p1#1", "Green."), ("p2", "Teal."))))
    m = tokenize_file(tok, [greedy, sampled], tmp_path / "ds", max_len=64, tokenizer_name="smollm2",
                      show_progress=False)
    ds = TokenizedDataset(tmp_path / "ds")
    assert ds.ids == ["p1", "p2", "p1#0", "p1#1"]
    assert m["stats"]["dropped"] == {"duplicate id": 1}  # the first file's p2 wins
    assert m["source"] == [str(greedy), str(sampled)]
    assert "Green." in tok.decode(ds[3][1].tolist())


def test_cli_names_the_bad_line_of_a_later_input(tmp_path: Path) -> None:
    good, bad = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    good.write_text(json.dumps({"id": "a", "conversations": [{"role": "user", "content": "x"},
                                                             {"role": "assistant", "content": "y"}]}) + "\n")
    bad.write_text('{"id": "b", "conversations": []}\n{"id": "c"}\n')
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.tokenize_data", "-i", str(good), "-i", str(bad),
                                          "-o", str(tmp_path / "ds")], cwd=ROOT, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 1 and f"{bad}:2: expected" in r.stderr
    assert not (tmp_path / "ds").exists()


def test_cli_errors_name_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "a", "conversations": [{"role": "user", "content": "x"}]}\n{"id": "b"}\n')
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.tokenize_data", "-i", str(src), "-o", str(tmp_path / "ds")],
                       cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert r.returncode == 1 and f"{src}:2: expected" in r.stderr
    assert not (tmp_path / "ds").exists()
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.tokenize_data", "-i", str(src)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("usage: python -m pipeline.tokenize_data")


@pytest.mark.slow
def test_cached_tokenizer_matches_fresh_conversion(tok: Any, tmp_path: Path) -> None:
    """The on-disk tokenizer cache must not change a single id or the template."""
    from pipeline.model_io import load_tokenizer

    fresh = load_tokenizer("smollm2", cache=False)
    text = fresh.apply_chat_template(MULTI, tokenize=False) + " naïve café 東京 \t\n  ```py\nx=1\n```"
    assert tok.chat_template == fresh.chat_template and len(tok) == len(fresh)
    assert tok(text, add_special_tokens=False)["input_ids"] == fresh(text, add_special_tokens=False)["input_ids"]
    assert tok.eos_token == fresh.eos_token and tok.bos_token == fresh.bos_token
