"""Bad input: one line each, from the config and through the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lostmid.errors import UserError
from lostmid.remedies import HELP, RemediesConfig, get_remedy, register, remedy_names
from lostmid.remedies.base import Remedy


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"remedies": ("magic",)}, "--remedies 'magic' unknown; choose one of baseline"),
        ({"remedies": ("oversample:often",)}, "argument 'often' unknown; choose one of fixed"),
        ({"remedies": ("prefix:3",)}, "--remedies prefix takes no ':' argument"),
        ({"remedies": ()}, "--remedies needs at least one remedy"),
        ({"remedies": ("prefix", "prefix")}, "lists a remedy twice"),
        ({"preset": "huge"}, "--preset 'huge' unknown"),
        ({"seeds": 0}, "--seeds must be positive, got 0"),
        ({"steps": -5}, "--steps must be positive, got -5"),
        ({"pairs": 2.5}, "--pairs must be a whole number"),
        ({"alpha": 1.0}, "--alpha must be in \\(0, 1\\)"),
        ({"seed": -1}, "--seed must be a whole number in 0..4294967295"),
        ({"remedies": ("query-aware",)}, "inference-time remedies need --model"),
    ],
)
def test_bad_config(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        RemediesConfig(**kwargs)


def test_baseline_comes_first_and_seeds_count_from_the_first() -> None:
    config = RemediesConfig(remedies=("prefix", "baseline", "loss-weight"), seeds=3, seed=5)
    assert config.resolved_remedies() == ("baseline", "prefix", "loss-weight")
    assert config.resolved_seeds() == (5, 6, 7)
    assert RemediesConfig(quick=True).resolved_seeds() == (0, 1, 2)


def test_every_config_field_has_help_and_every_remedy_a_description() -> None:
    from dataclasses import fields

    assert {f.name for f in fields(RemediesConfig)} == set(HELP)
    for name in remedy_names():
        remedy = get_remedy(name)
        assert remedy.description and "\n" not in remedy.description
        assert remedy.kind in ("training", "inference")


def test_adding_a_remedy_is_one_class() -> None:
    from lostmid.remedies.base import REGISTRY

    @register
    class Nothing(Remedy):
        name = "test-nothing"
        description = "changes nothing"

    try:
        assert get_remedy("test-nothing").spec == "test-nothing"
        assert "test-nothing" in remedy_names("training")
        with pytest.raises(ValueError, match="taken"):
            register(Nothing)
    finally:
        del REGISTRY["test-nothing"]


def test_command_line_errors_are_one_line_and_exit_2(
    tmp_path: Path, run_cli: Callable[..., tuple[int, str, str]]
) -> None:
    code, _, err = run_cli("remedies", "--seeds", "0", "--out", tmp_path)
    assert code == 2 and "--seeds must be positive, got 0" in err
    assert "Traceback" not in err
    code, _, err = run_cli("remedies", "--remedies", "baseline,nope", "--out", tmp_path)
    assert code == 2 and "--remedies 'nope' unknown" in err


def test_the_inference_remedies_load_the_model_as_asked(run_cli, tmp_path) -> None:
    """--device and --dtype reach the model of the inference remedies; the defaults stay
    out of the run's record (a folder saved before these options resumes), and a device
    that is not there is one line."""
    from lostmid.remedies.config import RemediesConfig

    assert "device" not in RemediesConfig().record()
    assert RemediesConfig(dtype="float64").record()["dtype"] == "float64"
    args = ["--model", "tiny-qwen2", "--tokenizer", "bytes", "--key-chars", "2", "--pairs", "3",
            "--examples", "2", "--seeds", "1", "--remedies", "baseline,query-aware"]  # fmt: skip
    code, _, err = run_cli("remedies", *args, "--device", "cpu", "--dtype", "float32",
                           "--out", tmp_path / "a")  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli("remedies", *args, "--device", "tpu", "--out", tmp_path / "b")
    assert code == 2 and "tpu" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("remedies", *args, "--dtype", "int3", "--out", tmp_path / "c")
    assert code == 2 and "--dtype" in err
