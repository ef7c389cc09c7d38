"""A reproduce section is one plug-in (lostmid.reproduce.plan.Section) and one entry in
lostmid.reproduce.sections.SECTIONS: its stage runs with the others and is reused, its
claims join claims.json after the core's, its record is in reproduce.json under its key,
its part is in the report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_args import SECTIONS_OFF

import lostmid.reproduce.sections as registry
from lostmid.compare.claims import Claim
from lostmid.reproduce.plan import PlannedStage
from lostmid.stats.verdicts import INCONCLUSIVE

CORE = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
CORE += ["--probes", "1", *SECTIONS_OFF, "--jobs", "1"]
COMPUTED: list[int] = []


def _square(x: int) -> dict[str, int]:
    COMPUTED.append(x)
    return {"x": x, "square": x * x}


@dataclass(frozen=True)
class Found:
    square: int

    @property
    def claims(self) -> tuple[Claim, ...]:
        ours = f"square {self.square}"
        return (Claim("A plug-in's claim", "none", ours, INCONCLUSIVE, "stated here"),)


class SquareSection:
    key = "square"

    def check(self, config: Any) -> None:
        """Nothing to read before the stages."""

    def stages(self, config: Any, device: str, out: Path) -> list[PlannedStage]:
        return [PlannedStage("square-7", {"x": 7}, lambda: _square(7), dict)]

    def collect(self, config: Any, results: Mapping[str, Any], out: Path) -> Found | None:
        return Found(results["square-7"]["square"])

    def figures(self, value: Found, folder: Path) -> dict[str, Path]:
        return {}

    def record(self, value: Found) -> dict[str, int]:
        return {"square": value.square}

    def report(self, report: Any, value: Found | None, figures: Mapping[str, Path]) -> None:
        report.add_section("The square section", paragraphs=[f"It found {value.square}."])


def test_a_registered_section_runs_is_saved_reported_and_reused(
    tmp_path: Path, run_cli, monkeypatch
) -> None:
    monkeypatch.setattr(registry, "SECTIONS", (*registry.SECTIONS, SquareSection()))
    COMPUTED.clear()
    code, _, err = run_cli("reproduce", "--quick", *CORE, "--out", tmp_path)
    assert code == 0, err
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert claims[-1]["claim"] == "A plug-in's claim" and claims[-1]["ours"] == "square 49"
    assert json.loads((tmp_path / "reproduce.json").read_text())["square"] == {"square": 49}
    html = (tmp_path / "report.html").read_text()
    assert "The square section" in html and "It found 49." in html
    assert COMPUTED == [7]
    code, _, err = run_cli("reproduce", "--quick", *CORE, "--out", tmp_path)
    assert code == 0, err
    assert COMPUTED == [7]  # the saved stage is reused, not computed again
    record = json.loads((tmp_path / "reproduce.json").read_text())
    assert "square-7" in record["metadata"]["stages"]["reused"]


def test_every_section_has_one_key_and_the_report_names_each_result() -> None:
    keys = [s.key for s in registry.SECTIONS]
    assert len(set(keys)) == len(keys)
    assert keys[:3] == ["training", "behaviour", "remedies"]  # the claims' order
