"""Inference-time remedies on a model that ``lostmid retrieve`` accepts."""

from __future__ import annotations

import json
from pathlib import Path

from lostmid.behaviour.tasks import kv_example
from lostmid.remedies import RemediesConfig, run_remedies


def test_query_aware_scores_the_same_items_with_the_key_also_before_the_data(
    tmp_path: Path,
) -> None:
    config = RemediesConfig(
        remedies=("query-aware",),
        model="tiny-qwen2",
        tokenizer="bytes",
        key_chars=2,
        pairs=3,
        examples=4,
        seeds=2,
    )
    result = run_remedies(config, out=tmp_path)
    names = [(r.name, r.kind) for r in result.remedies]
    assert names == [("baseline", "inference"), ("query-aware", "inference")]
    document = json.loads((tmp_path / "remedies.json").read_text())
    assert [s for s in document["metadata"]["stages"]["computed"] if s.startswith("train")] == []
    for seed in (0, 1):
        plain = json.loads(
            (tmp_path / "stages" / f"inference-baseline-seed{seed}.json").read_text()
        )
        aware = json.loads(
            (tmp_path / "stages" / f"inference-query-aware-seed{seed}.json").read_text()
        )
        plain, aware = plain["result"], aware["result"]
        key = kv_example(seed=seed, index=0, pairs=3, gold_index=0, key_chars=2).key
        # byte tokens: exactly the added 'Key: "kk"\n\n' more per prompt
        assert aware["prompt_tokens"] - plain["prompt_tokens"] == len(f'Key: "{key}"\n\n')
        assert plain["positions"] == aware["positions"] == [0, 1, 2]
        assert plain["n"] == [4, 4, 4] and aware["forward_passes"] == 1
        assert plain["parameters"] == aware["parameters"]
    record = document["remedies"][1]
    assert record["name"] == "query-aware" and record["extra_forward_passes"] == 0
    assert record["difference_to_baseline"] is not None and record["verdict"] is not None
