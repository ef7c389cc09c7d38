"""``lostmid retrieve`` end to end: files, bookkeeping, refusals and one-line errors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.tasks import make_examples
from lostmid.errors import UserError

Cli = Callable[..., tuple[int, str, str]]


def test_kv_run_writes_consistent_results(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    out, export = tmp_path / "r", tmp_path / "ex.jsonl"
    code, stdout, stderr = run_cli(
        "retrieve", "--model", bpe_model_dir, "--task", "kv", "--pairs", "6", "--key-chars", "4",
        "--gold-index", "0,3,5", "--examples", "4", "--export", export, "--seed", "3",
        "--batch-size", "5", "--out", out,
    )  # fmt: skip
    assert code == 0, stderr
    result = json.loads((out / "retrieve.json").read_text())
    assert {"positions", "summary", "by_metric", "config", "metadata"} <= set(result)
    assert result["metric"] == "generate" and set(result["by_metric"]) == {"generate", "teacher"}
    assert [p["index"] for p in result["positions"]] == [0, 3, 5]
    assert result["metadata"]["seed"] == 3 and result["config"]["resolved_positions"] == [0, 3, 5]
    # the same 4 items at every gold index: the contrasts are paired by item
    assert {result["summary"][k]["interval"] for k in ("gap", "primacy", "recency")} == {"paired"}
    # the per-position numbers are the per-example predictions, counted once each
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    for metric, flag in (("generate", "generate_correct"), ("teacher", "teacher_correct")):
        for p in result["by_metric"][metric]["positions"]:
            mine = [r for r in rows if r["position"] == p["index"]]
            assert p["n"] == len(mine) == 4
            assert p["correct"] == sum(r[flag] for r in mine)
            assert p["mean_logprob"] == pytest.approx(sum(r["logprob"] for r in mine) / 4)
    # the export holds exactly the examples that were scored
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    expected = make_examples("kv", positions=(0, 3, 5), examples=4, seed=3, pairs=6, key_chars=4)
    assert exported == [e.record() for e in expected]
    assert [r["value"] for r in rows] == [e.value for e in expected]
    assert (out / "retrieve.png").stat().st_size > 1000
    assert "primacy" in stdout


def test_niah_and_mqar_runs(bpe_model_dir: Path, tmp_path: Path, run_cli: Cli) -> None:
    code, _, stderr = run_cli(
        "retrieve", "--model", bpe_model_dir, "--task", "niah", "--length", "500",
        "--depth", "0,100", "--examples", "2", "--passes", "teacher", "--out", tmp_path / "n",
    )  # fmt: skip
    assert code == 0, stderr
    result = json.loads((tmp_path / "n" / "retrieve.json").read_text())
    assert [p["depth"] for p in result["positions"]] == [0, 100]
    assert result["metric"] == "teacher"
    code, _, stderr = run_cli(
        "retrieve", "--model", "tiny-gpt2", "--task", "mqar", "--pairs", "4", "--vocab", "16",
        "--positions", "2", "--examples", "3", "--out", tmp_path / "m",
    )  # fmt: skip
    assert code == 0, stderr
    result = json.loads((tmp_path / "m" / "retrieve.json").read_text())
    assert [p["index"] for p in result["positions"]] == [0, 3] and result["tokenizer"] is None


def test_rerun_resumes_and_refusals(bpe_model_dir: Path, tmp_path: Path, run_cli: Cli) -> None:
    args = ("retrieve", "--model", bpe_model_dir, "--pairs", "3", "--key-chars", "2",
            "--examples", "1", "--passes", "teacher")  # fmt: skip
    code, stdout, _ = run_cli(*args, "--out", tmp_path / "a")
    assert code == 0 and "reused" not in stdout
    first = json.loads((tmp_path / "a" / "retrieve.json").read_text())
    assert (
        len(first["metadata"]["stages"]["computed"]) == 3
        and first["metadata"]["stages"]["reused"] == []
    )
    # the same command again: every cell reused, the same numbers
    code, stdout, _ = run_cli(*args, "--out", tmp_path / "a")
    again = json.loads((tmp_path / "a" / "retrieve.json").read_text())
    assert (
        code == 0 and "3 stages reused" in stdout and again["metadata"]["stages"]["computed"] == []
    )
    assert again["cells"] == first["cells"]
    # another configuration in the same --out: refused, nothing replaced
    code, _, err = run_cli(*args[:-4], "--examples", "2", "--passes", "teacher",
                           "--out", tmp_path / "a")  # fmt: skip
    assert code == 2 and "holds a retrieve run with another configuration (examples: 1" in err
    assert json.loads((tmp_path / "a" / "retrieve.json").read_text()) == again
    assert run_cli(*args, "--out", tmp_path / "a", "--overwrite")[0] == 0
    (tmp_path / "x.jsonl").write_text("mine\n")
    code, _, err = run_cli(*args, "--out", tmp_path / "b", "--export", tmp_path / "x.jsonl")
    assert code == 2 and "x.jsonl already exists" in err
    assert (tmp_path / "x.jsonl").read_text() == "mine\n"
    code, _, err = run_cli("retrieve", "--model", "tiny-qwen2", "--out", tmp_path / "c")
    assert code == 2 and "has no tokenizer" in err and len(err.strip().splitlines()) == 1


def test_a_half_done_grid_resumes_the_missing_cells(
    bpe_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped after two cells: the rerun computes only the other three, and the
    result equals an uninterrupted run's."""
    from lostmid.behaviour.retrieve import run as retrieve_run

    config = RetrieveConfig(model=str(bpe_model_dir), pairs=4, key_chars=2, examples=2,
                            positions=4, passes="teacher")  # fmt: skip
    real = retrieve_run.score_members
    calls: list[int] = []

    def stop_after_two(*args: object, **kwargs: object) -> object:
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(retrieve_run, "score_members", stop_after_two)
    with pytest.raises(KeyboardInterrupt):
        retrieve_run.run_retrieve(config, out=tmp_path / "r")
    assert len(list((tmp_path / "r" / "stages").glob("cell-*.json"))) == 2
    monkeypatch.setattr(retrieve_run, "score_members", real)
    resumed = retrieve_run.run_retrieve(config, out=tmp_path / "r")
    whole = retrieve_run.run_retrieve(config, out=tmp_path / "w")
    assert resumed.cells == whole.cells
    saved = json.loads((tmp_path / "r" / "retrieve.json").read_text())
    assert (
        len(saved["metadata"]["stages"]["reused"]) == 2
        and len(saved["metadata"]["stages"]["computed"]) == 2
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"task": "kv", "length": 100}, "--length applies to needle tasks (niah*)"),
        ({"gold_index": (0, 75)}, "--gold-index must be in 0..74"),
        ({"gold_index": (0,), "positions": 3}, "at most one of --gold-index and --positions"),
        ({"task": "niah", "gold_index": (1,)}, "places its needle by --depth"),
        ({"task": "niah", "depth": (101,)}, "--depth must be a percentage in 0..100"),
        ({"scoring": "beam"}, "--scoring 'beam' unknown"),
        ({"examples": 0}, "--examples must be positive"),
        ({"task": "mqar", "pairs": 40}, "--vocab must be even with at least 2 * pairs = 80"),
        ({"style": "compact", "query_aware": True}, "--query-aware does not apply to --task kv"),
        ({"gold_index": (0, 10, 10)}, "--gold-index gives 10 more than once; give each"),
        ({"task": "niah", "depth": (50, 0, 50)}, "--depth gives 50 more than once"),
        # positions past what the design can place are refused, not recorded
        *[
            ({"task": task, "pairs": 4, "positions": n}, f"--positions {n}: --pairs 4 gives 4")
            for task in ("kv", "mqar")
            for n in (5, 1_000_000_000)
        ],
        *[
            ({"task": task, "positions": n}, f"--positions {n}: a needle task places")
            for task in ("niah", "niah-multikey")
            for n in (102, 1_000_000_000)
        ],
    ],
)
def test_config_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        RetrieveConfig(model="m", **kwargs)


