"""The hidden-state format: what ``extract`` writes and ``train``/``export`` read.

An extraction directory holds, for every token of a tokenized dataset, the
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

Every file is written atomically. This module owns the layout: planning and
validating shards, the streaming shard writer (header first, rows as they come
off the GPU, a pool of reusable host buffers) and :class:`HiddenStatesDataset`,
the reader training iterates over.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.atomic import fsync_dir, umask_mode
from pipeline.common import StageError, atomic_write_text, load_manifest

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
    "HiddenStatesDataset",
    "HostBuffers",
    "ShardWriter",
    "build_index",
    "check_disk",
    "load_target_heads",
    "plan_shards",
    "pool_size",
    "required_bytes",
    "save_target_files",
    "shard_header",
    "shard_name",
    "small_tensors",
    "target_heads",
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


# Tensor order inside a shard file written by this stage. hidden_states comes first so it can be
# streamed batch by batch; its size (8*H bytes a token) keeps the int64 tensors after it 8-aligned.
_SMALL_TENSORS = (("offsets", "I64", 8), ("sample_index", "I64", 8), ("input_ids", "I32", 4), ("loss_mask", "U8", 1))


def shard_header(k: int, num_tokens: int, num_samples: int, hidden: int) -> bytes:
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


class ShardWriter(threading.Thread):
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


class HostBuffers:
    """A small pool of reusable host buffers for the device->host copies.

    Pinned (page-locked) on CUDA, so copies run asynchronously on a side
    stream; allocated lazily, so only as many exist as the writer lags behind
    (at most ``max_buffers``). ``take`` blocks while all are in the writer's
    hands: that is what bounds host memory.
    """

    def __init__(self, rows: int, hidden: int, pinned: bool, max_buffers: int, writer: ShardWriter) -> None:
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


def pool_size(rows: int, hidden: int, budget_bytes: int = 4 << 30) -> int:
    """How many host buffers of ``rows`` rows the pool may hold: 2..8, within ``budget_bytes``."""
    per = max(1, rows * STREAMS * hidden * BYTES_PER_VALUE)
    return max(2, min(8, budget_bytes // per))


def small_tensors(order: list[int], lengths: Sequence[int], ids_parts: list[Any], mask_parts: list[Any]) -> dict[str, Any]:
    """The tensors that follow ``hidden_states`` in a shard, for samples ``order`` (in row order)."""
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


def save_target_files(out: Path, model: Any, config: Any) -> None:
    """Save the target config and its embedding/lm_head (training needs them, not the whole target)."""
    from safetensors.torch import save_file

    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    atomic_write_text(out / TARGET_CONFIG, json.dumps(cfg, indent=2, default=str) + "\n")
    emb, head = target_heads(model)
    tmp = out / f".{TARGET_HEADS}.partial"
    save_file({"embed_tokens": emb, "lm_head": head}, str(tmp))
    umask_mode(tmp)  # safetensors writes 0600
    os.replace(tmp, out / TARGET_HEADS)


def target_heads(model: Any) -> tuple[Any, Any]:
    """(embedding, lm_head) of a transformers target as bf16 CPU tensors of their own.

    Each is a clone: tied embeddings share storage, which safetensors refuses
    and which would let one in-place change reach the other.
    """
    import torch

    emb = model.get_input_embeddings().weight.detach().to("cpu", torch.bfloat16).contiguous().clone()
    head = model.get_output_embeddings().weight.detach().to("cpu", torch.bfloat16).contiguous().clone()
    return emb, head




def build_index(out: Path, shards: list[list[int]], ids: Sequence[str]) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Build ``index.json``'s mapping (sample id -> [shard, start, end]) and the manifest's shard list.

    Reads only each shard's small tensors, so it costs milliseconds per shard.
    """
    from safetensors import safe_open

    index: dict[str, list[int]] = {}
    shard_info = []
    for k, shard in enumerate(shards):
        with safe_open(str(out / shard_name(k)), framework="pt") as fh:
            offs = fh.get_tensor("offsets").tolist()
            idx = fh.get_tensor("sample_index").tolist()
        for j, i in enumerate(idx):
            index[ids[i]] = [k, offs[j], offs[j + 1]]
        shard_info.append({"file": shard_name(k), "num_samples": len(shard), "num_tokens": offs[-1]})
    return index, shard_info


def load_target_heads(extraction_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Any, Any]:
    """(target config dict, embedding [V, H], lm_head [V, H]) saved by the extract stage."""
    from safetensors.torch import load_file

    d = Path(extraction_dir)
    for name in (TARGET_CONFIG, TARGET_HEADS):
        if not (d / name).is_file():
            raise StageError(f"{d / name}: missing\n  fix: pass the extract stage's --out directory")
    cfg = json.loads((d / TARGET_CONFIG).read_text(encoding="utf-8"))
    heads = load_file(str(d / TARGET_HEADS))
    return cfg, heads["embed_tokens"], heads["lm_head"]


class HiddenStatesDataset:
    """Read access to an extraction directory (what training iterates over).

    ``ds[i]`` returns ``(input_ids int64 [L], loss_mask [L], hidden bf16 [L, 4, H])``
    for the i-th sample in index order; shards are memory-mapped lazily.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory)
        self.manifest: dict[str, Any] = load_manifest(self.path, FORMAT, "python -m pipeline.extract",
                                                      require_complete=True)
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
