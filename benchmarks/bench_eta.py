"""How good a run's "time left" is: each progress line of a ``reproduce`` (or
``remedies``) log against the time that really remained.

A log line reads ``reproduce: 3/21 done (14%), 0:09:16 elapsed, ~0:55:35 left; ...``
and the run's last line ``21 stages computed, 0 reused, 1113 s; ...``: the time that
remained at a line is the run's end (the ``N/N done`` line's elapsed) minus the line's
elapsed. The table gives, per line, the estimate, the truth and their ratio; the
summary the worst ratio (over or under) in the run's first half and over all lines.

``--remember FOLDER``: before a run, put the stage seconds saved in ``FOLDER/stages``
(a run computed with the same configurations) into the stage-cost memory
(``$LOSTMID_CACHE/stage-seconds.json``, lostmid.runs.eta), as if that run had been
made with this version.

Usage: python benchmarks/bench_eta.py LOG [LOG ...]
       python benchmarks/bench_eta.py --remember results/reproduce
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

LINE = re.compile(
    r"^(?P<label>[\w-]+): (?P<done>\d+)/(?P<total>\d+) done \(\d+%\), "
    r"(?P<elapsed>\d+:\d\d:\d\d) elapsed, ~(?P<left>\d+:\d\d:\d\d|\?) left"
)


def seconds(clock: str) -> float:
    hours, minutes, secs = (int(part) for part in clock.split(":"))
    return 3600.0 * hours + 60.0 * minutes + secs


def lines_of(log: Path) -> list[dict[str, float | str | None]]:
    rows = []
    for text in log.read_text(errors="replace").splitlines():
        match = LINE.match(text.strip())
        if match is None or match["label"] not in ("reproduce", "remedies"):
            continue
        rows.append(
            {
                "done": f"{match['done']}/{match['total']}",
                "elapsed": seconds(match["elapsed"]),
                "left": None if match["left"] == "?" else seconds(match["left"]),
                "last": int(match["done"]) == int(match["total"]),
            }
        )
    return rows


def table(log: Path) -> None:
    rows = lines_of(log)
    ends = [row["elapsed"] for row in rows if row["last"]]
    if not ends:
        sys.exit(f"{log}: no finished stage run in it (no 'N/N done' line)")
    end = float(ends[-1])  # type: ignore[arg-type]
    print(f"{log}: the stages ended at {end:.0f} s")
    print("| done | elapsed s | estimate left s | truth s | estimate / truth |")
    print("| --- | --- | --- | --- | --- |")
    ratios: list[tuple[float, float]] = []
    for row in rows:
        if row["last"]:
            continue
        truth = end - float(row["elapsed"])  # type: ignore[arg-type]
        left = row["left"]
        ratio = None if left is None or truth <= 0 else float(left) / truth  # type: ignore[arg-type]
        if ratio is not None:
            ratios.append((float(row["elapsed"]), ratio))  # type: ignore[arg-type]
        shown = "?" if left is None else f"{left:.0f}"
        print(
            f"| {row['done']} | {row['elapsed']:.0f} | {shown} | {truth:.0f} | "
            f"{'?' if ratio is None else f'{ratio:.2f}'} |"
        )

    def worst(pairs: list[tuple[float, float]]) -> str:
        if not pairs:
            return "none"
        off = max(pairs, key=lambda pair: max(pair[1], 1.0 / pair[1]) if pair[1] > 0 else 1e9)
        return f"{off[1]:.2f} at {off[0]:.0f} s"

    print(f"worst ratio, first half of the run: {worst([p for p in ratios if p[0] <= end / 2])}")
    print(f"worst ratio, all lines: {worst(ratios)}")


def remember(folder: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from lostmid.runs.eta import StageCosts

    costs = StageCosts()
    count = 0
    for path in sorted((folder / "stages").glob("*.json")):
        saved = json.loads(path.read_text())
        if isinstance(saved, dict) and "config" in saved and "seconds" in saved:
            costs.remember(path.stem, saved["config"], float(saved["seconds"]))
            count += 1
    print(f"remembered {count} stages from {folder} in {costs.path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="*", type=Path)
    parser.add_argument("--remember", type=Path, help="a run folder whose stages to remember")
    args = parser.parse_args()
    if args.remember is not None:
        remember(args.remember)
    for log in args.logs:
        table(log)


if __name__ == "__main__":
    main()
