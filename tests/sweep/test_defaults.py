"""A sweep unit given no parameters is the command's own default run: the defaults live
in the configs (one place), not in the sweep."""

from __future__ import annotations

import pytest

from lostmid.errors import UserError
from lostmid.sweep.units import task_spec


def test_a_reproduce_unit_defaults_to_the_commands_scale_and_models() -> None:
    from lostmid.reproduce.config import ReproduceConfig

    assert task_spec("reproduce").build({}) == ReproduceConfig()


def test_a_retrieve_unit_needs_a_model_as_the_command_does() -> None:
    with pytest.raises(UserError, match="needs a model.*--models"):
        task_spec("retrieve").build({})
    assert task_spec("retrieve").build({"model": "tiny-qwen2"}).model == "tiny-qwen2"


@pytest.mark.parametrize("task", ["kv", "mqar"])
def test_a_train_retrieval_unit_takes_the_tasks_preset_as_train_task_does(task: str) -> None:
    from lostmid.behaviour.tasks.registry import trainable_task
    from lostmid.behaviour.training.config import retrieval_preset

    built = task_spec("train-retrieval").build({"task": task})
    assert built.preset == trainable_task(task).preset
    assert built == retrieval_preset(trainable_task(task).preset)  # nothing else changed
    assert task_spec("train-retrieval").build({}).preset == trainable_task("kv").preset


def test_the_cli_and_the_sweep_change_the_same_retrieval_fields() -> None:
    from lostmid.behaviour.training.config import RUN_OVERRIDES, TASK_OVERRIDES
    from lostmid.cli.train import RETRIEVAL_FLAGS

    defaults = task_spec("train-retrieval").defaults()
    assert set(TASK_OVERRIDES) <= set(RETRIEVAL_FLAGS) and set(TASK_OVERRIDES) <= set(defaults)
    assert set(RUN_OVERRIDES) <= set(defaults)
