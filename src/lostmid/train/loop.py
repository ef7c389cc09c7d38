"""The training loop: AdamW, warmup + cosine, gradient clipping, log-spaced checkpoints.

Plain on purpose. One step is

    logits = model(batch[:, :-1])                         # (B, T, V)
    loss   = sum_t w_t CE(logits[:, t], batch[:, t+1]) / sum_t w_t   (mean over B)
    loss.backward(); clip ||g|| <= grad_clip; AdamW step with lr(step)

Plug-in points for interventions (see :class:`Interventions`): the per-position loss
weight w, the batch sampler, and the model variant. Everything the run depends on is a
function of (config, seed, step), and :meth:`Trainer.state_dict` holds the rest (model,
optimizer moments, counters), so resuming from a saved state reproduces the
uninterrupted run bit for bit on the same machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from lostmid.errors import UserError
from lostmid.files import load_torch, save_torch
from lostmid.models.devices import resolve_device
from lostmid.train.config import TrainConfig
from lostmid.train.corpus import BatchSampler
from lostmid.train.model import ModelVariant

if TYPE_CHECKING:
    from transformers import PreTrainedModel

PositionWeight = torch.Tensor | Callable[[int], torch.Tensor]
"""Per-position loss weight: a tensor of T weights, or ``f(T) -> tensor of T weights``."""


@dataclass(frozen=True)
class Interventions:
    """The plug-in points; all None is plain next-token training.

    loss_weight: per-position weight w_t >= 0 of the next-token loss (0-indexed over the
        T predicted positions), e.g. ``lambda T: torch.ones(T)`` or emphasis on the middle.
    sampler: replaces the default random-window sampler (see
        :class:`lostmid.train.corpus.BatchSampler`).
    variant: modifies the freshly built model (see :class:`~lostmid.train.model.ModelVariant`).
    name: recorded in the run's metadata.
    """

    loss_weight: PositionWeight | None = None
    sampler: BatchSampler | None = None
    variant: ModelVariant | None = None
    name: str = "none"


def learning_rate(step: int, config: TrainConfig) -> float:
    """lr(step): linear warmup, then cosine decay to ``lr * min_lr_ratio`` (see TrainConfig).

    >>> from lostmid.train.config import TrainConfig, checkpoint_steps
    >>> c = TrainConfig(lr=1.0, warmup_steps=10, steps=110, min_lr_ratio=0.0)
    >>> learning_rate(4, c), learning_rate(10, c), round(learning_rate(60, c), 6)
    (0.5, 1.0, 0.5)
    """
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    span = max(config.steps - config.warmup_steps, 1)
    progress = min((step - config.warmup_steps) / span, 1.0)
    ratio = config.min_lr_ratio
    return config.lr * (ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def position_weights(
    weight: PositionWeight | None, length: int, device: torch.device
) -> torch.Tensor | None:
    """The weight vector (T,) of a :data:`PositionWeight`, checked; None stays None."""
    if weight is None:
        return None
    w = weight(length) if callable(weight) else weight
    w = torch.as_tensor(w, dtype=torch.float32, device=device)
    if w.shape != (length,) or bool((w < 0).any()) or float(w.sum()) <= 0:
        raise UserError(
            f"loss weight must be {length} non-negative numbers with a positive sum, "
            f"got shape {tuple(w.shape)}"
        )
    return w


def next_token_loss(
    logits: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean next-token cross-entropy, optionally weighted per position.

    loss = mean_b sum_t w_t CE_bt / sum_t w_t; with w = None every w_t = 1.

    Args:
        logits: (B, T, V).
        targets: (B, T) token ids.
        weight: (T,) or None.
    """
    per_token = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none")
    per_token = per_token.view(targets.shape)  # (B, T)
    if weight is None:
        return per_token.mean()
    return (per_token * weight).sum(dim=1).mean() / weight.sum()


