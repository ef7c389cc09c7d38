"""Grid expansion, unit keys, TOML files and the one-line errors of bad input."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import pytest

from lostmid.checks import parse_seeds
from lostmid.errors import UserError
from lostmid.runs.jobs import Resources
from lostmid.sweep import Unit, expand, grid_from_flags, load_sweep_file


@pytest.mark.parametrize(
    ("text", "seeds"),
    [
        ("0-4", [0, 1, 2, 3, 4]),
        ("3", [0, 1, 2]),  # a bare number is a count, from --seed (0)
        ("3-3", [3]),
        ("0,2,5-7", [0, 2, 5, 6, 7]),
        (" 1 - 2 , 9", [1, 2, 9]),
        ("2-3,1-4", [2, 3, 1, 4]),  # repeats dropped, first occurrence kept
        ([4, 1, 4], [4, 1]),
        (2, [0, 1]),
    ],
)
def test_seed_lists_and_ranges(text: object, seeds: list[int]) -> None:
    assert list(parse_seeds(text)) == seeds  # type: ignore[arg-type]


def test_a_count_starts_at_the_first_seed() -> None:
    assert parse_seeds("3", first=5) == (5, 6, 7) == parse_seeds(3, first=5)
    assert parse_seeds("5-7", first=100) == (5, 6, 7)  # a range names its seeds
    with pytest.raises(UserError, match="a count of seeds must be >= 1"):
        parse_seeds("0")


def test_seeds_of_a_multi_seed_task_are_one_unit_not_an_axis() -> None:
    """``--seeds`` means N seeds in every command: a reproduce unit runs them itself, so the
    sweep gives it seed (the first) and seeds (the count), not N overlapping windows."""
    units = grid_from_flags("reproduce", models="tiny-gpt2,tiny-qwen2", seeds="4", seed=2).units()
    assert [(u.params_dict()["seed"], u.params_dict()["seeds"]) for u in units] == [(2, 4)] * 2
    units = grid_from_flags("measure", models="tiny-gpt2", seeds="3", seed=2).units()
    assert [u.params_dict()["seed"] for u in units] == [2, 3, 4]
    with pytest.raises(UserError, match="runs consecutive seeds in one unit"):
        grid_from_flags("remedies", seeds="0,2")


@pytest.mark.parametrize("text", ["4-1", "a", "-1", "1-", "", "1.5", "0-2,x", "1--3"])
def test_bad_seed_ranges_are_one_line_errors(text: str) -> None:
    with pytest.raises(
        UserError, match=r"^--seeds '.*' is not a seed list; write e\.g\. 3 \(a count\), 0-4"
    ):
        parse_seeds(text)
    with pytest.raises(UserError, match="is not a seed list"):
        parse_seeds([-1])


def test_grid_is_the_product_of_its_axes_last_axis_fastest() -> None:
    grid = grid_from_flags(
        "measure",
        models="tiny-qwen2,tiny-gpt2",
        seeds="0-2",
        lengths="16,32",
        params=["samples=2", "probes=1,3"],
    )
    got = [u.params_dict() for u in grid.units()]
    want = [
        {"model": m, "seed": s, "length": n, "samples": 2, "probes": p}
        for m, s, n, p in itertools.product(
            ["tiny-qwen2", "tiny-gpt2"], [0, 1, 2], [16, 32], [1, 3]
        )
    ]
    assert got == want and len(got) == 24
    keys = [u.key for u in grid.units()]
    assert len(set(keys)) == 24  # distinct units, distinct keys


def test_key_is_readable_and_hashes_task_and_parameters_exactly() -> None:
    unit = Unit.make("measure", {"seed": 1, "model": "Qwen/Qwen2-0.5B", "length": 64})
    canonical = json.dumps(
        {"params": {"length": 64, "model": "Qwen/Qwen2-0.5B", "seed": 1}, "task": "measure"},
        sort_keys=True,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:10]
    assert unit.key == f"measure-length=64-model=Qwen_Qwen2-0.5B-seed=1-{digest}"
    assert "/" not in unit.key  # a file name
    # parameter order never matters; task, names and values all do
    assert Unit.make("measure", {"length": 64, "seed": 1, "model": "Qwen/Qwen2-0.5B"}) == unit
    others = [
        Unit.make("theory", {"seed": 1, "model": "Qwen/Qwen2-0.5B", "length": 64}),
        Unit.make("measure", {"seed": 2, "model": "Qwen/Qwen2-0.5B", "length": 64}),
        Unit.make("measure", {"seed": 1, "model": "Qwen_Qwen2-0.5B", "length": 64}),
        Unit.make("measure", {"seed": "1", "model": "Qwen/Qwen2-0.5B", "length": 64}),
    ]
    assert len({unit.key, *(o.key for o in others)}) == 5


def test_keys_are_stable_across_value_spellings() -> None:
    # alpha is a float parameter: 1 and 1.0 are the same unit; resources do not count
    a = grid_from_flags("theory", lengths="64", params=["alpha=1"]).units()
    b = grid_from_flags("theory", lengths="64", params=["alpha=1.0"]).units()
    c = grid_from_flags(
        "theory", lengths="64", params=["alpha=1.0"], resources=Resources(cpus=4)
    ).units()
    assert a[0].params_dict()["alpha"] == 1.0 and isinstance(a[0].params_dict()["alpha"], float)
    assert a[0].key == b[0].key == c[0].key
    assert c[0].resources.cpus == 4


def test_toml_file_equals_the_same_flags(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(
        'task = "measure"\n'
        'models = ["tiny-qwen2", "tiny-gpt2"]\n'
        'seeds = "0-1"\n'
        "lengths = [16, 32]\n"
        "[params]\n"
        "samples = 2\n"
        "probes = [1, 3]\n"
    )
    from_file = expand(load_sweep_file(path))
    from_flags = expand(
        [
            grid_from_flags(
                "measure",
                models="tiny-qwen2,tiny-gpt2",
                seeds="0-1",
                lengths="16,32",
                params=["samples=2", "probes=1,3"],
            )
        ]
    )
    assert [u.key for u in from_file] == [u.key for u in from_flags]
    assert len(from_file) == 16


def test_several_grids_in_one_file_each_unit_once(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(
        '[[grid]]\ntask = "theory"\nlengths = [32, 64]\n'
        '[[grid]]\ntask = "theory"\nlengths = [64, 128]\n'  # 64 repeats: one unit
        '[[grid]]\ntask = "measure"\nmodels = ["tiny-gpt2"]\nseeds = [0]\n'
        "[grid.resources]\ncpus = 2\nmemory_gb = 1.5\n"
    )
    units = expand(load_sweep_file(path))
    assert [(u.task, u.params_dict().get("length")) for u in units] == [
        ("theory", 32),
        ("theory", 64),
        ("theory", 128),
        ("measure", None),
    ]
    assert units[-1].resources == Resources(cpus=2, gpus=0.0, memory_gb=1.5)
    assert units[0].resources == Resources(cpus=1.0, gpus=0.0, memory_gb=None)


def test_a_cuda_unit_asks_for_a_gpu_unless_told_otherwise() -> None:
    (unit,) = grid_from_flags("measure", params=["device=cuda"]).units()
    assert unit.resources.gpus == 1.0
    (unit,) = grid_from_flags(
        "measure", params=["device=cuda:0"], resources=Resources(gpus=0.5)
    ).units()
    assert unit.resources.gpus == 0.5
    (unit,) = grid_from_flags("measure").units()
    assert unit.resources.gpus == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"task": "thoery"},
            r"^--task 'thoery' unknown; choose one of theory, measure, train, "
            r"train-retrieval, reproduce, retrieve, remedies$",
        ),
        ({"task": "retrieve", "params": ["pairz=3"]}, r"^task retrieve has no parameter .pairz."),
        ({"task": None}, r"^give --task"),
        ({"task": "theory", "models": "gpt2"}, r"^task theory takes no --models"),
        ({"task": "measure", "params": ["sample=2"]}, r"^task measure has no parameter 'sample'"),
        ({"task": "measure", "params": ["samples"]}, r"^--param 'samples': write NAME=VALUE"),
        (
            {"task": "measure", "lengths": "16", "params": ["length=32"]},
            r"^parameter 'length' is given twice",
        ),
        ({"task": "measure", "lengths": "16,-2"}, r"^--lengths must be positive, got -2$"),
        ({"task": "measure", "lengths": "16,x"}, r"^--lengths must be whole numbers"),
        ({"task": "measure", "models": " , "}, r"^--models is empty"),
    ],
)
def test_bad_grid_flags_are_one_line_errors(kwargs: dict, message: str) -> None:
    task = kwargs.pop("task")
    with pytest.raises(UserError, match=message) as err:
        grid_from_flags(task, **kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('task = "theory"\nlenghts = [32]\n', r"unknown key 'lenghts'; known: task, models"),
        ('task = "theory"\nlengths = [32\n', r"not valid TOML"),
        ("lengths = [32]\n", r'give task = "measure"'),
        ('task = "theory"\nparams = 3\n', r"params must be a table"),
        ('task = "theory"\n[resources]\ngpu = 1\n', r"resources takes cpus, gpus and memory_gb"),
        ('task = "theory"\n[resources]\ncpus = -1\n', r"resources cpus must be a number >= 0"),
        ('task = "theory"\n[[grid]]\ntask = "theory"\n', r"put every key inside a \[\[grid\]\]"),
        ('[[grid]]\ntask = "theory"\nseeds = "2-1"\n', r"grid 1.*|--seeds '2-1' is not a seed"),
    ],
)
def test_bad_sweep_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message) as err:
        load_sweep_file(path)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="no such file"):
        load_sweep_file(tmp_path / "missing.toml")
