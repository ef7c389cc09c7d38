"""Model calls for retrieval: teacher-forced scores and greedy decoding, batched.

Teacher forcing. One forward pass over ``prompt + target`` gives

    logprob = sum_j log p(target_j | prompt, target_<j),
    argmax  = all_j [target_j = argmax p(. | prompt, target_<j)],

the second being exact greedy recall of the target tokens. Batches are padded on the
left (default: every row ends in the same column, so only the last ``max target + 1``
columns of logits are computed) or on the right; padded positions are masked and
position ids count real tokens only (``cumsum(mask) - 1``), so a padded batch gives the
same numbers as one example at a time.

Greedy decoding. Left-padded batches with a key-value cache: the prompt runs once, then
one token per step (:func:`greedy_decode`). Whether an answer is correct is
:mod:`~lostmid.behaviour.score`'s business.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError
from lostmid.models.adapters.cache import cache_argument_name, logits_to_keep_name

PADDING = ("left", "right")


def _pad(
    sequences: Sequence[Sequence[int]], side: str, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
    """(ids, mask, position ids) (B, W) each and the column offset of each row."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    offsets = []
    for row, seq in enumerate(sequences):
        start = width - len(seq) if side == "left" else 0
        ids[row, start : start + len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
        mask[row, start : start + len(seq)] = 1
        offsets.append(start)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device), offsets


def _check_lengths(lengths: Sequence[int], max_length: int | None, vocab: int, ids: Any) -> None:
    longest = max(lengths)
    if max_length is not None and longest > max_length:
        raise UserError(
            f"an example needs {longest} tokens but the model takes at most {max_length}; "
            "use fewer --pairs, a shorter --length or shorter keys"
        )
    top = max((max(s) for s in ids if len(s)), default=0)
    if top >= vocab:
        raise UserError(
            f"token id {top} is outside the model's vocabulary (size {vocab}); "
            "the tokenizer (or --vocab for mqar) does not match the model"
        )


@dataclass(frozen=True)
class TeacherScores:
    """Teacher-forced scores per example: ``logprob`` (N,) of the target tokens and
    ``argmax`` (N,) whether every target token is the model's argmax."""

    logprob: np.ndarray
    argmax: np.ndarray


def _input_device(model: torch.nn.Module, device: torch.device | str | None) -> torch.device:
    """``device``, else the device of the model's first parameter."""
    return torch.device(device) if device is not None else next(model.parameters()).device


def padded_batches_pay(device: torch.device | str) -> bool:
    """Whether prompts of different lengths are better read in left-padded batches than
    one a forward: not on a CPU, where a padded batch has no causal fast path and computes
    its padding (two 2,040-token prompts on SmolLM2: 35.6 s batched, 26.9 s one at a
    time; 1,024-token needle prompts teacher-forced, 8 a batch against one a forward:
    3.97 s against 3.18 s an example on SmolLM2, 3.89 s against 3.60 s on Gemma 3;
    docs/BENCHMARKS.md). One prompt a forward gives the numbers of a batch but for
    rounding."""
    return torch.device(device).type != "cpu"


@torch.no_grad()
def teacher_forced(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    *,
    batch_size: int = 8,
    padding: str = "left",
    pad_id: int = 0,
    max_length: int | None = None,
    vocab_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    device: torch.device | str | None = None,
) -> TeacherScores:
    """log p(target | prompt) and all-argmax per example, one forward pass per batch
    over ``prompt + target[:-1]`` (the last target token is predicted, never read).

    Args:
        prompts, targets: token ids per example (each prompt at least one token, each
            target at least one token).
        padding: ``left`` or ``right`` (same numbers; left computes fewer logits).
        progress: called with the number of examples done after each batch.
        device: where the input ids go (default: the device of the model's first
            parameter; for a model split by a device map, ``LoadedModel.input_device``).
    """
    check_choice("padding", padding, PADDING)
    check_positive("--batch-size", batch_size)
    if len(prompts) != len(targets):
        raise ValueError("prompts and targets differ in number")
    if any(len(p) == 0 for p in prompts) or any(len(t) == 0 for t in targets):
        raise UserError("every prompt and every target needs at least one token")
    # the last target token is predicted, never read: the model sees prompt + target[:-1]
    sequences = [list(p) + list(t)[:-1] for p, t in zip(prompts, targets, strict=True)]
    everything = [list(p) + list(t) for p, t in zip(prompts, targets, strict=True)]
    _check_lengths([len(s) for s in sequences], max_length, vocab_size or 1 << 62, everything)
    device = _input_device(model, device)
    keep_name = logits_to_keep_name(model)
    logprob = np.zeros(len(sequences))
    argmax = np.zeros(len(sequences), dtype=bool)
    for lo in range(0, len(sequences), batch_size):
        rows = range(lo, min(lo + batch_size, len(sequences)))
        ids, mask, pos, offsets = _pad([sequences[r] for r in rows], padding, pad_id, device)
        # logits at column c predict the token in column c + 1
        starts = [offsets[i] + len(prompts[r]) - 1 for i, r in enumerate(rows)]
        ends = [offsets[i] + len(sequences[r]) for i, r in enumerate(rows)]
        first, stop = min(starts), max(ends)
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "position_ids": pos}
        if keep_name is not None:
            kwargs[keep_name] = torch.arange(first, stop, device=device)
            column0 = first
        else:
            column0 = 0
        logits = model(**kwargs).logits  # (B, kept columns, V)
        logp = torch.log_softmax(logits.float(), dim=-1)
        for i, r in enumerate(rows):
            cols = torch.arange(starts[i], ends[i], device=logp.device) - column0
            want = torch.as_tensor(list(targets[r]), device=logp.device)
            row = logp[i, cols]  # (m, V)
            logprob[r] = float(row.gather(1, want[:, None]).sum())
            argmax[r] = bool((row.argmax(dim=-1) == want).all())
        if progress is not None:
            progress(len(rows))
    return TeacherScores(logprob, argmax)


