"""The option generator: types, defaults, parsers, overrides and its refusals."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from lostmid.cli.options import Flag, comma_ints, command, options, parsed


@dataclass(frozen=True)
class Demo:
    name: str
    length: int = 8
    alpha: float = 0.5
    target: int | None = None
    exact: bool = False
    corpus: Path | None = None
    gold: tuple[int, ...] = (0, 3)
    measured: tuple[Path, ...] = ()
    derived: int = field(init=False, default=0)


HELP = {
    "name": "N.",
    "length": "L.",
    "alpha": "A.",
    "target": "T.",
    "exact": "E.",
    "corpus": "C.",
    "gold": "G.",
    "measured": "M.",
}
FLAGS = {
    "length": Flag(names=("--length", "-L")),
    "gold": Flag(parse=comma_ints("--gold")),
    "measured": Flag(repeat=True),
    "alpha": Flag(override="the preset's"),
}


def run(*args: str) -> dict[str, object]:
    got: dict[str, object] = {}
    cmd = command("demo", "Demo.", options(Demo, HELP, flags=FLAGS), lambda **v: got.update(v))
    app = typer.Typer()
    app.command()(cmd)
    app.command("other")(lambda: None)  # two commands: typer keeps the subcommand name
    result = CliRunner().invoke(app, ["demo", *args])
    assert result.exit_code == 0, result.output
    return got


def test_defaults_types_and_names_come_from_the_fields() -> None:
    got = run("--name", "x", "--measured", "a.json", "--measured", "b.json")
    assert got == {
        "name": "x",
        "length": 8,
        "alpha": None,  # an override: None keeps the preset's
        "target": None,
        "exact": False,
        "corpus": None,
        "gold": "0,3",
        "measured": [Path("a.json"), Path("b.json")],
    }
    values = parsed(got, FLAGS)
    assert values["gold"] == (0, 3) and values["measured"] == (Path("a.json"), Path("b.json"))
    assert Demo(**values).gold == Demo(name="x").gold


def test_flags_parse_short_names_and_bools() -> None:
    got = run("--name", "x", "-L", "16", "--exact", "--target", "4", "--gold", "1,2,5",
              "--measured", "m", "--alpha", "0.25", "--corpus", "c.txt")  # fmt: skip
    assert (got["length"], got["exact"], got["target"], got["alpha"]) == (16, True, 4, 0.25)
    assert parsed(got, FLAGS)["gold"] == (1, 2, 5) and got["corpus"] == Path("c.txt")


def test_required_fields_are_required_options() -> None:
    ps = {p.name: p for p in options(Demo, HELP, flags=FLAGS)}
    assert ps["name"].default is inspect.Parameter.empty
    assert ps["measured"].default is inspect.Parameter.empty  # an empty tuple: required
    assert "derived" not in ps  # init=False fields are not options
    assert "(default: the preset's)" in typing.get_args(ps["alpha"].annotation)[1].help


def test_a_field_without_help_or_type_is_refused() -> None:
    with pytest.raises(KeyError, match="Demo.exact has no help text"):
        options(Demo, {k: v for k, v in HELP.items() if k != "exact"}, flags=FLAGS)
    with pytest.raises(TypeError, match="no command-line type"):
        options(Demo, HELP)  # the tuples need a Flag
    with pytest.raises(ValueError, match="declared twice"):
        command("x", "X.", [*options(Demo, HELP, flags=FLAGS, only=["length"])] * 2, print)


def test_help_panels_group_every_option_in_the_order_given() -> None:
    panels = {"Run": ("name", "length", "exact"), "Data": ("corpus", "gold", "measured"),
              "Theory": ("alpha", "target")}  # fmt: skip
    ps = options(Demo, HELP, flags=FLAGS, panels=panels)
    got = [(p.name, typing.get_args(p.annotation)[1].rich_help_panel) for p in ps]
    assert got == [(n, title) for title, names in panels.items() for n in names]
    with pytest.raises(KeyError, match="Demo.length is in no help panel"):
        options(Demo, HELP, flags=FLAGS, panels={k: v[:1] for k, v in panels.items()})


@pytest.mark.parametrize(
    ("name", "box"),
    [("retrieve", "Needles (niah-*)"), ("measure", "What is measured"),
     ("remedies", "Where the stages run"), ("reproduce", "Sizes (override the scale's)")],
)  # fmt: skip
def test_long_helps_have_every_option_in_a_named_panel(name: str, box: str) -> None:
    import importlib

    command = importlib.import_module(f"lostmid.cli.{name}").COMMAND
    boxes = [
        typing.get_args(p.annotation)[1].rich_help_panel
        for p in inspect.signature(command).parameters.values()
    ]
    assert None not in boxes and box in boxes
    # each group's options stand together (the help draws one box a group, in order)
    firsts = [b for i, b in enumerate(boxes) if i == 0 or boxes[i - 1] != b]
    assert len(firsts) == len(set(firsts))
