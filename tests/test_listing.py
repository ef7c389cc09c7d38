"""``lostmid list TOPIC`` and its functions (lostmid.listing): each topic reads its
registry, so what it lists is what the commands take."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lostmid import listing


@pytest.mark.parametrize("topic", list(listing.TOPICS))
def test_every_row_of_a_topic_has_the_same_keys_and_no_empty_cell(topic: str) -> None:
    rows = listing.listing(topic)
    assert rows and all(list(row) == list(rows[0]) for row in rows)
    assert all(isinstance(v, str) and v.strip() for row in rows for v in row.values())


def test_list_tasks_names_every_task_retrieve_takes_the_needles_included(run_cli) -> None:
    from lostmid.behaviour.tasks.registry import DEPTH_TASKS, task_names

    code, out, err = run_cli("list", "tasks", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["task"] for r in rows] == list(task_names())
    needles = {r["task"] for r in rows if r["placed by"] == "depth in a haystack"}
    assert needles == set(DEPTH_TASKS) >= {"niah", "niah-multikey", "niah-multivalue"}
    code, table, _ = run_cli("list", "tasks")  # the table names them too
    assert code == 0 and all(name in table for name in task_names())


def test_list_models_names_the_registry_checkpoints_with_their_lm_eval_folders(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lostmid.models.checkpoints import CHECKPOINTS
    from lostmid.models.presets import MODEL_PRESETS

    monkeypatch.setenv("LOSTMID_CACHE", str(tmp_path))
    code, out, err = run_cli("list", "models", "--json")
    assert code == 0, err
    rows = {r["model"]: r for r in json.loads(out)}
    assert {"smollm2-135m", "gemma3-270m"} <= set(rows)
    assert set(rows) == set(CHECKPOINTS) | set(MODEL_PRESETS)
    for name, checkpoint in CHECKPOINTS.items():
        folder = tmp_path / "gguf" / checkpoint.sha256[:16]  # where a first load writes it
        assert f"folder for lm-eval: {folder} (made on first load)" in rows[name]["files"]
    folder.mkdir(parents=True)  # once made, the folder is named as it is
    assert f"lm-eval: {folder};" in listing.models()[1]["files"] + ";"
    assert rows["tiny-gpt2"]["kind"].startswith("preset")


def test_list_sections_follow_the_report_and_say_which_diagnose_runs() -> None:
    from lostmid.reproduce.diagnose import DIAGNOSE_SCALES
    from lostmid.reproduce.sections import SECTIONS

    rows = listing.sections()
    assert [r["section"] for r in rows][1:] == [s.key for s in SECTIONS]
    diagnosed = {r["section"] for r in rows if r["diagnose"] == "yes"}
    assert diagnosed == set(DIAGNOSE_SCALES["quick"])
    assert "``" not in json.dumps(rows) and ":func:" not in json.dumps(rows)


def test_list_scales_and_remedies_read_their_registries() -> None:
    import lostmid.remedies.catalogue  # noqa: F401
    from lostmid.remedies.base import REGISTRY
    from lostmid.reproduce.config import SCALES

    assert [r["scale"] for r in listing.scales()] == list(SCALES)
    assert "L = 128" in listing.scales()[0]["reproduce"]
    kinds = {r["remedy"]: r["kind"] for r in listing.remedies()}
    assert kinds == {name: cls.kind for name, cls in REGISTRY.items()}
    assert kinds["ms-poe"] == "inference"


def test_an_unknown_topic_is_one_line_naming_the_topics(run_cli) -> None:
    code, _, err = run_cli("list", "checkpoints")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "TOPIC 'checkpoints' unknown" in err and "tasks, remedies, models" in err
