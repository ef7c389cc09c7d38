"""The core as a section (lostmid.reproduce.core) and the lead figure's panels: the core
plans one stage a model and seed under the names saved runs have, and any section gives
panels to summary.png through the interface, none by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from lostmid.report.html import Report
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.core import SECTION, Core
from lostmid.reproduce.figures import summary_figure
from lostmid.reproduce.plan import panels_of


def test_the_core_plans_a_stage_a_model_and_seed(tmp_path: Path) -> None:
    config = ReproduceConfig.at_scale("quick")
    names = [s.name for s in SECTION.stages(config, "cpu", tmp_path)]
    assert names == [f"measure-{m}-seed{s}" for m in ("qwen2-0.5b", "gpt2") for s in (0, 1, 2)]
    alone = ReproduceConfig.at_scale("quick", models=(), trained=("smollm2-135m",))
    empty = SECTION.collect(alone, {}, tmp_path)  # the trained-model sections alone
    assert empty == Core({}, {}, alone.scale) and empty.claims == ()
    assert panels_of(SECTION, empty) == [] and SECTION.record(empty) == {}
    report = Report("t")
    for nothing in (empty, None):  # no model measured at init: no core sections
        SECTION.report(report, nothing, {})
    assert report.sections == []


class _Plain:
    key = "plain"


class _Drawing:
    key = "drawing"

    def summary_panels(self, value: str) -> list[Any]:
        return [lambda ax: ax.set_title(value), lambda ax: ax.set_title(value + "!")]


def test_a_section_gives_panels_to_the_lead_figure_through_the_interface(tmp_path: Path) -> None:
    assert panels_of(_Plain(), "a result") == []  # summary_panels is optional
    assert panels_of(_Drawing(), None) == []  # no result, no panel
    panels = panels_of(_Drawing(), "mine")
    assert len(panels) == 2
    drawn: list[Any] = []
    figures = summary_figure([*panels, drawn.append], tmp_path)
    assert list(figures) == ["summary"] and figures["summary"] == tmp_path / "summary.png"
    assert len(drawn) == 1 and drawn[0].get_title() == ""  # each panel its own axes
    one = summary_figure(panels[:1], tmp_path / "one")["summary"]
    with Image.open(figures["summary"]) as three, Image.open(one) as single:
        assert abs(three.width / single.width - 3) < 0.05  # side by side
    assert summary_figure([], tmp_path / "none") == {}
    assert not (tmp_path / "none").exists()
