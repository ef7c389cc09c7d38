"""Inference-time remedies on a model that ``lostmid retrieve`` accepts: no training.

Each seed draws its own Liu et al. key-value examples (UUID keys and values, the gold
pair at 0, 1/4, 1/2, 3/4 and the last index, ``--examples`` items each, paired across
positions); the model scores them by teacher forcing (the value's tokens all argmax:
exact greedy recall of the value) on the plain prompt (the inference group's baseline)
and under each remedy: a prompt transform (``query-aware``), a patch of the model while
it scores (``ms-poe``: :meth:`~lostmid.remedies.base.Remedy.patch`) or its own scoring
(``calibrate``: :meth:`~lostmid.remedies.base.Remedy.score`).

Cost: ``extra_forward_passes`` per example on top of the one teacher-forced pass, and
the wall time of each remedy's scoring, are recorded next to its accuracy.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from lostmid.remedies.base import InferenceBatch, Remedy
from lostmid.remedies.config import RemediesConfig

INFERENCE_PAIRS = 20  # Liu et al. use 75-300; fewer keep a CPU run short (--pairs)
FILLER = "x"  # the neutral token of calibrate's prior (not a hex digit: no key or value)


def context_tokens(example: Any, tokenizer: Any) -> tuple[int, int]:
    """``[start, end)`` prompt tokens of the records (0-indexed): the token counts of the
    prompt up to the first record's start and up to the last record's end (exact for the
    byte tokenizer; a merge across an edge can move it by one token under BPE)."""
    start, end = example.spans[0][0], example.spans[-1][1]
    return (
        len(tokenizer.encode(example.prompt[:start], special=True)),
        len(tokenizer.encode(example.prompt[:end], special=True)),
    )


def inference_config(config: RemediesConfig, seed: int) -> dict[str, Any]:
    """What an inference stage depends on (its resumability key)."""
    return {
        "model": config.model,
        "tokenizer": config.tokenizer,
        "key_chars": config.key_chars,
        "seed": seed,
        "pairs": config.pairs or INFERENCE_PAIRS,
        "examples": config.examples or config.scale.eval_examples,
    }


def score_remedy(remedy: Remedy, config: RemediesConfig, seed: int) -> dict[str, Any]:
    """Teacher-forced accuracy by gold index of ``config.model`` under ``remedy`` (the
    per-seed record, JSON-ready, with the same keys as a training run's where they apply)."""
    from lostmid.behaviour.example import default_gold_indices
    from lostmid.behaviour.score import encode_examples, score_positions, summarise_positions
    from lostmid.behaviour.tasks import make_examples
    from lostmid.behaviour.tokenizers import tokenizer_for_model
    from lostmid.models import load_model
    from lostmid.train.model import parameter_count

    assert config.model is not None
    settings = inference_config(config, seed)
    begin = time.perf_counter()
    tokenizer = tokenizer_for_model(config.model, config.tokenizer)
    loaded = load_model(config.model, init="auto", seed=seed)
    examples = make_examples(
        "kv",
        positions=default_gold_indices(settings["pairs"]),
        examples=settings["examples"],
        seed=seed,
        pairs=settings["pairs"],
        key_chars=config.key_chars,
        query_aware=remedy.query_aware,
        style="liu",
    )
    prompts, targets = encode_examples(examples, tokenizer)
    batch = InferenceBatch(
        prompts=prompts,
        targets=targets,
        regions=[context_tokens(e, tokenizer) for e in examples],
        filler=tokenizer.encode(FILLER)[0],
        max_length=loaded.max_length,
        vocab_size=loaded.vocab_size,
    )
    scores = remedy.score(loaded.model, batch)
    positions = score_positions(
        np.array([e.position for e in examples]), scores.argmax, scores.logprob, "index"
    )
    s = summarise_positions(positions, "teacher")
    return {
        "seed": seed,
        "positions": [p.position for p in positions],
        "n": [p.n for p in positions],
        "accuracy": [p.accuracy for p in positions],
        "mean_accuracy": s.mean_accuracy,
        "gap": s.gap.estimate,
        "primacy": s.primacy.estimate,
        "recency": s.recency.estimate,
        "mean_logprob": s.mean_logprob,
        "prompt_tokens": float(np.mean([len(p) for p in prompts])),
        "parameters": parameter_count(loaded.model),
        "forward_passes": 1 + remedy.extra_forward_passes,
        "wall_seconds": time.perf_counter() - begin,
    }
