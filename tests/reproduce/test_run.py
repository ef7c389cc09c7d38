"""`lostmid reproduce` on tiny stand-in models: files, claims, resume, bad input."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from cli_args import SECTIONS_OFF

import lostmid.reproduce.core as core
from lostmid.influence.record import read_measure
from lostmid.reproduce.stages import read_at_init
from lostmid.runinfo import to_jsonable
from lostmid.stats.verdicts import CLAIM_VERDICTS

TINY = [
    "--models",
    "tiny-qwen2,tiny-gpt2",
    "--length",
    "24",
    "--seeds",
    "2",
    "--samples",
    "2",
    "--probes",
    "1",
    *SECTIONS_OFF,
]


class _Cells(HTMLParser):
    """The text of every table cell, by the heading (h2) of its section."""

    def __init__(self) -> None:
        super().__init__()
        self.section = ""
        self.cells: dict[str, list[str]] = {}
        self._in: str | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "td"):
            self._in, self._text = tag, ""

    def handle_data(self, data):
        if self._in:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "h2" and self._in == "h2":
            self.section = self._text.strip()
        elif tag == "td" and self._in == "td":
            self.cells.setdefault(self.section, []).append(self._text.strip())
        if tag == self._in:
            self._in = None


class _Checker(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input", "col"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
        self.stack.pop()


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> Path:
    from typer.testing import CliRunner

    from lostmid.cli import app

    out = tmp_path_factory.mktemp("reproduce")
    result = CliRunner().invoke(app, ["reproduce", "--quick", *TINY, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_writes_report_claims_and_intermediates(quick_run: Path) -> None:
    claims = json.loads((quick_run / "claims.json").read_text())
    assert len(claims) == 22  # eleven per model
    for c in claims:
        assert set(c) >= {"claim", "paper", "ours", "verdict", "rule"}
        assert c["verdict"] in CLAIM_VERDICTS
        assert "noise floor" in c["ours"]
    checker = _Checker()
    checker.feed((quick_run / "report.html").read_text())
    assert checker.stack == []
    assert len(checker.images) >= 4 and all(
        s.startswith("data:image/png;base64,") for s in checker.images
    )
    figures = sorted(p.name for p in (quick_run / "figures").iterdir())
    assert figures == sorted(
        ["summary.png"]
        + [
            f"{kind}-{m}.png"
            for kind in ("overlay", "positional", "depth")
            for m in ("tiny-qwen2", "tiny-gpt2")
        ]
    )
    assert len(checker.images) == len(figures)
    html = (quick_run / "report.html").read_text()
    sections = re.findall(r'<section id="([^"]+)">', html)
    assert sections[:2] == ["summary", "claims"]  # the figure first, then the verdicts
    summary = html[html.index('<section id="summary">') : html.index('<section id="claims">')]
    assert "<img" in summary and "<table" not in summary
    assert sorted(p.name for p in (quick_run / "stages").iterdir()) == [
        "measure-tiny-gpt2-seed0.json",
        "measure-tiny-gpt2-seed1.json",
        "measure-tiny-qwen2-seed0.json",
        "measure-tiny-qwen2-seed1.json",
    ]
    stages = [
        json.loads((quick_run / "stages" / f"measure-tiny-qwen2-seed{s}.json").read_text())
        for s in (0, 1)
    ]
    for seed, stage in enumerate(stages):  # each stage kept whole, compact, beside it
        kept = read_at_init(quick_run / "tiny-qwen2" / f"seed-{seed}" / "at-init.npz")
        assert to_jsonable(kept.record()) == stage["result"]
        measured = read_measure(quick_run / "tiny-qwen2" / f"seed-{seed}" / "measure.json")
        assert measured.layers == 2 and measured.residual_strength_method == "jacobian"
        assert measured.gain_per_position.shape == (2, 24)
        np.testing.assert_allclose(measured.influence, stage["result"]["on"]["influence"])
        s = np.array(stage["result"]["gains"]["branch_gain"])
        np.testing.assert_allclose(measured.residual_strength, s / (1 + s))
        assert len(stage["result"]["residual_strength_forward"]) == 2
    # the pooled file: each seed's profile normalised to sum 1, averaged, times the mean total
    measure = json.loads((quick_run / "tiny-qwen2" / "measure.json").read_text())
    rows = np.array([st["result"]["on"]["influence"] for st in stages])
    pooled = (rows / rows.sum(1, keepdims=True)).mean(0) * rows.sum(1).mean()
    np.testing.assert_allclose(measure["influence"], pooled, rtol=1e-12)
    assert measure["metadata"]["command"] == "reproduce"


def test_the_new_tables_have_no_empty_cell(quick_run: Path) -> None:
    cells = _Cells()
    cells.feed((quick_run / "report.html").read_text())
    sections = [
        "Noise floor",
        "Step 0: tiny-qwen2",
        "Step 0: tiny-gpt2",
        "Residual strength by layer: tiny-qwen2",
        "Depth 1: where the theory is exact",
        "Positional encodings switched off",
        "Growth with depth",
    ]
    for section in sections:
        filled = cells.cells[section]
        assert filled, section
        empty = [c for c in filled if c in ("", "\u2014", "nan", "n/a")]
        assert empty == [], (section, empty)
    # the zero-parameter candidates of the full profile, positional ones included
    step0 = cells.cells["Step 0: tiny-qwen2"]
    for name in ("predicted:positional", "predicted:positional-mlp", "predicted:jacobian"):
        assert name in step0


def test_resume_reuses_finished_stages(quick_run: Path, run_cli, monkeypatch) -> None:
    before = json.loads((quick_run / "claims.json").read_text())

    def fail(*args, **kwargs):
        raise AssertionError("a finished stage was recomputed")

    monkeypatch.setattr(core, "measure_stage", fail)
    code, _, err = run_cli("reproduce", "--quick", *TINY, "--out", quick_run)
    assert code == 0, err
    assert json.loads((quick_run / "claims.json").read_text()) == before
    record = json.loads((quick_run / "reproduce.json").read_text())
    assert record["metadata"]["stages"]["computed"] == []
    assert len(record["metadata"]["stages"]["reused"]) == 4


def test_interrupted_run_keeps_what_it_finished(tmp_path: Path, run_cli, monkeypatch) -> None:
    real = core.measure_stage
    calls: list[tuple] = []

    def interrupt_on_third(*args, **kwargs):
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "measure_stage", interrupt_on_third)
    code, out, _ = run_cli("reproduce", *TINY, "--out", tmp_path)
    assert code != 0 and "run the same command again to resume" in " ".join(out.split())
    assert len(list((tmp_path / "stages").iterdir())) == 2
    monkeypatch.setattr(core, "measure_stage", real)
    code, _, err = run_cli("reproduce", *TINY, "--out", tmp_path)
    assert code == 0, err
    record = json.loads((tmp_path / "reproduce.json").read_text())
    assert len(record["metadata"]["stages"]["reused"]) == 2
    assert len(record["metadata"]["stages"]["computed"]) == 2


def test_training_section_and_its_claims(run_cli, tmp_path) -> None:
    args = [
        "--models",
        "tiny-gpt2",
        "--length",
        "16",
        "--seeds",
        "1",
        "--samples",
        "1",
        "--probes",
        "1",
        "--train-preset",
        "micro",
        "--train-steps",
        "12",
        "--train-seeds",
        "2",
        "--behaviour-steps",
        "0",
        "--dose",
        "off",
        "--checkpoints",
        "off",
        "--real-behaviour",
        "off",
    ]
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path)
    assert code == 0, err
    record = json.loads((tmp_path / "reproduce.json").read_text())
    table = [row for s in record["training"]["seeds"] for row in s["table"]]
    assert [(row["seed"], row["step"]) for row in table] == [
        (seed, step) for seed in (0, 1) for step in (0, 10, 12)
    ]
    # two independent runs: different weights, so different numbers at the same step
    assert table[0]["log10 peak/valley"] != table[3]["log10 peak/valley"]
    assert {"W1 vs predicted theory (jacobian)", "learning signal vs rho: W1"} <= set(table[0])
    empty = [(row["step"], k) for row in table for k, v in row.items() if v is None]
    assert empty == []  # every cell of the training table is filled
    html = (tmp_path / "report.html").read_text()
    training_html = html[html.index("<h2>Training dynamics</h2>") :]
    training_html = training_html[: training_html.index("</table>")]
    assert "<td>\u2014</td>" not in training_html  # the report's mark for a missing value
    claims = record["claims"][-2:]
    assert "valley" in claims[0]["claim"].lower()
    # pooled over the two seeds: each seed's verdict is named, with the interval
    assert "seed 0:" in claims[0]["ours"] and "seed 1:" in claims[0]["ours"]
    assert "(2 seeds)" in claims[1]["ours"]
    for seed in (0, 1):
        dynamics = json.loads((tmp_path / "train" / f"seed-{seed}" / "dynamics.json").read_text())
        assert dynamics["complete"] is True and dynamics["config"]["seed"] == seed
    assert "Training dynamics" in (tmp_path / "report.html").read_text()
    # the claims are judged from the saved dynamics, not from what a stage concluded: a
    # stage's evidence written by other rules (here: made up) is judged again on resume
    stage = tmp_path / "stages" / "train-seed0.json"
    saved = json.loads(stage.read_text())
    saved["result"]["evidence"]["log10_growth"] = 99.0
    stage.write_text(json.dumps(saved))
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path)
    assert code == 0, err
    again = json.loads((tmp_path / "reproduce.json").read_text())
    assert again["metadata"]["stages"]["computed"] == []
    assert again["claims"][-2:] == claims


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--quick", "--full"], "at most one of --quick and --full"),
        (["--seeds", "0"], "--seeds must be positive, got 0"),
        (["--train-steps", "-3"], "--train-steps must be positive, got -3"),
        (["--models", " , "], "--models is empty"),
        (["--models", "tiny-gpt2,no-such-model", "--length", "16"], "no-such-model"),
        (["--models", "tiny-gpt2", "--train-preset", "huge"], "--train-preset 'huge' unknown"),
        (["--models", "tiny-qwen2,tiny-gpt2", "--length", "200"], "maximum 128 of tiny-gpt2"),
        (["--models", "tiny-gpt2", "--device", "tpu"], "--device 'tpu' is not a device"),
        (["--behaviour-preset", "huge"], "--behaviour-preset 'huge' unknown"),
        (["--behaviour-steps", "-1"], "--behaviour-steps must be positive, got -1"),
        (["--train-seeds", "0"], "--train-seeds must be positive, got 0"),
        (["--behaviour-seeds", "0"], "--behaviour-seeds must be positive, got 0"),
    ],
)
def test_bad_input_is_one_line(run_cli, tmp_path, args, message) -> None:
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path)
    assert code == 2
    assert message in err.replace("\n", " ")
    assert "Traceback" not in err
    assert not list((tmp_path / "stages").glob("*.json"))  # refused before any work


def test_compare_on_the_per_seed_files_scores_what_the_report_scores(
    quick_run: Path, tmp_path: Path, run_cli
) -> None:
    """A user who re-checks the report's headline from its saved files gets the same
    candidates (the MLP and forward-ratio predictions included) and the same numbers."""
    for model in ("tiny-gpt2", "tiny-qwen2"):
        files = [quick_run / model / f"seed-{s}" / "measure.json" for s in (0, 1)]
        args = [a for f in files for a in ("--measured", str(f))]
        code, _, err = run_cli("compare", *args, "--predict", "--out", tmp_path / model)
        assert code == 0, err
        theirs = json.loads((tmp_path / model / "compare.json").read_text())["candidates"]
        record = json.loads((quick_run / "reproduce.json").read_text())
        ours = record["models"][model]["scorecard"]["candidates"]
        assert set(theirs) == set(ours)
        assert {"predicted:positional-mlp", "predicted:jacobian-forward"} <= set(ours)
        for name, c in theirs.items():
            assert c["metrics"]["wasserstein1"] == pytest.approx(
                ours[name]["metrics"]["wasserstein1"], rel=1e-9
            ), (model, name)
            held = c["out_of_sample"]["metrics"]["wasserstein1"]["mean"]
            want = ours[name]["out_of_sample"]["metrics"]["wasserstein1"]["mean"]
            assert held == pytest.approx(want, rel=1e-9), (model, name)


def test_behaviour_section_pools_its_seeds(run_cli, tmp_path) -> None:
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += ["--train-steps", "0", "--behaviour-preset", "retrieval-micro"]
    args += [
        "--behaviour-seeds",
        "2",
        "--behaviour-steps",
        "4",
        "--dose",
        "off",
        "--checkpoints",
        "off",
        "--real-behaviour",
        "off",
    ]
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path)
    assert code == 0, err
    record = json.loads((tmp_path / "reproduce.json").read_text())
    seeds = record["behaviour"]["seeds"]
    assert [s["seed"] for s in seeds] == [0, 1]
    for s in seeds:  # each seed's summary is its own run's retrieval.json, reduced
        run = json.loads(
            (tmp_path / "behaviour" / f"seed-{s['seed']}" / "retrieval.json").read_text()
        )
        assert run["config"]["train"]["seed"] == s["seed"]
        last = run["checkpoints"][-1]
        assert s["checkpoints"][-1]["correct"] == [p["correct"] for p in last["positions"]]
        assert s["checkpoints"][-1]["record_influence"] == last["record_influence"]
    # the pooled row sums the seeds' counts
    final = [s["checkpoints"][-1] for s in seeds]
    pooled = [
        (a + b) / (m + k)
        for a, b, m, k in zip(
            final[0]["correct"], final[1]["correct"], final[0]["n"], final[1]["n"], strict=True
        )
    ]
    row = record["behaviour"]["table"][-1]
    assert row["accuracy by gold index (pooled)"] == " ".join(f"{p:.2f}" for p in pooled)
    cells = [v for row in record["behaviour"]["table"] for v in row.values()]
    assert all(v is not None and v != "" for v in cells)  # every cell filled
    claim = record["claims"][-1]
    assert claim["claim"] == "The structural valley predicts the behavioural valley"
    assert "Behaviour: retrieval accuracy by gold index" in (tmp_path / "report.html").read_text()
    assert (tmp_path / "figures" / "behaviour.png").is_file()
