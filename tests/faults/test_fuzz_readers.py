"""Every file lostmid reads, fuzzed (hypothesis): whatever the bytes, a reader returns a
value of the promised type or raises :class:`~lostmid.errors.UserError` (one line, exit 2
at the command line), never another exception.

Two generators: a valid file with one field replaced (by any JSON value, deleted, or a
key added beside it), which reaches the checks behind the parser; and arbitrary bytes,
which the parser must refuse. ``benchmarks/bench_faults.py --parts fuzz --fuzz N`` runs
the same properties with N fresh examples each.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lostmid.errors import UserError

EXAMPLES = int(os.environ.get("LOSTMID_FUZZ_EXAMPLES", "120"))
"""Examples a property: 120 in the suite, the same every run; ``bench_faults.py --parts
fuzz --fuzz N`` sets N and draws them afresh."""

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize="LOSTMID_FUZZ_EXAMPLES" not in os.environ,
    database=None,
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside nested dicts and lists (lists: their first 3 items)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value[:3]):
            found += paths(inner, (*prefix, i))
    return found


def mutated(record: Any, path: tuple[Any, ...], how: str, new: Any) -> Any:
    """``record`` with the value at ``path`` replaced by ``new`` (``how`` = replace),
    deleted (``delete``, dict keys only) or a key ``"x"`` added beside it (``add``)."""
    out = json.loads(json.dumps(record))
    holder = out
    for key in path[:-1]:
        holder = holder[key]
    last = path[-1]
    if how == "replace":
        holder[last] = new
    elif how == "delete" and isinstance(holder, dict):
        del holder[last]
    elif isinstance(holder, dict):
        holder["x" + str(last)] = new
    return out


def mutations(record: Any) -> st.SearchStrategy[Any]:
    return st.tuples(
        st.sampled_from(paths(record)), st.sampled_from(["replace", "delete", "add"]), JSON
    ).map(lambda t: mutated(record, *t))


def holds(read: Callable[[Path], Any], path: Path) -> Any:
    """``read(path)``: its value, or None for a UserError; any other exception fails."""
    try:
        return read(path)
    except UserError as err:
        assert "\n" not in str(err).strip(), f"a two-line error: {err}"
        return None


def _write(path: Path, value: Any, lines: bool = False) -> Path:
    rows = value if lines else [value]
    text = "\n".join(json.dumps(row, allow_nan=True) for row in rows)
    path.write_text(text + "\n", encoding="utf-8")
    return path


# -- result files: measure.json, theory.json --------------------------------------------------


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from lostmid.influence import MeasureConfig, run_measure

    out = tmp_path_factory.mktemp("measured")
    config = MeasureConfig(model="tiny-gpt2", length=8, samples=1, probes=1, seed=0)
    run_measure(config, out=out / "m", overwrite=False, console=None)
    return json.loads((out / "m" / "measure.json").read_text())


@pytest.fixture(scope="module")
def theory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from lostmid.theory.run import TheoryConfig, run_theory

    out = tmp_path_factory.mktemp("theory")
    run_theory(TheoryConfig(length=8, layers=2), out=out / "t")
    return json.loads((out / "t" / "theory.json").read_text())


def test_measure_json_with_any_field_changed(measured: dict[str, Any], tmp_path: Path) -> None:
    from lostmid.influence.record import read_measure

    @SETTINGS
    @given(mutations(measured))
    def check(record: Any) -> None:
        got = holds(read_measure, _write(tmp_path / "measure.json", record))
        if got is not None:  # a clean read is of the promised shape
            influence = np.asarray(got.influence)
            assert influence.dtype.kind == "f" and influence.ndim == 1 and influence.size >= 1

    check()


def test_theory_json_with_any_field_changed(theory: dict[str, Any], tmp_path: Path) -> None:
    from lostmid.compare.inputs import load_theory

    @SETTINGS
    @given(mutations(theory))
    def check(record: Any) -> None:
        holds(load_theory, _write(tmp_path / "theory.json", record))

    check()


# -- --data records, each format ----------------------------------------------------------------

KV = {"ordered_kv_records": [["a", "1"], ["b", "2"], ["c", "3"]], "key": "b", "value": "2"}
QA = {
    "question": "q?",
    "answers": ["x"],
    "ctxs": [{"title": "t", "text": "x", "isgold": True}, {"title": "u", "text": "y"}],
}
RULER = {"index": 0, "input": "hay 42 hay", "outputs": ["42"], "length": 10, "depth": 50}


@pytest.mark.parametrize(("name", "record"), [("kv", KV), ("qa", QA), ("ruler", RULER)])
def test_data_records_with_any_field_changed(name: str, record: dict, tmp_path: Path) -> None:
    from lostmid.behaviour.formats.records import data_examples

    def read(path: Path) -> Any:
        task = "niah" if name == "ruler" else "kv"
        return data_examples(path, task=task)

    @SETTINGS
    @given(st.lists(mutations(record), min_size=1, max_size=3))
    def check(records: list[Any]) -> None:
        holds(read, _write(tmp_path / f"{name}.jsonl", [record, *records], lines=True))

    check()


# -- another tool's per-sample results (lostmid score) ----------------------------------------

LM_EVAL = {"doc": {"depth": 50, "gold_index": None, "length_cell": 512, "item": 3}, "acc": 1.0}
RULER_PRED = {
    "index": 3,
    "pred": " 42",
    "outputs": ["42"],
    "others": {"depth": 50, "item": 3, "length_cell": 1024},
}


NEEDLE_TESTER = {"model": "m", "context_length": 1000, "depth_percent": 50.0, "version": 1,
                 "model_response": "r", "score": 10}  # fmt: skip


@pytest.mark.parametrize(("fmt", "record"), [("lm-eval", LM_EVAL), ("ruler", RULER_PRED)])
def test_score_samples_with_any_field_changed(fmt: str, record: dict, tmp_path: Path) -> None:
    from lostmid.behaviour.formats.samples import ScoreConfig, read_samples, score_rows

    def read(path: Path) -> Any:
        rows = read_samples(ScoreConfig(samples=path, format=fmt))
        return score_rows(rows, margin=0.05)

    @SETTINGS
    @given(st.lists(mutations(record), min_size=1, max_size=3))
    def check(records: list[Any]) -> None:
        holds(read, _write(tmp_path / "samples.jsonl", [record, *records], lines=True))

    check()


def test_needle_tester_results_with_any_field_changed(tmp_path: Path) -> None:
    from lostmid.behaviour.formats.samples import ScoreConfig, read_samples, score_rows

    def read(path: Path) -> Any:
        rows = read_samples(ScoreConfig(samples=path.parent))
        return score_rows(rows, margin=0.05)

    @SETTINGS
    @given(mutations(NEEDLE_TESTER))
    def check(record: Any) -> None:
        holds(read, _write(tmp_path / "m_len_1000_depth_5000_results.json", record))

    check()


# -- configs: train --config, sweep TOML, a checkpoint study's study.json --------------------


def test_train_config_with_any_field_changed(tmp_path: Path) -> None:
    from lostmid.train.config import load_config_file

    valid = {"preset": "micro", "steps": 5, "model": {"layers": 2}, "probe": {"every": 5}}

    @SETTINGS
    @given(mutations(valid) | st.dictionaries(st.text(max_size=8), JSON, max_size=4))
    def check(record: Any) -> None:
        holds(load_config_file, _write(tmp_path / "train.json", record))

    check()


def _toml(value: Any) -> str:
    """A TOML literal of a scalar or list (what the sweep files hold)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        return repr(value) if abs(value) != float("inf") else ("inf" if value > 0 else "-inf")
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