def test_bad_gold_index_list_is_one_line(run_cli: Cli, tmp_path: Path) -> None:
    code, _, err = run_cli("retrieve", "--model", "m", "--gold-index", "a,b", "--out", tmp_path)
    assert code == 2 and "comma-separated whole numbers" in err


@pytest.mark.parametrize(
    ("model", "task_args", "offload"),
    [
        ("bpe", ["--task", "kv", "--pairs", "4", "--key-chars", "3"], "model.layers.1"),
        ("tiny-gpt2", ["--task", "mqar", "--pairs", "4", "--vocab", "16"], "transformer.h.1"),
    ],
)
def test_a_model_offloaded_by_a_device_map_scores_as_the_whole_one(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli, model: str, task_args: list, offload: str
) -> None:
    """A block's weights on disk (loaded for each forward, as measure's device-map test
    does), on the pretrained path (weights loaded straight to their place: the kv model
    with its tokenizer) and the built one (dispatched after building: mqar ids)."""
    spec = bpe_model_dir if model == "bpe" else model
    args = ["retrieve", "--model", spec, *task_args, "--positions", "2", "--examples", "3"]
    assert run_cli(*args, "--out", tmp_path / "whole")[0] == 0
    device_map = json.dumps({offload: "disk", "": "cpu"})
    code, _, err = run_cli(*args, "--device-map", device_map, "--out", tmp_path / "split")
    assert code == 0, err
    split = json.loads((tmp_path / "split" / "retrieve.json").read_text())
    assert split["model"]["device_map"][offload] == "disk"
    rows = {}
    for name in ("whole", "split"):
        text = (tmp_path / name / "predictions.jsonl").read_text()
        rows[name] = [json.loads(line) for line in text.splitlines()]
    assert len(rows["split"]) == len(rows["whole"]) == 6
    for a, b in zip(rows["split"], rows["whole"], strict=True):
        assert a["logprob"] == pytest.approx(b["logprob"], rel=1e-5, abs=1e-6)
        assert (a["generate_correct"], a["teacher_correct"], a["answer"]) == (
            b["generate_correct"],
            b["teacher_correct"],
            b["answer"],
        )


