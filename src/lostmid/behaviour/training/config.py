"""A retrieval training run's configuration, the presets, and command-line overrides."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lostmid.behaviour.tasks.registry import trainable_task
from lostmid.behaviour.training.task import RetrievalTask, sequence_length
from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError
from lostmid.train.config import ModelSpec, TrainConfig, checkpoint_steps

GENERATION_MARGIN = 16

HELP = {  # the help of the retrieval options of ``lostmid train --task`` (RetrievalTask
    # fields and RetrievalTrainConfig.eval_every); each is an override of the preset's value
    "task": "Train on retrieval instead of text: kv | mqar (presets retrieval-tiny, "
    "retrieval-valley, mqar-tiny, retrieval-depth-2/4/8, retrieval-micro).",
    "pairs": "Retrieval: pairs per example.",
    "key_chars": "Retrieval (kv): key/value characters.",
    "style": "Retrieval (kv): compact | liu.",
    "vocab": "Retrieval (mqar): key/value vocabulary.",
    "queries": "Retrieval: queries per training row.",
    "gold": "Retrieval: gold index law for training: uniform | power:A | beta:A (A < 1: "
    "the ends more often) | LAW+LAW (equal mixture).",
    "mix": "Retrieval: fraction of rows from the stdlib corpus.",
    "eval_every": "Retrieval: also evaluate every N steps (0: off).",
    "no_rope": "Retrieval: train without positional encoding (rotary embeddings made the "
    "identity; the paper says the bias needs none).",
    "signal_examples": "Retrieval: held-out examples per gold index behind each record's "
    "learning signal (0: off).",
    "layers": "Retrieval: model depth (default: the preset's).",
    "resume": "Continue the run in --out: from resume.pt (text), or from the last saved "
    "state of the retrieval run there (--task).",
}


@dataclass(frozen=True)
class RetrievalTrainConfig:
    """A retrieval training run; validated on construction.

    ``train`` holds the model shape and the optimisation (its ``model.context`` is set
    from the task's row length by :meth:`resolved_train`). ``eval_examples``: held-out
    examples per gold index; ``eval_every``: also evaluate every this many steps
    (0: only at the log-spaced checkpoints); ``influence_samples``/``_probes``: inputs
    and probes of the influence profile; ``signal_examples``: held-out examples per gold
    index behind the learning signal of each record (0: not measured); ``no_rope``: train
    without positional encoding (the family's rotary embeddings made the identity, by
    :meth:`lostmid.models.FamilyAdapter.remove_rope`; saved checkpoints do not carry the
    switch).
    """

    preset: str = "retrieval-tiny"
    task: RetrievalTask = field(default_factory=RetrievalTask)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval_examples: int = 64
    eval_every: int = 500
    influence_samples: int = 12
    influence_probes: int = 4
    save_checkpoints: bool = True
    signal_examples: int = 4
    no_rope: bool = False

    def __post_init__(self) -> None:
        check_positive("--eval-examples", self.eval_examples)
        check_positive("--influence-samples", self.influence_samples)
        check_positive("--influence-probes", self.influence_probes)
        if self.eval_every < 0:
            raise UserError(f"--eval-every must be >= 0, got {self.eval_every}")
        if isinstance(self.signal_examples, bool) or self.signal_examples < 0:
            raise UserError(f"--signal-examples must be >= 0, got {self.signal_examples}")
        self.resolved_train()  # TrainConfig checks itself when it is made

    def resolved_train(self) -> TrainConfig:
        """``train`` with the task's vocab and the model's context = one row's inputs plus
        ``GENERATION_MARGIN`` positions, so that greedy decoding a few tokens past the
        answer (``lostmid retrieve --passes generate``) stays within the model's length.
        Training rows use the first ``row length - 1`` positions."""
        model = replace(
            self.train.model,
            context=sequence_length(self.task) - 1 + GENERATION_MARGIN,
            vocab_size=max(self.train.model.vocab_size, self.task.vocab_size()),
        )
        return replace(self.train, model=model, corpus=None)

    def eval_steps(self) -> list[int]:
        steps = set(checkpoint_steps(self.train.steps))
        if self.eval_every:
            steps |= set(range(0, self.train.steps + 1, self.eval_every))
        return sorted(steps)

    def record(self) -> dict[str, Any]:
        data = asdict(self)
        data["train"] = self.resolved_train().record()
        return data


def _llama_style(layers: int, hidden: int, heads: int) -> ModelSpec:
    """A Llama-style byte model (RMSNorm, RoPE, SwiGLU of width ~8/3 d, MHA)."""
    intermediate = 8 * math.ceil(8 * hidden / 3 / 8)
    return ModelSpec(
        family="qwen2",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        intermediate=intermediate,
        context=64,
    )


def _optimiser(steps: int, batch: int, model: ModelSpec, seed: int = 0) -> TrainConfig:
    return TrainConfig(
        preset="retrieval",
        model=model,
        steps=steps,
        batch_size=batch,
        lr=1e-3,
        min_lr_ratio=0.1,
        warmup_steps=min(100, max(steps // 10, 1)),
        weight_decay=0.1,
        seed=seed,
        resume_every=max(steps, 1),
    )


DOSE_DEPTHS = (2, 4, 8)
"""The depths of the depth dose-response: presets ``retrieval-depth-H``."""


def _depth_preset(layers: int) -> RetrievalTrainConfig:
    """The depth dose-response's setting at depth ``layers``: every depth the same task,
    width, optimiser, steps and tokens; gold record uniform (no data law).

    12 records of 1-character hex keys and values (compact ``{kv,kv,...}k``, 38 prompt
    tokens), 8 queries a training row (53 tokens), width 128, 4 heads, batch 32, AdamW
    1e-3 with cosine decay over 2000 steps (3.4M tokens). Chosen by measurement
    (benchmarks/bench_depth_dose.py, docs/BENCHMARKS.md "depth dose-response"): at H = 8
    the record influence at init falls 14-18x from the first record to the least
    influential one (seeds 0-5), and a short trial of the H = 8 model learnt retrieval
    (0.30 at step 750, 1.00 at step 1250, seed 0); 16 records spanned more (17-23x) but
    the H = 8 model was still at 0.2 after 750 steps, 8 records spanned only 9-13x.
    Evaluated every 25 steps (accuracy on 64 held-out examples per gold record), so that
    the half-accuracy time of each record is resolved.
    """
    return RetrievalTrainConfig(
        preset=f"retrieval-depth-{layers}",
        task=RetrievalTask(task="kv", pairs=12, key_chars=1, style="compact", queries=8),
        train=replace(_optimiser(2000, 32, _llama_style(layers, 128, 4)), resume_every=250),
        eval_examples=64,
        eval_every=25,
        influence_samples=12,
        influence_probes=2,
        save_checkpoints=False,
    )


RETRIEVAL_PRESETS: dict[str, RetrievalTrainConfig] = {
    # 2 layers x 128 (0.43M parameters), 6 pairs of 1-character keys, compact format,
    # 4 queries a row (with 1 query a row, 4000 steps stayed near 0.3: too little signal)
    "retrieval-tiny": RetrievalTrainConfig(
        preset="retrieval-tiny",
        task=RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact", queries=4),
        train=_optimiser(2000, 32, _llama_style(2, 128, 4)),
        eval_every=250,
    ),
    # A behavioural valley after training, from the DATA LAW: gold indices drawn from
    # beta:0.3 (the first and last of the 8 pairs asked ~27% of the time each, the middle
    # ~4-7%; natural text asks about its ends more often), evaluated with gold spread
    # uniformly. 2-character keys keep the 2-layer model capacity-limited, so retrieval is
    # learnt gradually and the better-trained ends stay ahead. Its measured valley over
    # seeds, and the same setting with gold uniform (flat): docs/BENCHMARKS.md,
    # "retrieval training: trial log" and bench_retrieval_preset.py.
    "retrieval-valley": RetrievalTrainConfig(
        preset="retrieval-valley",
        task=RetrievalTask(
            task="kv", pairs=8, key_chars=2, style="compact", queries=4, gold="beta:0.3"
        ),
        train=_optimiser(1000, 16, _llama_style(2, 128, 4)),
        eval_examples=128,
        eval_every=0,
    ),
    # token-level MQAR at the associative-recall literature's CPU scale
    "mqar-tiny": RetrievalTrainConfig(
        preset="mqar-tiny",
        task=RetrievalTask(task="mqar", pairs=8, vocab=64, queries=4),
        train=_optimiser(3000, 32, _llama_style(2, 128, 4)),
    ),
    # the depth dose-response: the same setting at depths 2, 4 and 8
    **{f"retrieval-depth-{h}": _depth_preset(h) for h in DOSE_DEPTHS},
    # the dose-response at reproduce's small scales (depth set by --layers, default 2):
    # 6 records, 6 queries a row, width 128, 500 steps; at depth 2 1.00 by step 300, at
    # depth 4 0.84 at step 500 (seed 0; trial log in docs/BENCHMARKS.md)
    "retrieval-depth-small": RetrievalTrainConfig(
        preset="retrieval-depth-small",
        task=RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact", queries=6),
        train=_optimiser(500, 32, _llama_style(2, 128, 4)),
        eval_examples=16,
        eval_every=50,
        influence_samples=8,
        influence_probes=1,
        signal_examples=2,
        save_checkpoints=False,
    ),
    # seconds, for tests and smoke runs
    "retrieval-micro": RetrievalTrainConfig(
        preset="retrieval-micro",
        task=RetrievalTask(task="kv", pairs=4, key_chars=1, style="compact"),
        train=_optimiser(6, 4, _llama_style(1, 32, 2)),
        eval_examples=3,
        eval_every=3,
        influence_samples=2,
        influence_probes=2,
        save_checkpoints=False,
    ),
}


def retrieval_preset(name: str) -> RetrievalTrainConfig:
    """The preset ``name`` (``retrieval-tiny``, ``retrieval-valley``, ``mqar-tiny``,
    ``retrieval-depth-2/4/8``, ``retrieval-depth-small``, ``retrieval-micro``)."""
    check_choice("--preset", name, RETRIEVAL_PRESETS)
    return RETRIEVAL_PRESETS[name]


TASK_OVERRIDES = ("task", "pairs", "key_chars", "style", "vocab", "queries", "gold", "mix")
"""The retrieval task's fields that :func:`resolve_retrieval_config` (``lostmid train
--task``, a sweep's ``train-retrieval`` unit) can change from the preset's."""
RUN_OVERRIDES = (
    "steps",
    "seed",
    "eval_every",
    "save_checkpoints",
    "no_rope",
    "signal_examples",
    "layers",
)
"""The run's settings it can change (training length, seed, evaluation, model depth)."""


def resolve_retrieval_config(
    preset_name: str | None = None,
    *,
    task: str | None = None,
    pairs: int | None = None,
    key_chars: int | None = None,
    style: str | None = None,
    vocab: int | None = None,
    queries: int | None = None,
    gold: str | None = None,
    mix: float | None = None,
    steps: int | None = None,
    seed: int | None = None,
    eval_every: int | None = None,
    save_checkpoints: bool | None = None,
    no_rope: bool | None = None,
    signal_examples: int | None = None,
    layers: int | None = None,
) -> RetrievalTrainConfig:
    """A preset with command-line overrides (None keeps the preset's value); the
    entry point for ``lostmid train --task kv|mqar`` and a sweep's ``train-retrieval``
    unit. No preset: the task's own (:attr:`~lostmid.behaviour.tasks.plugin.IndexTask.preset`;
    no task either: ``kv``'s).

    >>> c = resolve_retrieval_config("retrieval-tiny", pairs=8, steps=100, seed=2)
    >>> c.task.pairs, c.train.steps, c.train.seed, c.task.key_chars
    (8, 100, 2, 1)
    >>> resolve_retrieval_config(task="mqar").preset, resolve_retrieval_config().preset
    ('mqar-tiny', 'retrieval-tiny')
    """
    if preset_name is None:
        preset_name = trainable_task(task or "kv").preset
    base = retrieval_preset(preset_name)
    task_changes: dict[str, Any] = {
        k: v
        for k, v in {
            "task": task,
            "pairs": pairs,
            "key_chars": key_chars,
            "style": style,
            "vocab": vocab,
            "queries": queries,
            "gold": gold,
            "mix": mix,
        }.items()
        if v is not None
    }
    train_changes: dict[str, Any] = {}
    if steps is not None:
        check_positive("--steps", steps)
        train_changes.update(steps=steps, warmup_steps=min(base.train.warmup_steps, steps))
    if seed is not None:
        train_changes["seed"] = seed
    if layers is not None:
        check_positive("--layers", layers)
        train_changes["model"] = replace(base.train.model, layers=layers)
    changes: dict[str, Any] = {
        "task": replace(base.task, **task_changes),
        "train": replace(base.train, **train_changes),
    }
    if eval_every is not None:
        changes["eval_every"] = eval_every
    if save_checkpoints is not None:
        changes["save_checkpoints"] = save_checkpoints
    if no_rope is not None:
        changes["no_rope"] = no_rope
    if signal_examples is not None:
        changes["signal_examples"] = signal_examples
    return replace(base, **changes)
