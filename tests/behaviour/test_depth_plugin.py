"""A task placed by depth is one plug-in too: a depth task whose name says nothing of
needles (``beacon``), written and registered here alone, runs through ``retrieve``
(positions are depths), its calibration (its own knob), the lm-eval export, and the
inference remedies (query-aware included), with no other edit; a task that declares
no inference remedies is refused by ``remedies`` in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.tasks import registry
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.behaviour.tasks.needles import needles_example
from lostmid.behaviour.tasks.plugin import DepthTask, TokenCounter
from lostmid.errors import UserError


def _generate(
    options: Any, index: int, depth: int, length: int, count: TokenCounter
) -> RetrievalExample:
    example = needles_example(
        seed=options.seed,
        index=index,
        depth=depth,
        length=length,
        variant="niah-multikey",
        distractors=options.distractors or 0,
        count_tokens=count,
        query_aware=options.query_aware,
    )
    return replace(example, task="beacon")


BEACON = DepthTask(
    name="beacon",
    summary="a keyed number among other keyed numbers, at a depth of a filler text",
    generate=_generate,
    knob="distractors",
    ladder=(0, 1, 2),
)


@pytest.fixture
def beacon(monkeypatch: pytest.MonkeyPatch) -> DepthTask:
    monkeypatch.setitem(registry.DEPTH_TASKS, "beacon", BEACON)
    return BEACON


def test_a_depth_task_runs_through_retrieve_calibration_and_export(
    beacon: DepthTask, chat_model_dir: Path, tmp_path: Path, run_cli
) -> None:
    assert registry.is_depth_task("beacon") and "beacon" in registry.inference_tasks()
    export = tmp_path / "lm-eval"
    code, _, err = run_cli(
        "retrieve", "--model", chat_model_dir, "--task", "beacon", "--length", "400",
        "--positions", "3", "--examples", "2", "--passes", "generate", "--calibrate",
        "--pilot-examples", "2", "--knob-values", "0,1", "--query-aware",
        "--export-lm-eval", export, "--out", tmp_path / "r",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads((tmp_path / "r" / "retrieve.json").read_text())
    assert [p["depth"] for p in result["positions"]] == [0, 50, 100]  # a depth axis
    assert result["calibration"]["knob"] == "distractors"
    assert result["calibration"]["chosen"] in (0, 1)
    docs = [json.loads(line) for line in (export / "lostmid_beacon.jsonl").read_text().splitlines()]
    assert len(docs) == 6 and {d["depth"] for d in docs} == {0, 50, 100}


def test_a_depth_task_gets_the_inference_remedies(
    beacon: DepthTask, chat_model_dir: Path, tmp_path: Path
) -> None:
    from lostmid.remedies.config import RemediesConfig
    from lostmid.remedies.run import run_remedies

    config = RemediesConfig(
        remedies=("query-aware", "calibrate"),
        model=str(chat_model_dir),
        task="beacon",
        length=600,
        distractors=1,
        examples=2,
        seeds=1,
    )
    run_remedies(config, out=tmp_path)
    stages = tmp_path / "stages"
    plain = json.loads((stages / "inference-baseline-seed0.json").read_text())["result"]
    aware = json.loads((stages / "inference-query-aware-seed0.json").read_text())["result"]
    assert plain["positions"] == [0, 25, 50, 75, 100]  # depths, as for RULER's needles
    assert plain["items"] == aware["items"]  # the same items, paired


def test_a_task_decides_what_applies_to_it(beacon: DepthTask, monkeypatch) -> None:
    RetrieveConfig(model="tiny-gpt2", task="beacon", query_aware=True)  # no UserError
    monkeypatch.setitem(
        registry.DEPTH_TASKS, "beacon", replace(BEACON, query_aware=False, inference_remedies=False)
    )
    with pytest.raises(UserError, match="--query-aware does not apply to --task beacon"):
        RetrieveConfig(model="tiny-gpt2", task="beacon", query_aware=True)
    from lostmid.remedies.config import RemediesConfig

    with pytest.raises(UserError, match="--task"):
        RemediesConfig(task="beacon")
    assert "beacon" not in registry.inference_tasks()
