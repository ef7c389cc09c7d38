"""``--design shared``: one prefill per context, every question read from its cache.

Examples whose context ids are equal share one prefill (its key-value cache kept, the
family's handling in :mod:`lostmid.models.adapters.cache`). Each question, and its
target under teacher forcing, is read after the cached context at positions
T .. T + W - 1, so the model computes exactly what it computes on the full prompt
``context + question`` (the equality test holds it to 1e-5 relative in float32 on
every family the adapters name):

    logprob = sum_j log p(target_j | context, question, target_<j),

and greedy decoding continues each question from the cache one token a step.

Where the family allows it (:meth:`~lostmid.models.adapters.cache.CacheContinuation.
packs_exactly`: every layer causal, positions given, no ALiBi) up to ``batch_size``
questions of one context are packed in one row after the cached context, each token
masked to see the context, its own question and its own earlier tokens: the context's
keys and values are read once for all of them (one copy, not one per row), and a
greedy step reads one new token per question in one forward. Elsewhere
(sliding windows, ALiBi) batches hold up to ``batch_size`` questions of one context
as rows of their own: right-padded under teacher
forcing (exact for every family; only the columns that predict a target get logits),
left-padded for greedy decoding where every layer is causal, and of one length only
where a sliding window would count the padding (:meth:`~lostmid.models.adapters.cache.
CacheContinuation.gaps_are_exact`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from lostmid.behaviour.decoding import TeacherScores
from lostmid.checks import check_positive
from lostmid.errors import UserError
from lostmid.models.adapters import FamilyAdapter

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def _padded(
    rows: Sequence[Sequence[int]], side: str, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask) (B, W): rows padded with 0 on ``side``, mask 1 on real tokens."""
    width = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, r in enumerate(rows):
        start = width - len(r) if side == "left" else 0
        ids[b, start : start + len(r)] = torch.as_tensor(list(r), dtype=torch.long)
        mask[b, start : start + len(r)] = 1
    return ids.to(device), mask.to(device)


def _groups(
    indices: Sequence[int], width: Callable[[int], int], batch_size: int
) -> list[list[int]]:
    """``indices`` in batches of equal ``width``, at most ``batch_size`` each."""
    by_width: dict[int, list[int]] = {}
    for i in indices:
        by_width.setdefault(width(i), []).append(i)
    return [
        rows[lo : lo + batch_size]
        for _, rows in sorted(by_width.items())
        for lo in range(0, len(rows), batch_size)
    ]


