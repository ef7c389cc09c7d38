"""Files of the right format with a field of the wrong type or value, folders the user
may not read, and outputs that are already there (issue 28, class B): one line naming
the file (and the record), exit 2, never blamed on an option the user did not give, and
nothing the user had is changed."""

from __future__ import annotations

import errno
import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import assert_one_line
from strict_cases import edited

RunCli = Callable[..., tuple[int, str, str]]

KV = {"ordered_kv_records": [["a", "1"], ["b", "2"], ["c", "3"]], "key": "b", "value": "2"}
QA = {
    "question": "q?",
    "answers": ["x"],
    "ctxs": [{"title": "t", "text": "x", "isgold": True}, {"title": "u", "text": "y"}],
}

# (name, file name, its bytes, words the one line must hold)
DATA: list[tuple[str, str, bytes, tuple[str, ...]]] = [
    (
        "kv gold_index text",
        "kv.jsonl",
        json.dumps({**KV, "gold_index": "abc"}).encode(),
        ("kv.jsonl record 1: gold_index must be a whole number in 0..2, got 'abc'",),
    ),
    (
        "kv gold_index out of range",
        "kv.jsonl",
        json.dumps({**KV, "gold_index": 7}).encode(),
        ("record 1: gold_index", "got 7"),
    ),
    (
        "qa ctxs an int",
        "qa.jsonl",
        json.dumps({**QA, "ctxs": 5}).encode(),
        ("qa.jsonl record 1: ctxs must be a non-empty list of documents", "got int"),
    ),
    (
        "qa ctxs ints and dicts",
        "qa.jsonl",
        json.dumps({**QA, "ctxs": [1, QA["ctxs"][0], 2]}).encode(),
        ("record 1: ctxs", "a list with non-objects"),
    ),
    (
        "ruler depth NaN",
        "ruler.jsonl",
        b'{"input": "hay 42 hay", "outputs": ["42"], "length": 10, "depth": NaN}',
        ("ruler.jsonl record 1: depth must be a percentage in 0..100, got nan",),
    ),
    (
        "ruler depth 150",
        "ruler.jsonl",
        b'{"input": "hay 42 hay", "outputs": ["42"], "depth": 150}',
        ("record 1: depth must be a percentage in 0..100, got 150",),
    ),
    (
        "nested too deeply (jsonl)",
        "deep.jsonl",
        b"[" * 100_000 + b"]" * 100_000,
        ("deep.jsonl line 1: JSON nested too deeply",),
    ),
    (
        "nested too deeply (json)",
        "deep.json",
        b"[" * 100_000 + b"]" * 100_000,
        ("deep.json: JSON nested too deeply",),
    ),
    (
        "truncated gzip",
        "kv.jsonl.gz",
        gzip.compress((json.dumps(KV) + "\n").encode() * 200)[:-12],  # the end cut off
        ("kv.jsonl.gz: not a whole gzip file", "truncated"),
    ),
    (
        "a key twice",
        "dup.jsonl",
        b'{"ordered_kv_records": [["a", "1"], ["b", "2"]], "key": "a", "key": "b", "value": "2"}',
        ("dup.jsonl line 1: key 'key' twice in one object",),
    ),
]


@pytest.fixture(scope="module")
def retrieve_args() -> list[str]:
    return ["retrieve", "--model", "tiny-qwen2", "--tokenizer", "bytes", "--passes", "teacher"]


