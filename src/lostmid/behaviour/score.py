"""Scoring retrieval: greedy generation, teacher forcing, and accuracy by position.

Generation (Liu et al.'s rule). Greedy decoding of ``len(target tokens) + extra`` new
tokens; an answer is correct when the normalised value is a substring of the normalised
answer, ``normalise(s) = " ".join(s.lower().split())`` (Liu et al. lower-case both;
we also collapse whitespace). Token-level tasks (mqar) compare ids: correct when the
value's ids appear contiguously in the generated ids.

Teacher forcing. One forward pass over ``prompt + target`` gives

    logprob = sum_j log p(target_j | prompt, target_<j),
    argmax  = all_j [target_j = argmax p(. | prompt, target_<j)],

the second being exact greedy recall of the target tokens. Batches are padded on the
left (default: every row ends in the same column, so only the last ``max target + 1``
columns of logits are computed) or on the right; padded positions are masked and
position ids count real tokens only (``cumsum(mask) - 1``), so a padded batch gives the
same numbers as one example at a time.

Intervals. Accuracy at a position: the Wilson score interval (95 %). A difference of
two accuracies (primacy = first - middle, recency = last - middle, gap = max - min):
Newcombe's hybrid score interval (method 10 of Newcombe 1998), built from the two
Wilson intervals [l1, u1], [l2, u2] of p1 and p2:

    lower = (p1 - p2) - sqrt((p1 - l1)^2 + (u2 - p2)^2),
    upper = (p1 - p2) + sqrt((u1 - p1)^2 + (p2 - l2)^2).

It treats the two positions as independent samples. Our examples are paired (the same
items at every position), which makes the true interval narrower when outcomes are
positively correlated, so the reported interval is conservative. For the gap, max and
min are picked after seeing the data; its interval is conditional on that choice.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lostmid.behaviour.tasks import RetrievalExample
from lostmid.behaviour.tokenizers import Tokenizer
from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError

Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal
PADDING = ("left", "right")
AXES = ("index", "depth")


# -- statistics ------------------------------------------------------------------------------


def wilson_interval(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``correct / n``:

        centre = (p + z^2/(2n)) / (1 + z^2/n),
        half   = z / (1 + z^2/n) * sqrt(p (1 - p) / n + z^2 / (4 n^2)).

    >>> [round(x, 4) for x in wilson_interval(8, 10)]
    [0.4902, 0.9433]
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return 0.0, 1.0
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be in 0..{n}, got {correct}")
    p = correct / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # clipped to [0, 1] and to contain p exactly (rounding can put p a hair outside)
    return max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))


@dataclass(frozen=True)
class Difference:
    """``a - b`` of two accuracies with Newcombe's hybrid score interval (module doc)."""

    estimate: float
    ci_low: float
    ci_high: float
    a: int
    b: int

    def record(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "between": [self.a, self.b],
        }


def difference_interval(
    k1: int, n1: int, k2: int, n2: int, z: float = Z95
) -> tuple[float, float, float]:
    """(p1 - p2, lower, upper): Newcombe's hybrid score interval of p1 - p2.

    >>> [round(x, 4) for x in difference_interval(56, 70, 48, 80)]  # Newcombe's example
    [0.2, 0.0524, 0.3339]
    """
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    d = p1 - p2
    return d, d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


@dataclass(frozen=True)
class PositionScore:
    """Accuracy at one gold position (``axis``: ``index`` 0-indexed, or ``depth`` %)."""

    position: int
    axis: str
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    mean_logprob: float | None

    def record(self) -> dict[str, Any]:
        return {
            self.axis: self.position,
            "n": self.n,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "mean_logprob": self.mean_logprob,
        }


def score_positions(
    positions: np.ndarray,
    correct: np.ndarray,
    logprob: np.ndarray | None = None,
    axis: str = "index",
) -> tuple[PositionScore, ...]:
    """One :class:`PositionScore` per distinct position, in increasing order; every
    example is counted once, at its own position.

    Args:
        positions: (N,) gold position of each example; correct: (N,) bool;
        logprob: (N,) teacher-forced log-probabilities or None.

    >>> s = score_positions(np.array([0, 0, 2]), np.array([True, False, True]))
    >>> [(p.position, p.n, p.accuracy) for p in s]
    [(0, 2, 0.5), (2, 1, 1.0)]
    """
    check_choice("axis", axis, AXES)
    positions = np.asarray(positions)
    correct = np.asarray(correct, dtype=bool)
    if positions.shape != correct.shape or (logprob is not None and logprob.shape != correct.shape):
        raise ValueError("positions, correct and logprob must have the same shape (N,)")
    scores = []
    for pos in np.unique(positions):
        at = positions == pos
        n, k = int(at.sum()), int(correct[at].sum())
        lo, hi = wilson_interval(k, n)
        mean_lp = None if logprob is None else float(np.mean(logprob[at]))
        scores.append(PositionScore(int(pos), axis, n, k, k / n, lo, hi, mean_lp))
    return tuple(scores)


