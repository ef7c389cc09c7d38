"""Every command's options are its config's fields: same defaults, the config's HELP,
nothing declared twice; and ``lostmid --help`` stays light."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import typer

from lostmid.ablate.config import ABLATE_HELP, AblationConfig
from lostmid.behaviour.retrieve.config import HELP as RETRIEVE_HELP
from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.training.config import HELP as RETRIEVAL_HELP
from lostmid.cli import app
from lostmid.compare.config import HELP as COMPARE_HELP
from lostmid.compare.config import CompareConfig
from lostmid.errors import UserError
from lostmid.influence.config import HELP as MEASURE_HELP
from lostmid.influence.config import MeasureConfig
from lostmid.pretrained.series.config import HELP as SERIES_HELP
from lostmid.pretrained.series.config import SeriesConfig
from lostmid.remedies.config import HELP as REMEDIES_HELP
from lostmid.remedies.config import RemediesConfig
from lostmid.reproduce.config import HELP as REPRODUCE_HELP
from lostmid.runs.backend import HELP as BACKEND_HELP
from lostmid.runs.budget import SIZE_CHECK_HELP
from lostmid.theory.run import HELP as THEORY_HELP
from lostmid.theory.run import TheoryConfig
from lostmid.train.config import HELP as TRAIN_HELP

SHARED = {"out", "overwrite"}  # options every command has, with one help
BACKEND = {f"backend_{name}": text for name, text in BACKEND_HELP.items()}


def params(command: str) -> dict[str, click.Parameter]:
    return {p.name: p for p in typer.main.get_command(app).commands[command].params}  # type: ignore[attr-defined,misc]


def init_fields(cls: type) -> dict[str, Any]:
    """Field -> default of a config's init fields (MISSING for required ones)."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.init:
            out[f.name] = (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            )
    return out


# Command, its config, that config's HELP: the command offers exactly the config's fields.
CONFIG_COMMANDS = [
    ("theory", TheoryConfig, THEORY_HELP),
    ("measure", MeasureConfig, MEASURE_HELP),
    ("ablate", AblationConfig, ABLATE_HELP),
    ("compare", CompareConfig, COMPARE_HELP),
    ("retrieve", RetrieveConfig, RETRIEVE_HELP),
    ("remedies", RemediesConfig, REMEDIES_HELP | BACKEND),
    ("series", SeriesConfig, SERIES_HELP),
]


@pytest.mark.parametrize(("command", "config", "help_"), CONFIG_COMMANDS)
def test_options_are_the_config_fields_with_their_help_and_defaults(
    command: str, config: type, help_: dict[str, str]
) -> None:
    options = params(command)
    fields = init_fields(config)
    # --no-size-check is a field where the config itself checks its size (theory,
    # measure), else an option of the run (ablate, retrieve, remedies), with one help
    run = {"no_size_check"} - set(fields)
    assert set(options) - SHARED - set(BACKEND) - run == set(fields)
    assert set(help_) >= set(fields)
    for name, option in options.items():
        if name in SHARED:
            continue
        if name in run:
            assert option.help == SIZE_CHECK_HELP and option.default is False, name
            continue
        assert option.help == help_[name], name
        default = fields.get(name)
        if name in BACKEND or default is dataclasses.MISSING:
            continue
        if isinstance(default, tuple):  # read back from text or a repeated option
            assert option.default in (",".join(map(str, default)), list(default) or None), name
        elif isinstance(default, Path):
            assert Path(option.default) == default, name
        elif name == "seeds":  # text in the --seeds grammar: a count reads as itself
            assert option.default == (None if default is None else str(default)), name
        else:
            assert option.default == default, name