@torch.no_grad()
def greedy_decode(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    new_tokens: int | Sequence[int],
    *,
    batch_size: int = 8,
    pad_id: int = 0,
    max_length: int | None = None,
    vocab_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    device: torch.device | str | None = None,
) -> list[list[int]]:
    """Greedy continuation of each prompt: ``new_tokens`` (per example or for all) ids.

    Left-padded batches with a key-value cache: the prompt is run once (only its last
    column of logits is computed), then one token per step. Rows that need fewer new
    tokens than their batch's longest are cut afterwards. ``device``: where the input
    ids go (as in :func:`teacher_forced`).
    """
    check_positive("--batch-size", batch_size)
    counts = [int(new_tokens)] * len(prompts) if isinstance(new_tokens, int) else list(new_tokens)
    if len(counts) != len(prompts) or any(c < 1 for c in counts):
        raise ValueError("new_tokens must be >= 1 for every prompt")
    if any(len(p) == 0 for p in prompts):
        raise UserError("every prompt needs at least one token")
    _check_lengths(  # the last new token is never read back
        [len(p) + c - 1 for p, c in zip(prompts, counts, strict=True)],
        max_length,
        vocab_size or 1 << 62,
        prompts,
    )
    device = _input_device(model, device)
    cache_name, keep_name = cache_argument_name(model), logits_to_keep_name(model)
    outputs: list[list[int]] = []
    for lo in range(0, len(prompts), batch_size):
        rows = range(lo, min(lo + batch_size, len(prompts)))
        ids, mask, pos, _ = _pad([prompts[r] for r in rows], "left", pad_id, device)
        steps = max(counts[r] for r in rows)
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": mask,
            "position_ids": pos,
            "use_cache": True,
        }
        if keep_name is not None:
            kwargs[keep_name] = 1
        out = model(**kwargs)
        generated = []
        for step in range(steps):
            token = out.logits[:, -1].argmax(dim=-1)  # (B,)
            generated.append(token)
            if step == steps - 1:
                break
            cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            pos = pos[:, -1:] + 1
            out = model(
                input_ids=token[:, None].to(device),
                attention_mask=mask,
                position_ids=pos,
                use_cache=True,
                **{cache_name: cache},
            )
        tokens = torch.stack(generated, dim=1).tolist()  # (B, steps)
        outputs.extend(tokens[i][: counts[r]] for i, r in enumerate(rows))
        if progress is not None:
            progress(len(rows))
    return outputs


@torch.no_grad()
def greedy_from_cache(
    adapter: Any,
    model: torch.nn.Module,
    cache: Any,
    last: int,
    new_tokens: int,
    *,
    device: torch.device | str | None = None,
) -> list[int]:
    """Greedy continuation of one prompt whose tokens but the ``last`` are in ``cache``
    (batch 1, every column real: what a forward over the prompt left, cut back with
    ``cache.crop``): the last prompt token is read first, its logits give the first new
    token, then one token a step; ``cache`` is extended in place. ``adapter``: the model's
    :class:`~lostmid.models.FamilyAdapter` (cache argument, positions).

    The tokens of :func:`greedy_decode` on the whole prompt, but for rounding (the cached
    columns come from another forward), without reading the prompt again: for a caller
    that has just run it for something else (``reproduce --real-link``'s gradient pass).
    """
    from lostmid.models.adapters.cache import cache_length

    check_positive("new_tokens", new_tokens)
    token = torch.tensor([[int(last)]], device=_input_device(model, device))
    said: list[int] = []
    for _ in range(new_tokens):
        logits, cache = adapter.continue_from(model, cache, token, cache_length(cache), keep=1)
        token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (1, 1)
        said.append(int(token))
    return said