def test_a_teacher_readout_below_greedy_is_named_yes_no_and_undecided() -> None:
    """The note fires only when the two readouts' intervals are apart, teacher below."""
    from types import SimpleNamespace as NS

    from lostmid.behaviour.retrieve.result import readout_disagreement
    from lostmid.stats import wilson_interval

    def scores(metric: str, correct: int, n: int = 20) -> NS:
        low, high = wilson_interval(correct, n)
        return NS(
            metric=metric, summary=NS(mean_accuracy=correct / n, mean_ci_low=low, mean_ci_high=high)
        )

    (line,) = readout_disagreement([scores("generate", 20), scores("teacher", 0)])
    assert "teacher forcing reads 0.000 where greedy decoding reads 1.000" in line
    assert readout_disagreement([scores("generate", 12), scores("teacher", 10)]) == []  # overlap
    assert readout_disagreement([scores("generate", 0), scores("teacher", 20)]) == []  # other way
    assert readout_disagreement([scores("generate", 20)]) == []  # one readout


@pytest.mark.parametrize("passes", ["generate", "both"])
def test_progress_moves_inside_a_stage_and_counts_each_example_once(
    bpe_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passes: str
) -> None:
    """A log gets a line per decoded group, not per cell (a 4096-token cell of 20 examples
    is 13 minutes on one thread), and the count ends at the total, also when cells resume.
    Greedy decoding reads up to ``STEP_ROWS`` questions of several contexts a step; at
    one a step each example is a group of its own."""
    import io

    from rich.console import Console

    from lostmid.behaviour.decoding import shared
    from lostmid.behaviour.retrieve import run as retrieve_run
    from lostmid.runs.progress import progress

    monkeypatch.setattr(shared, "STEP_ROWS", 1)
    monkeypatch.setattr(
        retrieve_run, "_progress", lambda console: progress("retrieve", console=console, every=0.0)
    )
    config = RetrieveConfig(model=str(bpe_model_dir), pairs=4, key_chars=2, examples=3,
                            positions=2, passes=passes, batch_size=1)  # fmt: skip
    for attempt in range(2):  # the second run reuses both cells
        log = io.StringIO()
        retrieve_run.run_retrieve(config, out=tmp_path / "r", console=Console(file=log, width=200))
        counts = re.findall(r"retrieve: (\d+)/(\d+) done", log.getvalue())
        done = [int(k) for k, _ in counts]
        assert done[-1] == 6 and all(int(n) == 6 for _, n in counts)
        assert done == sorted(done)
        if attempt == 0:
            assert done[:3] == [1, 2, 3]  # one line per example inside the first cell


