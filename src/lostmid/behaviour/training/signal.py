"""The learning signal each record of a retrieval prompt receives: the paper's eta.

For a retrieval example b (prompt p_b with its records at token spans R_1 .. R_P, answer
a_b) the loss is the one training uses, the mean next-token cross-entropy over the
answer tokens given the prompt (teacher forcing),

    ell_b = mean_{t in answer} -log p(a_bt | p_b, a_b<t).

With E_b the input embeddings of the example (the output of the token-embedding layer,
T x d), the learning signal of record r is the Frobenius norm of the loss gradient with
respect to that record's input embeddings, averaged over a batch of examples,

    eta(r) = mean_b || d ell_b / d E_b[R_r] ||_F ,

and ``eta_gold(r)`` is the same mean over the examples whose gold record is r only (the
signal that teaches retrieving record r). It is the size of the update the answer's loss
sends back to whatever produced record r's inputs: the paper's effective learning rate,
which it predicts to follow rho_H over the positions (eta ~ rho_H). Examples are
independent (no padding: every example of a task has the same length), so one backward
pass of the summed loss gives every example's gradient.

The model's weights get no gradient: only the embeddings are differentiated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from lostmid.errors import UserError
from lostmid.models.adapters.cache import logits_to_keep_name


@dataclass(frozen=True)
class RecordSignal:
    """eta (P,) over all examples, eta_gold (P,) over the examples whose gold record is r
    (NaN where no example has gold r), and the examples' mean answer loss."""

    eta: np.ndarray
    eta_gold: np.ndarray
    loss: float
    examples: int

    def record(self) -> dict[str, Any]:
        return {
            "eta": self.eta.tolist(),
            "eta_gold": [None if not np.isfinite(v) else float(v) for v in self.eta_gold],
            "loss": self.loss,
            "examples": self.examples,
        }


def record_learning_signal(
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    spans: Sequence[tuple[int, int]],
    golds: Sequence[int],
) -> RecordSignal:
    """eta(r) and eta_gold(r) of the module docstring on these examples.

    Args:
        model: a causal LM with ``get_input_embeddings()`` whose forward takes
            ``inputs_embeds`` and returns ``.logits`` (B, T, V).
        prompts, targets: token ids per example; every prompt the same length, every
            target the same length (one task).
        spans: (start, end) token spans of the records in the prompt, 0-indexed, end
            exclusive (the same in every example of a task).
        golds: the gold record of each example (0-indexed).
    """
    if not prompts or len(prompts) != len(targets) or len(golds) != len(prompts):
        raise UserError("the learning signal needs examples, each with a target and a gold")
    if len({len(p) for p in prompts}) != 1 or len({len(t) for t in targets}) != 1:
        raise UserError("the learning signal needs examples of one length (one task)")
    prompt_len, answer_len = len(prompts[0]), len(targets[0])
    if answer_len == 0 or not spans or any(not 0 <= a < b <= prompt_len for a, b in spans):
        raise UserError("record spans must lie inside the prompt and the target be non-empty")
    embed = model.get_input_embeddings()
    device = embed.get_parameter("weight").device
    ids = torch.tensor(
        [list(p) + list(t)[:-1] for p, t in zip(prompts, targets, strict=True)],
        dtype=torch.long,
        device=device,
    )  # (B, T): the model reads prompt + answer[:-1]
    answers = torch.tensor([list(t) for t in targets], dtype=torch.long, device=device)  # (B, A)
    was_training = model.training
    flags = [p.requires_grad for p in model.parameters()]
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        emb = embed(ids).detach().requires_grad_(True)  # (B, T, d)
        # logits at column c predict token c + 1: the answer is predicted from prompt_len - 1
        # on, the last A columns of the T the model reads; only those are computed where
        # the family allows (the vocabulary projection of the others is never read)
        keep = logits_to_keep_name(model)
        logits = model(inputs_embeds=emb, **({keep: answer_len} if keep else {})).logits
        predicted = logits[:, -answer_len:].float()  # (B, A, V)
        per_token = F.cross_entropy(
            predicted.flatten(0, 1), answers.flatten(), reduction="none"
        ).view(answers.shape)  # (B, A)
        per_example = per_token.mean(dim=1)  # (B,) ell_b
        (grad,) = torch.autograd.grad(per_example.sum(), emb)  # (B, T, d), one per example
    finally:
        for p, flag in zip(model.parameters(), flags, strict=True):
            p.requires_grad_(flag)
        model.train(was_training)
    squared = grad.double().pow(2).sum(dim=-1)  # (B, T)
    norms = torch.stack([squared[:, a:b].sum(dim=1).sqrt() for a, b in spans], dim=1)  # (B, P)
    norms_np = norms.cpu().numpy()
    gold = np.asarray(golds, dtype=np.int64)
    eta_gold = np.full(len(spans), np.nan)
    for r in range(len(spans)):
        chosen = norms_np[gold == r, r]
        if chosen.size:
            eta_gold[r] = float(chosen.mean())
    return RecordSignal(
        eta=norms_np.mean(axis=0),
        eta_gold=eta_gold,
        loss=float(per_example.detach().mean()),
        examples=len(prompts),
    )
