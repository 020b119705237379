"""The tokenized-dataset format: what ``tokenize_data`` writes and vocab/extract/evaluate read.

A tokenized dataset (called "prepared" in stage flags such as
``--prepared-data``, and in its format name) is a directory::

    manifest.json      {"format": "eagle3-prepared/1", "tokenizer": ..., "max_len": ...,
                        "num_samples": N, "num_tokens": T, "num_loss_tokens": L,
                        "chat_template_sha256": ..., ...extra stats}
    data.safetensors   input_ids int32 [T], loss_mask uint8 [T], offsets int64 [N+1]
    ids.json           [id_0, ..., id_{N-1}]

Sample ``i`` is tokens ``offsets[i]:offsets[i+1]`` of the flat arrays. The
directory is written into a temporary sibling and renamed into place, so a
directory named like the target is always complete.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.atomic import fsync_dir, fsync_file, temp_dir_for, umask_mode
from pipeline.common import StageError, load_manifest

__all__ = ["FORMAT", "TokenizedDataset", "write_tokenized_dataset"]

FORMAT = "eagle3-prepared/1"
MANIFEST = "manifest.json"
DATA = "data.safetensors"
IDS = "ids.json"


def write_tokenized_dataset(
    directory: str | os.PathLike[str],
    samples: Iterable[tuple[str, Sequence[int] | np.ndarray, Sequence[int] | np.ndarray]],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """Write a tokenized dataset to ``directory`` atomically and return its manifest.

    ``samples`` yields ``(id, input_ids, loss_mask)`` with equal lengths.
    ``meta`` is merged into the manifest (``tokenizer``, ``max_len``,
    ``chat_template_sha256`` and any stats); the counts and format are computed
    here. ``meta`` is read after ``samples`` is exhausted, so a generator may
    add its final stats to it. An existing dataset at ``directory`` is replaced only once the new one
    is complete.
    """
    from safetensors.numpy import save_file

    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    id_chunks: list[np.ndarray] = []
    mask_chunks: list[np.ndarray] = []
    offsets = [0]
    seen: set[str] = set()
    for sid, input_ids, loss_mask in samples:
        a = np.asarray(input_ids, dtype=np.int64)
        m = np.asarray(loss_mask, dtype=np.uint8)
        if a.ndim != 1 or m.shape != a.shape:
            raise ValueError(f"sample {sid!r}: input_ids {a.shape} and loss_mask {m.shape} must be equal 1-D")
        if a.size and (a.min() < 0 or a.max() > np.iinfo(np.int32).max):
            raise ValueError(f"sample {sid!r}: token ids out of int32 range")
        if str(sid) in seen:
            raise ValueError(f"sample id {sid!r} appears twice; ids must be unique")
        seen.add(str(sid))
        ids.append(str(sid))
        id_chunks.append(a.astype(np.int32))
        mask_chunks.append((m != 0).astype(np.uint8))
        offsets.append(offsets[-1] + int(a.size))

    input_ids_flat = np.concatenate(id_chunks) if id_chunks else np.zeros(0, dtype=np.int32)
    mask_flat = np.concatenate(mask_chunks) if mask_chunks else np.zeros(0, dtype=np.uint8)
    manifest: dict[str, Any] = dict(meta)
    manifest.update(
        {
            "format": FORMAT,
            "num_samples": len(ids),
            "num_tokens": int(input_ids_flat.size),
            "num_loss_tokens": int(mask_flat.sum(dtype=np.int64)),
        }
    )
    manifest.setdefault("tokenizer", None)
    manifest.setdefault("max_len", None)
    manifest.setdefault("chat_template_sha256", None)

    tmp = temp_dir_for(target)
    try:
        save_file(
            {
                "input_ids": input_ids_flat,
                "loss_mask": mask_flat,
                "offsets": np.asarray(offsets, dtype=np.int64),
            },
            str(tmp / DATA),
            metadata={"format": FORMAT},
        )
        umask_mode(tmp / DATA)  # safetensors writes 0600
        (tmp / IDS).write_text(json.dumps(ids, ensure_ascii=False) + "\n", encoding="utf-8")
        # The manifest is written last: its presence marks a complete dataset even
        # for a reader that ignores the directory rename.
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        for name in (DATA, IDS, MANIFEST):
            fsync_file(tmp / name)
        fsync_dir(tmp)
        old: Path | None = None
        if target.exists():
            # Directories cannot be os.replace'd over a non-empty target: move the
            # old one aside first, then drop it once the new one is in place.
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            if old.exists():
                shutil.rmtree(old)
            os.replace(target, old)
        os.replace(tmp, target)
        fsync_dir(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


class TokenizedDataset:
    """Read-only access to a tokenized dataset directory.

    ``ds[i]`` returns ``(id, input_ids, loss_mask)`` as numpy arrays (int64 and
    uint8); ``torch.from_numpy`` turns them into tensors without copying.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        from safetensors import safe_open

        self.path = Path(directory)
        self.manifest: dict[str, Any] = load_manifest(self.path, FORMAT, "python -m pipeline.tokenize_data")
        dpath = self.path / DATA
        try:
            with safe_open(str(dpath), framework="np") as fh:
                self.input_ids: np.ndarray = fh.get_tensor("input_ids")
                self.loss_mask: np.ndarray = fh.get_tensor("loss_mask")
                self.offsets: np.ndarray = fh.get_tensor("offsets")
        except Exception as exc:  # safetensors raises several types for bad files
            raise StageError(f"{dpath}: cannot read tokenized data: {exc}") from exc
        ipath = self.path / IDS
        try:
            self.ids: list[str] = json.loads(ipath.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise StageError(f"{ipath}: cannot read sample ids: {exc}") from exc
        n = len(self.ids)
        problems = []
        if self.offsets.shape != (n + 1,):
            problems.append(f"offsets has shape {tuple(self.offsets.shape)}, expected ({n + 1},)")
        elif int(self.offsets[-1]) != self.input_ids.size or int(self.offsets[0]) != 0:
            problems.append("offsets do not span input_ids")
        if self.loss_mask.shape != self.input_ids.shape:
            problems.append("loss_mask and input_ids differ in length")
        if self.manifest.get("num_samples") not in (None, n):
            problems.append(f"manifest num_samples={self.manifest.get('num_samples')} but ids.json has {n}")
        if problems:
            raise StageError(f"{self.path}: inconsistent tokenized dataset: {'; '.join(problems)}")

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> tuple[str, np.ndarray, np.ndarray]:
        n = len(self.ids)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sample index {i} out of range for {n} samples")
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.ids[i], self.input_ids[a:b].astype(np.int64), self.loss_mask[a:b]

    def __iter__(self):  # type: ignore[no-untyped-def]
        """Iterate over ``(id, input_ids, loss_mask)`` in order."""
        for i in range(len(self)):
            yield self[i]

    def lengths(self) -> np.ndarray:
        """Token count of each sample (int64 [N])."""
        return np.diff(self.offsets)
