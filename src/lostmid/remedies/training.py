"""One training run of a remedy: the retrieval config of a seed, what the remedy reads
about it (:class:`~lostmid.remedies.base.Setting`), the run with the remedy's hooks, and
the theory's structural prediction for architecture remedies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lostmid.remedies.base import Remedy, Setting
from lostmid.remedies.config import RemediesConfig

if TYPE_CHECKING:
    from lostmid.behaviour.training import RetrievalHooks


def train_config(config: RemediesConfig, seed: int) -> Any:
    """The :class:`~lostmid.behaviour.training.RetrievalTrainConfig` of one seed: the
    preset at the run's scale (``--pairs``, ``--steps``, ``--examples`` override it)."""
    from lostmid.behaviour.tasks.registry import task_is_text
    from lostmid.behaviour.training import RETRIEVAL_PRESETS, resolve_retrieval_config

    scale = config.scale
    text = task_is_text(RETRIEVAL_PRESETS[config.preset].task.task)  # the preset's task
    base = resolve_retrieval_config(
        config.preset,
        pairs=config.pairs or scale.pairs,
        key_chars=scale.key_chars if text else None,  # token-id tasks have no characters
        queries=scale.queries,
        steps=config.steps or scale.steps,
        seed=seed,
        eval_every=scale.eval_every,
        save_checkpoints=False,
    )
    return replace(
        base,
        eval_examples=config.examples or scale.eval_examples,
        influence_samples=scale.influence_samples,
        influence_probes=scale.influence_probes,
    )


def measured_alpha(rconfig: Any, rows: int = 4) -> float:
    """The theory's a for this run, measured where the theory means it: the mean over
    layers of the Jacobian residual strength a_l = s_l / (1 + s_l)
    (:func:`lostmid.influence.branch_gains`) of the untrained model ``rconfig`` builds,
    on ``rows`` held-out prompts of its task."""
    import torch

    from lostmid.behaviour.training.task import example_ids
    from lostmid.influence.gains import branch_gains
    from lostmid.train.model import as_loaded, build_model

    train = rconfig.resolved_train()
    model = build_model(train.model, seed=train.seed)
    prompts = [example_ids(rconfig.task.example(train.seed, i, i % rconfig.task.pairs))[0]
               for i in range(rows)]  # fmt: skip
    length = min(len(p) for p in prompts)
    ids = torch.tensor([p[:length] for p in prompts], dtype=torch.long)
    gains = branch_gains(as_loaded(model, train.seed), ids, seed=train.seed, per_position=False)
    return float(gains.residual_strength.mean())


def training_setting(rconfig: Any, alpha: float, law: str = "tilt") -> Setting:
    """What a remedy reads about a retrieval run: record centres, the context length
    (records end), the query position, depth and steps, and the law its own meets (the
    data's gold law under ``tilt``, uniform under ``replace``)."""
    from lostmid.behaviour import gold_distribution
    from lostmid.behaviour.training.task import example_ids

    example = rconfig.task.example(0, 0, 0)
    prompt, _ = example_ids(example)
    spans = list(example.spans)
    # the context ends with the records (and what closes them: kv's '}')
    prefix = spans[-1][1] + rconfig.task.plugin.context_end
    data = gold_distribution(rconfig.task.gold, rconfig.task.pairs)
    return Setting(
        pairs=rconfig.task.pairs,
        spans=tuple((int(a), int(b)) for a, b in spans),
        prefix=prefix,
        prompt_length=len(prompt),
        layers=rconfig.train.model.layers,
        steps=rconfig.train.steps,
        alpha=alpha,
        queries=rconfig.task.queries,
        data_law=tuple(float(v) for v in data) if law == "tilt" else None,
    )


def log10_ptv(profile: Any) -> float | None:
    """log10 peak-to-valley of a profile, negative values clipped to 0 (None: no valley)."""
    from lostmid.theory import summarise_profile

    return summarise_profile(
        np.clip(np.asarray(profile, dtype=np.float64), 0.0, None)
    ).log10_peak_to_valley


def combine_laws(
    data: np.ndarray, remedy: Callable[[int], np.ndarray] | None, how: str
) -> Callable[[int], np.ndarray] | None:
    """The gold law a remedy trains on, given the data's law ``data`` (pairs,).

    ``tilt``: the remedy reweights the data, p_g(step) ∝ data_g x remedy_g(step) (a
    remedy law is written relative to uniform, so on uniform data it is itself);
    ``replace``: the remedy's law is used as it is. None: no remedy law (the data's).

    >>> law = combine_laws(np.array([0.5, 0.25, 0.25]), lambda s: np.array([0.2, 0.6, 0.2]), "tilt")
    >>> np.round(law(0), 4).tolist()
    [0.3333, 0.5, 0.1667]
    """
    if remedy is None or how == "replace":
        return remedy

    def tilted(step: int) -> np.ndarray:
        p = np.asarray(data, dtype=np.float64) * np.asarray(remedy(step), dtype=np.float64)
        return p / p.sum()

    return tilted


