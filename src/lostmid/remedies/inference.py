"""Inference-time remedies on a model that ``lostmid retrieve`` accepts: no training.

Each seed draws its own Liu et al. key-value examples (UUID keys and values, the gold
pair at 0, 1/4, 1/2, 3/4 and the last index, ``--examples`` items each, paired across
positions), rendered as ``lostmid retrieve`` renders them (``--chat-template``: a chat
model's template, with the answer prefix starting the assistant's turn, so teacher
forcing scores the value where such a model puts it). The model scores them by teacher
forcing (the value's tokens all argmax: exact greedy recall of the value) on the plain
prompt (the inference group's baseline) and under each remedy: a prompt transform
(``query-aware``), a patch of the model while it scores (``ms-poe``:
:meth:`~lostmid.remedies.base.Remedy.patch`) or its own scoring (``calibrate``:
:meth:`~lostmid.remedies.base.Remedy.score`).

Cost: ``extra_forward_passes`` per example on top of the one teacher-forced pass, and
the wall time of each remedy's scoring, are recorded next to its accuracy. Each
example's outcome is recorded too: on a pretrained model the seeds only draw other
examples, so the summary pairs remedy and baseline by item (the same items under both,
:func:`lostmid.stats.item_bootstrap`).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.behaviour.tasks.registry import is_depth_task
from lostmid.remedies.base import InferenceBatch, Remedy
from lostmid.remedies.config import RemediesConfig

INFERENCE_PAIRS = 20  # Liu et al. use 75-300; fewer keep a CPU run short (--pairs)
NEEDLE_LENGTH = 1024  # tokens of a needle task's prompt (--length)
FILLER = "x"  # the neutral token of calibrate's prior (not a hex digit: no key or value)


def retrieve_config(config: RemediesConfig, remedy: Remedy, seed: int) -> Any:
    """The :class:`~lostmid.behaviour.retrieve.config.RetrieveConfig` whose examples the
    inference stage scores: ``lostmid retrieve``'s grid for the task, so a remedy is
    judged on the very examples a retrieve run of the same options reads."""
    from lostmid.behaviour.retrieve.config import RetrieveConfig

    assert config.model is not None
    needles = is_depth_task(config.task)
    return RetrieveConfig(
        model=config.model,
        task=config.task,
        pairs=config.pairs or INFERENCE_PAIRS,
        examples=config.examples or config.scale.eval_examples,
        key_chars=config.key_chars,
        length=(config.length or NEEDLE_LENGTH) if needles else None,
        distractors=config.distractors if needles else None,
        query_aware=remedy.query_aware,
        tokenizer=config.tokenizer,
        chat_template=config.chat_template,
        answer_prefix=config.answer_prefix,
        lead_in=config.lead_in,
        seed=seed,
    )


def inference_config(config: RemediesConfig, seed: int) -> dict[str, Any]:
    """What an inference stage depends on (its resumability key)."""
    needles = is_depth_task(config.task)
    return (
        {
            "task": config.task,
            "length": (config.length or NEEDLE_LENGTH) if needles else None,
            "distractors": config.distractors if needles else None,
            "model": config.model,
            "tokenizer": config.tokenizer,
            "key_chars": config.key_chars,
            "seed": seed,
            "pairs": config.pairs or INFERENCE_PAIRS,
            "examples": config.examples or config.scale.eval_examples,
            "chat_template": config.chat_template,
            "answer_prefix": config.answer_prefix,
        }
        | ({"lead_in": config.lead_in} if config.lead_in else {})
        | _load_options(config)
    )


def _load_options(config: RemediesConfig) -> dict[str, Any]:
    """The model's load options that change its scores, in a stage's key when set."""
    options = config.model_spec.options() if config.model is not None else {}
    return {k: options[k] for k in ("dtype", "trust_remote_code") if k in options}


def score_remedy(
    remedy: Remedy, config: RemediesConfig, seed: int, pilots: Path | None = None
) -> dict[str, Any]:
    """Teacher-forced accuracy by gold index of ``config.model`` under ``remedy`` (the
    per-seed record, JSON-ready, with the same keys as a training run's where they apply).

    ``pilots``: a folder where the ``--lead-in learn`` pilot's replies are kept, one file
    per pilot design (:class:`PilotStore`), so the arms whose prompts agree (every arm
    but query-aware's) read one pilot instead of each running its own; None: the pilot
    runs inside this arm."""
    from lostmid.behaviour.decoding.prompts import encode, prompt_format
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec
    from lostmid.behaviour.retrieve.config import LEARN
    from lostmid.behaviour.retrieve.examples import retrieval_examples
    from lostmid.behaviour.retrieve.pilot import learn_lead_in
    from lostmid.behaviour.score import score_positions, summarise_positions
    from lostmid.train.model import parameter_count

    assert config.model is not None
    begin = time.perf_counter()
    spec = config.model_spec
    tokenizer = tokenizer_for_spec(spec)
    loaded = spec.load(init="auto", seed=seed)
    fmt = prompt_format(config.chat_template, tokenizer, config.answer_prefix)
    rconfig = retrieve_config(config, remedy, seed)
    lead_in = None
    if rconfig.lead_in == LEARN:  # from the unpatched model: the prompt format is the model's
        store = ComputeOnly() if pilots is None else PilotStore(pilots)
        lead_in = learn_lead_in(rconfig, loaded, tokenizer, fmt, store)
        rconfig = rconfig.with_changes(lead_in=lead_in["text"])
    examples, _ = retrieval_examples(rconfig, tokenizer, fmt)
    encoded = encode(examples, tokenizer, fmt)
    prompts, targets = encoded.prompts, encoded.targets
    batch = InferenceBatch(
        prompts=prompts,
        targets=targets,
        regions=[fmt.context_tokens(e, tokenizer) for e in examples],
        filler=tokenizer.encode(FILLER)[0],
        max_length=loaded.max_length,
        vocab_size=loaded.vocab_size,
    )
    scores = remedy.score(loaded.model, batch)
    positions = score_positions(
        np.array([e.position for e in examples]),
        scores.argmax,
        scores.logprob,
        "depth" if is_depth_task(config.task) else "index",
        [(e.length, e.item) for e in examples],
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
        # per example, for the summary's pairing by item (the same items in every arm)
        "items": [e.item for e in examples],
        "example_positions": [e.position for e in examples],
        "correct": [bool(x) for x in scores.argmax],
        "logprob": [float(x) for x in scores.logprob],
        "prompt_format": fmt.record(fmt.text(examples[0], tokenizer), prompts[0]),
        "prompt_tokens": float(np.mean([len(p) for p in prompts])),
        "parameters": parameter_count(loaded.model),
        "forward_passes": 1 + remedy.extra_forward_passes,
        "wall_seconds": time.perf_counter() - begin,
    } | ({"lead_in": lead_in} if lead_in is not None else {})


class PilotStore:
    """A stage store under ``root`` that keeps each design of a stage in its own file
    (``NAME-<digest of its configuration>``): arms whose pilots agree share one, and one
    that differs (query-aware's prompts) keeps its own instead of replacing it."""

    def __init__(self, root: Path) -> None:
        from lostmid.runs.store import StageStore

        self.store = StageStore(root)

    def run(self, name: str, config: dict[str, Any], compute: Any) -> Any:
        from lostmid.runinfo import to_jsonable

        text = json.dumps(to_jsonable(config), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return self.store.run(f"{name}-{digest}", config, compute)


class ComputeOnly:
    """A stage store that keeps nothing (the lead-in pilot inside a stage that is itself
    saved): ``run`` computes."""

    def run(self, name: str, config: Any, compute: Any) -> Any:
        return compute()
