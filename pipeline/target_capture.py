"""Capturing the target's hidden states: the one place that runs the target for EAGLE-3.

Forward hooks on the three aux layers (0-based outputs 1, N/2-1, N-4) and the
final norm capture exactly the tensors the servers feed the draft. Used by
``extract`` (batched, no cache: rows of every real token) and by ``evaluate``
(batched decoding with a KV cache: logits plus the aux features of new tokens).
:class:`VLLMCapture` does the same through vLLM for targets that need tensor
parallelism (vLLM is imported only when it is used).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.atomic import umask_mode
from pipeline.common import StageError, atomic_write_text, log
from pipeline.hidden_states import STREAMS, TARGET_CONFIG, TARGET_HEADS

__all__ = ["TargetCapture", "VLLMCapture", "decoder_parts", "load_target"]


def decoder_parts(model: Any) -> tuple[Any, Any, Any]:
    """(base model, decoder layers, final norm) of a Llama-family causal LM."""
    base = getattr(model, "model", None)
    layers = getattr(base, "layers", None)
    norm = getattr(base, "norm", None)
    if base is None or layers is None or norm is None:
        raise StageError(
            f"{type(model).__name__}: cannot find model.layers / model.norm; only Llama-family "
            "decoder layouts are supported by the hf backend\n  fix: use a Llama/Qwen/Mistral-style target"
        )
    return base, layers, norm


class TargetCapture:
    """Runs a transformers target with hooks that keep the EAGLE-3 streams of the last forward.

    Streams are, in order: the outputs of ``aux_layers`` and the final norm's
    output (``STREAMS`` = 4 for the usual three aux layers).
    """

    def __init__(self, model: Any, aux_layers: list[int]) -> None:
        self.model = model
        self.base, layers, norm = decoder_parts(model)
        self.aux_layers = list(aux_layers)
        self._captured: dict[int, Any] = {}
        self._handles = [layers[li].register_forward_hook(self._hook(slot)) for slot, li in enumerate(aux_layers)]
        self._handles.append(norm.register_forward_hook(self._hook(len(aux_layers))))
        self.device = next(model.parameters()).device
        self._head: Any = None  # float32 copy of lm_head, made on first use
        self._cache_name: str | None = None

    def _hook(self, slot: int) -> Callable[..., None]:
        def fn(_mod: Any, _inp: Any, out: Any) -> None:
            self._captured[slot] = out[0] if isinstance(out, tuple) else out

        return fn

    def close(self) -> None:
        """Remove the hooks."""
        for h in self._handles:
            h.remove()

    def _forward(self, input_ids: Any, attention_mask: Any) -> None:
        self._captured.clear()
        self.base(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)

    def streams(self, input_ids: Any, attention_mask: Any) -> Any:
        """Return bf16 [B, L, 4, H] for a right-padded batch (the decoder only, no ``lm_head``)."""
        import torch

        with torch.inference_mode():
            self._forward(input_ids, attention_mask)
            return torch.stack([self._captured[s] for s in range(STREAMS)], dim=2).to(torch.bfloat16)

    def rows(self, input_ids: Any, attention_mask: Any, flat_index: Any) -> Any:
        """Return bf16 [n, 4, H]: the rows of the real tokens, picked by ``flat_index`` into B*L.

        The index comes from the host's copy of the mask, so unlike boolean
        indexing on the device this never waits for the GPU.
        """
        import torch

        with torch.inference_mode():
            self._forward(input_ids, attention_mask)
            picked = []
            for s in range(STREAMS):
                t = self._captured[s]
                picked.append(t.reshape(-1, t.shape[-1]).index_select(0, flat_index).to(torch.bfloat16))
            self._captured.clear()
            return torch.stack(picked, dim=1)

    def decode_step(self, input_ids: Any, position_ids: Any, attention_mask: Any, cache: Any | None) -> tuple[Any, Any, Any]:
        """One batched decoding forward with a KV cache whose slots may hold holes.

        ``input_ids``/``position_ids`` [B, T] are the new tokens and their
        sequence positions; ``attention_mask`` [B, S + T] marks, for every cache
        slot and the new ones, whether it holds a real token (rejected draft
        tokens stay in the cache as masked holes, so rows never need cropping).
        Returns (logits [B, T, V] in float32, aux features [B, T, 3H], cache):
        logits come from the final norm's output through ``lm_head`` in float32,
        so bf16 rounding of the logits cannot create argmax ties.
        """
        import torch
        from transformers import DynamicCache

        with torch.inference_mode():
            if cache is None:
                cache = DynamicCache()
            self._captured.clear()
            out = self.base(input_ids=input_ids, position_ids=position_ids, attention_mask=attention_mask,
                            use_cache=True, **{self._cache_kwarg(): cache})
            final = out.last_hidden_state
            if self._head is None:
                self._head = self.model.get_output_embeddings().weight.detach().float()
            logits = torch.matmul(final.float(), self._head.t())
            aux = torch.cat([self._captured[s] for s in range(len(self.aux_layers))], dim=-1)
            self._captured.clear()
            return logits, aux, cache

    def _cache_kwarg(self) -> str:
        """``cache`` in newer transformers (``past_key_values`` is deprecated there), else ``past_key_values``."""
        if self._cache_name is None:
            import inspect

            self._cache_name = "cache" if "cache" in inspect.signature(self.base.forward).parameters \
                else "past_key_values"
        return self._cache_name


def load_target(args: Any, stage: str) -> tuple[Any, Any, str]:
    """Load the target with transformers from ``args.model``/``gguf_file``/``device``/``device_map``/``dtype``.

    Logs each phase as ``<stage>: load: ...`` (the load can take minutes) and
    returns (model, config, device).
    """
    import torch

    from pipeline import model_io

    t0 = time.monotonic()
    directory, gguf = model_io.split_model_path(args.model, args.gguf_file)
    src = Path(directory) / gguf if gguf else Path(directory)
    size = src.stat().st_size if src.is_file() else sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    device = model_io.resolve_device(args.device)
    dtype = model_io.resolve_dtype(args.dtype, device if not args.device_map else "cuda")
    log(f"{stage}: load: reading {src} ({size / 1e9:.2f} GB) as {str(dtype).replace('torch.', '')} "
        f"on {args.device_map or device}")
    if args.device_map:
        from transformers import AutoModelForCausalLM

        opts: dict[str, Any] = {"local_files_only": True, "dtype": dtype, "device_map": args.device_map}
        if gguf:
            opts["gguf_file"] = gguf
        model = AutoModelForCausalLM.from_pretrained(directory, **opts).eval()
        device = str(next(model.parameters()).device)
    else:
        model = model_io.load_model(args.model, args.gguf_file, dtype=dtype, device=device)
    log(f"{stage}: load: model ready in {time.monotonic() - t0:.1f}s "
        f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
    torch.set_grad_enabled(False)
    return model, model.config, device


class VLLMCapture:
    """Capture through vLLM's offline ``LLM`` (for targets that need tensor parallelism).

    Written against vLLM's public API: ``LLM(...)``, ``LLM.apply_model`` (runs a
    function on the model in every worker) and ``generate`` with prompt token
    ids. The engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) and
    eager (no CUDA graphs, no compile) so forward hooks fire; one request per
    call keeps the captured rows in sample order. After each decoder layer the
    residual stream is all-reduced, so every tensor-parallel rank holds full
    rows and rank 0's capture is used.
    """

    def __init__(self, args: Any) -> None:
        from pipeline.eagle3_model import default_aux_layers

        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        t0 = time.monotonic()
        log(f"extract: load: starting vLLM for {args.model} (tp={args.tensor_parallel_size})")
        from vllm import LLM  # imported only for this backend

        self.llm = LLM(
            model=str(args.model),
            tensor_parallel_size=args.tensor_parallel_size,
            enforce_eager=True,
            enable_prefix_caching=False,
            enable_chunked_prefill=False,
            max_num_batched_tokens=max(args.batch_tokens, 8192),
            gpu_memory_utilization=0.85,
        )
        self.config = self.llm.llm_engine.model_config.hf_config
        aux = default_aux_layers(int(self.config.num_hidden_layers))

        def install(model: Any) -> None:
            import torch

            inner = model.model
            store: list[Any] = []
            model._eagle3_store = store

            def hook_layer(_m: Any, _i: Any, out: Any) -> None:
                # vLLM's Llama layer returns (hidden, residual); the residual stream is their sum.
                h, r = out
                store.append((h + r) if r is not None else h)

            def hook_norm(_m: Any, _i: Any, out: Any) -> None:
                store.append(out[0] if isinstance(out, tuple) else out)

            for li in aux:
                inner.layers[li].register_forward_hook(hook_layer)
            inner.norm.register_forward_hook(hook_norm)
            model._eagle3_stack = lambda: torch.stack(store[-4:], dim=1).to(torch.bfloat16).cpu()

        self.llm.apply_model(install)
        log(f"extract: load: vLLM ready in {time.monotonic() - t0:.1f}s")

    def save_target_files(self, out: Path) -> None:
        """Save the target config and heads by asking the worker for its weights."""
        import torch
        from safetensors.torch import save_file

        atomic_write_text(out / TARGET_CONFIG, json.dumps(self.config.to_dict(), indent=2, default=str) + "\n")
        heads = self.llm.apply_model(
            lambda m: (m.model.embed_tokens.weight.detach().to("cpu", torch.bfloat16).clone(),
                       m.lm_head.weight.detach().to("cpu", torch.bfloat16).clone())
        )[0]
        save_file({"embed_tokens": heads[0], "lm_head": heads[1]}, str(out / f".{TARGET_HEADS}.partial"))
        umask_mode(out / f".{TARGET_HEADS}.partial")  # safetensors writes 0600
        os.replace(out / f".{TARGET_HEADS}.partial", out / TARGET_HEADS)

    def run_shard(self, ds: Any, shard: list[int], lengths: Sequence[int], bar: Any) -> dict[str, Any]:
        """Prefill each sample alone and collect its four streams."""
        import torch
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=1, temperature=0.0)
        parts: dict[str, list[Any]] = {"hidden_states": [], "input_ids": [], "loss_mask": []}
        for i in shard:
            _sid, a, m = ds[i]
            self.llm.apply_model(lambda mdl: mdl._eagle3_store.clear())
            self.llm.generate([{"prompt_token_ids": a.tolist()}], params, use_tqdm=False)
            hs = self.llm.apply_model(lambda mdl: mdl._eagle3_stack())[0]
            if hs.shape[0] != a.size:
                raise StageError(f"vllm backend: sample {ds.ids[i]!r}: captured {hs.shape[0]} rows for "
                                 f"{a.size} tokens\n  fix: use --backend hf, or disable chunked prefill")
            parts["hidden_states"].append(hs)
            parts["input_ids"].append(torch.from_numpy(a.astype("int32")))
            parts["loss_mask"].append(torch.from_numpy(m.astype("uint8")))
            bar.update(int(a.size))
        offsets = [0]
        for i in shard:
            offsets.append(offsets[-1] + int(lengths[i]))
        out = dict(parts)
        out["offsets"] = torch.tensor(offsets, dtype=torch.int64)
        out["sample_index"] = torch.tensor(shard, dtype=torch.int64)
        return out
