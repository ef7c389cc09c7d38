"""Benchmark the lead-in pilot shared by the inference remedies' arms.

``--lead-in learn`` makes every inference arm (baseline, query-aware, calibrate, Ms-PoE)
learn the model's lead-in from greedy replies to a pilot (12 items at the middle depth,
generated with room for the lead-in). The arms whose prompts agree (all but
query-aware's) now read one pilot, kept in the run's ``pilots/`` folder. This script
runs the real-remedies section's design on each checkpoint twice, into fresh folders:
once with every arm running its own pilot (the earlier behaviour, by replacing the
pilot store with one that keeps nothing) and once as the code runs now, and prints the
pilots computed, their seconds, the run's wall seconds and whether every arm's
per-example outcome and log p are equal between the two.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_pilot_sharing.py --out /tmp/pilots
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any


def one_run(model: str, out: Path, examples: int, shared: bool) -> dict[str, Any]:
    import lostmid.remedies.inference as inference
    from lostmid.remedies.run import run_remedies
    from lostmid.reproduce.real_remedies import REAL_REMEDY_SCALES
    from lostmid.runs.backend import Backend

    config = REAL_REMEDY_SCALES["default"].remedies_config(model, 0)
    config = dataclasses.replace(config, examples=examples)
    if out.exists():
        shutil.rmtree(out)
    seconds: list[float] = []
    original = inference.PilotStore

    class Timed:
        """The pilot store (or none: ``shared`` off), timing each pilot it computes."""

        def __init__(self, root: Path) -> None:
            self.inner = original(root) if shared else inference.ComputeOnly()

        def run(self, name: str, config: dict[str, Any], compute: Any) -> Any:
            def timed() -> Any:
                begin = time.perf_counter()
                try:
                    return compute()
                finally:
                    seconds.append(time.perf_counter() - begin)

            return self.inner.run(name, config, timed)

    inference.PilotStore = Timed  # type: ignore[misc,assignment]
    try:
        begin = time.perf_counter()
        run_remedies(config, out=out, backend=Backend(jobs=1))
        wall = time.perf_counter() - begin
    finally:
        inference.PilotStore = original  # type: ignore[misc]
    arms = {
        p.stem: json.loads(p.read_text())["result"]
        for p in sorted((out / "stages").glob("inference-*.json"))
    }
    return {"pilots": seconds, "wall": wall, "arms": arms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--examples", type=int, default=2, help="items a depth in each arm")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-pilots"))
    args = parser.parse_args()
    print(
        "| checkpoint | arms | pilots before -> after | s a pilot | run s before -> after "
        "| outcomes and log p equal |"
    )
    print("|---|---|---|---|---|---|")
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        before = one_run(model, args.out / model / "own", args.examples, shared=False)
        after = one_run(model, args.out / model / "shared", args.examples, shared=True)
        equal = before["arms"].keys() == after["arms"].keys() and all(
            before["arms"][k]["correct"] == after["arms"][k]["correct"]
            and before["arms"][k]["logprob"] == after["arms"][k]["logprob"]
            and before["arms"][k].get("lead_in") == after["arms"][k].get("lead_in")
            for k in before["arms"]
        )
        each = sum(before["pilots"]) / max(len(before["pilots"]), 1)
        print(
            f"| {model} | {len(before['arms'])} | {len(before['pilots'])} -> "
            f"{len(after['pilots'])} | {each:.1f} | {before['wall']:.0f} -> "
            f"{after['wall']:.0f} | {'yes' if equal else 'NO'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
