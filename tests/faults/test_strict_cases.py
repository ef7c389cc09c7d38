"""The fourth trial's classes (:mod:`strict_cases`), every generated case in-process:
each refusal is one line on stderr with exit 2 and no numpy warning, nothing is written
under its ``--out``, and another command's run keeps every file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from strict_cases import other_runs, strict_cases  # noqa: E402

GROUPS = ("score", "compare", "retrieve", "train", "theory")


@pytest.mark.parametrize("group", GROUPS)
def test_every_case_of_the_fourth_trial_ends_as_it_must(
    group: str, hostile: dict[str, Path], run_cli, tmp_path: Path
) -> None:
    import warnings

    cases = [c for c in strict_cases(tmp_path / "cases", hostile) if c[0].startswith(group)]
    assert len(cases) >= 3  # generated: every format, field, task and folder of its class
    wrong = []
    for i, (label, argv, env, expect) in enumerate(cases):
        assert not env
        out = [] if "--out" in argv else ["--out", str(tmp_path / f"o{i}")]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a numpy overflow warning fails the case
            code, stdout, err = run_cli(*argv, *out)
        lines = [line for line in err.splitlines() if line.strip()]
        if expect == "run":
            if code != 0:
                wrong.append(f"{label}: must run, exit {code}: {err.strip()[-300:]}")
        elif code != 2 or len(lines) != 1 or "Traceback" in stdout + err:
            wrong.append(f"{label}: exit {code}: {err.strip()[-300:]}")
        elif (tmp_path / f"o{i}").exists() and any((tmp_path / f"o{i}").iterdir()):
            wrong.append(f"{label}: wrote {sorted((tmp_path / f'o{i}').iterdir())}")
    assert not wrong, "\n".join(wrong)
    if group == "train":  # each other command's run keeps its files, byte for byte
        folders = sorted((tmp_path / "cases" / "runs").iterdir())
        assert [f.name for f in folders] == sorted(other_runs(tmp_path / "fresh"))
        for folder in folders:
            kept = (folder / "checkpoints" / "study.json").read_text()
            assert kept == '{"kept": true}', folder.name