class Trainer:
    """Owns the model, the optimizer and the counters; :meth:`train_step` is one update.

    Attributes:
        step: optimizer updates done so far.
        tokens_seen: input tokens consumed so far (B * T per step).
        recent_losses: training losses of the steps since the last :meth:`pop_losses`.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        config: TrainConfig,
        sampler: BatchSampler,
        loss_weight: PositionWeight | None = None,
        device: str | torch.device = "cpu",
    ) -> None:
        self.model = model
        self.config = config
        self.sampler = sampler
        # a device spec (auto | cpu | cuda[:N]) is checked and resolved here, once
        self.device = torch.device(resolve_device(device) if isinstance(device, str) else device)
        # transformers wraps PreTrainedModel.to in functools.wraps, which mypy does not
        # bind as a method (it takes the device for self)
        self.model.to(self.device)  # type: ignore[arg-type]
        self.weight = position_weights(loss_weight, config.model.context, self.device)
        self.optimizer = self._optimizer()
        self.step = 0
        self.tokens_seen = 0
        self.recent_losses: list[float] = []
        self.autocast = config.dtype == "bfloat16"

    def _optimizer(self) -> torch.optim.AdamW:
        """AdamW; weight decay on matrices only (not on norms and biases)."""
        decay = [p for p in self.model.parameters() if p.requires_grad and p.ndim >= 2]
        no_decay = [p for p in self.model.parameters() if p.requires_grad and p.ndim < 2]
        groups = [
            {"params": decay, "weight_decay": self.config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(
            groups, lr=self.config.lr, betas=(self.config.beta1, self.config.beta2)
        )

    def train_step(self) -> float:
        """One AdamW update on the batch of the current step; returns its loss."""
        batch = self.sampler.batch(self.step).to(self.device)  # (B, T + 1)
        return self.update(batch, partial(next_token_loss, weight=self.weight))

    def update(
        self, tokens: torch.Tensor, loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    ) -> float:
        """One AdamW update at the current step's learning rate, next-token prediction on
        ``tokens`` (B, T + 1) with the loss ``loss_of(logits, targets)``; returns the loss.

        Subclasses that draw their batches differently call it from ``train_step``.
        """
        lr = learning_rate(self.step, self.config)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        inputs, targets = tokens[:, :-1], tokens[:, 1:]  # (B, T) each
        self.model.train()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            logits = self.model(input_ids=inputs).logits  # (B, T, V)
        loss = loss_of(logits, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.tokens_seen += inputs.numel()
        value = float(loss.detach())
        self.recent_losses.append(value)
        return value

    def pop_losses(self) -> list[float]:
        """The losses since the last call (for a checkpoint's running training loss)."""
        losses, self.recent_losses = self.recent_losses, []
        return losses

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where we are."""
        return {
            "step": self.step,
            "tokens_seen": self.tokens_seen,
            "recent_losses": list(self.recent_losses),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "config": self.config.record(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("config") != self.config.record():
            changed = sorted(
                k for k in state["config"] if state["config"][k] != self.config.record().get(k)
            )
            raise UserError(
                "cannot resume: the saved run used a different config "
                f"(differs in: {', '.join(changed)}); use the same options or --overwrite"
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = int(state["step"])
        self.tokens_seen = int(state["tokens_seen"])
        self.recent_losses = list(state["recent_losses"])

    def save(self, path: Path) -> None:
        """Write :meth:`state_dict` atomically (:func:`lostmid.files.save_torch`): a
        crash or a full disk leaves the previous state, never half of one."""
        save_torch(self.state_dict(), path)

    def load(self, path: Path) -> None:
        """Continue from a state :meth:`save` wrote; a missing, damaged or foreign file
        is one line (read with ``weights_only``: nothing in it is executed)."""
        if not path.is_file():
            raise UserError(f"cannot resume: {path} does not exist; run without --resume")
        fix = "start again with --overwrite (the checkpoints and dynamics.json stay readable)"
        state = load_torch(path, map_location=self.device, fix=fix)
        keys = ("step", "tokens_seen", "recent_losses", "model", "optimizer", "config")
        if not isinstance(state, dict) or any(k not in state for k in keys):
            raise UserError(f"cannot resume: {path} is not a lostmid training state; {fix}")
        try:
            self.load_state_dict(state)
        except (RuntimeError, KeyError, ValueError, TypeError) as err:
            if isinstance(err, UserError):
                raise
            first = " ".join(str(err).split())[:160]
            raise UserError(
                f"cannot resume: {path} does not fit this model ({first}); {fix}"
            ) from None
