"""Stage: capture the target's hidden states that EAGLE-3 trains on.

For every token of a prepared dataset (``pipeline.prepared``) this writes the
outputs of target layers (1, N/2-1, N-4) (0-based; vLLM and SGLang call these
the *inputs* of layers 2, N/2, N-3) and the final, normalised hidden state (the
target distribution is ``lm_head`` of it), as bf16 safetensors shards::

    out/
      plan.json                   shard plan + fingerprint (written first; resume key)
      shard-00000.safetensors     hidden_states bf16 [T, 4, H]  (aux0, aux1, aux2, final)
                                  input_ids int32 [T], loss_mask uint8 [T],
                                  offsets int64 [n+1], sample_index int64 [n]
      index.json                  sample id -> [shard, start, end]
      target_config.json          the target's config (hidden sizes, rope, vocab)
      target_heads.safetensors    embed_tokens and lm_head (bf16), for training
      manifest.json               written last; "complete": true

Every file is written atomically. A rerun with the same inputs skips shards
that validate and redoes any that do not (a torn shard). SIGTERM lets the
current shard finish (and the writer drain), then exits 143.

On a GPU the forwards never wait for the disk: each batch's rows go to a
reused pinned buffer by an asynchronous copy, and one writer thread streams
them into the shard file (header first) while the next batches run. Backends: ``hf`` (transformers) and
``vllm`` (tensor parallel; vLLM is imported only when chosen).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.common import (
    StageError,
    atomic_write_json,
    fail,
    fsync_dir,
    install_sigterm_flag,
    log,
    make_parser,
    progress,
)

FORMAT = "eagle3-hidden/1"
PLAN = "plan.json"
INDEX = "index.json"
MANIFEST = "manifest.json"
TARGET_CONFIG = "target_config.json"
TARGET_HEADS = "target_heads.safetensors"
# Per token: three aux layers + the final hidden state, bf16.
STREAMS = 4
BYTES_PER_VALUE = 2

__all__ = [
    "FORMAT",
    "ExtractedDataset",
    "HFCapture",
    "check_disk",
    "main",
    "make_batches",
    "plan_shards",
    "required_bytes",
    "run_extract",
    "shard_name",
    "validate_shard",
]


def shard_name(k: int) -> str:
    """File name of shard ``k``."""
    return f"shard-{k:05d}.safetensors"


def plan_shards(lengths: Sequence[int], shard_tokens: int) -> list[list[int]]:
    """Split sample indices, in dataset order, into shards of about ``shard_tokens`` tokens.

    Deterministic in its inputs, so a rerun finds the same shard boundaries.
    """
    shards: list[list[int]] = []
    cur: list[int] = []
    cur_tokens = 0
    for i, n in enumerate(lengths):
        if cur and cur_tokens + int(n) > shard_tokens:
            shards.append(cur)
            cur, cur_tokens = [], 0
        cur.append(i)
        cur_tokens += int(n)
    if cur:
        shards.append(cur)
    return shards


def make_batches(indices: Sequence[int], lengths: Sequence[int], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Group samples of similar length so padding stays small.

    Sorted by length (longest first, so a too-large batch fails at once); a
    batch holds at most ``max_batch`` samples and ``batch_tokens`` padded tokens.
    """
    order = sorted(indices, key=lambda i: (-int(lengths[i]), i))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = int(lengths[cur[0]]) if cur else int(lengths[i])
        if cur and (len(cur) + 1 > max_batch or (len(cur) + 1) * longest > batch_tokens):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def required_bytes(num_tokens: int, hidden_size: int) -> int:
    """Disk space the shards need: tokens x 4 x hidden x 2 bytes (bf16)."""
    return int(num_tokens) * STREAMS * int(hidden_size) * BYTES_PER_VALUE


