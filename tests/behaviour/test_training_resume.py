"""Retrieval training: the learning readouts in retrieval.json, no-rope, and resume."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.training.config import resolve_retrieval_config
from lostmid.behaviour.training.learning import half_times
from lostmid.behaviour.training.run import (
    RESULT,
    RESUME,
    RetrievalHooks,
    can_resume,
)
from lostmid.behaviour.training.run import run_retrieval_training as train_retrieval
from lostmid.errors import UserError


class Stop(Exception):
    """Raised by a hook: an interruption in the middle of a run."""


def _config(**changes: object):  # type: ignore[no-untyped-def]
    config = resolve_retrieval_config("retrieval-micro", layers=2, steps=8, seed=1)
    train = dataclasses.replace(config.train, resume_every=4)
    return dataclasses.replace(config, train=train, eval_every=2, **changes)


def _numbers(folder: Path) -> list[dict]:
    doc = json.loads((folder / RESULT).read_text())
    return [
        {k: c[k] for k in ("step", "tokens_seen", "record_influence", "probability")}
        | {"acc": [p["accuracy"] for p in c["positions"]], "eta": c["learning_signal"]["eta"]}
        for c in doc["checkpoints"]
    ]


def test_resume_after_an_interruption_gives_the_uninterrupted_numbers(tmp_path: Path) -> None:
    config = _config()
    whole = train_retrieval(config, out=tmp_path / "whole")

    def stop(c: object) -> None:
        if getattr(c, "step", 0) == 6:
            raise Stop

    with pytest.raises(Stop):
        train_retrieval(config, out=tmp_path / "cut", hooks=RetrievalHooks(on_checkpoint=stop))
    assert can_resume(config, tmp_path / "cut")  # state saved at step 4
    resumed = train_retrieval(config, out=tmp_path / "cut", resume=True)
    assert [c.step for c in resumed.checkpoints] == [c.step for c in whole.checkpoints]
    assert _numbers(tmp_path / "cut") == _numbers(tmp_path / "whole")  # bit for bit
    assert resumed.cpu_seconds > 0


def test_the_learning_readouts_are_those_of_the_checkpoints(tmp_path: Path) -> None:
    result = train_retrieval(_config(), out=tmp_path / "run")
    doc = json.loads((tmp_path / "run" / RESULT).read_text())
    tokens = [c["tokens_seen"] for c in doc["checkpoints"]]
    acc = np.array([[p["accuracy"] for p in c["positions"]] for c in doc["checkpoints"]])
    expected = half_times(tokens, acc)
    got = np.array([np.nan if v is None else v for v in doc["learning"]["half_time_tokens"]])
    np.testing.assert_allclose(got, expected)
    first = doc["checkpoints"][0]
    assert len(first["residual_strength"]) == 2  # a_l at init, one per layer
    assert all(c["residual_strength"] is None for c in doc["checkpoints"][1:])
    assert doc["record_spans"] == [list(s) for s in result.config.task.example(0, 0, 0).spans]
    influence = np.asarray(first["record_influence"])
    assert doc["learning"]["structural_primacy"] == pytest.approx(
        np.log(influence[0] / influence[-1])
    )


def test_no_rope_changes_the_model_and_is_recorded(tmp_path: Path) -> None:
    plain = train_retrieval(_config(), out=tmp_path / "plain")
    off = train_retrieval(_config(no_rope=True), out=tmp_path / "off")
    assert json.loads((tmp_path / "off" / RESULT).read_text())["config"]["no_rope"] is True
    # the same weights at step 0, so only the positional encoding differs
    assert plain.initial.record_influence != pytest.approx(off.initial.record_influence)


def test_resume_errors_are_one_line(tmp_path: Path) -> None:
    config = _config()
    with pytest.raises(UserError, match="resume.pt does not exist; run without --resume"):
        train_retrieval(config, out=tmp_path / "empty", resume=True)
    train_retrieval(config, out=tmp_path / "run")
    other = dataclasses.replace(config, eval_examples=2)
    assert not can_resume(other, tmp_path / "run")
    with pytest.raises(UserError, match=r"different config \(differs in: eval_examples\)"):
        train_retrieval(other, out=tmp_path / "run", resume=True)
    with pytest.raises(UserError, match="give one"):
        train_retrieval(config, out=tmp_path / "run", resume=True, overwrite=True)
    assert (tmp_path / "run" / RESUME).is_file()


def test_bad_new_options_are_one_line() -> None:
    with pytest.raises(UserError, match="--signal-examples must be >= 0"):
        resolve_retrieval_config("retrieval-micro", signal_examples=-1)
    with pytest.raises(UserError, match="--layers must be positive"):
        resolve_retrieval_config("retrieval-micro", layers=0)
