"""Where training's batches come from: an extraction on disk, or the target run inside training.

Two sources give ``train`` the same batch (right-padded ``input_ids``,
``loss_mask``, ``valid`` and the four bf16 streams ``hidden`` [B, L, 4, H]):

* **extracted** (``--data DIR``): the extract stage's shards, held on the
  training device when they fit (batches are gathers) or collated from the
  memory-mapped shards.
* **online** (``--target MODEL --prepared DIR``): the token ids stay on the
  device and each batch's streams come from a forward of the frozen target
  through the same hooks the extract stage uses (:class:`TargetCapture`).
  Nothing is written to disk, so the data a run can use is bounded by the
  time to generate it, not by the disk: on SmolLM2-135M an extraction takes
  ~4.6 KB per token (25 GB for 5 M tokens). The price is the target's
  forward in every step: on an H200, 107k training tokens/s online against
  140k with the extraction resident on the GPU (2026-12-01), which the
  saved extract stage and its disk more than pay back at this size.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pipeline.common import StageError, log
from pipeline.hidden_states import HiddenStatesDataset, load_target_heads, target_heads

__all__ = ["OnlineTargetStreams", "ResidentHiddenStates", "TrainingData", "collate", "open_training_data"]

Batch = dict[str, torch.Tensor]


def collate(samples: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], max_len: int) -> Batch:
    """Right-pad a list of (ids, loss_mask, hidden) to one batch, truncating at ``max_len``."""
    longest = min(max(int(s[0].numel()) for s in samples), max_len)
    b = len(samples)
    h = samples[0][2].shape[-1]
    ids = torch.zeros((b, longest), dtype=torch.long)
    lm = torch.zeros((b, longest), dtype=torch.bool)
    valid = torch.zeros((b, longest), dtype=torch.bool)
    hs = torch.zeros((b, longest, 4, h), dtype=samples[0][2].dtype)
    for r, (a, m, x) in enumerate(samples):
        n = min(int(a.numel()), longest)
        ids[r, :n] = a[:n]
        lm[r, :n] = m[:n].bool()
        valid[r, :n] = True
        hs[r, :n] = x[:n]
    return {"input_ids": ids, "loss_mask": lm, "valid": valid, "hidden": hs}


class _ResidentTokens:
    """Every sample's token ids and loss mask, concatenated in one device tensor each.

    ``gather`` builds a right-padded batch by indexing, without a Python loop
    over samples or a host->device copy.
    """

    def __init__(self, ids: torch.Tensor, mask: torch.Tensor, starts: list[int], lens: list[int], device: str) -> None:
        self.ids = ids.to(device, torch.long)
        self.mask = mask.to(device, torch.bool)
        self.starts = torch.tensor(starts, dtype=torch.long, device=device)
        self.lens = torch.tensor(lens, dtype=torch.long, device=device)
        self.lens_host = list(lens)

    def gather(self, idx: list[int], max_len: int) -> tuple[Batch, torch.Tensor]:
        """(batch without ``hidden``, flat row index [B, L] of each slot) for samples ``idx``."""
        longest = min(max(self.lens_host[i] for i in idx), max_len)
        sel = torch.tensor(idx, dtype=torch.long, device=self.starts.device)
        steps = torch.arange(longest, device=self.starts.device)[None, :]
        lens = self.lens[sel][:, None]
        valid = steps < lens
        gidx = self.starts[sel][:, None] + torch.minimum(steps, lens - 1)
        return {"input_ids": self.ids[gidx] * valid, "loss_mask": self.mask[gidx] & valid, "valid": valid}, gidx


class ResidentHiddenStates:
    """Every sample's hidden states in one tensor on the training device; batches are gathers, not copies.

    On a GPU with room for the extraction this removes the host->device copy
    and the Python collation from every step, which is what kept the GPU idle.
    """

    def __init__(self, ds: HiddenStatesDataset, device: str) -> None:
        from safetensors.torch import load_file

        shards = ds.manifest["shards"]
        total = sum(int(sh["num_tokens"]) for sh in shards)
        hidden = int(ds.manifest["hidden_size"])
        self.hidden = torch.empty((total, 4, hidden), dtype=torch.bfloat16, device=device)
        ids = torch.empty(total, dtype=torch.long)
        mask = torch.empty(total, dtype=torch.bool)
        base = []
        pos = 0
        for sh in shards:
            t = load_file(str(ds.path / sh["file"]))
            m = int(t["input_ids"].numel())
            self.hidden[pos : pos + m] = t["hidden_states"].to(device)
            ids[pos : pos + m] = t["input_ids"].long()
            mask[pos : pos + m] = t["loss_mask"].bool()
            base.append(pos)
            pos += m
            del t
        self.tokens = _ResidentTokens(ids, mask, [base[k] + a for k, a, _b in ds.entries],
                                      [b - a for _k, a, b in ds.entries], device)

    @staticmethod
    def nbytes(ds: HiddenStatesDataset) -> int:
        """Device memory the resident copy takes."""
        tokens = sum(int(sh["num_tokens"]) for sh in ds.manifest["shards"])
        return tokens * (4 * int(ds.manifest["hidden_size"]) * 2 + 8 + 1)

    def batch(self, idx: list[int], max_len: int) -> Batch:
        """Right-padded batch of samples ``idx`` (truncated at ``max_len``), already on the device."""
        batch, gidx = self.tokens.gather(idx, max_len)
        batch["hidden"] = self.hidden[gidx]
        return batch


class OnlineTargetStreams:
    """Batches whose streams the frozen target computes as they are drawn (no extraction on disk).

    The target runs in the dtype extract would use (bf16 on a GPU, float32 on
    a CPU) through :class:`TargetCapture`'s hooks, and the streams are rounded
    to bf16 as an extraction stores them, so a batch carries the same values
    an extraction of the same tokens would (up to batch-shape rounding).
    """

    def __init__(self, prepared: str | os.PathLike[str], target: str, device: str) -> None:
        from pipeline import model_io
        from pipeline.eagle3_model import default_aux_layers
        from pipeline.target_capture import TargetCapture
        from pipeline.tokenized_dataset import TokenizedDataset

        ds = TokenizedDataset(prepared)
        offsets = [int(x) for x in ds.offsets]
        self.ids = list(ds.ids)
        self.tokens = _ResidentTokens(torch.from_numpy(ds.input_ids.astype("int64")),
                                      torch.from_numpy(ds.loss_mask.astype("bool")), offsets[:-1],
                                      [b - a for a, b in itertools.pairwise(offsets)], device)
        model = model_io.load_model(target, dtype=model_io.resolve_dtype("auto", device), device=device)
        model.requires_grad_(False)
        self.config = model.config
        self.aux_layers = default_aux_layers(int(model.config.num_hidden_layers))
        vocab = int(model.config.vocab_size)
        top = int(ds.input_ids.max()) if ds.input_ids.size else -1
        if top >= vocab:
            raise StageError(f"{prepared}: token id {top} is outside {target}'s vocabulary of {vocab}\n"
                             "  fix: tokenize with this target's tokenizer (pipeline.tokenize_data --model)")
        self.heads = target_heads(model)
        self.capture = TargetCapture(model, self.aux_layers)

    def batch(self, idx: list[int], max_len: int) -> Batch:
        """Right-padded batch of samples ``idx`` with the target's four streams, on the device."""
        batch, _gidx = self.tokens.gather(idx, max_len)
        # ``streams`` runs under inference mode; a clone made outside it is an
        # ordinary tensor that autograd may save for the draft's backward pass.
        batch["hidden"] = self.capture.streams(batch["input_ids"], batch["valid"].long()).clone()
        return batch


