"""The CLI's help is the HELP next to each config, and ``lostmid --help`` stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from lostmid.ablate.config import ABLATE_HELP, AblationConfig
from lostmid.behaviour.cli import RETRIEVAL_HELP
from lostmid.cli import app
from lostmid.compare.options import OPTION_DEFAULTS as COMPARE_DEFAULTS
from lostmid.compare.options import OPTION_HELP as COMPARE_HELP
from lostmid.errors import UserError
from lostmid.influence.config import HELP as MEASURE_HELP
from lostmid.influence.config import MeasureConfig
from lostmid.reproduce.config import HELP as REPRODUCE_HELP
from lostmid.runs.backend import BACKEND_HELP
from lostmid.theory.run import HELP as THEORY_HELP
from lostmid.theory.run import TheoryConfig
from lostmid.train.config import HELP as TRAIN_HELP

SHARED = {"out", "overwrite"}  # options every command has, with one help


@pytest.mark.parametrize(
    ("command", "help_"),
    [
        ("measure", MEASURE_HELP),
        ("train", TRAIN_HELP | RETRIEVAL_HELP),
        ("reproduce", REPRODUCE_HELP | BACKEND_HELP),
        ("theory", THEORY_HELP),
        ("ablate", ABLATE_HELP),
        ("compare", {**COMPARE_HELP, "seed": None}),
    ],
)
def test_every_option_takes_its_help_from_the_config(command: str, help_: dict) -> None:
    click_command = typer.main.get_command(app).commands[command]
    options = {p.name: p.help for p in click_command.params}
    assert {name: options[name] for name in help_ if help_[name]} == {
        name: text for name, text in help_.items() if text
    }
    assert set(options) - set(help_) <= SHARED


def test_measure_help_names_every_field_and_choice() -> None:
    from lostmid.influence.profile import OUTPUTS, STRATEGIES

    assert set(MEASURE_HELP) == set(MeasureConfig.__dataclass_fields__)
    assert all(o in MEASURE_HELP["output"] for o in OUTPUTS)
    assert all(s in MEASURE_HELP["strategy"] for s in STRATEGIES)


def test_help_does_not_load_torch() -> None:
    code = "import sys, lostmid.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_theory_help_names_every_field_and_defaults_match() -> None:
    fields = {f for f, spec in TheoryConfig.__dataclass_fields__.items() if spec.init}
    assert set(THEORY_HELP) == fields
    params = {p.name: p.default for p in typer.main.get_command(app).commands["theory"].params}
    defaults = TheoryConfig()
    assert {f: params[f] for f in fields} == {
        f: getattr(defaults, f) if f != "mask" else "causal" for f in fields
    }


def test_compare_defaults_are_the_options_module() -> None:
    params = {p.name: p for p in typer.main.get_command(app).commands["compare"].params}
    assert {k: params[k].default for k in COMPARE_DEFAULTS} == COMPARE_DEFAULTS
    assert params["measured"].multiple and params["measured"].required


def test_errors_keep_their_brackets(monkeypatch, capsys) -> None:
    """Rich markup must not eat "[cluster]" or "[0, 1]" from a message."""
    from lostmid import cli

    def fail() -> None:
        raise UserError("pip install 'lostmid[cluster]'; a in [0, 1]; [bold]x[/bold]")

    monkeypatch.setattr(cli, "app", fail)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: pip install 'lostmid[cluster]'; a in [0, 1]; [bold]x[/bold]"


def test_ablate_help_names_every_field_and_defaults_match() -> None:
    assert set(ABLATE_HELP) == set(AblationConfig.__dataclass_fields__)
    params = {p.name: p.default for p in typer.main.get_command(app).commands["ablate"].params}
    defaults = AblationConfig(model="m")
    for field in set(ABLATE_HELP) - {"model", "rungs"}:
        assert params[field] == getattr(defaults, field), field
    assert AblationConfig(model="m", rungs=params["rungs"]).rungs == defaults.rungs
