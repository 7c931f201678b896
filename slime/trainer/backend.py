"""Training backend: one policy (full weights or a LoRA adapter), one optimizer, one step per call.

:class:`TrainingBackend` is plain Python (no Ray inside); the train actor wraps it. It owns

* the policy, loaded with transformers from ``cfg.model_path`` (``builtin:`` names accepted) in
  float32 on CPU by default, optionally wrapped in a peft LoRA adapter (``--use-lora``);
* a frozen reference policy, only with ``--use-kl-loss``: for LoRA the base model with the
  adapter disabled (no copy), otherwise a deep copy of the initial weights;
* AdamW over the trainable parameters (``--lr --weight-decay --adam-beta1 --adam-beta2``) with
  global grad-norm clipping (``--clip-grad``, 0 disables clipping; the norm is still reported).

:meth:`TrainingBackend.train_step` takes one global batch of :class:`~slime.record.sample.Sample` (each
carrying per-token ``advantages``) and makes exactly one optimizer step:

1. samples with no loss token (all-zero ``loss_mask``, empty response) or ``status == failed``
   are dropped; if nothing is left the step is skipped (``skipped = 1``, weights untouched);
2. the rest is split into micro-batches of ``--micro-batch-size``;
3. a no-grad pass (eval mode, current weights, before any update) computes the *old* log-probs,
   the entropy metric and, with the KL loss, the reference log-probs;
4. a grad pass (train mode) computes the new log-probs with
   :func:`slime.algorithms.logprobs.compute_token_logprobs` (chunked LM head), calls the loss function
   (:func:`slime.algorithms.losses.policy_loss` or a plugin with the same signature) with
   ``global_num_tokens`` = loss tokens of the WHOLE global batch and back-propagates each
   micro-batch; the summed gradient does not depend on the micro-batch split;
5. grads are clipped and ``optimizer.step()`` runs once; ``weight_version`` is incremented.
   The collapse guard (:mod:`slime.guards.collapse`, ``--collapse-guard``) watches this: a step
   whose grad norm spikes has its gradient clipped to ``--spike-factor`` baselines; one whose
   advantage, train/rollout log-prob gap or KL to the reference spikes is skipped before
   ``optimizer.step()``; a step whose update itself moved the policy too far on its batch
   (``update_kl``, one more no-grad pass) is undone (weights and optimizer state restored). A
   skipped step leaves ``weight_version`` unchanged and clears the gradients.

A loss plugin that raises, returns a non-finite loss or a loss without a graph raises
:class:`LossPluginError` before the optimizer steps (weights and optimizer state unchanged).

Checkpoints (:meth:`save` / :meth:`load`) go through :mod:`slime.trainer.checkpoint`; :meth:`export_weights`
writes what the engine's ``load_weights(path)`` accepts: a Hugging Face folder, or a LoRA adapter.

Follows the actor training loop of slime (THUDM/slime, ``slime/backends``: recompute old
log-probs, token-level loss over the global batch, one step per global batch).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from slime.config.arguments import SlimeConfig
from slime.trainer.backend_io import BackendIOMixin, processor_files
from slime.record.batch import SampleBatch, collate_samples, split_micro_batches
from slime.trainer.data_parallel import DataParallel, init_data_parallel
from slime.guards.loss import LossPluginError, callable_name, checked_loss
from slime.trainer.step_parts import MicroBatch, empty_metrics, gathered_metrics
from slime.guards.collapse import (GuardPolicy, SpikeDetector, advantage_scale, grad_norm_per_advantage, guard_metrics,
                                   update_kl_k3)
from slime.algorithms.logprobs import TokenLogprobs, compute_token_logprobs
from slime.algorithms.losses import LossInputs, LossOutputs, PolicyLossConfig, policy_loss, reduce_metrics
from slime.plugins.loss import load_loss_plugin, probe_loss_plugin
from slime.trainer.models import load_model, load_tokenizer, resolve_model_path
from slime.trainer.policy_model import DEFAULT_LORA_TARGET_MODULES, build_policy
from slime.record.sample import Sample, SampleStatus

__all__ = ["DEFAULT_LORA_TARGET_MODULES", "LossFn", "LossPluginError", "TrainingBackend"]

log = logging.getLogger(__name__)

#: A loss function with :func:`slime.algorithms.losses.policy_loss`'s signature.
LossFn = Callable[[LossInputs, PolicyLossConfig], LossOutputs]

class TrainingBackend(BackendIOMixin):
    """Policy + optimizer + one-optimizer-step-per-global-batch training (see module docstring).

    Args:
        cfg: the trainer config. Used: ``model_path``, ``seed``, ``use_lora``/``lora_*``,
            ``lr``, ``weight_decay``, ``adam_beta1``/``adam_beta2``, ``clip_grad``,
            ``offload_optimizer_state``, ``micro_batch_size``, the loss fields
            (:meth:`PolicyLossConfig.from_config`), ``rollout_temperature`` (default log-prob
            temperature) and ``loss_type`` (``custom_loss`` requires ``loss_fn``).
        tokenizer: saved with checkpoints and full-model exports; loaded from ``cfg.model_path``
            when ``None`` and a path is given (``None`` if that folder has no tokenizer).
        model: an already-built causal LM to train instead of loading ``cfg.model_path``
            (tests pass tiny float64 models); it is moved to ``device`` and trained in place.
        device: torch device (default ``"cpu"``).
        dtype: dtype of the loaded model (default float32); ignored when ``model`` is given.
        loss_fn: loss with :func:`slime.algorithms.losses.policy_loss`'s signature; default ``policy_loss``.
            This is the hook ``--custom-loss-function-path`` plugs into (load the function, pass it).
        temperature: temperature the log-probs of samples that recorded none are computed at
            (default ``cfg.rollout_temperature``); every other sample's log-probs use its own
            ``sampling_temperature`` and ``sampling_top_p`` (the renormalised nucleus, as the
            engine reports them), see :func:`slime.record.batch.sampling_params_of`.
        logprob_chunk_size: LM-head chunk of :func:`compute_token_logprobs`.
        recompute_old_logprobs: ``True`` (default): old log-probs come from a separate no-grad
            eval-mode pass before the update (slime's recompute). ``False``: the grad pass's own
            log-probs, detached, serve as old log-probs (ratio exactly 1). Both are the same
            weights because there is exactly one optimizer step per global batch; ``False`` saves
            one forward pass but counts dropout noise (if any) into the ratio.
        entropy_metric: compute the ``entropy`` metric even when ``entropy_coef == 0`` (costs one
            softmax over the vocabulary per loss token in the no-grad pass).
        gradient_checkpointing: enable transformers' activation checkpointing of decoder layers.
        data_parallel: this rank's :class:`slime.trainer.data_parallel.DataParallel` when several train
            actors train the model (FSDP2: the policy is sharded, each rank trains its share of
            each global batch, checkpoints are gathered); None (default): one process, no
            torch.distributed.

    Attributes:
        model: the trained module (a peft ``PeftModel`` with LoRA).
        detector: the collapse guard's :class:`slime.guards.collapse.SpikeDetector`.
        initial_version: the weight version of ``initial_weights`` (0).
        initial_weights: a copy of the trainable weights at start (on CPU; on each rank its
            shards with data parallelism), what :meth:`restore_last_good` returns to when no
            checkpoint exists. With full-weight training it costs one more copy of the weights.
        optimizer: AdamW over ``trainable_parameters``.
        weight_version: version of the current weights; 0 at start, +1 per real step.
        step: optimizer steps taken (restored by :meth:`load`).

    ``--offload-optimizer-state``: on an accelerator the AdamW moments are moved to CPU after each
    step and back just before the next one; on a CPU device it is a no-op (the state already
    lives in host memory).

    Raises:
        ValueError: no ``model`` and no ``cfg.model_path``; ``loss_type == "custom_loss"``
            without ``loss_fn``; a LoRA config that matches no module.
    """

    @classmethod
    def for_rank(cls, cfg: SlimeConfig, method: Any, rank: int = 0, world_size: int = 1, address: str | None = None,
                 gpu_assigned: bool = False) -> "TrainingBackend":
        """The backend of train rank ``rank`` of ``world_size`` (what
        :meth:`slime.orchestration.ray_actors.TrainActor.setup` builds; ``--train-backend fsdp``,
        :mod:`slime.trainer.registry`).

        Args:
            cfg: the run's config.
            method: the run's :class:`slime.methods.Method` (its ``loss_function()``, used when
                ``--custom-loss-function-path`` is not given; neither: the PPO clipped loss).
            rank, world_size: this rank and the number of train ranks; with ``world_size > 1`` it
                first joins the process group at ``address`` (rank 0's ``host:port``) and the
                policy is sharded (FSDP2, :mod:`slime.trainer.data_parallel`).
            gpu_assigned: Ray gave this actor a GPU; used when torch sees CUDA (device 0 of its
                ``CUDA_VISIBLE_DEVICES``, bfloat16), else CPU in float32.

        Raises:
            slime.plugins.loader.PluginError: the loss plugin does not load.
            Whatever loading the model raises (a bad ``--model-path``, ...).
        """
        on_gpu = bool(gpu_assigned) and torch.cuda.is_available()
        device = torch.device("cuda", 0) if on_gpu else torch.device("cpu")
        data_parallel = init_data_parallel(rank, world_size, address, device) if world_size > 1 else None
        spec = cfg.custom_loss_function_path or method.loss_function()
        loss_fn = load_loss_plugin(spec, cfg) if spec else None  # any of the three conventions (slime.plugins.loss)
        return cls(cfg, loss_fn=loss_fn, device=device, dtype=torch.bfloat16 if on_gpu else torch.float32,
                   data_parallel=data_parallel)

    @classmethod
    def check_loss(cls, spec: str, cfg: SlimeConfig) -> str:
        """Load the loss plugin ``spec`` (``path.py[:function]``, any of the three conventions of
        :mod:`slime.plugins.loss`) and call it once on a probe batch
        (:func:`slime.plugins.loss.probe_loss_plugin`); returns its name for the start-up log.

        Raises:
            slime.plugins.loader.PluginError: it does not load, fit a convention or return what
                its convention returns (one line).
        """
        plugin = load_loss_plugin(spec, cfg)
        probe_loss_plugin(plugin, PolicyLossConfig.from_config(cfg))
        return plugin.plugin_name

    def __init__(
        self,
        cfg: SlimeConfig,
        tokenizer: Any = None,
        *,
        model: torch.nn.Module | None = None,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        loss_fn: LossFn | None = None,
        temperature: float | None = None,
        logprob_chunk_size: int = 1024,
        recompute_old_logprobs: bool = True,
        entropy_metric: bool = True,
        gradient_checkpointing: bool = False,
        data_parallel: DataParallel | None = None,
    ) -> None:
        self.cfg = cfg
        self.device = torch.device(device)
        if cfg.loss_type == "custom_loss" and loss_fn is None:
            raise ValueError("--loss-type custom_loss needs loss_fn= (the function loaded from "
                             "--custom-loss-function-path)")
        self.loss_fn: LossFn = loss_fn if loss_fn is not None else policy_loss
        self.loss_fn_name = callable_name(self.loss_fn)
        self.loss_config = PolicyLossConfig.from_config(cfg)
        self.temperature = float(cfg.rollout_temperature if temperature is None else temperature)
        self.logprob_chunk_size = int(logprob_chunk_size)
        self.recompute_old_logprobs = bool(recompute_old_logprobs)
        self.entropy_metric = bool(entropy_metric)
        self.weight_version = 0
        self.step = 0

        torch.manual_seed(cfg.seed)  # LoRA init and anything random below are reproducible
        if model is None:
            if not cfg.model_path:
                raise ValueError("TrainingBackend needs cfg.model_path (--model-path) or model=")

            model = load_model(cfg.model_path, dtype=dtype)
            if tokenizer is None:
                tokenizer = self._try_load_tokenizer(cfg.model_path)
            self.processor_files = processor_files(resolve_model_path(cfg.model_path))
        self.tokenizer = tokenizer
        model = model.to(self.device)
        if gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.config.use_cache = False

        self.is_lora = bool(cfg.use_lora)
        self.model, self.ref_model = build_policy(cfg, model)
        self.data_parallel = data_parallel
        self.sharded = None if data_parallel is None else data_parallel.shard(  # the FSDP2 root
            self.model, offload=bool(cfg.offload_optimizer_state))
        self.trainable_parameters = [p for p in self.model.parameters() if p.requires_grad]
        if not self.trainable_parameters:
            raise ValueError("the model has no trainable parameters")
        self.optimizer = torch.optim.AdamW(
            self.trainable_parameters, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2),
            weight_decay=cfg.weight_decay,
        )
        self.param_dtype = self.trainable_parameters[0].dtype
        self.float_dtype = torch.float64 if self.param_dtype == torch.float64 else torch.float32
        self.pad_token_id = 0  # padding is masked out; 0 is a valid id for every vocabulary
        self.guard = GuardPolicy.from_config(cfg)
        self.detector = SpikeDetector(self.guard)
        self.last_spike = None  # the newest spike, for the collapse line (slime.guards.collapse.act_on_collapse)
        self.initial_weights: list[torch.Tensor] = []
        self.initial_version = 0  # the version those weights are served as
        self.remember_initial_weights()

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _try_load_tokenizer(model_path: str) -> Any:

        try:
            return load_tokenizer(model_path)
        except Exception as exc:  # a weights-only folder: checkpoints/exports go without tokenizer
            log.warning("no tokenizer loaded from %s (%s); checkpoints will not include one", model_path, exc)
            return None

    @property
    def offload_active(self) -> bool:
        """Whether ``--offload-optimizer-state`` moves anything here (only on a non-CPU device, and
        not with data parallelism, where FSDP2's CPU offload keeps the state in host memory)."""
        return bool(self.cfg.offload_optimizer_state) and self.device.type != "cpu" and self.data_parallel is None

    def _optimizer_state_to(self, device: torch.device) -> None:
        """Move the AdamW moments to ``device`` (``step`` counters stay where AdamW keeps them)."""
        for state in self.optimizer.state.values():
            for key, value in state.items():
                if key != "step" and torch.is_tensor(value) and value.device != device:
                    state[key] = value.to(device, non_blocking=True)

    def _logprobs(self, model: torch.nn.Module, mb: MicroBatch, *, entropy: bool, topk: bool = False):
        b = mb.batch
        args = (b.input_ids_B_T, b.attention_mask_B_T, b.response_mask_B_T)
        kwargs = dict(chunk_size=self.logprob_chunk_size, temperature=b.temperature_B, top_p=b.top_p_B,
                      return_entropy=entropy, extra_ids_B_T_K=b.teacher_topk_ids_B_T_K if topk else None)
        if b.multimodal is not None:  # a text batch calls exactly as before
            kwargs["multimodal"] = b.multimodal
        if self.sharded is not None and model is self.model:  # through the FSDP2 root's hooks
            return TokenLogprobs(*self.sharded(*args, **kwargs))
        return compute_token_logprobs(model, *args, **kwargs)

    def collate(self, samples: Sequence[Sample]) -> SampleBatch:
        """``samples`` as a :class:`SampleBatch` on this backend's device and float dtype, each
        sample's log-probs at its own sampling parameters (``--rollout-temperature`` where it
        recorded none)."""
        return collate_samples(samples, pad_token_id=self.pad_token_id, dtype=self.float_dtype, device=self.device,
                               default_temperature=self.temperature)

    def policy_logprobs(self, samples: Sequence[Sample]) -> list[list[float]]:
        """The current policy's log-probs of each sample's response tokens (no grad, eval mode),
        at each sample's sampling parameters; one ``[R]`` list per sample, micro-batch by
        micro-batch. What :mod:`slime.guards.admission` writes into samples without engine log-probs."""
        out: list[list[float]] = []
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for part in split_micro_batches(list(samples), self.cfg.micro_batch_size):
                    mb = MicroBatch(part, self.collate(part))
                    lp_B_T = self._logprobs(self.model, mb, entropy=False).logprobs_B_T
                    out += [lp_B_T[i, s.prompt_length:len(s.tokens)].tolist() for i, s in enumerate(part)]
        finally:
            self.model.train(was_training)
        return out

    def _micro_batches(self, trained: list[Sample]) -> list[MicroBatch]:
        """This rank's micro-batches of the global batch ``trained``: all of it in one process;
        with data parallelism its share, padded with filler micro-batches (the global batch's
        first sample, zero-weighted) up to the count of the largest share."""
        dp, size = self.data_parallel, self.cfg.micro_batch_size
        mine = trained if dp is None else dp.share(trained)
        micro = [MicroBatch(mb, self.collate(mb)) for mb in split_micro_batches(mine, size)]
        if dp is not None:
            filler = trained[:1]
            micro += [MicroBatch(filler, self.collate(filler), filler=True)
                      for _ in range(dp.micro_batch_count(len(trained), size) - len(micro))]
        return micro

    def _ref_logprobs(self, mb: MicroBatch) -> torch.Tensor:
        if self.is_lora:
            with self.model.disable_adapter():
                return self._logprobs(self.model, mb, entropy=False).logprobs_B_T
        assert self.ref_model is not None
        return self._logprobs(self.ref_model, mb, entropy=False).logprobs_B_T

    def remember_initial_weights(self) -> None:
        """Copy the trainable weights as the run's start (``initial_weights``, served as version
        ``initial_version``: what :meth:`restore_last_good` returns to when no checkpoint exists);
        on CPU, or as this rank's shards with data parallelism. Called when built, and again after
        a resume."""
        self.initial_weights = [p.detach().clone() if self.data_parallel is not None
                                else p.detach().to("cpu", copy=True) for p in self.trainable_parameters]
        self.initial_version = int(self.weight_version)

    def _update_snapshot(self) -> tuple[list[torch.Tensor], dict]:
        """The trainable weights and the optimizer state before a step, for :meth:`_undo_update`."""
        return [p.detach().clone() for p in self.trainable_parameters], copy.deepcopy(self.optimizer.state_dict())

    def _undo_update(self, snapshot: tuple[list[torch.Tensor], dict]) -> None:
        """Put the weights and optimizer state of :meth:`_update_snapshot` back (the step never happened)."""
        weights, state = snapshot
        with torch.no_grad():
            for p, w in zip(self.trainable_parameters, weights):
                p.copy_(w)
        self.optimizer.load_state_dict(state)
        if self.offload_active:
            self._optimizer_state_to(torch.device("cpu"))

    def _update_kl(self, micro: list[MicroBatch]) -> float:
        """How far the step just taken moved the policy on its own batch: the mean k3 KL estimate
        (:func:`slime.guards.collapse.update_kl_k3`) of the updated weights' log-probs against the
        old ones over the loss tokens (one no-grad eval pass; every rank, filler micro-batches too)."""
        total, count = 0.0, 0.0
        self.model.eval()
        with torch.no_grad():
            for mb in micro:
                new_B_T = self._logprobs(self.model, mb, entropy=False).logprobs_B_T
                if not mb.filler:
                    s, n = update_kl_k3(mb.old_logprobs_B_T, new_B_T, mb.batch.loss_mask_B_T)
                    total, count = total + s, count + n
        if self.data_parallel is not None:
            parts = self.data_parallel.all_gather((total, count))
            total, count = sum(p[0] for p in parts), sum(p[1] for p in parts)
        return total / count if count else 0.0

    def scale_lr(self, factor: float) -> float:
        """Multiply every parameter group's learning rate by ``factor``; returns the new one."""
        for group in self.optimizer.param_groups:
            group["lr"] *= factor
        return float(self.optimizer.param_groups[0]["lr"])

    def _call_loss(self, inputs: LossInputs) -> LossOutputs:
        return checked_loss(self.loss_fn, self.loss_fn_name, inputs, self.loss_config)

    # ------------------------------------------------------------------ training
    def train_step(self, samples: Sequence[Sample]) -> dict[str, float]:
        """One optimizer step on the global batch ``samples``; returns float metrics.

        Args:
            samples: the global batch (any length; normally ``--global-batch-size``). Every sample
                with a loss token must carry ``advantages`` and a non-empty prompt.

        Returns:
            ``loss`` (global token mean), ``pg_loss``, ``pg_clipfrac``, ``approx_kl``, ``kl_loss``
            (0 without ``--use-kl-loss``), ``entropy``, ``grad_norm`` (before clipping),
            ``n_samples`` (given), ``n_trained_samples``, ``n_tokens`` (loss tokens),
            ``n_seq_tokens`` (prompt + response tokens processed),
            ``train_rollout_logprob_abs_diff`` (mean ``|old train logprob - rollout logprob|``
            over the loss tokens of samples with engine log-probs, each at its own sampling
            temperature / top-p) and its ``_max``, ``n_tokens_without_engine_logprobs`` (loss
            tokens of constrained or untokenized samples, whose rollout log-probs are the
            trainer's own: TIS weight 1, not in the gap), ``staleness_mean/min/max`` (this backend's
            ``weight_version`` minus each sample's), ``tokens_per_s`` (``n_seq_tokens`` per
            second of the whole step), ``step_time_s``, ``skipped`` (1 when nothing was
            trainable, the gradient was non-finite or the collapse guard skipped the step),
            ``weight_version`` (after the step), the collapse guard's ``guard/*``
            (:func:`slime.guards.collapse.guard_metrics`; not with ``--collapse-guard off``), plus
            whatever else the loss reports (``ratio_dev``, ``tis_weight``, ...).

        Raises:
            ValueError: a trainable sample without ``advantages`` or with an empty prompt.
            LossPluginError: the loss function failed (see class doc); nothing was stepped.
        """
        t0 = time.perf_counter()
        samples = list(samples)
        metrics = empty_metrics(samples, self.weight_version)
        trained = [s for s in samples if s.num_loss_tokens > 0 and s.status != SampleStatus.FAILED]
        missing = [i for i, s in enumerate(samples)
                   if s.num_loss_tokens > 0 and s.status != SampleStatus.FAILED and s.advantages is None]
        if missing:
            raise ValueError(f"samples {missing[:5]} have no advantages; compute advantages before train_step")
        if not trained:
            metrics["skipped"] = 1.0
            metrics["step_time_s"] = time.perf_counter() - t0
            return metrics

        global_num_tokens = float(sum(s.num_loss_tokens for s in trained))
        micro = self._micro_batches(trained)
        use_kl = self.cfg.use_kl_loss
        want_grad_entropy = self.loss_config.entropy_coef > 0

        # ---- pass 1 (no grad, eval mode, weights before the update): old / reference log-probs
        if self.recompute_old_logprobs or use_kl:
            self.model.eval()
            with torch.no_grad():
                for mb in micro:
                    if self.recompute_old_logprobs:
                        out = self._logprobs(self.model, mb, entropy=self.entropy_metric and not want_grad_entropy)
                        mb.old_logprobs_B_T, mb.entropy_B_T = out.logprobs_B_T, out.entropy_B_T
                    if use_kl:
                        mb.ref_logprobs_B_T = self._ref_logprobs(mb)

        # ---- pass 2 (grad, train mode): new log-probs, loss, backward per micro-batch
        self.optimizer.zero_grad(set_to_none=True)
        self.model.train()
        outputs: list[LossOutputs] = []
        loss_total = 0.0
        abs_diff_sum, abs_diff_max, compared_tokens = 0.0, 0.0, 0.0
        try:
            for mb in micro:
                b = mb.batch
                grad_entropy = want_grad_entropy or (not self.recompute_old_logprobs and self.entropy_metric)
                new = self._logprobs(self.model, mb, entropy=grad_entropy, topk=True)
                if mb.old_logprobs_B_T is None:
                    mb.old_logprobs_B_T = new.logprobs_B_T.detach()
                # no comparable engine log-probs (constrained / none): the trainer's own stand in
                not_engine_B_T = ~b.engine_logprobs_B[:, None] & b.response_mask_B_T
                b.rollout_logprobs_B_T = torch.where(not_engine_B_T, mb.old_logprobs_B_T.detach().to(
                    b.rollout_logprobs_B_T.dtype), b.rollout_logprobs_B_T)
                entropy_B_T = new.entropy_B_T if want_grad_entropy else mb.entropy_B_T
                if entropy_B_T is None and new.entropy_B_T is not None:
                    entropy_B_T = new.entropy_B_T.detach()
                inputs = LossInputs(
                    logprobs_B_T=new.logprobs_B_T, old_logprobs_B_T=mb.old_logprobs_B_T,
                    advantages_B_T=b.advantages_B_T, loss_mask_B_T=b.loss_mask_B_T,
                    global_num_tokens=global_num_tokens, rollout_logprobs_B_T=b.rollout_logprobs_B_T,
                    ref_logprobs_B_T=mb.ref_logprobs_B_T, entropy_B_T=entropy_B_T,
                    response_mask_B_T=b.response_mask_B_T, input_ids_B_T=b.input_ids_B_T,
                    rewards_B=torch.tensor([float(s.reward or 0.0) for s in mb.samples],
                                           dtype=b.loss_mask_B_T.dtype, device=self.device),
                    global_num_samples=float(len(trained)),
                    student_topk_logprobs_B_T_K=new.extra_logprobs_B_T_K,
                    teacher_topk_logprobs_B_T_K=b.teacher_topk_logprobs_B_T_K,
                    teacher_logprobs_B_T=b.teacher_logprobs_B_T,
                )
                out = self._call_loss(inputs)
                if mb.filler:  # same collectives as a real micro-batch, zero gradient
                    (out.loss * 0.0).backward()
                    continue
                out.loss.backward()
                outputs.append(out)
                loss_total += float(out.loss.detach())
                on = (b.loss_mask_B_T > 0) & b.engine_logprobs_B[:, None]
                diff = (mb.old_logprobs_B_T.detach() - b.rollout_logprobs_B_T).abs()[on]
                compared_tokens += float(on.sum())
                if diff.numel():
                    abs_diff_sum += float(diff.sum())
                    abs_diff_max = max(abs_diff_max, float(diff.max()))
        except BaseException:
            self.optimizer.zero_grad(set_to_none=True)
            self.model.eval()
            raise
        self.model.eval()
        if self.data_parallel is not None:  # every rank's part of the metrics, in rank order
            loss_total, abs_diff_sum, abs_diff_max, compared_tokens, outputs = gathered_metrics(self.data_parallel.all_gather(
                (loss_total, abs_diff_sum, abs_diff_max, compared_tokens, [(o.sums, o.counts) for o in outputs])))

        # ---- the collapse guard's signals before the step, then one optimizer step (kept unless it spikes)
        max_norm = self.cfg.clip_grad if self.cfg.clip_grad > 0 else float("inf")
        grad_norm = DataParallel.total_norm(torch.nn.utils.clip_grad_norm_(self.trainable_parameters, max_norm))
        advantage = advantage_scale(trained)
        signals = {"advantage": advantage, "logprob_gap": abs_diff_sum / compared_tokens if compared_tokens else 0.0}
        per_advantage = grad_norm_per_advantage(grad_norm, advantage)
        if per_advantage is not None:
            signals["grad_norm"] = per_advantage
        if use_kl:
            signals["kl_ref"] = float(reduce_metrics(outputs).get("kl_loss", 0.0))
        guard = self.guard.mode != "off"
        spike = self.detector.check(signals) if guard else None
        clipped, scale = None, 1.0
        if spike is not None and self.guard.acts and (limit := self.detector.clip_limit(spike)) is not None:
            # adaptive clipping (slime.guards.collapse): the norm per unit of advantage down to the limit;
            # the gradient's norm now is the smaller of its raw norm and --clip-grad
            clipped, scale = spike, min(1.0, limit * advantage / min(grad_norm, max_norm))
            torch.nn.utils.clip_grad_norm_(self.trainable_parameters, limit * advantage)
            signals["grad_norm"] = limit
            log.warning("collapse guard: %s; gradient clipped to %g baselines (x%.3g), step kept",
                        spike.line(), self.guard.spike_factor, scale)
            spike = self.detector.check({k: v for k, v in signals.items() if k != "grad_norm"})
        skipped = not math.isfinite(grad_norm) or (spike is not None and self.guard.acts)
        if not math.isfinite(grad_norm):
            log.warning("non-finite grad norm (%s); optimizer step skipped", grad_norm)
        elif spike is not None:
            log.warning("collapse guard: %s%s", spike.line(), "; optimizer step skipped" if skipped else " (logged)")
        if not skipped:
            undo = self._update_snapshot() if guard and self.guard.acts else None
            if self.offload_active:
                self._optimizer_state_to(self.device)
            self.optimizer.step()
            if self.offload_active:
                self._optimizer_state_to(torch.device("cpu"))
            if guard:
                signals["update_kl"] = self._update_kl(micro)
                late = self.detector.check({"update_kl": signals["update_kl"]})
                if late is not None and undo is not None:
                    self._undo_update(undo)
                    skipped = True
                if late is not None:
                    log.warning("collapse guard: %s%s", late.line(),
                                "; the step's update was undone" if skipped else " (logged)")
                spike = spike or late
            if not skipped:
                self.weight_version += 1
                self.step += 1
        self.optimizer.zero_grad(set_to_none=True)
        if guard:
            self.last_spike = spike or self.last_spike
            self.detector.record(signals, spike)
            metrics.update(guard_metrics(self.detector, signals, spike, skipped and spike is not None,
                                         self.optimizer.param_groups[0]["lr"], clipped, scale))

        n_seq_tokens = float(sum(len(s.tokens) for s in trained))
        elapsed = time.perf_counter() - t0
        metrics.update(reduce_metrics(outputs))
        metrics.update(
            loss=loss_total, grad_norm=grad_norm, n_trained_samples=float(len(trained)),
            n_tokens=global_num_tokens, n_seq_tokens=n_seq_tokens,
            train_rollout_logprob_abs_diff=abs_diff_sum / compared_tokens if compared_tokens else 0.0,
            n_tokens_without_engine_logprobs=global_num_tokens - compared_tokens,
            train_rollout_logprob_abs_diff_max=abs_diff_max,
            tokens_per_s=n_seq_tokens / elapsed if elapsed > 0 else 0.0, step_time_s=elapsed,
            skipped=1.0 if skipped else 0.0, weight_version=float(self.weight_version),
        )
        return {k: float(v) for k, v in metrics.items()}

