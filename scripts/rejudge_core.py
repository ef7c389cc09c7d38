"""Judge a finished reproduce run's step-0 claims again from its reproduce.json alone.

A saved run whose stage records are not kept (``studies/reproduce-default``) cannot be
judged again by ``lostmid reproduce --out`` without recomputing its stages. Its
reproduce.json holds every number the step-0 claims read (each candidate's scores per
held-out seed, the noise floors, the encoding comparison, peak-to-valley, depth 1), so
:func:`lostmid.reproduce.claims.saved_claims` gives the rows a run makes today, by
today's rules. This script puts them in place of the core's rows of ``claims.json`` and
of reproduce.json's ``claims`` and leaves every other row as it is. It prints what
changed.

    python scripts/rejudge_core.py studies/reproduce-default
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lostmid.reproduce.claims import saved_claims
from lostmid.runinfo import write_json


def core_rows(claims: list[dict[str, str]], models: list[str]) -> int:
    """How many leading rows of ``claims`` are the core's (each begins with a model's
    name); the sections' rows follow them."""
    count = 0
    while count < len(claims) and any(claims[count]["claim"].startswith(m) for m in models):
        count += 1
    return count


def main(folder: Path) -> None:
    record = json.loads((folder / "reproduce.json").read_text())
    old = json.loads((folder / "claims.json").read_text())
    if old != record["claims"]:
        sys.exit(f"{folder}: claims.json and reproduce.json's claims differ; not touched")
    models = record["models"]
    k = core_rows(old, list(models))
    new = [c.record() for c in saved_claims(models)]
    claims = new + old[k:]
    for row in new:
        same = [o for o in old[:k] if (o["ours"], o["rule"]) == (row["ours"], row["rule"])]
        if not same:
            print(f"new: {row['claim']}\n  {row['verdict']}: {row['ours']}")
        elif same[0]["verdict"] != row["verdict"]:
            print(f"flipped: {row['claim']}: {same[0]['verdict']} -> {row['verdict']}")
        elif same[0]["claim"] != row["claim"]:
            print(f"retitled: {same[0]['claim']}\n       -> {row['claim']}")
    record["claims"] = claims
    write_json(folder / "claims.json", claims)
    write_json(folder / "reproduce.json", record)
    print(f"{folder}: {k} core rows -> {len(new)}; {len(old) - k} other rows kept")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
