"""``lostmid score`` (lostmid.behaviour.formats.samples): logged samples of another tool read
back into accuracy by position, on constructed logs whose answer is known (a U, a flat
curve, an undecided one; per length cell), and every malformed log one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lostmid.behaviour.formats.samples import ScoreConfig, read_lm_eval_samples, score_rows
from lostmid.errors import UserError


def _log(path: Path, accuracy: dict[int, tuple[int, int]], length: int | None = 512) -> Path:
    """A samples file with ``correct`` of ``n`` right at each depth."""
    lines = []
    for depth, (correct, n) in accuracy.items():
        for item in range(n):
            doc = {"depth": depth, "gold_index": None, "length_cell": length, "item": item}
            lines.append(json.dumps({"doc": doc, "acc": 1.0 if item < correct else 0.0}))
    with path.open("a") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("accuracy", "shape"),
    [
        ({0: (38, 40), 50: (8, 40), 100: (36, 40)}, "U"),  # yes
        ({0: (1000, 2000), 50: (1000, 2000), 100: (1000, 2000)}, "flat"),  # no
        ({0: (3, 4), 50: (2, 4), 100: (3, 4)}, "undetermined"),  # too few to say
    ],
)
def test_the_shape_comes_out_each_way(tmp_path: Path, accuracy, shape) -> None:
    rows = read_lm_eval_samples(_log(tmp_path / "s.jsonl", accuracy))
    scored = score_rows(rows, margin=0.05)
    assert scored["shape"]["shape"] == shape
    assert [(p["depth"], p["correct"], p["n"]) for p in scored["positions"]] == [
        (d, c, n) for d, (c, n) in accuracy.items()
    ]
    first = scored["positions"][0]
    assert first["ci_low"] <= first["accuracy"] <= first["ci_high"]  # Wilson, around it


def test_length_cells_are_scored_apart_and_together(tmp_path: Path) -> None:
    path = _log(tmp_path / "s.jsonl", {0: (10, 10), 50: (0, 10), 100: (10, 10)}, 512)
    _log(path, {0: (5, 10), 50: (5, 10), 100: (5, 10)}, 2048)
    scored = score_rows(read_lm_eval_samples(path), margin=0.05)
    assert set(scored["by_length"]) == {"512", "2048"}
    assert scored["by_length"]["512"]["shape"]["shape"] == "U"
    assert [p["correct"] for p in scored["positions"]] == [15, 5, 15]  # pooled


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1: not valid JSON"),
        ('{"acc": 1}', "no 'doc' object"),
        ('{"doc": {"item": 0}, "acc": 1}', "no depth or gold_index"),
        ('{"doc": {"depth": 10}, "acc": 0.5}', r"expected 1 \(correct\) or 0"),
        ('{"doc": {"depth": 10}, "acc": true}', "no number under 'acc'"),
        ('{"doc": {"depth": 10}}', "no number under 'acc'"),
        ('{"doc": {"depth": -3}, "acc": 1}', "is not a position"),
        ('{"doc": {"depth": 1' + "0" * 5000 + '}, "acc": 1}', "more than 4,300 digits"),
        ('{"doc": {"depth": 0, "depth": 90}, "acc": 1}', "key 'depth' twice in one object"),
        ('{"doc": {"depth": 150}, "acc": 1}', r"depth = 150 is not a depth in % \(0-100\)"),
        ('{"doc": {"depth": 1000000000000}, "acc": 1}', "is not a depth in %"),
        ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
        ('{"doc": {"depth": 10, "item": 1}, "acc": 1, "doc_id": 7}\n' * 2, "the same sample"),
        ("", "no samples"),
    ],
)
def test_a_malformed_log_is_one_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UserError, match=message):
        read_lm_eval_samples(path)


def test_mixed_tasks_and_missing_files_are_refused(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"doc": {"depth": 0}, "acc": 1}\n{"doc": {"gold_index": 2}, "acc": 1}\n')
    with pytest.raises(UserError, match="mixed"):
        read_lm_eval_samples(path)
    code, _, err = run_cli("score", tmp_path / "nowhere.jsonl", "--out", tmp_path / "o")
    assert code == 2 and "no such file" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(UserError, match="--margin"):
        ScoreConfig(path, margin=1.5)


# -- RULER's prediction files ------------------------------------------------------------


def _ruler(path: Path, accuracy: dict[int, tuple[int, int]], length: int = 1024) -> Path:
    """RULER's pred/TASK.jsonl as its call_api.py writes it: ``correct`` of ``n`` right
    at each depth (a right prediction holds every reference, in another case)."""
    lines = []
    for depth, (correct, n) in accuracy.items():
        for item in range(n):
            outputs = [f"{item:07d}", "ABC"]
            pred = " " + " and ".join(outputs).lower() if item < correct else " 123 abc"
            others = {"depth": depth, "item": item, "length_cell": length}
            lines.append(
                json.dumps(
                    {"index": item, "pred": pred, "input": "...", "outputs": outputs}
                    | {"others": others, "truncation": -1, "length": length}
                )
            )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("accuracy", "shape"),
    [
        ({0: (38, 40), 50: (8, 40), 100: (36, 40)}, "U"),
        ({0: (1000, 2000), 50: (1000, 2000), 100: (1000, 2000)}, "flat"),
        ({0: (3, 4), 50: (2, 4), 100: (3, 4)}, "undetermined"),
    ],
)
def test_ruler_predictions_score_each_way(tmp_path: Path, accuracy, shape) -> None:
    from lostmid.behaviour.formats.samples import read_samples

    path = _ruler(tmp_path / "niah.jsonl", accuracy)
    config = ScoreConfig(samples=path)
    assert config.resolved_format() == "ruler"  # auto, from the first line
    scored = score_rows(read_samples(config), margin=0.05)
    assert scored["shape"]["shape"] == shape
    assert [(p["depth"], p["correct"], p["n"]) for p in scored["positions"]] == [
        (d, c, n) for d, (c, n) in accuracy.items()
    ]
    assert scored["summary"]["primacy"]["interval"] == "paired"  # the same items a depth


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"pred": 3, "outputs": ["1"]}', "no text under 'pred'"),
        ('{"pred": "1", "outputs": "1", "others": {"depth": 0}}', "non-empty list of strings"),
        ('{"pred": "1", "outputs": ["1"], "others": {}}', "no depth under 'others'"),
        ('{"pred": "1", "outputs": ["1"]}', "no depth under 'others'"),
        ('{"pred": "1", "outputs": ["1"], "others": {"depth": 150}}', "is not a depth"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_malformed_ruler_file_is_one_line(tmp_path: Path, line: str, message: str) -> None:
    from lostmid.behaviour.formats.samples import read_ruler_predictions

    path = tmp_path / "niah.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UserError, match=message):
        read_ruler_predictions(path)


def test_a_file_of_neither_format_and_metric_for_ruler_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"answer": 1}\n')
    with pytest.raises(UserError, match="neither lm-eval's logged samples"):
        ScoreConfig(samples=path).resolved_format()
    with pytest.raises(UserError, match="string_match_all"):
        ScoreConfig(samples=path, format="ruler", metric="exact_match")


def test_a_needle_export_through_rulers_prediction_format_scores_as_retrieve_did(
    bpe_model_dir: Path, tmp_path: Path, run_cli
) -> None:
    # retrieve's own replies written the way RULER's call_api.py writes predictions, from
    # the records --export wrote: lostmid score reads back retrieve's own numbers
    export, out = tmp_path / "niah.jsonl", tmp_path / "run"
    code, _, err = run_cli(
        "retrieve", "--model", bpe_model_dir, "--task", "niah-multikey", "--length", "600",
        "--distractors", "1", "--depth", "0,50,100", "--examples", "3", "--passes",
        "generate", "--export", export, "--out", out,
    )  # fmt: skip
    assert code == 0, err
    replies = {
        (r["item"], r["depth"]): r["answer"]
        for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())
    }
    lines = []
    for record in map(json.loads, export.read_text().splitlines()):
        others = record["others"]
        reply = replies[(others["item"], others["depth"])]
        lines.append(json.dumps({"index": record["index"], "pred": reply, "input": "..."}
                                | {"outputs": record["outputs"], "others": others}))  # fmt: skip
    (tmp_path / "pred").mkdir()
    (tmp_path / "pred" / "niah.jsonl").write_text("\n".join(lines) + "\n")
    code, said, err = run_cli("score", tmp_path / "pred" / "niah.jsonl", "--out", tmp_path / "s")
    assert code == 0, err
    scored = json.loads((tmp_path / "s" / "score.json").read_text())
    result = json.loads((out / "retrieve.json").read_text())
    assert scored["format"] == "ruler" and scored["samples"] == 9
    for theirs, ours in zip(scored["positions"], result["positions"], strict=True):
        for key in ("depth", "n", "correct", "ci_low", "ci_high"):
            assert theirs[key] == pytest.approx(ours[key]), key
    assert scored["shape"] == result["shape"]


# -- the Needle In A Haystack tester's results ------------------------------------------


def _tester(folder: Path, scores: dict[int, list[int]], lengths: list[int]) -> Path:
    """A results folder as the tester writes it: one file per (length, depth)."""
    folder.mkdir(parents=True, exist_ok=True)
    for depth, by_length in scores.items():
        for length, score in zip(lengths, by_length, strict=True):
            result = {"model": "m", "context_length": length, "depth_percent": float(depth)}
            result |= {"version": 1, "needle": "n", "model_response": "r", "score": score}
            name = f"m_len_{length}_depth_{depth * 100}_results.json"
            (folder / name).write_text(json.dumps(result))
    return folder


def test_needle_tester_results_score_each_way(tmp_path: Path) -> None:
    from lostmid.behaviour.formats.samples import read_samples

    lengths = list(range(1000, 41000, 1000))  # 40 lengths: 40 items a depth
    u = {0: [10] * 38 + [1] * 2, 50: [10] * 8 + [3] * 32, 100: [10] * 36 + [7] * 4}
    config = ScoreConfig(samples=_tester(tmp_path / "u", u, lengths))
    assert config.resolved_format() == "needle-tester"  # a folder
    scored = score_rows(read_samples(config), margin=0.05)
    assert [(p["depth"], p["correct"], p["n"]) for p in scored["positions"]] == [
        (0, 38, 40), (50, 8, 40), (100, 36, 40),
    ]  # fmt: skip
    assert scored["shape"]["shape"] == "U" and scored["summary"]["primacy"]["interval"] == "paired"
    flat = {d: [10] * 20 + [5] * 20 for d in (0, 50, 100)}
    rows = read_samples(ScoreConfig(samples=_tester(tmp_path / "flat", flat, lengths)))
    assert score_rows(rows, margin=0.05)["shape"]["shape"] != "U"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"depth_percent": 11.111}, "is not a whole percent"),
        ({"depth_percent": 150.0}, "is not a whole percent"),
        ({"score": 0}, "scores run 1 to 10"),
        ({"context_length": "1k"}, "is not a length in tokens"),
    ],
)
def test_a_malformed_needle_tester_result_is_one_line(
    tmp_path: Path, change: dict, message: str
) -> None:
    from lostmid.behaviour.formats.samples import read_needle_tester

    folder = _tester(tmp_path / "r", {0: [10]}, [1000])
    (file,) = folder.glob("*.json")
    file.write_text(json.dumps(json.loads(file.read_text()) | change))
    with pytest.raises(UserError, match=message):
        read_needle_tester(folder)
    with pytest.raises(UserError, match="no \\*_results.json"):
        read_needle_tester(tmp_path)


# -- one rule for every format: what a reader refuses, each format the same --------------


def _valid_file(fmt: str, folder: Path) -> Path:
    accuracy = {0: (3, 4), 50: (1, 4), 100: (3, 4)}
    if fmt == "ruler":
        return _ruler(folder / "niah.jsonl", accuracy)
    return _log(folder / "s.jsonl", accuracy)


@pytest.mark.parametrize("fmt", ["lm-eval", "ruler"])
@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("twice", "are the same sample"),  # the file concatenated with itself
        ("duplicate key", "twice in one object"),
        ("deep", "nested too deeply"),
        ("depth 150", r"is not a depth in % \(0-100\)"),
        ("depth 1e12", r"is not a depth in % \(0-100\)"),
        ("huge digits", "more than 4,300 digits"),
    ],
)
def test_every_format_refuses_the_same_damage_in_one_line(
    tmp_path: Path, run_cli, fmt: str, damage: str, message: str
) -> None:
    path = _valid_file(fmt, tmp_path)
    text = path.read_text()
    first = text.splitlines()[0]
    depth_at = '"depth": 0'
    damaged = {
        "twice": text + text,
        "duplicate key": first.replace(depth_at, '"depth": 0, "depth": 90') + "\n" + text,
        "deep": text + "[" * 200_000 + "]" * 200_000 + "\n",
        "depth 150": first.replace(depth_at, '"depth": 150') + "\n",
        "depth 1e12": first.replace(depth_at, '"depth": 1000000000000') + "\n",
        "huge digits": first.replace(depth_at, '"depth": 1' + "0" * 5000) + "\n",
    }[damage]
    assert depth_at in first and damaged != text
    path.write_text(damaged)
    out = tmp_path / "out"
    code, _, err = run_cli("score", path, "--format", fmt, "--out", out)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert __import__("re").search(message, err), err
    assert not (out / "score.json").exists()
    if damage != "twice":  # auto-detection reads the first line by the same rule
        path.write_text(damaged if damage != "deep" else "[" * 200_000 + "]" * 200_000 + "\n")
        code, _, err = run_cli("score", path, "--out", out)
        assert code == 2 and len(err.strip().splitlines()) == 1, err


def test_a_two_length_score_json_is_in_its_published_layout(tmp_path: Path, run_cli) -> None:
    from lostmid.schemas import validate_result

    path = _log(tmp_path / "s.jsonl", {0: (10, 10), 50: (0, 10), 100: (10, 10)}, 512)
    _log(path, {0: (5, 10), 50: (5, 10), 100: (5, 10)}, 2048)
    code, _, err = run_cli("score", path, "--out", tmp_path / "out")  # warnings are errors
    assert code == 0, err
    document = json.loads((tmp_path / "out" / "score.json").read_text())
    assert set(document["by_length"]) == {"512", "2048"}
    validate_result("score", document, "score.json")
    document["samples"] = True  # strict: a bool is not a count
    with pytest.raises(UserError, match="'samples'"):
        validate_result("score", document, "score.json")