@pytest.mark.parametrize(("case", "name", "data", "words"), DATA, ids=[d[0] for d in DATA])
def test_a_data_field_of_the_wrong_type_names_the_file_and_record(
    case: str,
    name: str,
    data: bytes,
    words: tuple[str, ...],
    retrieve_args: list[str],
    run_cli: RunCli,
    tmp_path: Path,
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    code, out, err = run_cli(*retrieve_args, "--data", path, "--out", tmp_path / "out")
    line = assert_one_line(code, out, err, f"--data {tmp_path}", *words)
    assert not line.startswith(("error: --gold-index", "error: --depth")), line
    assert not (tmp_path / "out" / "retrieve.json").exists()


def test_a_data_file_for_another_task_is_one_line(
    retrieve_args: list[str], run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / "kv.jsonl"
    path.write_text(json.dumps(KV) + "\n")
    code, out, err = run_cli(
        *retrieve_args, "--task", "niah", "--data", path, "--out", tmp_path / "o"
    )
    assert_one_line(code, out, err, "--task niah", "holds liu-kv records", "leave --task out")


# -- compare --measured: a string where a number or list belongs ---------------------------


MEASURED = [
    ("config.layers", "abc", "config.layers must be a whole number >= 1, got 'abc'"),
    ("config.layers", 2.5, "config.layers must be a whole number >= 1, got 2.5"),
    ("config.length", "abc", "config.length must be a whole number >= 2, got 'abc'"),
    ("gain_directions", "abc", "gain_directions must be a whole number >= 0, got 'abc'"),
    ("per_layer", [[1.0, 2.0], [1.0]], "'per_layer' must be rows of 16 numbers"),
    ("per_layer", "abc", "'per_layer' must be rows of 16 numbers"),
    ("notes", 5, "notes must be a list of strings, got 5"),
    ("notes", "abc", "notes must be a list of strings, got 'abc'"),
    ("config.mask", [1], "config.mask must be a string"),
    ("influence.3", float("nan"), "influence has non-finite values"),
    ("stderr.3", float("nan"), "stderr must be 16 finite non-negative values"),
    # strict numbers: JSON's true is not 1, text is not a number, whatever the field
    *[
        (f"{field}.3", value, f"'{field}' entry 4 is {value!r}, not a number")
        for field in ("influence", "stderr")
        for value in (True, False, "0.5", "1e3")
    ],
    ("config.layers", True, "config.layers must be a whole number >= 1, got True"),
    ("config.length", "16", "config.length must be a whole number >= 2, got '16'"),
]


@pytest.mark.parametrize(
    ("field", "value", "words"), MEASURED, ids=[f"{m[0]}={m[1]!r}" for m in MEASURED]
)
def test_a_measured_field_of_the_wrong_type_names_the_file(
    field: str,
    value: object,
    words: str,
    hostile: dict[str, Path],
    run_cli: RunCli,
    tmp_path: Path,
) -> None:
    good = json.loads(hostile["measure_json"].read_text())
    bad = tmp_path / "bad_measure.json"
    bad.write_text(json.dumps(edited(good, field, value)))
    code, out, err = run_cli("compare", "--measured", bad, "--out", tmp_path / "out")
    assert_one_line(code, out, err, f"{bad}: {words}")


# -- folders the user may not read ---------------------------------------------------------


def _deny(monkeypatch: pytest.MonkeyPatch, name: str, denied: Callable[[str], bool]) -> None:
    """``os.NAME`` raises PermissionError for the paths ``denied`` picks, as for a user
    without the permission (the tests run as root, who may read anything)."""
    real = getattr(os, name)

    def guarded(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if denied(os.fspath(path)):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, guarded)


def test_a_model_folder_the_user_cannot_read_is_one_line(
    hostile: dict[str, Path], run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = str(hostile["truncated"])
    _deny(monkeypatch, "scandir", lambda p: p == folder)
    code, out, err = run_cli("measure", "--model", folder, "--out", tmp_path / "o")
    assert_one_line(code, out, err, f"--model {folder}: cannot be read (permission denied)")


def test_a_tokenizer_folder_the_user_cannot_read_is_one_line(
    hostile: dict[str, Path], run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = str(hostile["custom_tokenizer"])
    _deny(monkeypatch, "scandir", lambda p: p == folder)
    code, out, err = run_cli(
        "retrieve", "--model", "tiny-qwen2", "--tokenizer", folder, "--out", tmp_path / "o"
    )
    assert_one_line(code, out, err, "--tokenizer", "cannot be read (permission denied)")


def test_a_folder_under_out_the_user_cannot_write_is_one_line(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is taken, then writing the result is denied: one line naming the path,
    not a PermissionError traceback."""
    out = tmp_path / "out"
    _deny(monkeypatch, "open", lambda p: p.startswith(str(out)) and p.endswith(".tmp"))
    code, stdout, err = run_cli("theory", "--length", "8", "--layers", "2", "--out", out)
    assert_one_line(code, stdout, err, str(out), "permission denied")
    assert not (out / "theory.json").exists()


# -- outputs already there -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "folder with files"])
def test_export_lm_eval_never_replaces_what_is_there(
    kind: str, run_cli: RunCli, tmp_path: Path
) -> None:
    target = tmp_path / "tasks"
    if kind == "file":
        target.write_bytes(b"my notes\n")
        watched, words = target, ("a file, not a directory",)
    else:
        target.mkdir()
        watched = target / "utils.py"
        watched.write_bytes(b"# mine\n")
        words = ("already holds files", "--overwrite")
    code, out, err = run_cli(
        "retrieve", "--model", "tiny-qwen2", "--tokenizer", "bytes", "--pairs", "4",
        "--examples", "1", "--export-lm-eval", target, "--out", tmp_path / "o",
    )  # fmt: skip
    assert_one_line(code, out, err, f"--export-lm-eval {target}", *words)
    assert watched.read_bytes() in (b"my notes\n", b"# mine\n")


# -- model configs transformers rejects, or far too large ---------------------------------


def _config_dir(root: Path, name: str, **changes: object) -> Path:
    from lostmid.models.load import resolve_config

    folder = root / name
    folder.mkdir()
    config = {**resolve_config("tiny-qwen2").to_dict(), **changes}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


CONFIGS = [
    (
        "layer_types disagree",
        {"num_hidden_layers": 200},
        ("transformers rejects its config.json", "layer_types"),
    ),
    ("layers as text", {"num_hidden_layers": "abc"}, ("transformers rejects", "expected int")),
    (
        "heads do not divide hidden",
        {"num_attention_heads": 7},
        ("hidden size 32 is not a multiple of its 7 attention heads",),
    ),
    (
        "a 262k x 1M embedding",
        {"vocab_size": 262144, "hidden_size": 1048576},
        ("TiB of memory", "parameters, float32"),
    ),
]


@pytest.mark.parametrize(("case", "changes", "words"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_a_model_config_that_cannot_be_built_is_one_line(
    case: str, changes: dict, words: tuple[str, ...], run_cli: RunCli, tmp_path: Path
) -> None:
    folder = _config_dir(tmp_path, "model", **changes)
    code, out, err = run_cli(
        "retrieve", "--model", folder, "--tokenizer", "bytes", "--out", tmp_path / "o"
    )
    assert_one_line(code, out, err, str(folder), *words)


@pytest.mark.parametrize("value", [1e308, -1e308, 10**400])
def test_a_profile_at_the_edge_of_floats_is_one_line_without_numpy_warnings(
    value: float, hostile: dict[str, Path], run_cli: RunCli, tmp_path: Path
) -> None:
    import warnings

    good = json.loads(hostile["measure_json"].read_text())
    bad = tmp_path / "bad_measure.json"
    edge = {**good, "influence": [value] * len(good["influence"])}
    edge["stderr"] = [value] * len(good["influence"])
    bad.write_text(json.dumps(edge))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning would fail here
        code, out, err = run_cli("compare", "--measured", bad, "--out", tmp_path / "out")
    words = "a negative value" if value < 0 else "too large to add up (its sum passes 1e308)"
    if isinstance(value, int):
        words = "'influence' has a number too large for a float"
    assert_one_line(code, out, err, f"{bad}: ", words)
