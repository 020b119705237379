"""Stage: export a trained draft for vLLM and SGLang, and check an exported draft.

``python -m pipeline.export export --checkpoint CKPT_DIR --out DRAFT_DIR``
writes ``config.json`` + ``model.safetensors`` in the layout both servers load
(``LlamaForCausalLMEagle3``; weights ``fc``, ``midlayer.*``, ``norm``,
``lm_head``, ``d2t``, ``t2d`` and nothing else).

The servers read the captured-layer ids differently (see docs/pipeline-model.md
for the source lines):

* vLLM reads a top-level ``eagle_aux_hidden_state_layer_ids`` *as given*, as
  "input of layer i" ids (it captures ``hidden + residual`` before layer i);
  when that key is absent it falls back to ``eagle_config``'s list, again as
  given.
* SGLang reads ``eagle_config.eagle_aux_hidden_state_layer_ids`` and adds one
  to each id (``set_eagle3_layers_to_capture``), i.e. it treats them as 0-based
  layer *outputs*.
* With neither key both use (2, N/2, N-3) input ids = outputs (1, N/2-1, N-4).

So we write the top-level key in input numbering and the nested key in output
numbering; each server then captures exactly the layers the draft trained on.

``python -m pipeline.export check DRAFT_DIR --extraction EXTRACT_DIR`` (or
``--target MODEL``) verifies a draft directory and exits 1 on any mismatch.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from pipeline.atomic import temp_dir_for, umask_mode
from pipeline.common import StageError, fsync_dir, log, make_parser, run_stage

__all__ = ["check_draft", "export_draft", "main", "run_export", "server_layer_reading"]

ARCH = "LlamaForCausalLMEagle3"


def server_layer_reading(cfg: dict[str, Any], num_layers: int) -> dict[str, list[int]]:
    """The 0-based layer *outputs* each server will feed the draft, given a draft config.

    Mirrors vLLM's ``_get_eagle3_aux_layers_from_config`` + Llama capture
    (input numbering, taken as given) and SGLang's ``set_eagle3_layers_to_capture``
    (+1 on the nested list).
    """
    top = cfg.get("eagle_aux_hidden_state_layer_ids")
    nested = (cfg.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    default_inputs = [2, num_layers // 2, num_layers - 3]
    vllm_inputs = list(top) if top else (list(nested) if nested else default_inputs)
    sglang_inputs = [i + 1 for i in nested] if nested else default_inputs
    return {
        "vllm": [i - 1 for i in vllm_inputs],
        "sglang": [i - 1 for i in sglang_inputs],
    }


def _read_checkpoint(path: Path) -> dict[str, Any]:
    import torch

    from pipeline.train import latest_checkpoint

    ck = latest_checkpoint(path) if path.is_dir() else path
    if ck is None or not ck.is_file():
        raise StageError(f"{path}: no checkpoint-<step>.pt found\n  fix: pass the train stage's --out directory")
    log(f"export: reading {ck}")
    return torch.load(ck, map_location="cpu", weights_only=False)


def export_draft(checkpoint: str | os.PathLike[str], out: str | os.PathLike[str], dtype: str = "bfloat16",
                 state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``config.json`` and ``model.safetensors`` to ``out`` (atomically, as a directory).

    ``state`` may be given instead of reading ``checkpoint`` (used for the
    untrained baseline). Returns the config written.
    """
    import torch
    from safetensors.torch import save_file

    from pipeline.eagle3_model import EXPORT_WEIGHT_NAMES

    st = state if state is not None else _read_checkpoint(Path(checkpoint))
    c = st["draft_config"]
    weights = st["model"]
    tdtype = getattr(torch, dtype)
    tensors: dict[str, Any] = {}
    for name in EXPORT_WEIGHT_NAMES:
        if name not in weights:
            raise StageError(f"{checkpoint}: checkpoint lacks {name!r}\n  fix: export a checkpoint of pipeline.train")
        t = weights[name].detach().cpu()
        if name == "d2t":
            t = t.to(torch.int64)
        elif name == "t2d":
            t = t.to(torch.bool)
        else:
            t = t.to(tdtype)
        tensors[name] = t.contiguous()
    aux = list(c["aux_layers"])
    cfg = {
        "architectures": [ARCH],
        "model_type": "llama",
        "hidden_size": c["hidden_size"],
        "target_hidden_size": c["target_hidden_size"],
        "intermediate_size": c["intermediate_size"],
        "num_attention_heads": c["num_attention_heads"],
        "num_key_value_heads": c["num_key_value_heads"],
        "head_dim": c["head_dim"],
        "num_hidden_layers": 1,
        "vocab_size": c["vocab_size"],
        "draft_vocab_size": c["draft_vocab_size"],
        "rms_norm_eps": c["rms_norm_eps"],
        "rope_theta": c["rope_theta"],
        "max_position_embeddings": c["max_position_embeddings"],
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": dtype,
        "bos_token_id": c.get("bos_token_id"),
        "eos_token_id": c.get("eos_token_id"),
        # vLLM: taken as given, "input of layer i" numbering.
        "eagle_aux_hidden_state_layer_ids": [i + 1 for i in aux],
        # SGLang: adds one to each id, so these are 0-based layer outputs.
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": aux, "use_aux_hidden_state": True},
        "eagle3tui": {
            "trained_on_layer_outputs_0based": aux,
            "num_target_layers": c["num_target_layers"],
            "checkpoint_step": st.get("step"),
        },
    }
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir_for(target)
    try:
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        umask_mode(tmp / "model.safetensors")  # safetensors writes 0600
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        for name in ("model.safetensors", "config.json"):
            fd = os.open(tmp / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return cfg


def _target_config(target: str | None, extraction: str | None) -> dict[str, Any]:
    if extraction:
        from pipeline.hidden_states import TARGET_CONFIG

        p = Path(extraction) / TARGET_CONFIG
        if not p.is_file():
            raise StageError(f"{p}: missing\n  fix: pass the extract stage's --out directory")
        return json.loads(p.read_text(encoding="utf-8"))
    if target:
        from transformers import AutoConfig

        from pipeline import model_io

        directory, gguf = model_io.split_model_path(target)
        kw: dict[str, Any] = {"local_files_only": True}
        if gguf:
            kw["gguf_file"] = gguf
        return AutoConfig.from_pretrained(directory, **kw).to_dict()
    raise StageError("check needs the target: pass --extraction EXTRACT_DIR or --target MODEL")


def check_draft(draft_dir: str | os.PathLike[str], target: str | None = None,
                extraction: str | None = None) -> list[str]:
    """Return the list of problems with ``draft_dir`` (empty when it is consistent).

    Checks the layer ids as each server will read them against the layers the
    extraction captured, hidden and vocab sizes, weight names, shapes and
    dtypes, the d2t range/offsets and t2d's consistency with d2t.
    """
    import torch
    from safetensors import safe_open

    from pipeline.eagle3_model import DraftConfig, export_weight_shapes

    d = Path(draft_dir)
    cpath, wpath = d / "config.json", d / "model.safetensors"
    problems: list[str] = []
    if not cpath.is_file() or not wpath.is_file():
        return [f"{d}: needs config.json and model.safetensors\n  fix: run `python -m pipeline.export export`"]
    cfg = json.loads(cpath.read_text(encoding="utf-8"))
    tcfg = _target_config(target, extraction)
    n_layers = int(tcfg["num_hidden_layers"])
    t_hidden, t_vocab = int(tcfg["hidden_size"]), int(tcfg["vocab_size"])
    manifest: dict[str, Any] = {}
    if extraction:
        mp = Path(extraction) / "manifest.json"
        if mp.is_file():
            manifest = json.loads(mp.read_text(encoding="utf-8"))
    trained = (manifest.get("layer_ids") or {}).get("output_0based") or [1, n_layers // 2 - 1, n_layers - 4]

    def bad(key: str, msg: str, fix: str) -> None:
        problems.append(f"{cpath}: key '{key}': {msg}\n  fix: {fix}")

    if cfg.get("architectures") != [ARCH]:
        bad("architectures", f"is {cfg.get('architectures')!r}, expected [{ARCH!r}]", "re-export the draft")
    if cfg.get("model_type") != "llama":
        bad("model_type", f"is {cfg.get('model_type')!r}, expected 'llama'", "re-export the draft")
    if cfg.get("num_hidden_layers") != 1:
        bad("num_hidden_layers", f"is {cfg.get('num_hidden_layers')!r}, expected 1", "re-export the draft")
    if cfg.get("target_hidden_size") != t_hidden:
        bad("target_hidden_size", f"is {cfg.get('target_hidden_size')!r}, the target's hidden size is {t_hidden}",
            "train the draft against this target")
    if cfg.get("hidden_size") != t_hidden:
        bad("hidden_size", f"is {cfg.get('hidden_size')!r}, the target's is {t_hidden}", "train against this target")
    if cfg.get("vocab_size") != t_vocab:
        bad("vocab_size", f"is {cfg.get('vocab_size')!r}, the target's is {t_vocab}", "use this target's vocab map")
    if manifest:
        for key, want in (("hidden_size", t_hidden), ("num_target_layers", n_layers), ("vocab_size", t_vocab)):
            if manifest.get(key) != want:
                problems.append(f"{Path(extraction or '') / 'manifest.json'}: key '{key}' is {manifest.get(key)!r} "
                                f"but the target has {want}\n  fix: extract with this target")
    top = cfg.get("eagle_aux_hidden_state_layer_ids")
    nested = (cfg.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if not top:
        bad("eagle_aux_hidden_state_layer_ids", "missing: vLLM falls back to eagle_config's ids or its defaults",
            f"set it to {[i + 1 for i in trained]} (input-of-layer numbering)")
    if not nested:
        bad("eagle_config.eagle_aux_hidden_state_layer_ids", "missing: SGLang silently uses its defaults",
            f"set it to {trained} (0-based layer outputs; SGLang adds one)")
    reading = server_layer_reading(cfg, n_layers)
    for server, got in reading.items():
        if got != list(trained):
            bad("eagle_aux_hidden_state_layer_ids" if server == "vllm" else "eagle_config.eagle_aux_hidden_state_layer_ids",
                f"{server} would feed the draft the outputs of layers {got} (0-based), "
                f"but it was trained on {list(trained)}",
                f"top-level = {[i + 1 for i in trained]}, eagle_config = {list(trained)}")
        if any(not 0 <= i < n_layers for i in got):
            bad("eagle_aux_hidden_state_layer_ids", f"{server} layer ids {got} out of range for {n_layers} layers",
                "re-export the draft")

    try:
        with safe_open(str(wpath), framework="pt") as fh:
            names = set(fh.keys())
            tensors = {k: fh.get_tensor(k) for k in names}
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types for a bad file
        return problems + [f"{wpath}: unreadable: {exc}\n  fix: re-export the draft"]
    from pipeline.eagle3_model import EXPORT_WEIGHT_NAMES

    for k in sorted(set(EXPORT_WEIGHT_NAMES) - names):
        problems.append(f"{wpath}: weight '{k}' is missing\n  fix: re-export from a pipeline.train checkpoint")
    for k in sorted(names - set(EXPORT_WEIGHT_NAMES)):
        problems.append(f"{wpath}: unexpected weight '{k}' (vLLM fails on it, SGLang ignores it)\n"
                        "  fix: export only the draft's own weights")
    dv = cfg.get("draft_vocab_size")
    if not isinstance(dv, int):
        bad("draft_vocab_size", f"is {dv!r}", "re-export the draft")
        return problems
    try:
        dc = DraftConfig(
            hidden_size=int(cfg["hidden_size"]), target_hidden_size=int(cfg["target_hidden_size"]),
            intermediate_size=int(cfg["intermediate_size"]), num_attention_heads=int(cfg["num_attention_heads"]),
            num_key_value_heads=int(cfg["num_key_value_heads"]),
            head_dim=int(cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]),
            vocab_size=t_vocab, draft_vocab_size=dv,
        )
    except (KeyError, TypeError, ValueError) as exc:
        bad(str(exc), "missing or not an integer", "re-export the draft")
        return problems
    shapes = export_weight_shapes(dc)
    fdt = getattr(torch, str(cfg.get("torch_dtype", "bfloat16")), torch.bfloat16)
    for k, t in tensors.items():
        if k in shapes and tuple(t.shape) != shapes[k]:
            problems.append(f"{wpath}: weight '{k}' has shape {tuple(t.shape)}, expected {shapes[k]} "
                            f"(draft_vocab_size={dv}, vocab_size={t_vocab})\n  fix: re-export with a matching vocab map")
        if k == "d2t" and t.dtype != torch.int64:
            problems.append(f"{wpath}: 'd2t' is {t.dtype}, expected torch.int64\n  fix: re-export")
        elif k == "t2d" and t.dtype != torch.bool:
            problems.append(f"{wpath}: 't2d' is {t.dtype}, expected torch.bool\n  fix: re-export")
        elif k not in ("d2t", "t2d") and t.dtype != fdt:
            problems.append(f"{wpath}: '{k}' is {t.dtype}, config torch_dtype says {fdt}\n  fix: re-export")
    if "lm_head.weight" in tensors and tensors["lm_head.weight"].shape[0] != dv:
        bad("draft_vocab_size", f"is {dv} but lm_head has {tensors['lm_head.weight'].shape[0]} rows",
            "re-export the draft")
    d2t, t2d = tensors.get("d2t"), tensors.get("t2d")
    if d2t is not None and d2t.dim() == 1:
        if d2t.numel() != dv:
            bad("draft_vocab_size", f"is {dv} but d2t has {d2t.numel()} entries", "re-export the draft")
        tid = torch.arange(d2t.numel()) + d2t.long()
        if d2t.numel() and (tid.min() < 0 or tid.max() >= t_vocab):
            problems.append(f"{wpath}: d2t maps draft ids outside the target vocabulary [0, {t_vocab})\n"
                            "  fix: rebuild the vocab map (d2t[i] = target_id - i)")
        elif tid.unique().numel() != tid.numel():
            problems.append(f"{wpath}: d2t maps two draft ids to the same target id\n  fix: rebuild the vocab map")
        elif t2d is not None and t2d.dim() == 1 and t2d.numel() == t_vocab:
            if int(t2d.sum()) != d2t.numel() or not bool(t2d[tid].all()):
                problems.append(f"{wpath}: t2d does not mark exactly the target ids that d2t maps to\n"
                                "  fix: rebuild both from one vocab map")
    return problems


def build_parser() -> Any:
    """The stage's argparse parser (subcommands ``export`` and ``check``)."""
    p = make_parser("python -m pipeline.export", "Export an EAGLE-3 draft for vLLM/SGLang, or check one.")
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write config.json + model.safetensors from a checkpoint")
    e.add_argument("--checkpoint", required=True, help="train --out directory (newest checkpoint) or a .pt file")
    e.add_argument("--out", required=True, help="draft directory to write")
    e.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    e.add_argument("--extraction", default=None, help="extraction dir: run `check` against it after export")
    e.add_argument("--target", default=None,
                   help="target model: run `check` against it after export (a draft trained online has no extraction)")
    c = sub.add_parser("check", help="verify a draft directory against its target and extraction")
    c.add_argument("draft", help="draft directory (config.json + model.safetensors)")
    c.add_argument("--extraction", default=None, help="extraction directory (manifest + target config)")
    c.add_argument("--target", default=None, help="target model (dir, .gguf or 'smollm2') when no --extraction")
    return p


def _report(draft: str, problems: list[str]) -> int:
    if problems:
        for pr in problems:
            print(f"check: FAIL: {pr}", flush=True)
        print(f"check: {draft}: {len(problems)} problem(s)", flush=True)
        return 1
    cfg = json.loads((Path(draft) / "config.json").read_text(encoding="utf-8"))
    print(f"check: ok: {draft}: vLLM reads {cfg['eagle_aux_hidden_state_layer_ids']} (inputs), SGLang reads "
          f"{cfg['eagle_config']['eagle_aux_hidden_state_layer_ids']}+1; both capture the trained layer outputs "
          f"{cfg['eagle3tui']['trained_on_layer_outputs_0based']}; draft_vocab_size {cfg['draft_vocab_size']}",
          flush=True)
    return 0


def run_export(args: Any) -> int:
    """Run the ``export`` or ``check`` subcommand; returns the exit code (1 when the check fails)."""
    if args.cmd == "export":
        cfg = export_draft(args.checkpoint, args.out, args.dtype)
        print(f"export: wrote {args.out} (draft_vocab_size {cfg['draft_vocab_size']}, layers "
              f"{cfg['eagle3tui']['trained_on_layer_outputs_0based']})", flush=True)
        if args.extraction or args.target:
            return _report(args.out, check_draft(args.out, target=args.target, extraction=args.extraction))
        return 0
    return _report(args.draft, check_draft(args.draft, target=args.target, extraction=args.extraction))


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.export``."""
    return run_stage(build_parser(), run_export, argv)


if __name__ == "__main__":
    sys.exit(main())
