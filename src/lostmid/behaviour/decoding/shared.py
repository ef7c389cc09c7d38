"""``--design shared``: one prefill per context, every question read from its cache.

Examples whose context ids are equal share one prefill (its key-value cache kept, the
family's handling in :mod:`lostmid.models.adapters.cache`). Contexts that begin alike
share that beginning too: they are read in sorted order, each continuing from the
previous one's cache cut back to the tokens the two share (``cache.crop``), so every
node of the contexts' prefix tree is read once. A needle item at five depths shares its
haystack up to the shallowest needle: about 30% fewer tokens than five prefills.

Each question, and its target under teacher forcing, is read after the cached context at
positions T .. T + W - 1, so the model computes exactly what it computes on the full prompt
``context + question`` (the equality test holds it to 1e-5 relative in float32 on
every family the adapters name):

    logprob = sum_j log p(target_j | context, question, target_<j),

and greedy decoding continues each question from the cache one token a step.

Where the family allows it (:meth:`~lostmid.models.adapters.cache.CacheContinuation.
packs_exactly`: positions given, no ALiBi, every layer's mask known: causal, or a
sliding window the mask applies) the questions of one context are packed in one row
after the cached context, each token masked to see the context, its own question and
its own earlier tokens: the context's keys and values are read once for all of them
(one copy, not one per row; grouped key-value heads read in place,
:data:`~lostmid.models.attention.GROUPED_SDPA`). Under teacher forcing a row holds up to
``batch_size`` questions; greedy decoding puts a context's questions in one row (up to
``STEP_ROWS``; the first forward reading ``batch_size`` of them at a time, then one
token per question a step) and reads the rows of several contexts in one step: their
caches stacked, a row each, in a buffer that each step writes in place (no copy of the
contexts a step), so a step's linear layers multiply up to ``STEP_ROWS`` rows at once.
Elsewhere (ALiBi, the generic adapter) batches hold up to ``batch_size`` questions of
one context as rows of their own: right-padded under teacher forcing (exact for every
family; only the columns that predict a target get logits), left-padded for greedy
decoding where every layer is causal, and of one length only where a sliding window
would count the padding
(:meth:`~lostmid.models.adapters.cache.CacheContinuation.gaps_are_exact`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lostmid.behaviour.decoding.generate import TeacherScores
from lostmid.checks import check_positive
from lostmid.errors import UserError
from lostmid.models.adapters import FamilyAdapter
from lostmid.models.adapters.cache import cache_bytes, crop_to

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Greedy decoding packs the questions of several contexts in one step (their caches
# stacked), so a step's linear layers multiply many rows at once: one row runs a tenth
# of the prefill's rate on a CPU, 256 rows within 1.15x of it (the qwen2-0.5b MLP at one
# thread, benchmarks/bench_gemm_rows.py). A group closes at STEP_ROWS questions or when
# its contexts' caches reach STACK_BYTES (the stacked copy is as large again).
STEP_ROWS = 256
STACK_BYTES = 1 << 30


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


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The number of leading tokens ``a`` and ``b`` share.

    >>> common_prefix([1, 2, 3, 4], [1, 2, 5]), common_prefix([1, 2], [1, 2, 3])
    (2, 2)
    """
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n


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
    share_prefixes: bool = True,
    reading: dict[str, int] | None = None,
) -> tuple[TeacherScores | None, list[list[int]] | None]:
    """(teacher-forced scores, greedy continuations) per example, in order.

    Args:
        contexts, questions, targets: ids per example; examples with equal context ids
            share one prefill.
        teacher: score the targets under teacher forcing.
        new_tokens: greedy tokens per question (None: no generation).
        progress: called with the number of examples done after each context.
        share_prefixes: read the contexts in sorted order, each from the previous one's
            cache cut back to the tokens the two share (module doc); else one prefill
            a context.
        reading: where given, ``context_tokens`` (the contexts' tokens) and
            ``read_tokens`` (those the model read) are added to it.
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
    pending: list[tuple[object, int, list[int]]] = []  # (cache, past, examples): rows to decode

    def decode_pending() -> None:
        tokens = _packed_greedy(
            model, adapter, [(c, p, [questions[i] for i in b]) for c, p, b in pending],
            new_tokens or 0, device, batch_size,
        )  # fmt: skip
        for (_, _, batch), row in zip(pending, tokens, strict=True):
            for i, continuation in zip(batch, row, strict=True):
                generated[i] = continuation
        if progress is not None:
            progress(sum(len(b) for _, _, b in pending))
        pending.clear()

    order = sorted(by_context) if share_prefixes else list(by_context)
    for context, cache in _context_caches(model, adapter, order, device, share_prefixes, reading):
        rows = by_context[context]
        past = len(context)
        if packed:
            batches = [rows[lo : lo + batch_size] for lo in range(0, len(rows), batch_size)]
            if teacher:
                for batch in batches:
                    scored = _packed_teacher(
                        model, adapter, cache, past,
                        [questions[i] for i in batch], [targets[i] for i in batch], device,
                    )  # fmt: skip
                    for i, (lp, hit) in zip(batch, scored, strict=True):
                        logprob[i], argmax[i] = lp, hit
            if new_tokens is None:
                if progress is not None:
                    progress(len(rows))
                continue
            # a context's questions decode in one row (up to STEP_ROWS of them), the rows
            # of several contexts together (their caches stacked), the group closed as
            # it fills
            for lo in range(0, len(rows), STEP_ROWS):
                pending.append((cache, past, rows[lo : lo + STEP_ROWS]))
                if (
                    not adapter.stacks(cache)
                    or sum(len(b) for _, _, b in pending) >= STEP_ROWS
                    or sum(cache_bytes(c) for c, _, _ in pending) >= STACK_BYTES
                ):
                    decode_pending()
            continue
        if teacher:  # right-padded batches: exact for every family
            by_example = _padded_teacher(
                model, adapter, cache, past, rows, questions, targets, device, batch_size
            )
            for i, (lp, hit) in by_example.items():
                logprob[i], argmax[i] = lp, hit
        if new_tokens is not None:
            greedy = _padded_greedy(
                model, adapter, cache, past, rows, questions, new_tokens, device, batch_size
            )
            for i, continuation in greedy.items():
                generated[i] = continuation
        if progress is not None:
            progress(len(rows))
    if pending:
        decode_pending()
    scores = TeacherScores(logprob, argmax) if teacher else None
    return scores, (generated if new_tokens is not None else None)


def _context_caches(
    model: PreTrainedModel,
    adapter: FamilyAdapter,
    contexts: Sequence[tuple[int, ...]],
    device: torch.device,
    share_prefixes: bool,
    reading: dict[str, int] | None,
) -> Iterator[tuple[tuple[int, ...], Any]]:
    """(context, its cache) for each of ``contexts`` in turn, each read once as it is
    reached: with ``share_prefixes``, continuing from the previous context's cache cut
    back to the tokens the two share (the cache yielded is a copy), else one prefill a
    context. ``reading`` counts the tokens of the contexts and those read."""
    trunk: Any = None  # the last context's cache, every column kept (prefix sharing)
    read_ids: tuple[int, ...] = ()
    for context in contexts:
        past = len(context)
        shared = common_prefix(read_ids, context) if trunk is not None else 0
        if not share_prefixes:
            cache = adapter.prefill(model, torch.tensor([context], device=device))
        elif shared == 0 or not adapter.crops(trunk):
            trunk = adapter.prefill(model, torch.tensor([context], device=device), full=True)
            shared = 0
        else:  # cut back to what the two contexts share, read the rest after it
            crop_to(trunk, shared)
            if shared < past:
                rest = torch.tensor([context[shared:]], device=device)
                _, trunk = adapter.continue_from(model, trunk, rest, shared, keep=1)
        if share_prefixes:
            read_ids = context
            # a copy: the trunk is cut back for the next context while this one's
            # questions may wait to be decoded
            cache = adapter.repeat_cache(trunk, 1)
        if reading is not None:
            reading["context_tokens"] = reading.get("context_tokens", 0) + past
            reading["read_tokens"] = reading.get("read_tokens", 0) + past - shared
        yield context, cache


def _padded_teacher(
    model: PreTrainedModel,
    adapter: FamilyAdapter,
    cache: Any,
    past: int,
    rows: Sequence[int],
    questions: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    device: torch.device,
    batch_size: int,
) -> dict[int, tuple[float, bool]]:
    """{example: (log-prob of its target, whether every target token is the argmax)} of
    the examples ``rows`` after one cached context, in right-padded batches of questions
    of similar length (exact for every family)."""
    out: dict[int, tuple[float, bool]] = {}
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
            row = torch.log_softmax(logits[b, q - 1 - first : q - 1 - first + t].float(), -1)
            want = torch.as_tensor(list(targets[i]), device=row.device)
            out[i] = (
                float(row.gather(1, want[:, None]).sum()),
                bool((row.argmax(dim=-1) == want).all()),
            )
    return out


def _padded_greedy(
    model: PreTrainedModel,
    adapter: FamilyAdapter,
    cache: Any,
    past: int,
    rows: Sequence[int],
    questions: Sequence[Sequence[int]],
    new_tokens: int,
    device: torch.device,
    batch_size: int,
) -> dict[int, list[int]]:
    """{example: its ``new_tokens`` greedy tokens} of the examples ``rows`` after one
    cached context: left-padded batches where every layer is causal, batches of one
    question length where a sliding window would count the padding."""
    out: dict[int, list[int]] = {}
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
            out[i] = tokens[b]
    return out


def _context_columns(past: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(owners, positions) (1, past) of a cached context: owner -1, positions 0 .. past - 1."""
    return torch.full((1, past), -1, device=device), torch.arange(past, device=device)[None]


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
        model, adapter.repeat_cache(cache, 1), ids[None], owners[None], positions[None],
        _context_columns(past, device), keep=keep,
    )  # fmt: skip
    logits = logits[0]
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
    rows: Sequence[tuple[object, int, Sequence[Sequence[int]]]],
    new_tokens: int,
    device: torch.device,
    chunk: int,
) -> list[list[list[int]]]:
    """Greedy continuations of questions read after cached contexts, per row and
    question: each row is (a context's cache, its length, questions of it); the rows'
    caches are stacked (one row of the batch each, :meth:`~lostmid.models.adapters.cache.
    CacheContinuation.stack_caches`), each row's questions packed in it and read
    ``chunk`` questions a forward, then one new token per question a step, each seeing its
    context, its own question and its own earlier tokens. Question i of every row ends in
    the same column (shorter ones are left-padded inside their slot), so one set of
    logits columns serves every row."""
    slots = max(len(qs) for _, _, qs in rows)
    widths = [max(len(qs[i]) for _, _, qs in rows if i < len(qs)) for i in range(slots)]
    ends = np.cumsum(widths) - 1
    width = int(ends[-1]) + 1
    longest = max(past for _, past, _ in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    owners = torch.full((len(rows), width), -2)
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    who = torch.full((len(rows), slots), -2)
    at = torch.zeros((len(rows), slots), dtype=torch.long)
    seen_owner = torch.full((len(rows), longest), -2)
    for k, (_, past, qs) in enumerate(rows):
        seen_owner[k, :past] = -1
        for i, q in enumerate(qs):
            lo, hi = int(ends[i]) + 1 - len(q), int(ends[i]) + 1
            ids[k, lo:hi] = torch.as_tensor(list(q), dtype=torch.long)
            owners[k, lo:hi] = i
            positions[k, lo:hi] = past + torch.arange(len(q))
            who[k, i], at[k, i] = i, past + len(q)
    room = width + (new_tokens - 1) * slots
    cache = adapter.stack_caches([c for c, _, _ in rows], room)
    if cache is None:  # one row, transformers' own cache
        assert len(rows) == 1
        cache = adapter.repeat_cache(rows[0][0], 1)
    seen = (seen_owner.to(device), torch.arange(longest, device=device).expand(len(rows), -1))
    ids, owners, positions = ids.to(device), owners.to(device), positions.to(device)
    parts = []
    for s0 in range(0, slots, chunk):  # the questions read ``chunk`` slots a forward
        s1 = min(slots, s0 + chunk)
        lo, hi = (int(ends[s0 - 1]) + 1 if s0 else 0), int(ends[s1 - 1]) + 1
        part, cache, seen = adapter.continue_packed(
            model, cache, ids[:, lo:hi], owners[:, lo:hi], positions[:, lo:hi], seen,
            keep=torch.as_tensor(ends[s0:s1] - lo, device=device),
        )  # fmt: skip
        parts.append(part)
    logits = torch.cat(parts, dim=1)
    who, at = who.to(device), at.to(device)
    steps = []
    for step in range(new_tokens):
        token = logits.argmax(dim=-1)  # (K, slots)
        steps.append(token)
        if step == new_tokens - 1:
            break
        logits, cache, seen = adapter.continue_packed(model, cache, token, who, at, seen)
        at = at + 1
    tokens = torch.stack(steps, dim=2).tolist()  # (K, slots, new_tokens)
    return [tokens[k][: len(qs)] for k, (_, _, qs) in enumerate(rows)]
