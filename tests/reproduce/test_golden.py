"""Every number of a small reproduce run stays what it was: its claims.json against the
copy saved in tests/reproduce/data (a refactor that moves a rule must not move a number).

When a change is meant to change a claim, regenerate the copy with
``LOSTMID_UPDATE_GOLDEN=1 pytest tests/reproduce/test_golden.py`` and say why in the
commit message."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_args import SECTIONS_OFF

GOLDEN = Path(__file__).parent / "data" / "claims-tiny.json"
ARGS = ["--models", "tiny-gpt2,tiny-qwen2", "--length", "24", "--seeds", "2", "--samples", "2"]
ARGS += ["--probes", "1", *SECTIONS_OFF, "--jobs", "1"]


def test_a_small_run_makes_the_saved_claims(tmp_path: Path, run_cli) -> None:
    code, _, err = run_cli("reproduce", "--quick", *ARGS, "--out", tmp_path / "r")
    assert code == 0, err
    claims = json.loads((tmp_path / "r" / "claims.json").read_text())
    if os.environ.get("LOSTMID_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(claims, indent=1) + "\n")
    # each seed's measurement is kept, compact: the core's claims judged again from it
    from lostmid.reproduce.analysis import analyse_model
    from lostmid.reproduce.claims import model_claims
    from lostmid.reproduce.stages import read_at_init_folder

    again = []
    for model in ("tiny-gpt2", "tiny-qwen2"):
        runs = read_at_init_folder(tmp_path / "r" / model)
        assert len(runs) == 2
        again += [c.record() for c in model_claims(analyse_model(model, runs))]
    assert again == claims[: len(again)]
    saved = json.loads(GOLDEN.read_text())
    assert [c["claim"] for c in claims] == [c["claim"] for c in saved]
    for new, old in zip(claims, saved, strict=True):
        assert new == old, f"claim {old['claim']!r} changed"
