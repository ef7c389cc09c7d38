"""The CLI's help is the HELP next to each config, and ``lostmid --help`` stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from lostmid.behaviour.cli import RETRIEVAL_HELP
from lostmid.cli import app
from lostmid.influence.config import HELP as MEASURE_HELP
from lostmid.influence.config import MeasureConfig
from lostmid.reproduce.config import HELP as REPRODUCE_HELP
from lostmid.train.config import HELP as TRAIN_HELP

SHARED = {"out", "overwrite"}  # options every command has, with one help


@pytest.mark.parametrize(
    ("command", "help_"),
    [
        ("measure", MEASURE_HELP),
        ("train", TRAIN_HELP | RETRIEVAL_HELP),
        ("reproduce", REPRODUCE_HELP),
    ],
)
def test_every_option_takes_its_help_from_the_config(command: str, help_: dict) -> None:
    click_command = typer.main.get_command(app).commands[command]
    options = {p.name: p.help for p in click_command.params}
    assert {name: options[name] for name in help_} == help_
    assert set(options) - set(help_) <= SHARED


def test_measure_help_names_every_field_and_choice() -> None:
    from lostmid.influence.estimator import OUTPUTS, STRATEGIES

    assert set(MEASURE_HELP) == set(MeasureConfig.__dataclass_fields__)
    assert all(o in MEASURE_HELP["output"] for o in OUTPUTS)
    assert all(s in MEASURE_HELP["strategy"] for s in STRATEGIES)


def test_help_does_not_load_torch() -> None:
    code = "import sys, lostmid.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