def check_disk(out_dir: Path, need: int, reserve: int = 1 << 30) -> None:
    """Refuse to start when ``out_dir``'s filesystem cannot hold ``need`` bytes plus ``reserve``."""
    probe = out_dir
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if need + reserve > free:
        raise StageError(
            f"{out_dir}: not enough disk space for the hidden states: need {need / 1e9:.2f} GB "
            f"(+{reserve / 1e9:.2f} GB reserve), {free / 1e9:.2f} GB free\n"
            "  fix: free space, pass --out on a larger disk, or extract fewer samples (--max-samples)"
        )


def validate_shard(path: Path, expected: list[int], lengths: Sequence[int], hidden: int) -> str | None:
    """Return None when ``path`` is a complete shard holding exactly ``expected``, else why not."""
    from safetensors import safe_open

    if not path.is_file():
        return "missing"
    want_tokens = sum(int(lengths[i]) for i in expected)
    try:
        with safe_open(str(path), framework="pt") as fh:
            keys = set(fh.keys())
            need = {"hidden_states", "input_ids", "loss_mask", "offsets", "sample_index"}
            if not need <= keys:
                return f"missing tensors {sorted(need - keys)}"
            shape = tuple(fh.get_slice("hidden_states").get_shape())
            if shape != (want_tokens, STREAMS, hidden):
                return f"hidden_states shape {shape}, expected {(want_tokens, STREAMS, hidden)}"
            idx = fh.get_tensor("sample_index").tolist()
            if sorted(idx) != sorted(expected):
                return "holds other samples than the plan"
        # safe_open reads only the header; a torn file can have a valid header
        # and a short body, so compare the size the header promises.
        with open(path, "rb") as raw:
            header_len = int.from_bytes(raw.read(8), "little")
            header = json.loads(raw.read(header_len))
        end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
        if path.stat().st_size != 8 + header_len + end:
            return f"file is {path.stat().st_size} bytes, header says {8 + header_len + end}"
    except Exception as exc:  # noqa: BLE001 - a torn file raises from several layers
        return f"unreadable ({type(exc).__name__}: {exc})"
    return None


