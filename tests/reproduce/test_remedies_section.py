"""The remedy claims of reproduce: documents built so that each rule's answer is known,
and ``reproduce --remedies DIR`` on a real (micro) ``lostmid remedies`` run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lostmid.reproduce.remedies import FAMILIES, RemediesSection


def interval(estimate: float, low: float, high: float) -> dict:
    return {"estimate": estimate, "ci_low": low, "ci_high": high, "n": 3}


def remedy(name: str, gap_diff=None, acc_diff=None, verdict=None, primacy=(0.2, 0.1, 0.3)):
    record = {
        "name": name,
        "kind": "training",
        "gap": interval(0.3, 0.2, 0.4),
        "primacy": interval(*primacy),
        "recency": interval(*primacy),
        "mean_accuracy": interval(0.6, 0.5, 0.7),
        "verdict": verdict,
        "difference_to_baseline": None,
    }
    if gap_diff is not None:
        record["difference_to_baseline"] = {
            "gap": interval(*gap_diff),
            "mean_accuracy": interval(*acc_diff),
        }
    return record


def document(*remedies, primacy=(0.2, 0.1, 0.3)) -> dict:
    return {"remedies": [remedy("baseline", primacy=primacy), *remedies], "config": {}}


WORKS = ((-0.2, -0.3, -0.1), (0.0, -0.1, 0.1), "works")
DIRECTION = ((-0.1, -0.3, 0.1), (0.01, -0.1, 0.1), "does not work")
WORSE = ((0.2, 0.1, 0.3), (-0.2, -0.3, -0.1), "worse")


def verdicts(doc: dict) -> dict[str, str]:
    section = RemediesSection(doc, "test")
    return {c.claim: c.verdict for c in section.claims}


def test_one_working_variant_reproduces_its_claim_and_only_its_own() -> None:
    oversample = FAMILIES["oversample"][0]
    curriculum = FAMILIES["curriculum"][0]
    doc = document(remedy("oversample:rho", *WORKS), remedy("curriculum", *WORSE))
    assert verdicts(doc) == {oversample: "reproduced", curriculum: "not reproduced"}
    doc = document(remedy("oversample", *DIRECTION), remedy("oversample:adaptive", *WORSE))
    assert verdicts(doc) == {oversample: "partly"}
    # the control backs no claim; a family with no remedy in the run has no row
    assert verdicts(document(remedy("curriculum-reverse", *WORKS))) == {}


def test_no_valley_in_the_baseline_is_below_resolution() -> None:
    doc = document(remedy("loss-weight", *WORKS), primacy=(0.05, -0.05, 0.15))
    (claim,) = RemediesSection(doc, "test").claims
    assert claim.verdict == "below resolution"
    assert "loss-weight: Δgap -0.20 [-0.30, -0.10]" in claim.ours


def test_a_document_without_baseline_is_refused(tmp_path: Path) -> None:
    from lostmid.errors import UserError

    with pytest.raises(UserError, match="no training-time baseline"):
        RemediesSection({"remedies": [remedy("prefix", *WORKS)]}, "x")
    with pytest.raises(UserError, match="no remedies.json there"):
        RemediesSection.read(tmp_path)


def test_reproduce_judges_a_finished_remedies_run(run_cli, tmp_path: Path) -> None:
    from lostmid.remedies import RemediesConfig, run_remedies

    config = RemediesConfig(
        remedies=("baseline", "loss-weight", "prefix"),
        preset="retrieval-micro",
        steps=3,
        seeds=2,
        pairs=4,
        examples=2,
        quick=True,
    )
    run_remedies(config, out=tmp_path / "rem")
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += ["--train-steps", "0", "--behaviour-steps", "0", "--dose", "off"]
    args += ["--remedies", str(tmp_path / "rem")]
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path / "out")
    assert code == 0, err
    record = json.loads((tmp_path / "out" / "reproduce.json").read_text())
    source = json.loads((tmp_path / "rem" / "remedies.json").read_text())
    rows = {r["remedy"]: r for r in record["remedies"]["table"]}
    assert list(rows) == ["baseline", "loss-weight", "prefix"]
    for r in source["remedies"]:
        assert rows[r["name"]]["verdict"] == (r["verdict"] or "(reference)")
    # no empty cell in the remedies or behaviour tables (nor None, drawn as a dash)
    cells = [v for row in record["remedies"]["table"] for v in row.values()]
    assert all(isinstance(v, str) and v for v in cells)
    claims = {c["claim"] for c in record["claims"]}
    assert {FAMILIES["loss-weight"][0], FAMILIES["architecture"][0]} <= claims
    assert "Remedies at equal budget" in (tmp_path / "out" / "report.html").read_text()
    code, _, err = run_cli("reproduce", *args[:-1], str(tmp_path), "--out", tmp_path / "o2")
    assert code == 2 and "not quick, default or a folder with remedies.json" in err