@dataclass(frozen=True)
class RetrievalSummary:
    """Mean accuracy and the shape of accuracy by position.

    mean_accuracy: pooled correct / n over all positions, Wilson interval.
    gap: max - min over positions; primacy: first - middle; recency: last - middle
    (:class:`Difference`, Newcombe intervals). ``middle`` is the position nearest the
    midpoint of the first and last positions (the lower one on a tie).
    """

    metric: str
    n: int
    mean_accuracy: float
    mean_ci_low: float
    mean_ci_high: float
    gap: Difference
    primacy: Difference
    recency: Difference
    first: int
    middle: int
    last: int
    mean_logprob: float | None

    def record(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "n": self.n,
            "mean_accuracy": self.mean_accuracy,
            "mean_ci_low": self.mean_ci_low,
            "mean_ci_high": self.mean_ci_high,
            "gap": self.gap.record(),
            "primacy": self.primacy.record(),
            "recency": self.recency.record(),
            "first": self.first,
            "middle": self.middle,
            "last": self.last,
            "mean_logprob": self.mean_logprob,
        }


def summarise_positions(scores: Sequence[PositionScore], metric: str) -> RetrievalSummary:
    """The :class:`RetrievalSummary` of position scores (sorted by position).

    >>> s = score_positions(np.array([0, 1, 2] * 4), np.array([1, 0, 1] * 4, dtype=bool))
    >>> summary = summarise_positions(s, "teacher")
    >>> summary.primacy.estimate, summary.recency.estimate, summary.gap.estimate
    (1.0, 1.0, 1.0)
    """
    if not scores:
        raise ValueError("no positions to summarise")
    scores = sorted(scores, key=lambda s: s.position)
    first, last = scores[0], scores[-1]
    mid_point = (first.position + last.position) / 2
    middle = min(scores, key=lambda s: (abs(s.position - mid_point), s.position))
    best = max(scores, key=lambda s: (s.accuracy, -s.position))
    worst = min(scores, key=lambda s: (s.accuracy, s.position))

    def diff(a: PositionScore, b: PositionScore) -> Difference:
        d, lo, hi = difference_interval(a.correct, a.n, b.correct, b.n)
        return Difference(d, lo, hi, a.position, b.position)

    n = sum(s.n for s in scores)
    k = sum(s.correct for s in scores)
    lo, hi = wilson_interval(k, n)
    logprobs = [s.mean_logprob * s.n for s in scores if s.mean_logprob is not None]
    mean_lp = sum(logprobs) / n if len(logprobs) == len(scores) else None
    return RetrievalSummary(
        metric=metric,
        n=n,
        mean_accuracy=k / n,
        mean_ci_low=lo,
        mean_ci_high=hi,
        gap=diff(best, worst),
        primacy=diff(first, middle),
        recency=diff(last, middle),
        first=first.position,
        middle=middle.position,
        last=last.position,
        mean_logprob=mean_lp,
    )


# -- answers ------------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Lower case, whitespace collapsed and stripped.

    >>> normalise("  The VALUE\\n is ")
    'the value is'
    """
    return " ".join(text.lower().split())


def is_correct(value: str, answer: str) -> bool:
    """Liu et al.'s rule: the normalised value is a substring of the normalised answer.

    >>> is_correct("A1b2", ' "a1b2c3"'), is_correct("a1b2", "a1 b2")
    (True, False)
    """
    return normalise(value) in normalise(answer)


def contains_ids(needle: Sequence[int], haystack: Sequence[int]) -> bool:
    """True when ``needle`` occurs contiguously in ``haystack`` (token-level tasks).

    >>> contains_ids([3, 4], [1, 3, 4, 5]), contains_ids([3, 4], [3, 5, 4])
    (True, False)
    """
    m = len(needle)
    return any(list(haystack[i : i + m]) == list(needle) for i in range(len(haystack) - m + 1))


def encode_examples(
    examples: Sequence[RetrievalExample], tokenizer: Tokenizer | None
) -> tuple[list[list[int]], list[list[int]]]:
    """(prompt ids, target ids) per example: the task's own ids (mqar) or the tokenizer's
    (the prompt with the model's prefix tokens, the target without)."""
    prompts, targets = [], []
    for ex in examples:
        if ex.prompt_ids is not None:
            prompts.append(list(ex.prompt_ids))
            targets.append(list(ex.target_ids or ()))
        elif tokenizer is None:
            raise UserError(f"task {ex.task} needs a tokenizer; pass --tokenizer")
        else:
            prompts.append(tokenizer.encode(ex.prompt, special=True))
            targets.append(tokenizer.encode(ex.target))
    return prompts, targets


# -- model calls ------------------------------------------------------------------------------


def _accepts(model: torch.nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic wrappers
        return False


def _cache_name(model: torch.nn.Module) -> str:
    """``cache`` (transformers >= 5) or ``past_key_values`` (earlier versions)."""
    return "cache" if _accepts(model, "cache") else "past_key_values"


def _keep_name(model: torch.nn.Module) -> str | None:
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if _accepts(model, name):
            return name
    return None


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
    keep_name = _keep_name(model)
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
    cache_name, keep_name = _cache_name(model), _keep_name(model)
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


def generation_correct(
    examples: Sequence[RetrievalExample],
    generated: Sequence[Sequence[int]],
    tokenizer: Tokenizer | None,
) -> tuple[np.ndarray, list[str]]:
    """(correct (N,), answer texts): Liu's rule on decoded text, or id containment for
    token-level tasks."""
    correct = np.zeros(len(examples), dtype=bool)
    answers = []
    for i, (ex, ids) in enumerate(zip(examples, generated, strict=True)):
        if ex.target_ids is not None:
            correct[i] = contains_ids(ex.target_ids, ids)
            answers.append(" ".join(str(t) for t in ids))
        else:
            assert tokenizer is not None
            text = tokenizer.decode(list(ids))
            correct[i] = is_correct(ex.value, text)
            answers.append(text)
    return correct, answers
