"""The fourth hostile trial's classes as generators of cases (label, argv, environment
changes, what must happen: ``refuse`` = one line on stderr and exit 2, ``run`` = exit 0),
shared by the suite (``test_strict_cases.py``, in-process) and
``benchmarks/bench_faults.py --parts strict`` (each case a fresh interpreter):

* readers: the same damage in every per-sample format ``score`` reads (a file given
  twice, a key twice, nesting 200,000 deep, a depth of 150 or 10^12, 5,000 digits);
  JSON's ``true`` and numbers as text in every profile field ``compare`` reads, and a
  profile at the edge of floats;
* retrieve's design: positions past what ``--pairs`` or the depths can place, a needle
  length past the model's positions, a calibration knob value of 10^9;
* folders: ``--overwrite`` into another command's run, an ``--out`` inside another run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Case = tuple[str, list[str], dict[str, str], str]

DEEP = "[" * 200_000 + "]" * 200_000
SCORE_DAMAGE: dict[str, Callable[[str, str], str]] = {
    "the file twice": lambda text, first: text + text,
    "a key twice": lambda text, first: first.replace('"depth": 0', '"depth": 0, "depth": 90'),
    "a line 200,000 deep": lambda text, first: text + DEEP + "\n",
    "depth 150": lambda text, first: first.replace('"depth": 0', '"depth": 150'),
    "depth 10^12": lambda text, first: first.replace('"depth": 0', '"depth": 1000000000000'),
    "5,000 digits": lambda text, first: first.replace('"depth": 0', '"depth": 1' + "0" * 5000),
}
NOT_NUMBERS: tuple[Any, ...] = (True, False, "0.5", "1e3")


def samples(fmt: str) -> str:
    """A valid per-sample file of ``fmt`` (3 depths x 4 items), as the tool writes it."""
    lines = []
    for depth in (0, 50, 100):
        for item in range(4):
            if fmt == "ruler":
                others = {"depth": depth, "item": item, "length_cell": 1024}
                row = {"index": item, "pred": " 42", "outputs": ["42"], "others": others}
            else:
                doc = {"depth": depth, "gold_index": None, "length_cell": 512, "item": item}
                row = {"doc": doc, "doc_id": depth * 10 + item, "acc": 1.0}
            lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def score_cases(root: Path) -> Iterator[Case]:
    for fmt in ("lm-eval", "ruler"):
        text = samples(fmt)
        first = text.splitlines()[0]
        for damage, make in SCORE_DAMAGE.items():
            path = root / "score" / f"{fmt}-{damage.replace(' ', '_')}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(make(text, first) + "\n")
            yield f"score {fmt}: {damage}", ["score", str(path), "--format", fmt], {}, "refuse"


def edited(record: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``record`` with the dotted ``field`` (list indices as numbers) set to
    ``value``."""
    record = copy.deepcopy(record)
    *parents, last = field.split(".")
    target = record
    for key in parents:
        target = target[key]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return record


def profile_cases(root: Path, hostile: dict[str, Path]) -> Iterator[Case]:
    measure = json.loads(hostile["measure_json"].read_text())
    theory = json.loads(hostile["theory_json"].read_text())
    folder = root / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    edits: list[tuple[str, dict[str, Any], str, Any]] = [
        *[("measured", measure, f"{f}.3", v) for f in ("influence", "stderr") for v in NOT_NUMBERS],
        ("measured", measure, "config.layers", True),
        ("measured", measure, "config.length", "16"),
        *[("theory", theory, "influence.3", v) for v in NOT_NUMBERS],
    ]
    edges = {"1e308": 1e308, "-1e308": -1e308, "10^400": 10**400}
    for i, (kind, record, field, value) in enumerate(edits):
        path = folder / f"{kind}-{i}.json"
        path.write_text(json.dumps(edited(record, field, value)))
        if kind == "measured":
            argv = ["compare", "--measured", str(path)]
        else:
            argv = ["compare", "--measured", str(hostile["measure_json"]), "--theory", str(path)]
        yield f"compare --{kind}: {field} = {value!r}", argv, {}, "refuse"
    for name, value in edges.items():
        path = folder / f"edge-{name}.json"
        edge = {**measure, "influence": [value] * len(measure["influence"])}
        path.write_text(json.dumps(edge))
        label = f"compare --measured: every influence {name}"
        yield label, ["compare", "--measured", str(path)], {}, "refuse"


def design_cases() -> Iterator[Case]:
    tiny = ["retrieve", "--model", "tiny-qwen2", "--tokenizer", "bytes"]
    for task in ("kv", "mqar"):
        for n in ("5", "1000000000"):
            argv = [*tiny, "--task", task, "--pairs", "4", "--positions", n]
            yield f"retrieve {task} --pairs 4 --positions {n}", argv, {}, "refuse"
    for task in ("niah", "niah-multikey"):
        for n in ("102", "1000000000"):
            argv = [*tiny, "--task", task, "--positions", n]
            yield f"retrieve {task} --positions {n}", argv, {}, "refuse"
        for option in ("--lengths", "--length"):
            argv = [*tiny, "--task", task, option, "1000000000", "--positions", "1"]
            argv += ["--examples", "1"]
            yield f"retrieve {task} {option} 1e9 (one example)", argv, {}, "refuse"
    for task in ("kv", "niah"):  # every list-valued size option enters the size check
        argv = [*tiny, "--task", task, "--calibrate", "--knob-values", "3,1000000000"]
        yield f"retrieve {task} --calibrate --knob-values 3,1e9", argv, {}, "refuse"


def other_runs(root: Path) -> dict[str, Path]:
    """Finished runs of other commands (as their folders say so), each with a
    ``checkpoints/`` a ``train --overwrite`` would have removed."""
    made = {}
    for command, marker in (
        ("diagnose", (".lostmid.run.json", '{"command": "diagnose", "config": {}}')),
        ("sweep", (".lostmid.run.json", '{"command": "sweep", "config": {}}')),
        ("theory", ("theory.json", '{"schema": "lostmid.theory/1"}')),
        ("train", ("dynamics.json", '{"schema": "lostmid.train.dynamics/2"}')),
    ):
        folder = root / "runs" / command
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        (folder / "checkpoints" / "study.json").write_text('{"kept": true}')
        (folder / marker[0]).write_text(marker[1])
        made[command] = folder
    return made


def folder_cases(root: Path) -> Iterator[Case]:
    runs = other_runs(root)
    train = ["train", "--preset", "micro", "--steps", "2"]
    for command, folder in runs.items():
        if command != "train":
            argv = [*train, "--overwrite", "--out", str(folder)]
            yield f"train --overwrite into a {command} run", argv, {}, "refuse"
        # a run that resumes or clears what is under it: refused; beside one-shot results
        # (theory.json) another run's folder is fine
        expect = "run" if command == "theory" else "refuse"
        for inside in ("stages/x", "real-behaviour/x", "checkpoints/x"):
            argv = ["theory", "--length", "8", "--out", str(folder / inside)]
            yield f"theory --out inside a {command} run ({inside})", argv, {}, expect


def strict_cases(root: Path, hostile: dict[str, Path]) -> list[Case]:
    """Every case of the module's classes, its files written under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    return [
        *score_cases(root),
        *profile_cases(root, hostile),
        *design_cases(),
        *folder_cases(root),
    ]
