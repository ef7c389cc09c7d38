"""Every numeric option of every command, set to a huge value one at a time (the options
read from the CLI itself, so a new option is tried the day it is added): refused in one
error line and exit 2 within seconds (after a progress line at most), or a run that goes
on saying what it does, inside a memory limit. Never a traceback, a silent hang, an
allocation past the limit, or the "out of memory" line (the estimate should have
refused it before allocating).

Each case is a child forked from this process (imports paid once, :mod:`harness`), its
address space limited to what it inherits plus :data:`MORE_MEMORY`: a request the size
checks missed fails fast here instead of meeting the machine's OOM killer.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from harness import Run

HUGE = {"int": "1000000000000", "float": "1e12"}
MORE_MEMORY = 3 << 30
"""Bytes a case may allocate beyond what the forked child starts with."""
SECONDS = 5.0
"""A case still running after this long must have said something (its plan, its
progress); it is then stopped: it was accepted and runs."""

# The smallest run of each command (several where options apply to different tasks):
# every numeric option of the command is tried on each. Paths are filled in by the test.
BASES: dict[str, list[list[str]]] = {
    "theory": [["theory", "--layers", "2", "--length", "8"]],
    "measure": [
        ["measure", "--model", "tiny-qwen2", "--length", "8", "--samples", "1", "--probes", "1"]
    ],
    "ablate": [
        [
            "ablate",
            "--model",
            "tiny-gpt2",
            "--length",
            "8",
            "--samples",
            "1",
            "--probes",
            "1",
            "--seeds",
            "1",
            "--layers",
            "1",
        ],
    ],  # fmt: skip
    "compare": [["compare", "--measured", "{measure}"]],
    "retrieve": [
        [
            "retrieve",
            "--model",
            "tiny-gpt2",
            "--task",
            "mqar",
            "--pairs",
            "4",
            "--vocab",
            "16",
            "--positions",
            "2",
            "--examples",
            "1",
        ],
        [
            "retrieve",
            "--model",
            "{bpe}",
            "--task",
            "niah-multikey",
            "--length",
            "200",
            "--positions",
            "2",
            "--examples",
            "1",
            "--distractors",
            "1",
            "--passes",
            "teacher",
        ],
    ],  # fmt: skip
    "train": [
        ["train", "--preset", "micro", "--steps", "2"],
        ["train", "--task", "kv", "--preset", "retrieval-micro", "--steps", "2"],
    ],
    "remedies": [
        [
            "remedies",
            "--quick",
            "--preset",
            "retrieval-micro",
            "--steps",
            "4",
            "--seeds",
            "1",
            "--remedies",
            "loss-weight",
            "--examples",
            "2",
        ],
    ],  # fmt: skip
    "reproduce": [
        [
            "reproduce",
            "--quick",
            "--models",
            "tiny-qwen2",
            "--length",
            "32",
            "--seeds",
            "1",
            "--train-steps",
            "0",
            "--behaviour-preset",
            "retrieval-micro",
            "--behaviour-steps",
            "4",
            "--behaviour-seeds",
            "1",
            "--dose",
            "off",
            "--checkpoints",
            "off",
            "--real-behaviour",
            "off",
            "--real-link",
            "off",
            "--real-remedies",
            "off",
        ],
    ],  # fmt: skip
    "sweep": [["sweep", "--task", "theory", "--lengths", "8", "--seeds", "0"]],
    "score": [["score", "{samples}"]],
    "diagnose": [["diagnose", "{bpe}", "--scale", "quick"]],
    "series": [
        [
            "series",
            "--models",
            "{bpe},{bpe2}",
            "--steps",
            "0,1",
            "--length",
            "16",
            "--inputs",
            "2",
            "--twins",
            "1",
            "--probes",
            "1",
            "--kinds",
            "random",
        ],
    ],  # fmt: skip
    "list": [["list", "tasks"]],  # writes nothing, takes no number
}


def _commands() -> dict[str, Any]:
    import typer

    from lostmid.cli import app

    return dict(typer.main.get_command(app).commands)


def numeric_options() -> list[tuple[str, str, str]]:
    """(command, option, "int" | "float") for every numeric option the CLI declares."""
    found = []
    for name, command in sorted(_commands().items()):
        for param in command.params:
            kind = str(param.bare_type())
            if param.opts[0].startswith("--") and kind in HUGE:
                found.append((name, param.opts[0], kind))
    return found


CASES = numeric_options()


def test_every_command_has_a_base_and_the_options_are_found() -> None:
    assert set(BASES) == set(_commands())
    assert len(CASES) >= 80  # 82 when this was written; fewer means the reader broke
    assert ("retrieve", "--values-per-key", "int") in CASES
    assert ("theory", "--alpha", "float") in CASES


def _without(argv: list[str], option: str) -> list[str]:
    """``argv`` without ``option`` and its value."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        else:
            out.append(arg)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, bpe_model_dir: Path) -> dict[str, str]:
    """The files the bases read: a measure.json, an lm-eval samples file, a model folder."""
    from lostmid.influence import MeasureConfig, run_measure

    folder = tmp_path_factory.mktemp("huge-inputs")
    run_measure(MeasureConfig(model="tiny-qwen2", length=8, samples=1, probes=1), out=folder / "m")
    samples = folder / "samples_niah.jsonl"
    rows = [
        {"doc": {"depth": d, "gold_index": None, "length_cell": 64, "item": i}, "acc": 1.0}
        for d in (0, 50, 100)
        for i in range(3)
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copytree(bpe_model_dir, folder / "bpe-later")  # a second checkpoint of one run
    return {
        "bpe2": str(folder / "bpe-later"),
        "measure": str(folder / "m" / "measure.json"),
        "samples": str(samples),
        "bpe": str(bpe_model_dir),
    }


def _tried(command: str, option: str, value: str, inputs: dict[str, str], tmp_path: Path) -> None:
    """Run every base of ``command`` with ``option value``: refused in one line, or it
    runs saying what it does (module doc)."""
    for k, base in enumerate(BASES[command]):
        argv = [a.format(**inputs) for a in _without(base, option)]
        argv += [option, value, "--out", str(tmp_path / f"out{k}")]
        log = tmp_path / f"log{k}"
        run = Run(argv, log, "fork", more_memory=MORE_MEMORY)
        deadline = time.perf_counter() + SECONDS
        while (code := run.poll()) is None and time.perf_counter() < deadline:
            time.sleep(0.02)
        said = log.read_text(errors="replace") if log.exists() else ""
        # silent so far: a loaded machine gets twice as long again before it is a hang
        while code is None and not said.strip() and time.perf_counter() < deadline + 2 * SECONDS:
            time.sleep(0.05)
            code = run.poll()
            said = log.read_text(errors="replace") if log.exists() else ""
        what = f"lostmid {' '.join(argv)[:300]}"
        if code is None:  # accepted: it must be saying what it does
            run.kill()
            assert said.strip(), f"{what}: {SECONDS:g} s without a word (a hang?)"
            assert "Traceback" not in said, f"{what}:\n{said[-2000:]}"
            continue
        assert "Traceback" not in said, f"{what}:\n{said[-2000:]}"
        assert "out of memory" not in said, f"{what}: the estimate let it allocate: {said}"
        assert code in (0, 2), f"{what}: exit {code}\n{said[-2000:]}"
        if code == 2:  # one error line, the last (a progress line may come before it)
            lines = [line for line in said.splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("error:")]
            assert len(errors) == 1 and lines[-1] == errors[0], f"{what}:\n{said[-2000:]}"


@pytest.mark.parametrize(("command", "option", "kind"), CASES)
def test_a_huge_value_is_refused_in_one_line_or_runs(
    command: str, option: str, kind: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    _tried(command, option, HUGE[kind], inputs, tmp_path)


# -- options that hold numbers in text: lists, counts and ranges, NAME:NUMBER -------------------

LONG = 20_000
"""Entries of a long list: a request by its length, not by one value (about as long as
one argument can be from a shell: Linux takes at most 128 KiB)."""
LIST_FORMS: dict[str, list[str]] = {
    "a count": ["1000000000000", "0-1000000000000"],
    "e.g. ": ["0,1000000000000", ",".join(map(str, range(LONG)))],
    "LOW,HIGH": ["0.3,1e12"],
    "values to search": ["0,1000000000000", ",".join(map(str, range(LONG)))],
    "list:a1": ["power:1e12", "list:" + ",".join(["0.5"] * LONG)],
    "sliding:W": ["sliding:1000000000000", "prefix:1000000000000"],
    "power:A": ["power:1e12", "beta:1e12"],
    "NAME=V1,V2": ["samples=1000000000000", "alpha=" + ",".join(["0.5"] * LONG)],
}
"""How an option's help says it holds numbers in text -> its huge values: one huge number
in each of its forms, and a list of :data:`LONG` entries where it takes a list."""


def list_options() -> list[tuple[str, str, str]]:
    """(command, option, value) for every text option whose help shows numbers in text
    (:data:`LIST_FORMS`' marks), each huge value of its form."""
    found = []
    for name, command in sorted(_commands().items()):
        for param in command.params:
            if not param.opts[0].startswith("--") or str(param.bare_type()) in HUGE:
                continue
            for mark, values in LIST_FORMS.items():
                if mark in (param.help or ""):
                    found += [(name, param.opts[0], v) for v in values]
                    break
    return found


LIST_CASES = list_options()


def test_the_text_options_that_hold_numbers_are_found() -> None:
    options = {(c, o) for c, o, _ in LIST_CASES}
    assert {
        ("ablate", "--seeds"), ("remedies", "--seeds"), ("reproduce", "--seeds"),
        ("reproduce", "--train-seeds"), ("reproduce", "--behaviour-seeds"),
        ("retrieve", "--gold-index"), ("retrieve", "--depth"), ("retrieve", "--lengths"),
        ("retrieve", "--band"), ("retrieve", "--knob-values"), ("sweep", "--seeds"),
        ("sweep", "--lengths"), ("sweep", "--param"), ("theory", "--mask"),
        ("theory", "--alpha-schedule"), ("train", "--gold"),
    } <= options  # fmt: skip


@pytest.mark.parametrize(
    ("command", "option", "value"),
    LIST_CASES,
    ids=[f"{c}-{o}-{v[:20]}{'...' if len(v) > 20 else ''}" for c, o, v in LIST_CASES],
)
def test_a_huge_list_or_count_is_refused_in_one_line_or_runs(
    command: str, option: str, value: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    _tried(command, option, value, inputs, tmp_path)
