"""The registry checkpoints: load times (first load dequantises, later loads read the
cache) and the pretrained-vs-twins influence study (issue 24).

    python benchmarks/bench_checkpoints.py --loads
    python benchmarks/bench_checkpoints.py --study results/checkpoints --lengths 512 \
        --inputs 8 --twins 3            # resumable: rerun the same line after a kill
    python benchmarks/bench_checkpoints.py --table results/checkpoints [--readout single]
    python benchmarks/bench_checkpoints.py --stage default --out DIR   # reproduce's stage

``--loads`` times, in fresh interpreters and with an empty cache folder, the first
``load_model(NAME, init="pretrained")`` of each checkpoint (GGUF checked, dequantised,
written to the cache) and its tokenizer, and the second (a safetensors read; a new
interpreter also pays transformers' model-code imports, so model and tokenizer are
timed once more in the same interpreter), and the import of lostmid's model code that
every interpreter pays; ``--warm-cache DIR`` times only the later loads, from a cache
that already holds both. ``--study`` writes
``study.json`` and one ``.npz`` of profiles per model and cell into the folder;
``lostmid reproduce --checkpoints DIR`` reads the same folder back into the report.
``--stage SCALE`` times reproduce's checkpoint stage at that scale in a new folder (one
torch thread, as a stage worker runs it) and writes its result to ``DIR/stage.json``:
run it from two commits' checkouts side by side to compare them (then ``cmp`` the
``.npz`` files: the same numbers byte for byte).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOAD = """
import time, json
t0 = time.perf_counter()
from lostmid.behaviour.decoding.tokenizers import tokenizer_for_model
from lostmid.models import load_model
t1 = time.perf_counter()
load_model({name!r}, init="pretrained")
t2 = time.perf_counter()
tokenizer_for_model({name!r})
t3 = time.perf_counter()
load_model({name!r}, init="pretrained")  # the same again: no import left to pay
tokenizer_for_model({name!r})
t4 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "load_s": t2 - t1, "tokenizer_s": t3 - t2,
                  "again_s": t4 - t3}}))
"""


def _timed_load(name: str, cache: str) -> dict[str, float]:
    env = {**os.environ, "LOSTMID_CACHE": cache}
    done = subprocess.run(
        [sys.executable, "-c", LOAD.format(name=name)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def loads(warm: Path | None) -> None:
    """``warm``: a cache folder already holding both checkpoints (the first load is then
    not timed); None: a new empty one."""
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as empty:
        cache = str(warm) if warm is not None else empty
        for name in ("smollm2-135m", "gemma3-270m"):
            if warm is None:
                first = _timed_load(name, cache)
                print(
                    f"{name}: first load {first['load_s']:.1f} s (import "
                    f"{first['import_s']:.1f} s), its tokenizer {first['tokenizer_s']:.2f} s"
                )
            second = _timed_load(name, cache)
            print(
                f"{name}: from the cache in a new interpreter: model {second['load_s']:.2f} s, "
                f"tokenizer {second['tokenizer_s']:.2f} s (import {second['import_s']:.1f} s); "
                f"both again in the same interpreter {second['again_s']:.2f} s"
            )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def table(folder: Path, readout: str = "binned") -> None:
    from rich.console import Console
    from rich.table import Table

    from lostmid.pretrained.study import (
        TABLE_HEADER,
        comparison_table,
        read_study_config,
        study_comparisons,
    )

    config = read_study_config(folder)
    found = study_comparisons(config, folder, readout=readout)
    grid = Table(*TABLE_HEADER, title=f"{readout} readout")
    for row in comparison_table(found):
        grid.add_row(*row)
    Console(width=250).print(grid)
    for cell, c in found.items():
        control = c.record()["quantisation"]
        said = "not measured" if control is None else _control_words(control)
        print(
            f"{cell}: deepens: {c.deepens.verdict}; the U persists: {c.persists.verdict}; "
            f"valley in the middle: {c.middle.verdict}; quantisation control: {said}"
        )
    if readout == "binned":
        robust(folder)


def robust(folder: Path) -> None:
    """Each cell's deepens / persists rows as reproduce judges them: read at every peak
    against every set of twins the study measured, one verdict across them."""
    from lostmid.reproduce.checkpoints import CheckpointSection

    section = CheckpointSection.of(str(folder), {}, folder, ())
    assert section is not None
    for claim in section.claims:
        if "change by peak" in claim.ours:
            cell = claim.ours.split(":", 1)[0]
            print(f"{cell} | {claim.claim}: {claim.verdict}")
            print("    " + claim.ours[claim.ours.index("change by peak") :])


def _control_words(control: dict) -> str:
    shift = control["shift"]
    if shift.get("low") is None:
        return f"shift {shift['value']:+.2f} ({control['verdict']})"
    return (
        f"shift {shift['value']:+.2f} [{shift['low']:+.2f}, {shift['high']:+.2f}] "
        f"({control['verdict']})"
    )


def stage(scale: str, out: Path | None) -> None:
    """``checkpoint_stage(scale, out)`` on one torch thread, timed."""
    import torch

    from lostmid.reproduce.checkpoints import checkpoint_stage
    from lostmid.runinfo import to_jsonable

    if out is None or (out.exists() and any(out.iterdir())):
        raise SystemExit("--stage needs --out, a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    result = checkpoint_stage(scale, out)
    seconds = time.perf_counter() - start
    (out / "stage.json").write_text(json.dumps({"seconds": seconds, "result": to_jsonable(result)}))
    print(f"checkpoint stage ({scale}): {seconds:.1f} s; load at end {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", action="store_true")
    parser.add_argument("--warm-cache", type=Path, help="--loads from this filled cache")
    parser.add_argument("--study", type=Path)
    parser.add_argument("--table", type=Path, help="judge a finished study's folder again")
    parser.add_argument("--readout", default="binned", help="--table: binned or single")
    parser.add_argument("--lengths", default="512")
    parser.add_argument("--inputs", type=int, default=8)
    parser.add_argument("--twins", type=int, default=3)
    parser.add_argument("--probes", type=int, default=1)
    parser.add_argument("--checkpoints", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--controls", default="", help="e.g. requantised")
    parser.add_argument("--kinds", default="random,text,records,chat")
    parser.add_argument("--control-inputs", type=int, help="inputs of the control models")
    parser.add_argument("--control-twins", type=int, help="twins of each twin control")
    parser.add_argument("--twin-init-std", type=float, help="the twins' stated init range")
    parser.add_argument("--stage", help="time reproduce's checkpoint stage at this scale")
    parser.add_argument("--out", type=Path, help="--stage: a new folder for its files")
    args = parser.parse_args()
    if args.stage is not None:
        stage(args.stage, args.out)
    if args.loads:
        loads(args.warm_cache)
    if args.study is not None:
        from lostmid.pretrained.study import StudyConfig, run_study

        config = StudyConfig(
            checkpoints=tuple(args.checkpoints.split(",")),
            lengths=tuple(int(x) for x in args.lengths.split(",")),
            inputs=args.inputs,
            twins=args.twins,
            probes=args.probes,
            controls=tuple(c for c in args.controls.split(",") if c),
            kinds=tuple(args.kinds.split(",")),
            control_inputs=args.control_inputs,
            control_twins=args.control_twins,
            twin_init_std=args.twin_init_std,
        )
        start = time.perf_counter()
        run_study(config, args.study, progress=lambda m: print(m, flush=True))
        print(f"study: {time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.2f}")
        table(args.study)
    if args.table is not None:
        table(args.table, args.readout)


if __name__ == "__main__":
    main()
