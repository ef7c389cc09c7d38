"""Crash safety: SIGKILL a real run at random points, rerun it, and get exactly what an
uninterrupted run writes (tests/faults/harness.py). Micro scale, a few seconds per
command; ``benchmarks/bench_faults.py`` runs the same at full scale."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import KillReport, survive_kills  # tests/faults is on sys.path (conftest)

MICRO = {
    "reproduce": [
        "reproduce",
        "--quick",
        "--models",
        "tiny-qwen2",
        "--length",
        "32",
        "--seeds",
        "2",
        "--train-steps",
        "0",
        "--behaviour-preset",
        "retrieval-micro",
        "--behaviour-steps",
        "4",
        "--behaviour-seeds",
        "2",
        "--dose",
        "off",
        "--checkpoints",
        "off",  # its stages are retrieval training runs, killed under remedies here
        "--real-behaviour",
        "off",
    ],
    "remedies": [
        "remedies",
        "--quick",
        "--preset",
        "retrieval-micro",
        "--steps",
        "4",
        "--seeds",
        "2",
        "--remedies",
        "loss-weight",
        "--examples",
        "2",
    ],
    "sweep": [
        "sweep",
        "--task",
        "measure",
        "--models",
        "tiny-qwen2,tiny-gpt2",
        "--seeds",
        "0-1",
        "--lengths",
        "16",
        "--param",
        "samples=1",
    ],
    "train": ["train", "--preset", "micro", "--steps", "40"],
}


def command(name: str) -> tuple[object, object]:
    """(argv of the first run, argv of every rerun) for ``name``, as functions of --out."""
    args = MICRO[name]
    if name != "train":
        return (lambda out: [*args, "--out", str(out)]), None

    def rerun(out: Path) -> list[str]:
        # what the one-line error of a rerun says to do: resume from the saved state,
        # or start again when the run was killed before its first one
        flag = "--resume" if (out / "resume.pt").is_file() else "--overwrite"
        return [*args, "--out", str(out), flag]

    return (lambda out: [*args, "--out", str(out)]), rerun


def check(report: KillReport) -> None:
    assert report.final_code == 0
    assert report.kills >= 1, f"no kill landed: {report}"
    assert report.unreadable == [], "a partial JSON file was left under a real name"
    assert report.stale_temporaries == [], "temporaries of killed writers were left"
    assert report.differences == [], "\n".join(report.differences[:20])


@pytest.fixture(autouse=True)
def parallel_region_run_before_fork() -> None:
    """The state CI's full suite leaves: this process has run torch on two threads (an
    OpenMP team exists) before the harness forks; a child that then ran on two threads
    hung, whatever the test order (tests/faults/harness.py, Run)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    x = torch.randn(256, 256)
    for _ in range(3):
        x = torch.tanh(x @ x)
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", sorted(MICRO))
def test_killed_runs_resume_to_the_uninterrupted_result(name: str, tmp_path: Path) -> None:
    first, rerun = command(name)
    report = survive_kills(name, first, tmp_path, kills=2, seed=21, rerun_argv=rerun)
    check(report)


def test_the_comparison_sees_one_ulp_and_ignores_only_provenance(tmp_path: Path) -> None:
    """What "identical" means: a float one ulp away is a difference; timings, metadata,
    done-vs-reused and the output folder's own path are not."""
    import json

    import numpy as np
    from harness import differences, snapshot

    x = 0.1 + 0.2
    base = {"influence": [x, 1.0], "status": "done", "file": "A/units/u", "seconds": 1.0}
    same = {"influence": [x, 1.0], "status": "reused", "file": "B/units/u", "seconds": 9.0}
    moved = {**same, "influence": [float(np.nextafter(x, 1.0)), 1.0]}
    for name, doc in (("A", base), ("B", same), ("C", moved)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "r.json").write_text(json.dumps({**doc, "metadata": {"t": name}}))
    outs = [str(tmp_path / n) for n in "ABC"]
    a, b, c = (snapshot(tmp_path / n, outs) for n in "ABC")
    assert a["r.json"]["file"] == "A/units/u"  # relative text is kept as written
    base["file"] = same["file"]
    (tmp_path / "A" / "r.json").write_text(json.dumps(base))
    a = snapshot(tmp_path / "A", outs)
    assert differences(a, b) == []
    assert differences(a, c) == [f"/r.json/influence[0]: {x!r} != {float(np.nextafter(x, 1.0))!r}"]