def test_every_config_field_default_reaches_the_config_unchanged() -> None:
    """The options' defaults, fed back, build the config's own defaults (tuples parsed)."""
    from lostmid.cli import ablate, compare, remedies, retrieve, series
    from lostmid.cli.options import parsed

    for module, config, required in [
        (ablate, AblationConfig, {"model": "m"}),
        (compare, CompareConfig, {"measured": ["m.json"]}),
        (retrieve, RetrieveConfig, {"model": "m"}),
        (remedies, RemediesConfig, {}),
        (series, SeriesConfig, {"models": "run/step_0,run/step_10"}),
    ]:
        name = module.__name__.rsplit(".", 1)[1]
        values = {
            n: p.default
            for n, p in params(name).items()
            if n not in SHARED and not n.startswith("backend_") and n != "no_size_check"
        }
        values |= required
        built = config(**parsed(values, module.FLAGS))
        assert built == config(**{k: v for k, v in parsed(required, module.FLAGS).items()}), name


def test_reproduce_and_train_options_are_overrides_with_the_configs_help() -> None:
    options = params("reproduce")
    for name in set(options) - SHARED - set(BACKEND):
        assert options[name].help.startswith(REPRODUCE_HELP[name]), name
    for name in ("length", "seeds", "train_steps", "behaviour_seeds"):
        assert options[name].default is None, name  # None: the scale's
    options = params("train")
    for name in set(options) - SHARED:
        assert options[name].help.startswith((TRAIN_HELP | RETRIEVAL_HELP)[name]), name
    assert options["preset"].default == "tiny" and options["task"].default is None


def test_measure_help_names_every_choice() -> None:
    from lostmid.influence.profile import OUTPUTS, STRATEGIES

    assert all(o in MEASURE_HELP["output"] for o in OUTPUTS)
    assert all(s in MEASURE_HELP["strategy"] for s in STRATEGIES)


def test_help_does_not_load_torch() -> None:
    code = "import sys, lostmid.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_errors_keep_their_brackets(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """Rich markup must not eat "[cluster]" or "[0, 1]" from a message."""
    from lostmid import cli

    def fail(**_: object) -> None:
        raise UserError("pip install 'lostmid[cluster]'; a in [0, 1]; [bold]x[/bold]")

    monkeypatch.setattr(cli, "app", fail)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: pip install 'lostmid[cluster]'; a in [0, 1]; [bold]x[/bold]"


@pytest.mark.parametrize(
    ("config", "required"),
    [
        (TheoryConfig, {}),
        (MeasureConfig, {}),
        (AblationConfig, {"model": "m"}),
        (CompareConfig, {"measured": ("m.json",)}),
        (RetrieveConfig, {"model": "m"}),
        (RemediesConfig, {}),
    ],
)
def test_every_config_refuses_a_negative_seed(config: type, required: dict[str, Any]) -> None:
    with pytest.raises(
        UserError, match=r"^--seed must be a whole number in 0..4294967295, got -1$"
    ):
        config(**required, seed=-1)


def test_reproduce_and_train_refuse_a_negative_seed(run_cli: Any, tmp_path: Path) -> None:
    for command in (["reproduce", "--quick"], ["train", "--preset", "micro"]):
        code, _, err = run_cli(*command, "--seed", "-1", "--out", tmp_path / command[0])
        assert code == 2 and err.strip().endswith("got -1"), err
        assert not (tmp_path / command[0] / "stages").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["theory", "--length", "8"],
        ["measure", "--model", "tiny-gpt2", "--length", "8", "--samples", "1"],
        ["reproduce", "--quick", "--models", "tiny-gpt2"],
        ["sweep", "--task", "theory"],
        ["ablate", "--model", "tiny-gpt2"],
        ["retrieve", "--model", "tiny-gpt2"],
        ["train", "--preset", "micro"],
        ["remedies", "--quick"],
    ],
    ids=lambda a: a[0],
)
def test_an_out_that_is_a_file_is_refused_once_in_one_line(
    args: list[str], tmp_path: Path, run_cli
) -> None:
    target = tmp_path / "taken"
    target.write_text("mine\n")
    code, _, err = run_cli(*args, "--out", target)
    assert code == 2 and err.count("is a file; give a directory") == 1, err
    assert len(err.strip().splitlines()) == 1 and target.read_text() == "mine\n"
