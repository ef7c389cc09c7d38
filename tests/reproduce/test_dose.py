"""The depth dose-response section of ``lostmid reproduce``: claim, scales, folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lostmid.reproduce.dose as dose_module
from lostmid.behaviour.dose.summary import DoseSummary
from lostmid.reproduce.config import DOSE_CHOICES
from lostmid.reproduce.dose import DOSE_CLAIM, DOSE_SCALES, DoseScale, DoseSection
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

SMALL = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
SMALL += ["--train-steps", "0", "--behaviour-steps", "0", "--checkpoints", "off"]
SMALL += ["--real-behaviour", "off"]


def _runs(made_dose_run, response: float, seeds: int = 3) -> tuple:
    dose = {2: 1.0, 8: 3.0}
    return tuple(
        made_dose_run(h, s, dose[h] + 0.1 * s, response * (dose[h] + 0.1 * s) + 0.05 * s)
        for h in dose
        for s in range(seeds)
    )


@pytest.mark.parametrize(
    ("response", "seeds", "verdict", "word"),
    [
        (0.5, 3, REPRODUCED, "supported"),
        (0.0, 3, NOT_REPRODUCED, "not supported"),
        (0.5, 1, INCONCLUSIVE, "inconclusive"),
    ],
)
def test_the_claim_carries_the_rules_verdict(made_dose_run, response, seeds, verdict, word):
    section = DoseSection("a test", DoseSummary(_runs(made_dose_run, response, seeds)))
    (claim,) = section.claims
    assert claim.claim == DOSE_CLAIM and claim.verdict == verdict
    assert f"rule: {word} (" in claim.ours and "depths 2, 8" in claim.ours
    assert all(isinstance(v, str) and v for row in section.table() for v in map(str, row.values()))


def test_the_scales_are_those_the_config_accepts() -> None:
    assert (*DOSE_SCALES, "off") == DOSE_CHOICES
    full = DOSE_SCALES["full"]
    assert full.depths == (2, 4, 8) and full.seeds == 3 and full.variants == ("no-rope", "mix 0.5")
    names = [stage.name for stage in dose_module.dose_stages("full", 0, Path("."))]
    assert len(names) == 15 and len(set(names)) == 15  # the whole design, one stage per run


def test_reproduce_runs_the_section_and_reads_a_finished_design(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    micro = DoseScale("quick", "retrieval-micro", (1, 2), 2, 4)
    monkeypatch.setitem(DOSE_SCALES, "quick", micro)
    code, _, err = run_cli("reproduce", "--quick", *SMALL, "--out", tmp_path / "r")
    assert code == 0, err
    record = json.loads((tmp_path / "r" / "reproduce.json").read_text())
    section = record["dose"]
    assert section["source"] == "quick scale"
    assert [a["arm"] for a in section["arms"]] == ["H=1", "H=2"]
    for run in section["runs"]:  # each run's files are where the section says
        assert (Path(run["folder"]) / "retrieval.json").is_file()
    (claim,) = [c for c in record["claims"] if c["claim"] == DOSE_CLAIM]
    assert claim["verdict"] == INCONCLUSIVE  # 4 steps learn nothing
    assert "Depth dose-response" in (tmp_path / "r" / "report.html").read_text()
    assert (tmp_path / "r" / "figures" / "dose.png").is_file()
    # the same runs read back from a folder with dose.json: the same claim, nothing trained
    folder = tmp_path / "design"
    folder.mkdir()
    (folder / "dose.json").write_text(json.dumps({"runs": section["runs"]}))
    code, _, err = run_cli("reproduce", *SMALL, "--dose", str(folder), "--out", tmp_path / "d")
    assert code == 0, err
    again = json.loads((tmp_path / "d" / "reproduce.json").read_text())
    (claim2,) = [c for c in again["claims"] if c["claim"] == DOSE_CLAIM]
    assert claim2["verdict"] == claim["verdict"] and "the runs of" in claim2["ours"]
    assert not (tmp_path / "d" / "dose").exists()


def test_a_bad_dose_value_is_one_line(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli("reproduce", *SMALL, "--dose", str(tmp_path), "--out", tmp_path / "o")
    assert code == 2
    assert "not quick, default, full, off or a folder with dose.json" in err
