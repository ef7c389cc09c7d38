"""The inference remedies on real checkpoints (lostmid.reproduce.real_remedies): each
remedies verdict read as a claim (yes, no, undecided), and the section end to end
through reproduce on a tiny BPE model standing in for a checkpoint, read back from its
folder with the same claims."""

from __future__ import annotations

import json
from pathlib import Path

from cli_args import SECTIONS_OFF

from lostmid.reproduce import real_remedies as rr
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def _arm(name: str, verdict: str | None, gap: tuple[float, float, float]) -> dict:
    diff = None
    if verdict is not None:
        interval = dict(zip(("estimate", "ci_low", "ci_high"), gap, strict=True))
        diff = {"mean_accuracy": {"estimate": 0.0, "ci_low": -0.1, "ci_high": 0.1},
                "gap": interval}  # fmt: skip
    return {
        "name": name, "accuracy": [0.8, 0.4, 0.9], "positions": [0, 50, 100],
        "difference": diff, "verdict": verdict, "margin": 0.2,
        "extra_forward_passes": 1 if name == "calibrate" else 0, "seconds": 1.0,
    }  # fmt: skip


def _run(*arms: dict) -> dict:
    return {
        "model": "m", "folder": "f", "task": "niah-multikey", "length": 512,
        "distractors": 2, "examples": 10, "arms": [_arm("baseline", None, (0, 0, 0)), *arms],
    }  # fmt: skip


def test_each_remedy_verdict_is_read_as_a_claim_yes_no_and_undecided() -> None:
    run = _run(
        _arm("query-aware", "works", (-0.3, -0.5, -0.1)),
        _arm("calibrate", "does not work", (0.0, -0.1, 0.1)),
        _arm("ms-poe", "worse", (0.3, 0.1, 0.5)),
    )
    undecided = _run(_arm("query-aware", "inconclusive", (-0.2, -0.5, 0.1)))
    claims = rr.RealRemedies("constructed", (run, undecided)).claims
    assert [c.verdict for c in claims] == [REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE]
    assert [c.claim for c in claims[:3]] == [rr.CLAIMS[r][0] for r in rr.REMEDIES]
    assert "gap -0.30 [-0.50, -0.10]" in claims[0].ours  # the paired interval, as stored
    rows = rr.RealRemedies("constructed", (run,)).table()
    assert [r["arm"] for r in rows] == ["baseline", *rr.REMEDIES]
    assert rows[0]["verdict"] == "(reference)" and rows[2]["extra passes"] == 1
    assert rows[0]["Δ gap [95%]"] == "n/a" and rows[1]["Δ gap [95%]"] == "-0.30 [-0.50, -0.10]"
    assert all(str(v).strip() not in ("", "None", "nan") for row in rows for v in row.values())


def test_the_section_runs_remedies_on_each_checkpoint_and_reads_it_back(
    bpe_model_dir: Path, tmp_path: Path, run_cli, monkeypatch
) -> None:
    scale = rr.RealRemedyScale("quick", (str(bpe_model_dir),), 600, 2, 1)
    monkeypatch.setitem(rr.REAL_REMEDY_SCALES, "quick", scale)
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += ["--probes", "1", *SECTIONS_OFF, "--real-remedies", "quick", "--jobs", "1"]
    code, _, err = run_cli("reproduce", "--quick", *args, "--out", tmp_path / "r")
    assert code == 0, err
    record = json.loads((tmp_path / "r" / "reproduce.json").read_text())
    (run,) = record["real_remedies"]["runs"]
    assert [a["name"] for a in run["arms"]] == ["baseline", *rr.REMEDIES]
    claims = [c for c in record["claims"] if c["claim"] in {v[0] for v in rr.CLAIMS.values()}]
    assert len(claims) == 3  # one row per remedy on the one checkpoint
    # each claim's verdict is the remedies run's own, read as a claim
    stored = json.loads((Path(run["folder"]) / "remedies.json").read_text())
    own = {r["name"]: r["verdict"] for r in stored["remedies"]}
    expected = [rr.CLAIM_VERDICT[own[name]] for name in rr.REMEDIES]
    assert [c["verdict"] for c in claims] == expected
    assert (
        "Real checkpoints: do inference remedies flatten the U?"
        in (tmp_path / "r" / "report.html").read_text()
    )
    # the finished folder (and one run's folder) read back with the same claims
    folders = (tmp_path / "r" / "real-remedies" / "quick", Path(run["folder"]))
    for i, folder in enumerate(folders):
        args[-4:-2] = ["--real-remedies", str(folder)]
        code, _, err = run_cli("reproduce", "--quick", *args, "--out", tmp_path / f"again{i}")
        assert code == 0, err
        again = json.loads((tmp_path / f"again{i}" / "reproduce.json").read_text())
        assert [c for c in again["claims"] if c in claims] == claims
    code, _, err = run_cli(
        "reproduce", "--quick", "--real-remedies", str(tmp_path), "--out", tmp_path / "x"
    )
    assert code == 2 and "--real-remedies" in err and len(err.strip().splitlines()) == 1


def test_the_config_names_the_scales_the_section_has() -> None:
    from lostmid.reproduce.config import REAL_REMEDY_CHOICES

    assert (*rr.REAL_REMEDY_SCALES, "off") == REAL_REMEDY_CHOICES
