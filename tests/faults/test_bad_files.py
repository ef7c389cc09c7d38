"""Damaged, hostile and misplaced files, given to every command that reads files: each is
one line naming the file and what to do, exit 2, no traceback, and no planted code ever
runs (``hostile.py`` builds them)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import assert_one_line, evil_pickle

RunCli = Callable[..., tuple[int, str, str]]

# (case, argv given the hostile inputs and a fresh --out, words the one line must hold)
CASES: list[tuple[str, Callable[[dict[str, Path]], list[str]], tuple[str, ...]]] = [
    (
        "measure: a .bin pickle calling os.system",
        lambda h: ["measure", "--model", h["evil_bin"], "--init", "pretrained"],
        ("pytorch_model.bin", "weights_only refused it", "nothing in it was run"),
    ),
    (
        "measure: a truncated model.safetensors",
        lambda h: ["measure", "--model", h["truncated"], "--init", "pretrained"],
        ("model.safetensors", "cannot load the weights", "SafetensorError"),
    ),
    (
        "measure: a config naming custom code",
        lambda h: ["measure", "--model", h["custom_code"]],
        ("custom code", "configuration_evil.EvilConfig", "--trust-remote-code"),
    ),
    (
        "ablate: a config naming custom code",
        lambda h: ["ablate", "--model", h["custom_code"]],
        ("custom code", "--trust-remote-code"),
    ),
    (
        "retrieve: a config naming custom code",
        lambda h: ["retrieve", "--model", h["custom_code"], "--tokenizer", "bytes"],
        ("custom code", "--trust-remote-code"),
    ),
    (
        "retrieve: a tokenizer naming custom code",
        lambda h: ["retrieve", "--model", "tiny-qwen2", "--tokenizer", h["custom_tokenizer"]],
        ("tokenizer_config.json", "custom code"),
    ),
    (
        "compare: a theory.json as --measured",
        lambda h: ["compare", "--measured", h["theory_json"]],
        ("--measured", "a theory result (schema lostmid.theory/1), not a measure result"),
    ),
    (
        "compare: a measure.json as --theory",
        lambda h: ["compare", "--measured", h["measure_json"], "--theory", h["measure_json"]],
        ("--theory", "a measure result (schema lostmid.measure/1), not a theory result"),
    ),
    (
        "compare: truncated JSON",
        lambda h: ["compare", "--measured", h["garbage_json"]],
        ("garbage_json.json", "not valid JSON", "line 1"),
    ),
    (
        "compare: a binary file",
        lambda h: ["compare", "--measured", h["binary"]],
        ("binary.json", "not a text file"),
    ),
    (
        "compare: JSON that is not an object",
        lambda h: ["compare", "--measured", h["json_list"]],
        ("json_list.json", "not a JSON object"),
    ),
    (
        "compare: an empty file",
        lambda h: ["compare", "--measured", h["empty"]],
        ("empty.json", "not valid JSON"),
    ),
    (
        "compare: a directory",
        lambda h: ["compare", "--measured", h["custom_code"]],
        ("custom_code", "a directory"),
    ),
    (
        "compare: two different models",
        lambda h: [
            "compare",
            "--measured",
            h["measure_json"],
            "--measured",
            h["gpt2_measure_json"],
        ],
        ("measured model 'tiny-gpt2'", "'tiny-qwen2'", "--pool"),
    ),
    (
        "train: a --config that is not JSON",
        lambda h: ["train", "--config", h["garbage_json"]],
        ("--config", "not valid JSON"),
    ),
    (
        "sweep: a --config that is not text",
        lambda h: ["sweep", "--config", h["binary"]],
        ("--config", "not valid TOML"),
    ),
]


@pytest.mark.parametrize(("case", "argv", "words"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_file_is_one_line(
    case: str,
    argv: Callable[[dict[str, Path]], list[str]],
    words: tuple[str, ...],
    hostile: dict[str, Path],
    marker: Path,
    run_cli: RunCli,
    tmp_path: Path,
) -> None:
    code, out, err = run_cli(*argv(hostile), "--out", tmp_path / "out")
    assert_one_line(code, out, err, *words)
    assert not marker.exists(), "code from a hostile file ran"


def test_pooling_different_models_is_on_request(
    hostile: dict[str, Path], run_cli: RunCli, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        "compare",
        "--measured",
        hostile["measure_json"],
        "--measured",
        hostile["gpt2_measure_json"],
        "--pool",
        "--out",
        tmp_path,
    )
    assert code == 0, err
    assert "pooled across model: 'tiny-gpt2'" in " ".join(out.split())
    import json

    pooled = json.loads((tmp_path / "compare.json").read_text())["metadata"]["config"]
    assert any("model" in note for note in pooled["pooled_across"])


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("evil", ("resume.pt", "weights_only refused it", "--overwrite")),
        ("truncated", ("resume.pt", "not a readable torch file", "--overwrite")),
        ("garbage", ("resume.pt", "not a readable torch file")),
        ("foreign", ("resume.pt", "not a lostmid training state")),
        ("dynamics", ("dynamics.json", "not valid JSON")),
        ("dynamics-kind", ("dynamics.json", "a theory result", "not a training result")),
    ],
)
def test_a_damaged_training_state_is_one_line(
    damage: str,
    words: tuple[str, ...],
    trained_copy: Path,
    hostile: dict[str, Path],
    marker: Path,
    run_cli: RunCli,
) -> None:
    resume, dynamics = trained_copy / "resume.pt", trained_copy / "dynamics.json"
    if damage == "evil":
        resume.write_bytes(evil_pickle(marker))
    elif damage == "truncated":
        resume.write_bytes(resume.read_bytes()[:1000])
    elif damage == "garbage":
        resume.write_bytes(b"not a torch file at all")
    elif damage == "foreign":
        import torch

        torch.save({"weights": torch.zeros(3)}, resume)
    elif damage == "dynamics":
        dynamics.write_text(dynamics.read_text()[:100])
    else:
        shutil.copy(hostile["theory_json"], dynamics)
    code, out, err = run_cli(
        "train", "--preset", "micro", "--steps", "12", "--out", trained_copy, "--resume"
    )
    assert_one_line(code, out, err, *words)
    assert not marker.exists()


def test_a_damaged_checkpoint_is_one_line(trained_copy: Path, run_cli: RunCli, tmp_path: Path):
    step = trained_copy / "checkpoints" / "step_000012"
    weights = step / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:5000])
    code, out, err = run_cli(
        "retrieve", "--model", step, "--task", "kv", "--pairs", "2", "--out", tmp_path
    )
    assert_one_line(code, out, err, "step_000012", "cannot load the weights")


def test_a_damaged_stage_file_is_recomputed_not_trusted(run_cli: RunCli, tmp_path: Path) -> None:
    args = ["sweep", "--task", "theory", "--lengths", "8,16", "--out", tmp_path]
    assert run_cli(*args)[0] == 0
    import json

    first = json.loads((tmp_path / "sweep.json").read_text())["units"]
    stage = sorted((tmp_path / "stages").glob("*.json"))[0]
    stage.write_text(stage.read_text()[:40])  # as a crash mid-write would, were writes not atomic
    assert run_cli(*args)[0] == 0
    again = json.loads((tmp_path / "sweep.json").read_text())["units"]
    assert sorted(u["status"] for u in again) == ["done", "reused"]
    assert [u["summary"] for u in again] == [u["summary"] for u in first]


def test_retrieve_says_only_its_own_line(trained: Path, run_cli: RunCli, tmp_path: Path) -> None:
    """Loading a model prints no transformers chatter (progress bars, config warnings)
    before lostmid's own one-line error."""
    step = trained / "checkpoints" / "step_000012"
    code, out, err = run_cli("retrieve", "--model", step, "--pairs", "40", "--out", tmp_path)
    assert_one_line(code, out, err, "but the model takes at most")
    assert "Loading" not in out + err and "warn" not in (out + err).lower()