TOML_VALUES = st.recursive(
    st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)


def test_sweep_files_with_any_value_changed(tmp_path: Path) -> None:
    from lostmid.sweep.grid import load_sweep_file

    keys = st.sampled_from(["task", "models", "seeds", "lengths", "samples", "probes", "x"])

    @SETTINGS
    @given(st.dictionaries(keys, TOML_VALUES, max_size=4), st.booleans())
    def check(top: dict[str, Any], params: bool) -> None:
        lines = ['task = "theory"', "lengths = [16]"]
        lines += [f"{k} = {_toml(v)}" for k, v in top.items() if k not in ("task", "lengths")]
        if "task" in top:
            lines[0] = f"task = {_toml(top['task'])}"
        if params:
            lines += ["[params]", "alpha = [0.1, 0.2]"]
        text = "\n".join(lines) + "\n"
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return  # our TOML writer's limits, not lostmid's
        path = tmp_path / "sweep.toml"
        path.write_text(text, encoding="utf-8")
        holds(load_sweep_file, path)

    check()


def test_a_study_json_of_any_content(tmp_path: Path) -> None:
    from lostmid.pretrained.study import read_study_config

    valid = {"checkpoints": ["smollm2-135m"], "lengths": [512], "kinds": ["text"], "inputs": 4,
             "twins": 2, "probes": 1, "seed": 0, "controls": []}  # fmt: skip

    @SETTINGS
    @given(mutations(valid) | JSON)
    def check(record: Any) -> None:
        (tmp_path / "study.json").write_text(json.dumps(record), encoding="utf-8")
        holds(read_study_config, tmp_path)

    check()


# -- bytes: every reader refuses what is not its format -----------------------------------------