def _fingerprint(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _decoder_parts(model: Any) -> tuple[Any, Any, Any]:
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


class HFCapture:
    """Runs the target's decoder (without ``lm_head``) and returns the four streams.

    Forward hooks on the three aux layers and the final norm capture exactly
    the tensors the servers will feed the draft; no other layer's output is kept.
    """

    def __init__(self, model: Any, aux_layers: list[int]) -> None:
        self.model = model
        self.base, layers, norm = _decoder_parts(model)
        self.aux_layers = aux_layers
        self._captured: dict[int, Any] = {}
        self._handles = []
        for slot, li in enumerate(aux_layers):
            self._handles.append(layers[li].register_forward_hook(self._hook(slot)))
        self._handles.append(norm.register_forward_hook(self._hook(len(aux_layers))))

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

    def __call__(self, input_ids: Any, attention_mask: Any) -> Any:
        """Return bf16 [B, L, 4, H] for a right-padded batch."""
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


def _load_hf(args: Any) -> tuple[Any, Any, str]:
    """Load the target with transformers, logging each phase (the load can take minutes)."""
    import torch

    from pipeline import model_io

    t0 = time.monotonic()
    directory, gguf = model_io.split_model_path(args.model, args.gguf_file)
    src = Path(directory) / gguf if gguf else Path(directory)
    size = src.stat().st_size if src.is_file() else sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    device = model_io.resolve_device(args.device)
    dtype = model_io.resolve_dtype(args.dtype, device if not args.device_map else "cuda")
    log(f"extract: load: reading {src} ({size / 1e9:.2f} GB) as {str(dtype).replace('torch.', '')} "
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
    log(f"extract: load: model ready in {time.monotonic() - t0:.1f}s "
        f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
    torch.set_grad_enabled(False)
    return model, model.config, device


# Tensor order inside a shard file written by this stage. hidden_states comes first so it can be
# streamed batch by batch; its size (8*H bytes a token) keeps the int64 tensors after it 8-aligned.
_SMALL_TENSORS = (("offsets", "I64", 8), ("sample_index", "I64", 8), ("input_ids", "I32", 4), ("loss_mask", "U8", 1))


def _shard_header(k: int, num_tokens: int, num_samples: int, hidden: int) -> bytes:
    """The safetensors header (length prefix + JSON, space-padded to 8 bytes) of one shard.

    Every size is known before the first forward, so the header is written
    first and the rows follow as they come off the GPU.
    """
    header: dict[str, Any] = {"__metadata__": {"format": FORMAT, "shard": str(k)}}
    pos = num_tokens * STREAMS * hidden * BYTES_PER_VALUE
    header["hidden_states"] = {"dtype": "BF16", "shape": [num_tokens, STREAMS, hidden], "data_offsets": [0, pos]}
    counts = {"offsets": num_samples + 1, "sample_index": num_samples, "input_ids": num_tokens,
              "loss_mask": num_tokens}
    for name, dtype, width in _SMALL_TENSORS:
        header[name] = {"dtype": dtype, "shape": [counts[name]], "data_offsets": [pos, pos + counts[name] * width]}
        pos += counts[name] * width
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw


def _write_all(fd: int, buf: Any) -> None:
    """os.write until every byte of ``buf`` is out (os.write may write less; it drops the GIL)."""
    view = memoryview(buf).cast("B")
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _tensor_bytes(t: Any) -> Any:
    """A zero-copy byte view of a contiguous CPU tensor."""
    import torch

    return t.contiguous().view(torch.uint8).numpy()


_SYNC_FILE_RANGE: Any = None


def _start_writeback(fd: int, offset: int, nbytes: int) -> None:
    """Ask the kernel to start writing a range to disk now (Linux sync_file_range; else nothing).

    Without it a machine with much RAM keeps a whole shard dirty in the page
    cache and the fsync at the shard's end writes all of it while the queue stalls.
    """
    global _SYNC_FILE_RANGE
    if _SYNC_FILE_RANGE is None:
        _SYNC_FILE_RANGE = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).sync_file_range
                fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _SYNC_FILE_RANGE = fn
            except (OSError, AttributeError):
                pass
    if _SYNC_FILE_RANGE:
        _SYNC_FILE_RANGE(fd, offset, nbytes, 2)  # SYNC_FILE_RANGE_WRITE; errors only cost speed


class _Writer(threading.Thread):
    """The one background thread that writes shards while the main thread keeps running forwards.

    Work items, in order, on a bounded queue:

    * ``("open", k, header)``: create ``.shard-k.partial`` and write the header;
    * ``("rows", tensor, event, release)``: wait for ``event`` (the device->host
      copy into ``tensor``), append its bytes, then call ``release`` (the
      buffer goes back to the pool);
    * ``("close", k, small)``: append the small tensors, fsync, rename to
      ``shard-k.safetensors``, fsync the directory;
    * ``None``: stop (an open, unclosed shard is discarded).

    After an error it records it in ``error`` and keeps draining the queue,
    releasing buffers, so the main thread never blocks on a dead writer.
    """

    def __init__(self, out: Path, fsync: bool, maxsize: int = 8) -> None:
        super().__init__(daemon=True, name="shard-writer")
        self.q: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
        self.out = out
        self.fsync = fsync
        self.error: BaseException | None = None
        self._fd: int | None = None
        self._tmp: Path | None = None
        self._pos = 0  # bytes of hidden_states written to the open shard
        self._want = 0
        self._data_start = 0

    def put(self, item: Any) -> None:
        """Queue work (blocks while the queue is full: the backpressure), then surface a writer error."""
        self.q.put(item)
        if self.error is not None:
            raise StageError(f"{self.out}: writing a shard failed: {self.error}") from self.error

    def run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                self._discard()
                return
            try:
                if self.error is None:
                    self._handle(item)
            except BaseException as exc:  # noqa: BLE001 - surfaced by the main thread
                self.error = exc
                self._discard()
            finally:
                if item[0] == "rows" and item[3] is not None:
                    try:
                        if item[2] is not None:
                            item[2].synchronize()  # never hand back a buffer a copy still writes into
                    finally:
                        item[3]()

    def _handle(self, item: Any) -> None:
        kind = item[0]
        if kind == "open":
            _kind, k, header = item
            self._tmp = self.out / f".{shard_name(k)}.partial"
            self._fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            _write_all(self._fd, header)
            hdr = json.loads(header[8:])
            self._want = hdr["hidden_states"]["data_offsets"][1]
            self._data_start = len(header)
            self._pos = 0
        elif kind == "rows":
            _kind, t, event, _release = item
            if event is not None:
                event.synchronize()  # the device->host copy has landed
            assert self._fd is not None
            nbytes = t.numel() * t.element_size()
            _write_all(self._fd, _tensor_bytes(t))
            if self.fsync:
                _start_writeback(self._fd, self._data_start + self._pos, nbytes)
            self._pos += nbytes
        elif kind == "close":
            _kind, k, small = item
            assert self._fd is not None and self._tmp is not None
            if self._pos != self._want:
                raise StageError(f"{self._tmp}: {self._pos} bytes of hidden states, the header says {self._want}")
            for name, _dtype, _width in _SMALL_TENSORS:
                _write_all(self._fd, _tensor_bytes(small[name]))
            if self.fsync:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
            os.replace(self._tmp, self.out / shard_name(k))
            self._tmp = None
            if self.fsync:
                fsync_dir(self.out)

    def _discard(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None


class _HostBuffers:
    """A small pool of reusable host buffers for the device->host copies.

    Pinned (page-locked) on CUDA, so copies run asynchronously on a side
    stream; allocated lazily, so only as many exist as the writer lags behind
    (at most ``max_buffers``). ``take`` blocks while all are in the writer's
    hands: that is what bounds host memory.
    """

    def __init__(self, rows: int, hidden: int, pinned: bool, max_buffers: int, writer: _Writer) -> None:
        self.rows, self.hidden, self.pinned = rows, hidden, pinned
        self.max_buffers = max_buffers
        self.created = 0
        self.free: queue.Queue[Any] = queue.Queue()
        self.writer = writer

    def take(self, n: int) -> tuple[Any, Callable[[], None]]:
        """A [n, 4, H] bf16 view of a free buffer, and the callable that returns it to the pool."""
        import torch

        try:
            buf = self.free.get_nowait()
        except queue.Empty:
            if self.created < self.max_buffers:
                self.created += 1
                buf = torch.empty((self.rows, STREAMS, self.hidden), dtype=torch.bfloat16, pin_memory=self.pinned)
            else:
                while True:
                    try:
                        buf = self.free.get(timeout=1.0)
                        break
                    except queue.Empty:
                        if self.writer.error is not None or not self.writer.is_alive():
                            raise StageError(f"{self.writer.out}: the shard writer stopped: "
                                             f"{self.writer.error}") from self.writer.error
        return buf[:n], lambda: self.free.put(buf)


def _pool_size(rows: int, hidden: int, budget_bytes: int = 4 << 30) -> int:
    """How many host buffers of ``rows`` rows the pool may hold: 2..8, within ``budget_bytes``."""
    per = max(1, rows * STREAMS * hidden * BYTES_PER_VALUE)
    return max(2, min(8, budget_bytes // per))


def _batch_inputs(ds: Any, batch: list[int]) -> tuple[Any, Any, list[Any], list[Any]]:
    """Right-padded ids and mask [B, L] of one batch, and each sample's int32 ids and uint8 loss mask."""
    import numpy as np
    import torch

    longest = int(ds[batch[0]][1].size)
    ids = np.zeros((len(batch), longest), dtype=np.int64)
    mask = np.zeros((len(batch), longest), dtype=np.int64)
    ids_parts, mask_parts = [], []
    for r, i in enumerate(batch):
        _sid, a, m = ds[i]
        ids[r, : a.size] = a
        mask[r, : a.size] = 1
        ids_parts.append(torch.from_numpy(a.astype("int32")))
        mask_parts.append(torch.from_numpy(m.astype("uint8")))
    return torch.from_numpy(ids), torch.from_numpy(mask), ids_parts, mask_parts


def _small_tensors(order: list[int], lengths: Sequence[int], ids_parts: list[Any], mask_parts: list[Any]) -> dict[str, Any]:
    import torch

    offsets = [0]
    for i in order:
        offsets.append(offsets[-1] + int(lengths[i]))
    return {
        "offsets": torch.tensor(offsets, dtype=torch.int64),
        "sample_index": torch.tensor(order, dtype=torch.int64),
        "input_ids": torch.cat(ids_parts) if ids_parts else torch.zeros(0, dtype=torch.int32),
        "loss_mask": torch.cat(mask_parts) if mask_parts else torch.zeros(0, dtype=torch.uint8),
    }


def _run_hf_shard(
    capture: HFCapture,
    ds: Any,
    k: int,
    shard: list[int],
    batches: list[list[int]],
    lengths: Sequence[int],
    hidden: int,
    device: str,
    bar: Any,
    copy_stream: Any,
    pool: _HostBuffers,
    writer: _Writer,
) -> None:
    """Run every batch of shard ``k`` and stream its rows to the writer; returns once all are queued.

    Nothing here waits for the GPU: the row index comes from the host mask, the
    copy to a pooled host buffer runs on ``copy_stream`` and the writer waits
    on its event. Rows land in batch order, which is the order ``offsets`` and
    ``sample_index`` describe.
    """
    import torch

    cuda = device.startswith("cuda")
    writer.put(("open", k, _shard_header(k, sum(int(lengths[i]) for i in shard), len(shard), hidden)))
    order: list[int] = []
    ids_parts: list[Any] = []
    mask_parts: list[Any] = []
    for batch in batches:
        ids, mask, ip, mp = _batch_inputs(ds, batch)
        ids_parts += ip
        mask_parts += mp
        flat = mask.view(-1).nonzero().squeeze(1)  # real tokens, sample by sample (right padding)
        n = int(flat.numel())
        if cuda:
            ids, mask, flat = ids.pin_memory(), mask.pin_memory(), flat.pin_memory()
        rows = capture.rows(ids.to(device, non_blocking=True), mask.to(device, non_blocking=True),
                            flat.to(device, non_blocking=True))
        host, release = pool.take(n)
        if cuda:
            copy_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(copy_stream):
                host.copy_(rows, non_blocking=True)
                event = torch.cuda.Event()
                event.record(copy_stream)
            rows.record_stream(copy_stream)  # its memory is not reused before the copy is done
        else:
            host.copy_(rows)
            event = None
        writer.put(("rows", host, event, release))
        order.extend(batch)
        bar.update(n)
    writer.put(("close", k, _small_tensors(order, lengths, ids_parts, mask_parts)))


def _queue_whole_shard(writer: _Writer, k: int, tensors: dict[str, Any], hidden: int) -> None:
    """Hand a shard computed in one piece (the vllm backend) to the writer."""
    hs = tensors["hidden_states"]
    n_tokens = sum(int(t.shape[0]) for t in hs)
    writer.put(("open", k, _shard_header(k, n_tokens, int(tensors["sample_index"].numel()), hidden)))
    for t in hs:
        writer.put(("rows", t.to("cpu").contiguous(), None, None))
    order = tensors["sample_index"].tolist()
    offsets = tensors["offsets"].tolist()
    lengths = {i: offsets[j + 1] - offsets[j] for j, i in enumerate(order)}
    writer.put(("close", k, _small_tensors(order, lengths, tensors["input_ids"], tensors["loss_mask"])))


def _save_target_files(out: Path, model: Any, config: Any) -> None:
    """Save the target config and its embedding/lm_head (training needs them, not the whole target)."""
    import torch
    from safetensors.torch import save_file

    from pipeline.common import atomic_write_text

    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    atomic_write_text(out / TARGET_CONFIG, json.dumps(cfg, indent=2, default=str) + "\n")
    emb = model.get_input_embeddings().weight.detach().to("cpu", torch.bfloat16).contiguous()
    head = model.get_output_embeddings().weight.detach().to("cpu", torch.bfloat16).contiguous()
    tmp = out / f".{TARGET_HEADS}.partial"
    # clone: tied embeddings share storage and safetensors refuses shared tensors
    save_file({"embed_tokens": emb.clone(), "lm_head": head.clone()}, str(tmp))
    os.replace(tmp, out / TARGET_HEADS)


def run_extract(args: Any) -> int:
    """Run the stage; returns the process exit code (0 done, 143 stopped by SIGTERM)."""
    from pipeline.eagle3_model import default_aux_layers
    from pipeline.prepared import PreparedDataset

    stop = install_sigterm_flag() if threading.current_thread() is threading.main_thread() else threading.Event()
    out = Path(args.out)
    ds = PreparedDataset(args.prepared_data)
    lengths = [int(x) for x in ds.lengths()]
    n = len(lengths) if args.max_samples is None else min(args.max_samples, len(lengths))
    lengths = lengths[:n]
    shards = plan_shards(lengths, args.shard_tokens)
    total_tokens = sum(lengths)
    prep_sig = json.loads((Path(args.prepared_data) / "manifest.json").read_text(encoding="utf-8"))
    plan = {
        "format": FORMAT,
        "model": str(args.model),
        "prepared": str(Path(args.prepared_data).resolve()),
        "prepared_manifest": prep_sig,
        "num_samples": n,
        "shard_tokens": args.shard_tokens,
        "shards": shards,
    }
    fp = _fingerprint(plan)
    plan["fingerprint"] = fp
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / PLAN
    if plan_path.exists() and not args.overwrite:
        try:
            old = json.loads(plan_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StageError(f"{plan_path}:{exc.lineno}: invalid JSON\n  fix: pass --overwrite") from exc
        if old.get("fingerprint") != fp:
            raise StageError(
                f"{plan_path}: this directory holds an extraction of other inputs "
                "(model, prepared data, --max-samples or --shard-tokens differ)\n"
                "  fix: pass a new --out, or --overwrite to discard it"
            )
    elif args.overwrite:
        for p in out.glob("shard-*.safetensors"):
            p.unlink()
        for name in (MANIFEST, INDEX):
            (out / name).unlink(missing_ok=True)
    atomic_write_json(plan_path, plan)

    # Load first: the hidden size (and so the disk need) comes from the model config.
    if args.backend == "vllm":
        backend: Any = _VLLMBackend(args)
        config = backend.config
    else:
        model, config, device = _load_hf(args)
    hidden = int(config.hidden_size)
    n_layers = int(config.num_hidden_layers)
    aux = default_aux_layers(n_layers)

    todo: list[int] = []
    skipped = 0
    for k, shard in enumerate(shards):
        why = validate_shard(out / shard_name(k), shard, lengths, hidden)
        if why is None:
            skipped += 1
            continue
        if why != "missing":
            log(f"extract: {out / shard_name(k)} is torn ({why}); redoing it")
        todo.append(k)
    todo_tokens = sum(lengths[i] for k in todo for i in shards[k])
    need = required_bytes(todo_tokens, hidden)
    check_disk(out, need, reserve=args.disk_reserve_gb * (1 << 30))
    log(f"extract: {n} samples, {total_tokens} tokens in {len(shards)} shards; {skipped} complete, "
        f"{len(todo)} to do ({need / 1e9:.2f} GB); layers {aux} (outputs, 0-based) + final norm")

    if args.backend != "vllm":
        _save_target_files(out, model, config)
    else:
        backend.save_target_files(out)

    t0 = time.monotonic()
    bar = progress(todo_tokens, desc="extract", unit="tok", unit_scale=True)
    writer = _Writer(out, fsync=not args.no_fsync)
    writer.start()
    stopped = False
    try:
        if args.backend == "vllm":
            for k in todo:
                _queue_whole_shard(writer, k, backend.run_shard(ds, shards[k], lengths, bar), hidden)
                if stop.is_set():
                    stopped = True
                    break
        else:
            import torch

            capture = HFCapture(model, aux)
            cuda = device.startswith("cuda")
            copy_stream = torch.cuda.Stream() if cuda else None
            batches = {k: make_batches(shards[k], lengths, args.batch_tokens, args.max_batch) for k in todo}
            rows = max((sum(int(lengths[i]) for i in b) for k in todo for b in batches[k]), default=1)
            pool = _HostBuffers(rows, hidden, pinned=cuda, max_buffers=_pool_size(rows, hidden), writer=writer)
            for k in todo:
                _run_hf_shard(capture, ds, k, shards[k], batches[k], lengths, hidden, device, bar, copy_stream,
                              pool, writer)
                # SIGTERM is honoured only between shards: the current one is finished and written
                # (the writer drains below before the exit).
                if stop.is_set():
                    stopped = True
                    break
            capture.close()
    finally:
        writer.q.put(None)
        writer.join()
        bar.close()
    if writer.error:
        raise StageError(f"{out}: writing a shard failed: {writer.error}")
    elapsed = time.monotonic() - t0
    done_tokens = int(bar.n)
    if stopped:
        log(f"extract: stopped by SIGTERM after {done_tokens} tokens; rerun the same command to resume")
        return 143

    index: dict[str, list[int]] = {}
    from safetensors import safe_open

    shard_info = []
    for k, shard in enumerate(shards):
        with safe_open(str(out / shard_name(k)), framework="pt") as fh:
            offs = fh.get_tensor("offsets").tolist()
            idx = fh.get_tensor("sample_index").tolist()
        for j, i in enumerate(idx):
            index[ds.ids[i]] = [k, offs[j], offs[j + 1]]
        shard_info.append({"file": shard_name(k), "num_samples": len(shard), "num_tokens": offs[-1]})
    atomic_write_json(out / INDEX, index, indent=None)
    manifest = {
        "format": FORMAT,
        "complete": True,
        "backend": args.backend,
        "target": str(args.model),
        "num_target_layers": n_layers,
        "hidden_size": hidden,
        "vocab_size": int(config.vocab_size),
        "layer_ids": {
            "output_0based": aux,
            "input_numbering_vllm_sglang": [i + 1 for i in aux],
        },
        "streams": ["aux0", "aux1", "aux2", "final_norm"],
        "dtype": "bfloat16",
        "prepared": str(Path(args.prepared_data).resolve()),
        "num_samples": n,
        "num_tokens": total_tokens,
        "num_loss_tokens": int(sum(int(ds[i][2].sum()) for i in range(n))),
        "shards": shard_info,
        "fingerprint": fp,
        # Throughput of this run (only the shards it wrote; reused shards cost nothing).
        "throughput": {"tokens": done_tokens, "seconds": round(elapsed, 3),
                       "tokens_per_s": done_tokens / elapsed if elapsed > 0 else 0.0},
    }
    atomic_write_json(out / MANIFEST, manifest)
    rate = done_tokens / elapsed if elapsed > 0 else 0.0
    print(f"extract: {n} samples, {total_tokens} tokens, {len(shards)} shards ({skipped} reused); "
          f"{done_tokens} tokens in {elapsed:.1f}s = {rate:,.0f} tok/s; layers {aux} -> {out}", flush=True)
    return 0


class _VLLMBackend:
    """Extraction through vLLM's offline ``LLM`` (for targets that need tensor parallelism).

    Written against vLLM's public API: ``LLM(...)``, ``LLM.apply_model`` (runs a
    function on the model in every worker) and ``generate`` with prompt token
    ids. The engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) and
    eager (no CUDA graphs, no compile) so forward hooks fire; one request per
    call keeps the captured rows in sample order. After each decoder layer the
    residual stream is all-reduced, so every tensor-parallel rank holds full
    rows and rank 0's capture is used.
    """

    def __init__(self, args: Any) -> None:
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
        aux = [1, self.config.num_hidden_layers // 2 - 1, self.config.num_hidden_layers - 4]

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

        from pipeline.common import atomic_write_text

        atomic_write_text(out / TARGET_CONFIG, json.dumps(self.config.to_dict(), indent=2, default=str) + "\n")
        heads = self.llm.apply_model(
            lambda m: (m.model.embed_tokens.weight.detach().to("cpu", torch.bfloat16).clone(),
                       m.lm_head.weight.detach().to("cpu", torch.bfloat16).clone())
        )[0]
        save_file({"embed_tokens": heads[0], "lm_head": heads[1]}, str(out / f".{TARGET_HEADS}.partial"))
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


class ExtractedDataset:
    """Read access to an extraction directory (what training iterates over).

    ``ds[i]`` returns ``(input_ids int64 [L], loss_mask [L], hidden bf16 [L, 4, H])``
    for the i-th sample in index order; shards are memory-mapped lazily.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory)
        mpath = self.path / MANIFEST
        if not mpath.is_file():
            raise StageError(
                f"{mpath}: missing; {self.path} is not a complete extraction\n"
                "  fix: run (or finish) `python -m pipeline.extract` for it"
            )
        self.manifest: dict[str, Any] = json.loads(mpath.read_text(encoding="utf-8"))
        if self.manifest.get("format") != FORMAT or not self.manifest.get("complete"):
            raise StageError(f"{mpath}: not a complete {FORMAT} extraction\n  fix: rerun the extract stage")
        index = json.loads((self.path / INDEX).read_text(encoding="utf-8"))
        # Sort by (shard, start) so sequential reads stay within one shard.
        self.entries = sorted(index.values(), key=lambda e: (e[0], e[1]))
        self.ids = [k for k, _ in sorted(index.items(), key=lambda kv: (kv[1][0], kv[1][1]))]
        self._open: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def _shard(self, k: int) -> dict[str, Any]:
        if k not in self._open:
            from safetensors.torch import load_file

            self._open[k] = load_file(str(self.path / self.manifest["shards"][k]["file"]))
        return self._open[k]

    def __getitem__(self, i: int) -> tuple[Any, Any, Any]:
        k, a, b = self.entries[i]
        t = self._shard(k)
        return t["input_ids"][a:b].long(), t["loss_mask"][a:b], t["hidden_states"][a:b]

    def length(self, i: int) -> int:
        """Token count of sample ``i``."""
        _k, a, b = self.entries[i]
        return b - a


def build_parser() -> Any:
    """The stage's argparse parser."""
    p = make_parser("python -m pipeline.extract", "Capture EAGLE-3 hidden states of the target model.")
    p.add_argument("--prepared-data", required=True, help="prepared dataset directory (pipeline.prepared)")
    p.add_argument("--out", required=True, help="output directory for shards, index and manifest")
    p.add_argument("--model", default="smollm2", help="target: model dir, .gguf file, or 'smollm2'")
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model")
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 (hf backend)")
    p.add_argument("--device-map", default=None, help="transformers device_map (e.g. auto) for multi-GPU targets")
    p.add_argument("--dtype", default="auto", help="compute dtype: auto (bf16 on GPU), bfloat16, float32")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm backend")
    p.add_argument("--batch-tokens", type=int, default=65536, help="padded tokens per forward batch")
    p.add_argument("--max-batch", type=int, default=128, help="samples per forward batch")
    p.add_argument("--shard-tokens", type=int, default=262144, help="tokens per output shard")
    p.add_argument("--max-samples", type=int, default=None, help="extract only the first N samples")
    p.add_argument("--disk-reserve-gb", type=float, default=1.0, help="free space to leave on the disk")
    p.add_argument("--no-fsync", action="store_true", help="skip fsync of shards (faster; torn shards redone)")
    p.add_argument("--overwrite", action="store_true", help="discard an existing extraction in --out")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    args = build_parser().parse_args(argv)
    try:
        return run_extract(args)
    except StageError as exc:
        fail(str(exc))
    except FileNotFoundError as exc:
        fail(str(exc))


if __name__ == "__main__":
    sys.exit(main())
