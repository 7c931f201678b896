"""A left-padded, batched KV cache on transformers' :class:`~transformers.DynamicCache`.

Rows of different lengths share one cache of width ``T`` (the longest row): shorter rows are
padded on the left, and ``mask_B_T`` (1 = a real token, 0 = padding) keeps padding out of
attention; a row's position ids count only its real tokens (see :meth:`BatchKV.positions`), so
each row computes what it would alone, up to float rounding. Rows join (:meth:`BatchKV.concat`),
leave (:meth:`BatchKV.select`) and padding columns every row shares are dropped
(:meth:`BatchKV.trim`). A step that raises half-way through the layers is undone with
:meth:`BatchKV.snapshot` / :meth:`BatchKV.restore`: ``DynamicLayer.update`` concatenates into new
tensors, so holding the old ones is enough.

Only plain :class:`~transformers.cache_utils.DynamicLayer` layers are supported (no sliding
window, no linear attention): :func:`batchable` says whether a model's cache qualifies.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


def batchable(config) -> bool:
    """Whether the cache of a model with this config has only plain ``DynamicLayer`` layers."""
    try:
        cache = DynamicCache(config=config)
    except Exception:  # a config transformers cannot build a dynamic cache for
        return False
    return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)


def _fill(cache: DynamicCache, keys: list[torch.Tensor], values: list[torch.Tensor]) -> DynamicCache:
    for layer, k, v in zip(cache.layers, keys, values):
        layer.lazy_initialization(k, v)
        layer.keys, layer.values = k, v
    return cache


class BatchKV:
    """The KV cache of a batch of rows, left-padded to a common width.

    Args:
        config: the model config (builds the :class:`DynamicCache`).
        mask_B_T: long tensor [B, T], 1 where a row has a real token; ``T = 0`` for an empty cache.
        cache: the cache holding ``T`` positions per row (default: a new, empty one).
    """

    def __init__(self, config, mask_B_T: torch.Tensor, cache: DynamicCache | None = None):
        self.config = config
        self.mask_B_T = mask_B_T
        self.cache = cache if cache is not None else DynamicCache(config=config)

    @property
    def rows(self) -> int:
        """B, the number of rows."""
        return int(self.mask_B_T.shape[0])

    @property
    def width(self) -> int:
        """T, the cached positions per row (real + padding)."""
        return int(self.mask_B_T.shape[1])

    def _tensors(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        layers = self.cache.layers
        if not layers or not all(layer.is_initialized for layer in layers):
            raise RuntimeError("the batch cache holds no positions yet")
        return [layer.keys for layer in layers], [layer.values for layer in layers]

    def positions(self, new_mask_B_C: torch.Tensor) -> torch.Tensor:
        """Position ids [B, C] of ``C`` new columns (mask ``new_mask_B_C``) appended after the
        cached ones: each row counts its own real tokens from 0 (padding gets position 0)."""
        full = torch.cat([self.mask_B_T, new_mask_B_C], dim=1)
        return (full.cumsum(-1) - 1).clamp(min=0)[:, self.width:]

    def snapshot(self) -> tuple:
        """What :meth:`restore` needs to undo the next forward pass (references, no copy)."""
        return (self.mask_B_T, [(layer.keys, layer.values, layer.is_initialized) for layer in self.cache.layers])

    def restore(self, snap: tuple) -> None:
        """Undo every cache update since :meth:`snapshot` returned ``snap``."""
        self.mask_B_T, layers = snap
        for layer, (k, v, initialized) in zip(self.cache.layers, layers):
            layer.keys, layer.values, layer.is_initialized = k, v, initialized

    def append(self, new_mask_B_C: torch.Tensor) -> None:
        """Record that the forward pass just run cached ``C`` more columns (mask [B, C])."""
        self.mask_B_T = torch.cat([self.mask_B_T, new_mask_B_C], dim=1)

    def select(self, rows: list[int]) -> "BatchKV":
        """A new cache with only these rows (in this order), leading all-padding columns dropped.

        Args:
            rows: row indices into this batch, each in [0, B).
        """
        if rows == list(range(self.rows)):
            return self
        index = torch.tensor(rows, dtype=torch.long, device=self.mask_B_T.device)
        mask = self.mask_B_T.index_select(0, index)
        if self.width == 0:
            return BatchKV(self.config, mask)
        keys, values = self._tensors()
        cache = _fill(DynamicCache(config=self.config), [k.index_select(0, index) for k in keys],
                      [v.index_select(0, index) for v in values])
        out = BatchKV(self.config, mask, cache)
        out.trim()
        return out

    def trim(self) -> None:
        """Drop the leading columns that are padding in every row."""
        if self.width == 0:
            return
        real_T = self.mask_B_T.any(dim=0)
        if not bool(real_T.any()):
            return
        drop = int(torch.argmax(real_T.int()))
        if drop == 0:
            return
        keys, values = self._tensors()
        _fill(self.cache, [k[:, :, drop:].contiguous() for k in keys], [v[:, :, drop:].contiguous() for v in values])
        self.mask_B_T = self.mask_B_T[:, drop:].contiguous()

    @staticmethod
    def concat(parts: list["BatchKV"]) -> "BatchKV":
        """One cache holding the rows of ``parts`` in order, each left-padded to the widest.

        Raises:
            ValueError: ``parts`` is empty or one of them holds no positions.
        """
        if not parts:
            raise ValueError("nothing to concatenate")
        if len(parts) == 1:
            return parts[0]
        width = max(p.width for p in parts)
        masks, keys, values = [], [], []
        for p in parts:
            k_p, v_p = p._tensors()
            pad = width - p.width
            masks.append(torch.nn.functional.pad(p.mask_B_T, (pad, 0)))
            keys.append([torch.nn.functional.pad(k, (0, 0, pad, 0)) for k in k_p])
            values.append([torch.nn.functional.pad(v, (0, 0, pad, 0)) for v in v_p])
        cache = _fill(DynamicCache(config=parts[0].config), [torch.cat(ks, 0) for ks in zip(*keys)],
                      [torch.cat(vs, 0) for vs in zip(*values)])
        return BatchKV(parts[0].config, torch.cat(masks, 0), cache)
