"""The validation split of the adaptive remedies: disjoint from the held-out examples
of the final score and from training, read at every evaluation, and invisible to the
final score."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.training import resolve_retrieval_config, run_retrieval_training
from lostmid.behaviour.training.evaluate import HeldOut
from lostmid.behaviour.training.task import TRAIN_INDEX
from lostmid.errors import UserError
from lostmid.remedies import RemediesConfig, get_remedy, positions
from lostmid.remedies.training import remedy_hooks, train_config
from lostmid.remedies.validation import VALIDATION_INDEX, ValidationSplit


@pytest.mark.parametrize("quick", [True, False])
def test_the_validation_split_is_disjoint_from_the_final_score_and_from_training(
    quick: bool,
) -> None:
    config = RemediesConfig(quick=quick)
    rconfig = train_config(config, 0)
    split = ValidationSplit.build(rconfig.task, 0, config.scale.validation_examples)
    heldout = HeldOut.build(rconfig)
    training = range(TRAIN_INDEX, TRAIN_INDEX + rconfig.train.steps * rconfig.train.batch_size)
    assert set(split.indices).isdisjoint(range(rconfig.eval_examples))
    assert set(split.indices).isdisjoint(training)
    # and the examples themselves: no validation prompt is a held-out prompt
    assert set(split.prompts).isdisjoint(heldout.prompts)
    assert len(split.prompts) == rconfig.task.pairs * config.scale.validation_examples
    assert sorted(set(split.golds)) == list(range(rconfig.task.pairs))
    with pytest.raises(UserError, match="validation indices must lie in"):
        ValidationSplit.build(rconfig.task, 0, 4, start=TRAIN_INDEX - 2)


def _micro(steps: int = 6) -> object:
    config = resolve_retrieval_config("retrieval-micro", steps=steps, seed=3, eval_every=2)
    return replace(config, eval_examples=4)


def _run(remedy: object, start: int, out: Path) -> tuple[object, list[dict], object]:
    log: list[dict] = []
    rconfig = _micro()
    hooks = remedy_hooks(remedy, rconfig, 0.5, "tilt", 8, start, log)  # type: ignore[arg-type]
    result = run_retrieval_training(rconfig, out=out, overwrite=True, hooks=hooks)
    return result, log, rconfig


def test_the_final_score_is_unchanged_when_the_validation_examples_change(
    tmp_path: Path,
) -> None:
    """An adaptive remedy whose law ignores its accuracy (mix 0: uniform): the runs differ
    only in the validation examples they read, and score the same everywhere."""
    finals, prompts = [], []
    for k, start in enumerate((VALIDATION_INDEX, VALIDATION_INDEX + 1000)):
        remedy = get_remedy("oversample:adaptive")
        remedy.mix = 0.0  # type: ignore[attr-defined]
        result, log, rconfig = _run(remedy, start, tmp_path / str(k))
        assert [e["step"] for e in log] == rconfig.eval_steps()  # read at every evaluation
        # every checkpoint's score, log-probabilities included (continuous, so any leak of
        # the validation examples into training or scoring would show)
        finals.append(
            [
                (c.step, [(p.correct, p.mean_logprob) for p in c.positions])
                for c in result.checkpoints
            ]
        )
        prompts.append(ValidationSplit.build(rconfig.task, 3, 8, start).prompts)
    assert set(prompts[0]).isdisjoint(prompts[1])  # the validation examples did change
    assert finals[0] == finals[1]


def test_the_adaptive_law_is_set_from_the_validation_accuracy(tmp_path: Path) -> None:
    remedy = get_remedy("oversample:adaptive")
    result, log, _ = _run(remedy, VALIDATION_INDEX, tmp_path)
    last = np.array(log[-1]["accuracy"])
    np.testing.assert_allclose(remedy._probs, positions.adaptive(last, 0.5))  # type: ignore[attr-defined]
    assert len(log) == len(result.checkpoints)