def _readers() -> dict[str, Callable[[Path], Any]]:
    from lostmid.behaviour.formats.records import data_examples
    from lostmid.behaviour.formats.samples import (
        read_lm_eval_samples,
        read_needle_tester,
        read_ruler_predictions,
    )
    from lostmid.compare.inputs import load_theory
    from lostmid.influence.record import read_measure
    from lostmid.sweep.grid import load_sweep_file
    from lostmid.train.config import load_config_file

    return {
        "measure.json": read_measure,
        "theory.json": load_theory,
        "data.jsonl": data_examples,
        "data.jsonl.gz": data_examples,
        "lm-eval samples": read_lm_eval_samples,
        "RULER predictions": read_ruler_predictions,
        "needle tester result.json": read_needle_tester,
        "train config": load_config_file,
        "sweep.toml": load_sweep_file,
    }


@pytest.mark.parametrize("name", list(_readers()))
def test_any_bytes(name: str, tmp_path: Path) -> None:
    read = _readers()[name]
    suffix = ".jsonl.gz" if name.endswith(".gz") else Path(name).suffix or ".jsonl"

    @SETTINGS
    @given(st.binary(max_size=200) | st.text(max_size=80).map(str.encode))
    def check(data: bytes) -> None:
        path = tmp_path / f"file{suffix}"
        path.write_bytes(data)
        holds(read, path)

    check()


# -- what the fuzzing found, kept as plain cases --------------------------------------------


def test_the_cases_the_fuzzing_found_are_one_line(tmp_path: Path) -> None:
    from lostmid.behaviour.formats.samples import read_lm_eval_samples
    from lostmid.checks import parse_seeds
    from lostmid.pretrained.study import read_study_config
    from lostmid.train.config import load_config_file

    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: parse_seeds(0.0), "is not a seed list"),  # type: ignore[arg-type]
        (lambda: parse_seeds({"a": 1}), "is not a seed list"),  # type: ignore[arg-type]
    ]
    (tmp_path / "study.json").write_text(json.dumps({"\n": 1}))
    cases.append((lambda: read_study_config(tmp_path), r"unknown key\(s\) '\\n'"))
    _write(tmp_path / "train.json", {"\n": None})
    cases.append((lambda: load_config_file(tmp_path / "train.json"), r"unknown config key"))
    _write(tmp_path / "lr.json", {"preset": "micro", "lr": 1e400})
    cases.append((lambda: load_config_file(tmp_path / "lr.json"), "lr must be a finite number"))
    (tmp_path / "s.jsonl").write_bytes(b'{"doc": \x80}')
    cases.append((lambda: read_lm_eval_samples(tmp_path / "s.jsonl"), "not UTF-8 text"))
    for call, words in cases:
        with pytest.raises(UserError, match=words) as info:
            call()
        assert "\n" not in str(info.value)


# -- GGUF headers --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, int]:
    """A tiny llama.cpp-style GGUF file (tests/models/gguf_files.py) as bytes, and where
    its tensor data starts (the header, metadata and tensor table before it are what the
    fuzzing changes)."""
    import sys

    import gguf

    sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
    from gguf_files import write_tiny_llama_gguf

    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_tiny_llama_gguf(path)
    return path.read_bytes(), int(gguf.GGUFReader(path).data_offset)


def test_gguf_headers_with_any_bytes_changed(
    gguf_file: tuple[bytes, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GGUF file whose header, metadata or tensor table has bytes overwritten (counts
    and lengths among them: 8-byte little-endian integers up to 2^64 - 1), or that is cut
    short anywhere, is read by :func:`lostmid.models.gguf.inspect_gguf` or refused in one
    line: never another exception, never an allocation the header asks for."""
    from lostmid.models.gguf import GGUFFile, inspect_gguf

    monkeypatch.setenv("LOSTMID_CACHE", str(tmp_path / "cache"))
    gguf_bytes, end = gguf_file
    count = iter(range(10**9))

    @SETTINGS
    @given(
        st.lists(
            st.tuples(
                st.integers(0, end - 1),
                st.binary(min_size=1, max_size=8)
                | st.integers(0, 2**64 - 1).map(lambda n: n.to_bytes(8, "little")),
            ),
            min_size=0,
            max_size=3,
        ),
        st.none() | st.integers(0, len(gguf_bytes)),
    )
    def check(patches: list[tuple[int, bytes]], cut: int | None) -> None:
        data = bytearray(gguf_bytes)
        for at, new in patches:
            data[at : at + len(new)] = new
        path = tmp_path / f"m{next(count)}.gguf"  # a new file each time: nothing remembered
        path.write_bytes(bytes(data[:cut]))
        found = holds(lambda p: inspect_gguf(p), path)
        assert found is None or isinstance(found, GGUFFile)

    check()
