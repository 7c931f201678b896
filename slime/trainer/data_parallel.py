"""Data-parallel training: N train ranks, one model sharded with torch's FSDP2 (``fully_shard``).

One :class:`DataParallel` per train actor (its rank among ``world_size``) holds what the training
backend needs beyond a single process:

* :func:`init_data_parallel` joins the torch.distributed process group (gloo on CPU, NCCL on
  CUDA; ``init_method="tcp://<rank 0's address>"``);
* :meth:`DataParallel.shard` applies ``fully_shard`` to every decoder layer and then to a root
  (the FSDP2 recipe of the torch docs), with the gradient divide factor set to 1: each rank's loss
  is already normalised by the loss tokens of the WHOLE global batch, so the reduce-scatter must
  sum the ranks' gradients, not average them; the summed gradient is then the single-process one.
  The root is :class:`ShardedLogprobs` around the policy: the trainer's log-probs call the decoder
  and the LM head one by one (:func:`slime.algorithms.logprobs.compute_token_logprobs`, chunked head), never
  the policy's own ``forward``, so the FSDP root hooks (that gather the embedding, final norm and
  a tied LM head) must sit on a module whose ``forward`` is that computation;
* :meth:`DataParallel.share` deals the global batch out (rank ``r`` takes samples ``r, r+N, ...``)
  and :meth:`DataParallel.micro_batch_count` says how many micro-batches every rank runs, so that
  all ranks make the same number of forward/backward calls (each is a collective under FSDP2); a
  rank with fewer samples runs zero-weighted filler micro-batches;
* checkpoints stay ONE Hugging Face folder (or one peft adapter) and one ``optimizer.pt`` in the
  single-process format (``optimizer.state_dict()``: parameters numbered in
  ``model.parameters()`` order): :meth:`full_model_state` / :meth:`full_optimizer_state` gather
  them to rank 0 (``torch.distributed.checkpoint.state_dict``, ``full_state_dict=True``) and
  :meth:`load_model_state` / :meth:`load_optimizer_state` shard a full one back onto the ranks,
  so a run saved by 2 actors resumes on 1 and vice versa.

A single train actor never builds a :class:`DataParallel` (no torch.distributed at all).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from slime.algorithms.logprobs import compute_token_logprobs

__all__ = ["DataParallel", "ShardedLogprobs", "init_data_parallel"]

log = logging.getLogger(__name__)


def init_data_parallel(rank: int, world_size: int, address: str, device: torch.device) -> "DataParallel":
    """Join the process group of ``world_size`` train ranks as ``rank``.

    Args:
        rank: this process's rank, 0-based.
        world_size: number of train ranks (>= 2).
        address: ``host:port`` where rank 0 listens (a TCP store).
        device: this rank's device; ``cuda`` selects NCCL, anything else gloo.

    Returns:
        The rank's :class:`DataParallel`.

    Raises:
        RuntimeError / DistNetworkError: the group did not form (a rank missing, the port taken).
    """
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://{address}", rank=rank, world_size=world_size)
    log.info("train rank %d/%d joined the %s process group at %s (device %s)", rank, world_size, backend,
             address, device)
    return DataParallel(rank=rank, world_size=world_size, device=device)


class ShardedLogprobs(torch.nn.Module):
    """The FSDP2 root: ``forward`` is :func:`slime.algorithms.logprobs.compute_token_logprobs` of ``policy``
    (same arguments after the model), returning ``(logprobs_B_T, entropy_B_T | None,
    extra_logprobs_B_T_K | None)`` (a tuple, so FSDP's backward hooks find the tensors)."""

    def __init__(self, policy: torch.nn.Module):
        super().__init__()
        self.policy = policy

    def forward(self, *args: Any, **kwargs: Any):  # noqa: D102 (see the class docstring)

        out = compute_token_logprobs(self.policy, *args, **kwargs)
        return out.logprobs_B_T, out.entropy_B_T, out.extra_logprobs_B_T_K


@dataclass
class DataParallel:
    """This process's place among the train ranks (see module docstring)."""
    rank: int
    world_size: int
    device: torch.device

    # ------------------------------------------------------------------ the model
    def shard(self, model: torch.nn.Module, offload: bool = False) -> ShardedLogprobs:
        """``fully_shard`` every decoder layer of ``model`` (a transformers causal LM or a peft
        model around one), then a :class:`ShardedLogprobs` root around it, which is returned;
        ``model`` keeps its names and now holds sharded parameters (DTensors). Gradients are
        summed over the ranks (divide factor 1). ``offload`` (``--offload-optimizer-state`` on a
        GPU): FSDP2's ``CPUOffloadPolicy``, which keeps the sharded parameters, gradients and
        hence the optimizer state in host memory and copies each layer to the GPU for its
        forward/backward (the optimizer steps on CPU)."""
        from torch.distributed.fsdp import CPUOffloadPolicy, FSDPModule, OffloadPolicy, fully_shard

        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        layers = getattr(getattr(base, "model", base), "layers", None) or []
        policy = CPUOffloadPolicy() if offload and self.device.type == "cuda" else OffloadPolicy()
        for layer in layers:
            fully_shard(layer, offload_policy=policy)
        root = fully_shard(ShardedLogprobs(model), offload_policy=policy)
        for module in root.modules():
            if isinstance(module, FSDPModule):
                module.set_gradient_divide_factor(1.0)
                module.set_force_sum_reduction_for_comms(True)  # plain SUM (gloo has no PREMUL_SUM)
        return root

    # ------------------------------------------------------------------ the batch
    def share(self, items: Sequence[Any]) -> list[Any]:
        """This rank's part of the global batch ``items``: items ``rank, rank + N, ...``."""
        return list(items[self.rank::self.world_size])

    def micro_batch_count(self, n_items: int, micro_batch_size: int) -> int:
        """Micro-batches EVERY rank runs for a global batch of ``n_items``: those of the largest share."""
        return math.ceil(math.ceil(n_items / self.world_size) / micro_batch_size)

    def all_gather(self, obj: Any) -> list[Any]:
        """``obj`` of every rank, in rank order (picklable objects; ``all_gather_object``)."""
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        """Wait until every rank got here."""
        dist.barrier()

    @staticmethod
    def total_norm(norm: torch.Tensor) -> float:
        """The float of a grad norm ``clip_grad_norm_`` returned (a DTensor over sharded grads)."""
        return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)

    # ------------------------------------------------------------------ checkpoints
    @staticmethod
    def _trainable_names(model: torch.nn.Module) -> list[str]:
        """Names of the trainable parameters in ``model.parameters()`` order (the optimizer's)."""
        return [n for n, p in model.named_parameters() if p.requires_grad]

    def full_model_state(self, model: torch.nn.Module, *, trainable_only: bool = False) -> dict[str, torch.Tensor]:
        """The unsharded state dict on CPU at rank 0 (``{}`` on the other ranks); a collective.

        Tied weights (an LM head sharing the embedding) appear once, under their first name, as
        ``save_pretrained`` writes them. ``trainable_only`` leaves frozen parameters out (LoRA)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state = get_model_state_dict(model, options=StateDictOptions(
            full_state_dict=True, cpu_offload=True, ignore_frozen_params=trainable_only))
        seen: set[int] = set()
        for name, param in model.named_parameters(remove_duplicate=False):
            if id(param) in seen:
                state.pop(name, None)
            seen.add(id(param))
        return state

    def load_model_state(self, model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
        """Copy a full (unsharded) state dict, every rank holding it, into the sharded ``model``;
        keys it lacks keep their values (``strict=False``)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, strict=False))

    def full_optimizer_state(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict | None:
        """The optimizer state in the single-process ``optimizer.state_dict()`` format (parameters
        numbered in ``model.parameters()`` order) at rank 0, None elsewhere; a collective."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        full = get_optimizer_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True,
                                                                                   cpu_offload=True))
        if self.rank != 0:
            return None
        index = {name: i for i, name in enumerate(self._trainable_names(model))}
        groups = [{**g, "params": [index[n] for n in g["params"]]} for g in full["param_groups"]]
        return {"state": {index[n]: s for n, s in full["state"].items()}, "param_groups": groups}

    def load_optimizer_state(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict) -> None:
        """Shard an ``optimizer.state_dict()``-format ``state`` (every rank holding it) onto the
        ranks' optimizer.

        Raises:
            ValueError: it numbers other parameters than this model trains."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        names = self._trainable_names(model)
        numbered = [i for g in state["param_groups"] for i in g["params"]]
        if sorted(numbered) != list(range(len(names))):
            raise ValueError(f"the optimizer state holds {len(numbered)} parameters, the model trains {len(names)}")
        full = {"state": {names[int(i)]: s for i, s in state["state"].items()},
                "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in state["param_groups"]]}
        set_optimizer_state_dict(model, optimizer, full, options=StateDictOptions(full_state_dict=True))