@torch.no_grad()
def shared_scores(
    model: PreTrainedModel,
    adapter: FamilyAdapter,
    contexts: Sequence[Sequence[int]],
    questions: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    *,
    teacher: bool = True,
    new_tokens: int | None = None,
    batch_size: int = 8,
    device: torch.device | str | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[TeacherScores | None, list[list[int]] | None]:
    """(teacher-forced scores, greedy continuations) per example, in order.

    Args:
        contexts, questions, targets: ids per example; examples with equal context ids
            share one prefill.
        teacher: score the targets under teacher forcing.
        new_tokens: greedy tokens per question (None: no generation).
        progress: called with the number of examples done after each context.
    """
    check_positive("--batch-size", batch_size)
    n = len(contexts)
    if not (len(questions) == len(targets) == n):
        raise ValueError("contexts, questions and targets differ in number")
    if any(len(c) == 0 for c in contexts) or any(len(q) == 0 for q in questions):
        raise UserError("--design shared needs a non-empty context and question per example")
    if any(len(t) == 0 for t in targets):
        raise UserError("every target needs at least one token")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    by_context: dict[tuple[int, ...], list[int]] = {}
    for i, c in enumerate(contexts):
        by_context.setdefault(tuple(c), []).append(i)
    logprob = np.zeros(n)
    argmax = np.zeros(n, dtype=bool)
    generated: list[list[int]] = [[] for _ in range(n)]
    packed = adapter.packs_exactly(model)
    for context, rows in by_context.items():
        past = len(context)
        cache = adapter.prefill(model, torch.tensor([context], device=device))
        if packed:
            batches = [rows[lo : lo + batch_size] for lo in range(0, len(rows), batch_size)]
            for batch in batches:
                if teacher:
                    scored = _packed_teacher(
                        model, adapter, cache, past,
                        [questions[i] for i in batch], [targets[i] for i in batch], device,
                    )  # fmt: skip
                    for i, (lp, hit) in zip(batch, scored, strict=True):
                        logprob[i], argmax[i] = lp, hit
                if new_tokens is not None:
                    tokens = _packed_greedy(
                        model, adapter, cache, past, [questions[i] for i in batch],
                        new_tokens, device,
                    )  # fmt: skip
                    for i, continuation in zip(batch, tokens, strict=True):
                        generated[i] = continuation
            if progress is not None:
                progress(len(rows))
            continue
        if teacher:  # right-padded batches: exact for every family
            seqs = {i: list(questions[i]) + list(targets[i])[:-1] for i in rows}
            order = sorted(rows, key=lambda i: len(seqs[i]))
            for lo in range(0, len(order), batch_size):
                batch = order[lo : lo + batch_size]
                ids, mask = _padded([seqs[i] for i in batch], "right", device)
                width = ids.shape[1]
                # only the columns that predict a target token: from the earliest
                # question end to the last column
                first = min(len(questions[i]) - 1 for i in batch)
                logits, _ = adapter.continue_from(
                    model, adapter.repeat_cache(cache, len(batch)), ids, past,
                    mask=mask, keep=width - first,
                )  # fmt: skip
                for b, i in enumerate(batch):
                    q, t = len(questions[i]), len(targets[i])
                    # column c predicts token c + 1: the target's t columns of row b
                    row = torch.log_softmax(
                        logits[b, q - 1 - first : q - 1 - first + t].float(), -1
                    )
                    want = torch.as_tensor(list(targets[i]), device=row.device)
                    logprob[i] = float(row.gather(1, want[:, None]).sum())
                    argmax[i] = bool((row.argmax(dim=-1) == want).all())
        if new_tokens is not None:
            longest = past + max(len(questions[i]) for i in rows) + new_tokens
            if adapter.gaps_are_exact(model, longest):  # left-padded batches
                order = sorted(rows, key=lambda i: len(questions[i]))
                batches = [order[lo : lo + batch_size] for lo in range(0, len(order), batch_size)]
            else:  # a sliding window: rows of one length only
                batches = _groups(rows, lambda i: len(questions[i]), batch_size)
            for batch in batches:
                ids, mask = _padded([list(questions[i]) for i in batch], "left", device)
                branch = adapter.repeat_cache(cache, len(batch))
                logits, branch = adapter.continue_from(model, branch, ids, past, mask=mask, keep=1)
                seen = torch.cat([torch.ones_like(mask[:, :1]).expand(-1, past), mask], dim=1)
                ones = torch.ones_like(mask[:, :1])
                steps = []
                for step in range(new_tokens):
                    token = logits[:, -1].argmax(dim=-1)  # (B,)
                    steps.append(token)
                    if step == new_tokens - 1:
                        break
                    logits, branch = adapter.continue_from(model, branch, token[:, None], seen)
                    seen = torch.cat([seen, ones], dim=1)
                tokens = torch.stack(steps, dim=1).tolist()  # (B, new_tokens)
                for b, i in enumerate(batch):
                    generated[i] = tokens[b]
        if progress is not None:
            progress(len(rows))
    scores = TeacherScores(logprob, argmax) if teacher else None
    return scores, (generated if new_tokens is not None else None)


def _context_columns(past: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(owners, positions) of a cached context: owner -1, positions 0 .. past - 1."""
    return torch.full((past,), -1, device=device), torch.arange(past, device=device)


def _packed_row(
    rows: Sequence[Sequence[int]], past: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids, owners, positions) (W,) of ``rows`` packed in one row after ``past`` cached
    columns: row b's tokens owned by b, at positions past, past + 1, ..."""
    ids = torch.as_tensor([tok for r in rows for tok in r], dtype=torch.long, device=device)
    owners = torch.cat([torch.full((len(r),), b) for b, r in enumerate(rows)]).to(device)
    positions = torch.cat([past + torch.arange(len(r)) for r in rows]).to(device)
    return ids, owners, positions


def _packed_teacher(
    model: PreTrainedModel,
    adapter: FamilyAdapter,
    cache: object,
    past: int,
    questions: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    device: torch.device,
) -> list[tuple[float, bool]]:
    """(log p(target), all-argmax) of each question read after the cached context, the
    questions (and their targets but the last token) packed in one row."""
    seqs = [list(q) + list(t)[:-1] for q, t in zip(questions, targets, strict=True)]
    ids, owners, positions = _packed_row(seqs, past, device)
    starts = np.cumsum([0] + [len(s) for s in seqs])[:-1]
    # column c predicts the token after it: the t columns from the question's last token
    wanted = [
        torch.arange(int(start) + len(q) - 1, int(start) + len(q) - 1 + len(t))
        for start, q, t in zip(starts, questions, targets, strict=True)
    ]
    keep = torch.cat(wanted)
    logits, _, _ = adapter.continue_packed(
        model, adapter.repeat_cache(cache, 1), ids, owners, positions,
        _context_columns(past, device), keep=keep,
    )  # fmt: skip
    out = []
    lo = 0
    for t in targets:
        row = torch.log_softmax(logits[lo : lo + len(t)].float(), -1)
        want = torch.as_tensor(list(t), device=row.device)
        hit = bool((row.argmax(-1) == want).all())
        out.append((float(row.gather(1, want[:, None]).sum()), hit))
        lo += len(t)
    return out


def _packed_greedy(
    model: PreTrainedModel,
    adapter: FamilyAdapter,
    cache: object,
    past: int,
    questions: Sequence[Sequence[int]],
    new_tokens: int,
    device: torch.device,
) -> list[list[int]]:
    """Greedy continuations of the questions read after the cached context: the
    questions packed in one row, then one new token per question a step, each seeing
    the context, its own question and its own earlier tokens."""
    ids, owners, positions = _packed_row(questions, past, device)
    ends = torch.as_tensor(np.cumsum([len(q) for q in questions]) - 1, device=device)
    branch = adapter.repeat_cache(cache, 1)
    logits, branch, seen = adapter.continue_packed(
        model, branch, ids, owners, positions, _context_columns(past, device), keep=ends
    )
    who = torch.arange(len(questions), device=device)
    at = past + torch.as_tensor([len(q) for q in questions], device=device)
    steps = []
    for step in range(new_tokens):
        token = logits.argmax(dim=-1)  # (B,)
        steps.append(token)
        if step == new_tokens - 1:
            break
        logits, branch, seen = adapter.continue_packed(model, branch, token, who, at, seen)
        at = at + 1
    return torch.stack(steps, dim=1).tolist()
