"""How much the gold span of a prompt reaches the answer: gradient norms on one example.

For a prompt x_1..x_L (input embeddings e_j), a gold span S (the needle's or the gold
record's tokens, 0-indexed half-open ``[start, end)``) and an answer a_1..a_m read
right after the prompt (teacher forcing):

* ``answer_logp`` = sum_t log p(a_t | x, a_<t);
* ``gradient`` = sqrt(sum_{j in S} ||d answer_logp / d e_j||^2): how strongly the
  answer's log-probability depends on the gold tokens;
* ``gradient_share``: the same over the span divided by the same over the whole prompt
  (comparable across prompts and depths);
* ``jacobian`` = sqrt(sum_{j in S} ||d h_L / d e_j||_F^2), with h_L the final hidden state
  at the prompt's last position (``measure``'s influence, summed over the span),
  estimated with ``probes`` Rademacher probes, and ``jacobian_share`` likewise.

One example at a time (the caller loops), eval mode, parameters frozen; one forward
serves both (the output head on the answer's rows only: at a 262k vocabulary, as Gemma
3's, the head over every prompt row would cost more than the blocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from lostmid.errors import UserError
from lostmid.influence.hooks import frozen_parameters
from lostmid.influence.passes import at_least_float32
from lostmid.recordable import fields_record

if TYPE_CHECKING:
    from lostmid.models import LoadedModel


@dataclass(frozen=True)
class GoldSpanInfluence:
    """The gold span's reach on one example (module docstring)."""

    answer_logp: float
    gradient: float
    gradient_share: float
    jacobian: float | None
    jacobian_share: float | None

    def record(self) -> dict[str, Any]:
        return fields_record(self)


def _embeddings(loaded: LoadedModel, ids: torch.Tensor) -> torch.Tensor:
    embed = loaded.adapter.token_embedding(loaded.model)
    return embed(ids.to(loaded.input_device)).detach()  # (1, T, d)


def gold_span_influence(
    loaded: LoadedModel,
    prompt_ids: list[int],
    span: tuple[int, int],
    answer_ids: list[int],
    *,
    probes: int = 0,
    seed: int = 0,
    cache: Any = None,
) -> GoldSpanInfluence:
    """The gradient (and, with ``probes`` > 0, the Jacobian) reach of ``span`` on one example.

    ``cache``: an empty key-value cache (the adapter's
    :meth:`~lostmid.models.adapters.cache.CacheContinuation.full_cache`) that the forward
    fills with the prompt's and the answer's columns, for a caller that goes on from the
    prompt (a greedy answer) without reading it again; the numbers are those without one.

    >>> from lostmid.models import load_model
    >>> m = load_model("tiny-qwen2")
    >>> r = gold_span_influence(m, list(range(10, 30)), (5, 8), [40, 41], probes=2)
    >>> 0 < r.gradient_share < 1 and r.answer_logp < 0
    True
    """
    start, end = span
    length = len(prompt_ids)
    if not (0 <= start < end <= length):
        raise UserError(f"gold span [{start}, {end}) is not inside a prompt of {length} tokens")
    if not answer_ids:
        raise UserError("an answer of at least one token is needed")
    ids = torch.tensor([list(prompt_ids) + list(answer_ids)])  # (1, L + m)
    with frozen_parameters(loaded.model):
        # one forward for both: h_L at the prompt's last position does not see the answer
        # (causal), and the output head reads only the m rows that predict the answer
        x = _embeddings(loaded, ids).requires_grad_(True)
        base = loaded.adapter.base(loaded.model)
        kept = {} if cache is None else {loaded.adapter.cache_argument(base): cache}
        hidden = base(inputs_embeds=x, use_cache=cache is not None, **kept)
        states = hidden.last_hidden_state[0]  # (L + m, d), after the final norm
        head = loaded.adapter.lm_head(loaded.model)
        logits = at_least_float32(head(states[length - 1 : -1]))  # (m, vocab)
        logp = torch.log_softmax(logits, dim=-1)
        target = torch.tensor(answer_ids, device=logp.device)
        answer_logp = logp.gather(1, target[:, None]).sum()
        (grad,) = torch.autograd.grad(answer_logp, x, retain_graph=probes > 0)
        per_position = at_least_float32(grad[0, :length]).pow(2).sum(-1)  # (L,)
        jac = jac_share = None
        if probes > 0:
            h_last = at_least_float32(states[length - 1])  # (d,)
            gen = torch.Generator().manual_seed(seed)
            sq = torch.zeros(length, dtype=h_last.dtype)
            for p in range(probes):
                v = torch.randint(0, 2, h_last.shape, generator=gen).to(h_last.dtype) * 2 - 1
                (g,) = torch.autograd.grad(
                    h_last, x, grad_outputs=v.to(h_last.device), retain_graph=p < probes - 1
                )
                sq += at_least_float32(g[0, :length]).pow(2).sum(-1).cpu()
            sq /= probes
            jac = float(sq[start:end].sum().sqrt())
            total = float(sq.sum())
            jac_share = float(sq[start:end].sum()) / total if total > 0 else float("nan")
    total = float(per_position.sum())
    span_sq = float(per_position[start:end].sum())
    return GoldSpanInfluence(
        answer_logp=float(answer_logp.detach()),
        gradient=span_sq**0.5,
        gradient_share=span_sq / total if total > 0 else float("nan"),
        jacobian=jac,
        jacobian_share=jac_share,
    )