def test_the_lead_in_most_replies_share_yes_no_and_undecided() -> None:
    from lostmid.behaviour.decoding.prompts import shared_lead_in

    values = ["11", "22", "33", "44"]
    targets = [" " + v for v in values]
    colon = [f": {v}. more" for v in values]
    assert shared_lead_in(colon, targets, values) == (":", 4, 4)
    plain = [f" {v} and" for v in values]  # the target already starts where they do
    assert shared_lead_in(plain, targets, values) == ("", 4, 4)
    split = [": 11", ": 22", " is 33", " is 44"]  # half and half: no majority
    assert shared_lead_in(split, targets, values) == ("", 2, 4)
    assert shared_lead_in(["none", "here"], targets[:2], values[:2]) == ("", 0, 0)
    assert shared_lead_in([":\n11", ":\n22"], targets[:2], values[:2])[0] == ""  # two lines


def test_a_lead_in_extends_the_prompt_and_is_learnt_from_a_pilot(
    bpe_model_dir: Path, tmp_path: Path
) -> None:
    from lostmid.behaviour.retrieve import run as retrieve_run
    from lostmid.behaviour.retrieve.calibrate import PILOT_FIRST_ITEM

    base = dict(model=str(bpe_model_dir), pairs=4, key_chars=2, examples=2, positions=2)
    plain = retrieve_run.run_retrieve(RetrieveConfig(**base), out=tmp_path / "a")
    fixed = retrieve_run.run_retrieve(RetrieveConfig(**base, lead_in=":"), out=tmp_path / "b")
    a = (tmp_path / "a" / "prompt.txt").read_text()
    assert (tmp_path / "b" / "prompt.txt").read_text() == a + ":"
    assert plain.cells != fixed.cells  # scored after the lead-in
    learnt = RetrieveConfig(**base, lead_in="learn", pilot_examples=3)
    retrieve_run.run_retrieve(learnt, out=tmp_path / "c")
    saved = json.loads((tmp_path / "c" / "retrieve.json").read_text())
    lead = saved["lead_in"]
    assert lead["pilot_items"] == 3 and len(lead["replies"]) == 3
    assert saved["config"]["lead_in"] == "learn"
    assert saved["measured_config"].get("lead_in", "") == lead["text"]  # none: not recorded
    assert (tmp_path / "c" / "stages" / "pilot-lead-in.json").is_file()
    # pilot items (PILOT_FIRST_ITEM + i) are never measured
    rows = [json.loads(x) for x in (tmp_path / "c" / "predictions.jsonl").read_text().splitlines()]
    assert all(r["item"] < PILOT_FIRST_ITEM for r in rows)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lead_in": ":\n"}, r"^--lead-in ':\\n': give a short text on one line"),
        ({"lead_in": "x" * 17}, r"at most 16 characters"),
        ({"task": "mqar", "lead_in": ":"}, r"^--lead-in is for text prompts"),
    ],
)
def test_a_bad_lead_in_is_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        RetrieveConfig(model="tiny-qwen2", **kwargs)


@pytest.mark.parametrize("option", ["--lengths", "--length"])
@pytest.mark.parametrize("length", [257, 1_000_000_000])
def test_a_needle_longer_than_the_model_is_refused_before_any_haystack(
    run_cli: Cli, tmp_path: Path, option: str, length: int
) -> None:
    """tiny-qwen2 takes 256 positions: one line naming the option, before the haystack of
    a billion tokens is built (that took minutes)."""
    args = ["retrieve", "--model", "tiny-qwen2", "--tokenizer", "bytes", "--task", "niah"]
    one = ["--examples", "1", "--positions", "1"]  # small enough for the size check
    code, _, err = run_cli(*args, option, str(length), *one, "--out", tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{option} {length:,}: longer than the model takes (256 tokens)" in err
    assert not (tmp_path / "retrieve.json").exists()
