"""The remedy claims of reproduce: documents built so that each rule's answer is known,
and ``reproduce --remedies DIR`` on a real (micro) ``lostmid remedies`` run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_args import SECTIONS_OFF

from lostmid.errors import UserError
from lostmid.reproduce.remedies import FAMILIES, RemediesRun, RemediesSection


def interval(estimate: float, low: float, high: float) -> dict:
    return {"estimate": estimate, "ci_low": low, "ci_high": high, "n": 3}


def remedy(name: str, gap_diff=None, acc_diff=None, verdict=None, primacy=(0.2, 0.1, 0.3)):
    record = {
        "name": name,
        "kind": "training",
        "gap": interval(0.3, 0.2, 0.4),  # the baseline's: margin m = 0.15
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


def document(*remedies, primacy=(0.2, 0.1, 0.3), law: str = "tilt") -> dict:
    return {
        "remedies": [remedy("baseline", primacy=primacy), *remedies],
        "config": {"law": law},
    }


# (gap difference, accuracy difference) built for each verdict of lostmid remedies' rule
WORKS = ((-0.2, -0.3, -0.1), (0.0, -0.1, 0.1))
NULL = ((0.0, -0.1, 0.1), (0.01, -0.1, 0.1))  # stops short of -m: does not work
WIDE = ((0.45, -0.20, 1.11), (-0.17, -0.47, 0.12))  # spans -m and 0: inconclusive
WORSE = ((0.2, 0.1, 0.3), (-0.2, -0.3, -0.1))


def section(*docs: dict) -> RemediesSection:
    return RemediesSection(tuple(RemediesRun(d, f"run-{d['config']['law']}") for d in docs))


def verdicts(doc: dict) -> dict[str, str]:
    return {c.claim.split(" (--law")[0]: c.verdict for c in section(doc).claims}


OVERSAMPLE = FAMILIES["oversample"][0]
CURRICULUM = FAMILIES["curriculum"][0]


def test_each_claim_verdict_from_documents_built_for_it() -> None:
    # reproduced: one variant works (and only its own claim)
    doc = document(remedy("oversample:rho", *WORKS), remedy("curriculum", *WORSE))
    assert verdicts(doc) == {OVERSAMPLE: "reproduced", CURRICULUM: "not reproduced"}
    # inconclusive: none works, one spans both
    doc = document(remedy("oversample", *NULL), remedy("oversample:middle-cover", *WIDE))
    assert verdicts(doc) == {OVERSAMPLE: "inconclusive"}
    # the curriculum (+0.45 [-0.20, +1.11]) is inconclusive, not "not reproduced"
    assert verdicts(document(remedy("curriculum", *WIDE))) == {CURRICULUM: "inconclusive"}
    # not reproduced: each does not work or is worse
    doc = document(remedy("oversample", *NULL), remedy("oversample:deficit", *WORSE))
    assert verdicts(doc) == {OVERSAMPLE: "not reproduced"}
    # the remedy that decides leads the row (the report's compact table shows it)
    doc = document(
        remedy("oversample", *NULL),
        remedy("oversample:rho", *WIDE),
        remedy("oversample:deficit", *WORKS),
    )
    (claim,) = section(doc).claims
    assert claim.ours.startswith("oversample:deficit: Δgap -0.20")
    assert claim.ours.index("oversample:rho") < claim.ours.index("oversample: Δgap")
    # the control backs no claim; a family with no remedy in the run has no row
    assert verdicts(document(remedy("curriculum-reverse", *WORKS))) == {}


def test_no_valley_in_the_baseline_is_below_resolution() -> None:
    doc = document(remedy("loss-weight", *WORKS), primacy=(0.05, -0.05, 0.15))
    (claim,) = section(doc).claims
    assert claim.verdict == "below resolution"
    assert "loss-weight: Δgap -0.20 [-0.30, -0.10]" in claim.ours


def test_the_remedy_verdicts_are_recomputed_by_the_rule_from_the_intervals() -> None:
    """A run saved before the inconclusive verdict said 'does not work' for a wide
    interval; the section judges it by today's rule."""
    doc = document(remedy("curriculum", *WIDE, verdict="does not work"))
    run = RemediesRun(doc, "old")
    assert run.margin == pytest.approx(0.15)
    (row,) = run.remedies
    assert row.verdict == "inconclusive"
    assert run.table()[1]["verdict"] == "inconclusive"


