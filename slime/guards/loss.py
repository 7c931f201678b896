"""Guarding a loss function (built-in or ``--custom-loss-function-path`` plugin).

:func:`checked_loss` calls the loss and refuses a result the optimizer must not step on: an
exception, a non-scalar or non-finite loss, or one without a gradient graph. The caller then
skips ``optimizer.step()``, so the weights stay unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from slime.errors import LossPluginError, error_line
from slime.algorithms.losses import LossInputs, LossOutputs, PolicyLossConfig


def callable_name(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a function, for messages (a loss plugin's ``plugin_name`` if set)."""
    if getattr(fn, "plugin_name", None):
        return str(fn.plugin_name)
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}.{name}"


def checked_loss(loss_fn: Callable[[LossInputs, PolicyLossConfig], Any], name: str,
                 inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs:
    """Call ``loss_fn(inputs, config)`` and validate what it returns.

    A bare scalar tensor is accepted (wrapped without metrics).

    Raises:
        LossPluginError: naming ``name``, when the call raised or the loss is not a finite
            scalar connected to the model's log-probs.
    """
    try:
        out = loss_fn(inputs, config)
    except LossPluginError:  # an adapter already named the plugin and what it expected
        raise
    except Exception as exc:
        raise LossPluginError(name, f"raised {error_line(exc, None)}") from exc
    if isinstance(out, torch.Tensor):  # a bare scalar loss is accepted (no metrics)
        out = LossOutputs(loss=out, num_tokens=float(inputs.loss_mask_B_T.sum()))
    if not isinstance(out, LossOutputs):
        raise LossPluginError(name, f"returned {type(out).__name__}, expected LossOutputs")
    loss = out.loss
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise LossPluginError(name, f"loss must be a scalar tensor, got {type(loss).__name__} "
                                    f"{tuple(getattr(loss, 'shape', ()))}")
    value = float(loss.detach())
    if not math.isfinite(value):
        raise LossPluginError(name, f"returned a non-finite loss ({value})")
    if not loss.requires_grad or loss.grad_fn is None:
        raise LossPluginError(name, "returned a loss with no gradient (not connected to the "
                                    "model's log-probs)")
    return out
