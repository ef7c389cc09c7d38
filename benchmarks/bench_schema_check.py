"""What checking a written result against its published layout costs
(lostmid.schemas.check_written, called by runinfo.write_json after every tagged write):
the check's time against the time to serialise and write the same document, on real
files of a saved run, and the one-off import of pydantic's models in a fresh process.

    python benchmarks/bench_schema_check.py [FILE.json ...]

Without arguments it reads the largest result files of the saved main-job study
(studies/reproduce-default) and of a run folder given by $LOSTMID_BENCH_RUN if set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_theory import best_of

from lostmid.files import write_text
from lostmid.schemas import kind_of_tag, problems_of

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"reproduce.json": "reproduce", "retrieve.json": "retrieval", "measure.json": "measure",
         "dynamics.json": "training", "retrieval.json": "retrieval training"}  # fmt: skip


def files(argv: list[str]) -> list[Path]:
    if argv:
        return [Path(a) for a in argv]
    roots = [ROOT / "studies" / "reproduce-default"]
    if os.environ.get("LOSTMID_BENCH_RUN"):
        roots.append(Path(os.environ["LOSTMID_BENCH_RUN"]))
    found = {p.name: p for r in roots for p in sorted(r.rglob("*.json")) if p.name in KINDS}
    return sorted(found.values(), key=lambda p: -p.stat().st_size)


def main() -> None:
    cold = subprocess.run(
        [sys.executable, "-c", "import time; t = time.perf_counter(); "
         "from lostmid.schemas import problems_of; "
         "problems_of('theory', {}); print(time.perf_counter() - t)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    print(f"first check in a fresh process (pydantic and the models imported): "
          f"{float(cold.stdout):.3f} s")  # fmt: skip
    print(f"{'file':<28} {'KB':>6} {'check ms':>9} {'write ms':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for path in files(sys.argv[1:]):
            document = json.loads(path.read_text())
            kind = kind_of_tag(document) or KINDS[path.name]
            assert problems_of(kind, document) is None, path
            check = best_of(lambda d=document, k=kind: problems_of(k, d), 7)
            target = Path(tmp) / path.name
            write = best_of(
                lambda d=document, t=target: write_text(
                    t, json.dumps(d, indent=1, allow_nan=False) + "\n"
                ),
                7,
            )
            size = path.stat().st_size / 1024
            print(f"{path.name:<28} {size:>6.0f} {check * 1e3:>9.2f} {write * 1e3:>9.2f} "
                  f"{check / write:>6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