def test_one_claim_row_per_law_with_the_control_beside() -> None:
    tilt = document(remedy("curriculum", *WIDE), remedy("curriculum-reverse", *NULL), law="tilt")
    replace = document(
        remedy("curriculum", *WORKS), remedy("curriculum-reverse", *WORKS), law="replace"
    )
    claims = section(tilt, replace).claims
    assert [c.claim for c in claims] == [
        f"{CURRICULUM} (--law tilt: remedy laws reweighting the data's)",
        f"{CURRICULUM} (--law replace: remedy laws replacing the data's)",
    ]
    assert [c.verdict for c in claims] == ["inconclusive", "reproduced"]
    assert "control curriculum-reverse: Δgap +0.00 [-0.10, +0.10]" in claims[0].ours
    assert "control curriculum-reverse: Δgap -0.20 [-0.30, -0.10]" in claims[1].ours
    assert "(works)" in claims[1].ours.split("control")[1]
    # without the control in the run, the row says so
    (alone,) = section(document(remedy("curriculum", *WORKS))).claims
    assert "control curriculum-reverse: not run" in alone.ours
    # the table: each run's rows, with their law
    rows = section(tilt, replace).table()
    assert [(r["law"], r["remedy"]) for r in rows] == [
        ("tilt", "baseline"),
        ("tilt", "curriculum"),
        ("tilt", "curriculum-reverse"),
        ("replace", "baseline"),
        ("replace", "curriculum"),
        ("replace", "curriculum-reverse"),
    ]
    with pytest.raises(UserError, match="two remedies runs with the same --law"):
        section(tilt, tilt)


def test_a_folder_of_one_run_per_law_is_read_and_checked(tmp_path: Path) -> None:
    for law in ("tilt", "replace"):
        (tmp_path / law).mkdir()
        doc = document(remedy("loss-weight", *WORKS), law=law)
        (tmp_path / law / "remedies.json").write_text(json.dumps(doc))
    read = RemediesSection.read(tmp_path)
    assert [r.law for r in read.runs] == ["tilt", "replace"]
    assert len(read.claims) == 2
    assert RemediesSection.from_record(read.record()).claims == read.claims
    # a run filed under the wrong law is refused, in one line
    (tmp_path / "replace" / "remedies.json").write_text(json.dumps(document(law="tilt")))
    with pytest.raises(UserError, match="was run with --law tilt, not replace; move it to"):
        RemediesSection.read(tmp_path)
    # one run's folder is read as it is, whatever its law
    (tmp_path / "remedies.json").write_text(json.dumps(document(law="replace")))
    assert [r.law for r in RemediesSection.read(tmp_path).runs] == ["replace"]


def test_a_document_without_baseline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no training-time baseline"):
        RemediesRun({"remedies": [remedy("prefix", *WORKS)]}, "x")
    with pytest.raises(UserError, match="no remedies.json there, nor in tilt/ or replace/"):
        RemediesSection.read(tmp_path)


def test_reproduce_judges_finished_remedies_runs_under_both_laws(run_cli, tmp_path: Path) -> None:
    from dataclasses import replace

    from lostmid.remedies import RemediesConfig, run_remedies

    config = RemediesConfig(
        remedies=("baseline", "loss-weight", "curriculum"),
        preset="retrieval-micro",
        steps=3,
        seeds=2,
        pairs=4,
        examples=2,
        quick=True,
    )
    for law in ("tilt", "replace"):
        run_remedies(replace(config, law=law), out=tmp_path / "rem" / law)
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += SECTIONS_OFF
    args += ["--remedies", str(tmp_path / "rem")]
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path / "out")
    assert code == 0, err
    record = json.loads((tmp_path / "out" / "reproduce.json").read_text())
    table = record["remedies"]["table"]
    for law in ("tilt", "replace"):
        source = json.loads((tmp_path / "rem" / law / "remedies.json").read_text())
        rows = {r["remedy"]: r for r in table if r["law"] == law}
        assert list(rows) == ["baseline", "loss-weight", "curriculum"]
        for r in source["remedies"]:
            assert rows[r["name"]]["verdict"] == (r["verdict"] or "(reference)")
    # no empty cell in the remedies table (nor None, drawn as a dash)
    assert all(isinstance(v, str) and v for row in table for v in row.values())
    claims = [c["claim"] for c in record["claims"] if "(--law" in c["claim"]]
    for family in ("curriculum", "loss-weight"):
        mine = [c for c in claims if c.startswith(FAMILIES[family][0])]
        assert [c.split("(--law ")[1].split(":")[0] for c in mine] == ["tilt", "replace"]
    assert "Remedies at equal budget" in (tmp_path / "out" / "report.html").read_text()
    code, _, err = run_cli("reproduce", *args[:-1], str(tmp_path), "--out", tmp_path / "o2")
    assert code == 2 and "not quick, default or a folder with remedies.json" in err