def remedy_hooks(
    remedy: Remedy,
    rconfig: Any,
    alpha: float,
    law: str = "tilt",
    validation_examples: int = 64,
    validation_start: int | None = None,
    validation_log: list[dict[str, Any]] | None = None,
) -> RetrievalHooks:
    """The :class:`~lostmid.behaviour.training.RetrievalHooks` of a remedy on one run: its
    gold law combined with the data's by ``law`` (:func:`combine_laws`), its loss weights
    and surgery, and, for a remedy that ``uses_validation``, the accuracy on
    ``validation_examples`` per gold index of the validation split
    (:class:`~lostmid.remedies.validation.ValidationSplit`, from ``validation_start``,
    default :data:`~lostmid.remedies.validation.VALIDATION_INDEX`) at each evaluation
    (appended to ``validation_log`` as ``{"step", "accuracy"}`` when given)."""
    from lostmid.behaviour import gold_distribution
    from lostmid.behaviour.training import RetrievalHooks
    from lostmid.remedies.validation import VALIDATION_INDEX, ValidationSplit, validation_hook

    setting = training_setting(rconfig, alpha, law)
    data = gold_distribution(rconfig.task.gold, rconfig.task.pairs)
    on_evaluate = None
    if remedy.uses_validation:
        split = ValidationSplit.build(
            rconfig.task,
            rconfig.train.seed,
            validation_examples,
            VALIDATION_INDEX if validation_start is None else validation_start,
        )

        def seen(accuracy: np.ndarray, step: int) -> None:
            if validation_log is not None:
                validation_log.append({"step": step, "accuracy": accuracy.tolist()})
            remedy.on_validation(accuracy, step)

        on_evaluate = validation_hook(split, seen)
    return RetrievalHooks(
        gold_probs=combine_laws(data, remedy.gold_probs(setting), law),
        gold_weights=remedy.gold_weights(setting),
        variant=remedy.surgery(setting),
        on_evaluate=on_evaluate,
    )


def train_remedy(
    remedy: Remedy,
    rconfig: Any,
    alpha: float,
    out: Path,
    law: str = "tilt",
    validation_examples: int = 64,
) -> dict[str, Any]:
    """Train one seed with the remedy's hooks (:func:`remedy_hooks`); the per-seed record
    (JSON-ready)."""
    from lostmid.behaviour.training import run_retrieval_training

    validation: list[dict[str, Any]] = []
    hooks = remedy_hooks(remedy, rconfig, alpha, law, validation_examples, None, validation)
    result = run_retrieval_training(rconfig, out=out, overwrite=True, console=None, hooks=hooks)
    final, init = result.final, result.initial
    s = final.summary
    trained_law = None if hooks.gold_probs is None else hooks.gold_probs(final.step)
    return {
        "seed": rconfig.train.seed,
        "positions": [p.position for p in final.positions],
        "n": [p.n for p in final.positions],
        "accuracy": [p.accuracy for p in final.positions],
        "mean_accuracy": s.mean_accuracy,
        "gap": s.gap.estimate,
        "primacy": s.primacy.estimate,
        "recency": s.recency.estimate,
        "log10_peak_to_valley": log10_ptv(final.influence),
        "init_log10_peak_to_valley": log10_ptv(init.influence),
        "record_influence": list(final.record_influence),
        "init_record_influence": list(init.record_influence),
        "parameters": result.parameters,
        "tokens": final.tokens_seen,
        "steps": final.step,
        "trajectory": [
            {
                "step": c.step,
                "mean_accuracy": c.summary.mean_accuracy,
                "gap": c.summary.gap.estimate,
            }
            for c in result.checkpoints
        ],
        "gold_law_at_end": None if trained_law is None else np.asarray(trained_law).tolist(),
        "validation": validation,
        "train_seconds": result.train_seconds,
        "wall_seconds": result.wall_seconds,
    }


def theory_prediction(remedy: Remedy, setting: Setting) -> dict[str, Any] | None:
    """The theory's structural profile for an architecture remedy (and the baseline): the
    jacobian-kernel row of :func:`lostmid.theory.influence_row` on the query position,
    its log10 peak-to-valley and its mean over each record (0-indexed records)."""
    from lostmid.behaviour.training import span_means
    from lostmid.theory import influence_row

    spec = remedy.theory(setting)
    if spec is None:
        if remedy.name != "baseline":
            return None
        spec = {"mask": "causal", "alphas": [setting.alpha] * setting.layers}
    row = influence_row(
        setting.prompt_length,
        setting.layers,
        np.asarray(spec["alphas"]),
        mask=spec["mask"],
        kernel="jacobian",
    )
    return {
        **spec,
        "kernel": "jacobian",
        "log10_peak_to_valley": log10_ptv(row),
        "record_profile": unit_sum(span_means(row, list(setting.spans))),
    }


def unit_sum(values: Any) -> list[float]:
    """``values`` divided by their sum (as they are when the sum is not positive).

    >>> unit_sum([1.0, 3.0])
    [0.25, 0.75]
    """
    v = np.asarray(values, dtype=np.float64)
    return (v / v.sum()).tolist() if v.sum() > 0 else v.tolist()