@dataclass
class TrainingData:
    """What ``train`` needs from its data source, whichever it is."""

    source: str  # the extraction directory, or "online:<target>:<prepared>"
    ids: list[str]  # sample ids, in the order of ``lengths`` and of the indices ``batch`` takes
    lengths: list[int]
    target_config: dict[str, Any]
    embed: torch.Tensor
    lm_head: torch.Tensor
    aux_layers: list[int]
    vocab_size: int
    batch: Callable[[list[int], int], Batch]


def _fits_on_device(ds: HiddenStatesDataset, device: str) -> bool:
    """Whether the whole extraction fits on ``device`` with room to train (40% of free GPU memory; 2 GB on CPU)."""
    need = ResidentHiddenStates.nbytes(ds)
    if device.startswith("cuda"):
        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return need < 0.4 * free
    return need < 2e9


def open_training_data(args: Any, device: str) -> TrainingData:
    """The source ``args`` names (``--data``, or ``--target`` with ``--prepared``), ready to draw batches."""
    if args.data:
        ds = HiddenStatesDataset(args.data)
        cfg, embed, lm_head = load_target_heads(args.data)
        draw: Callable[[list[int], int], Batch]
        if args.data_on_device == "yes" or (args.data_on_device == "auto" and _fits_on_device(ds, device)):
            t0 = time.monotonic()
            resident = ResidentHiddenStates(ds, device)
            log(f"train: {ResidentHiddenStates.nbytes(ds) / 1e9:.2f} GB of hidden states resident on {device} "
                f"({time.monotonic() - t0:.1f}s)")
            draw = resident.batch
        else:
            def draw(idx: list[int], max_len: int) -> Batch:
                return {k: v.to(device, non_blocking=True) for k, v in collate([ds[i] for i in idx], max_len).items()}
        return TrainingData(str(Path(args.data).resolve()), list(ds.ids), [ds.length(i) for i in range(len(ds))],
                            cfg, embed, lm_head, list(ds.manifest["layer_ids"]["output_0based"]),
                            int(ds.manifest["vocab_size"]), draw)
    t0 = time.monotonic()
    online = OnlineTargetStreams(args.prepared, args.target, device)
    embed, lm_head = online.heads
    log(f"train: online: {args.target} computes layers {online.aux_layers} and the final norm for every batch "
        f"of {len(online.ids)} samples from {args.prepared} (ready in {time.monotonic() - t0:.1f}s)")
    return TrainingData(f"online:{Path(args.target).resolve()}:{Path(args.prepared).resolve()}", online.ids,
                        online.tokens.lens_host, online.config.to_dict(), embed, lm_head, online.aux_layers,
                        int(online.config.vocab_size), online.batch)
