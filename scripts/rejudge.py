"""Judge a finished reproduce run's claims again from what it saved, by today's rules.

A saved run whose stage records are not kept (``studies/reproduce-default``) cannot be
judged again by ``lostmid reproduce --out`` without recomputing its stages. Two parts of
it can be judged from what it kept:

* the core's step-0 rows, from reproduce.json alone (every number they read: each
  candidate's scores per held-out seed, the noise floors, the encoding comparison,
  peak-to-valley, depth 1; :func:`lostmid.reproduce.claims.saved_claims`);
* the real-checkpoint rows, from the profiles in its ``checkpoints/`` folder (the
  study's cells, read by :class:`lostmid.reproduce.checkpoints.CheckpointSection` as the
  run reads them).

This script puts those rows in place of the old ones in ``claims.json`` and in
reproduce.json's ``claims`` (and the section's record), leaves every other row as it
is, and prints what changed.

    python scripts/rejudge.py studies/reproduce-default
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lostmid.reproduce import checkpoints as section
from lostmid.reproduce.claims import saved_claims
from lostmid.runinfo import write_json

SECTION_CLAIMS = (section.DEEPEN_CLAIM, section.PERSIST_CLAIM, section.MIDDLE_CLAIM)


def core_rows(claims: list[dict[str, str]], models: list[str]) -> int:
    """How many leading rows of ``claims`` are the core's (each begins with a model's
    name); the sections' rows follow them."""
    count = 0
    while count < len(claims) and any(claims[count]["claim"].startswith(m) for m in models):
        count += 1
    return count


def checkpoint_rows(claims: list[dict[str, str]]) -> tuple[int, int]:
    """Where the real-checkpoint section's rows are: the first and one past the last."""
    where = [i for i, c in enumerate(claims) if c["claim"] in SECTION_CLAIMS]
    return (where[0], where[-1] + 1) if where else (len(claims), len(claims))


def changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    for row in new:
        same = [o for o in old if (o["ours"], o["rule"]) == (row["ours"], row["rule"])]
        if not same:
            print(f"new: {row['claim']}\n  {row['verdict']}: {row['ours'][:300]}")
        elif same[0]["verdict"] != row["verdict"]:
            print(f"flipped: {row['claim']}: {same[0]['verdict']} -> {row['verdict']}")
        elif same[0]["claim"] != row["claim"]:
            print(f"retitled: {same[0]['claim']}\n       -> {row['claim']}")


def main(folder: Path) -> None:
    record = json.loads((folder / "reproduce.json").read_text())
    old = json.loads((folder / "claims.json").read_text())
    if old != record["claims"]:
        sys.exit(f"{folder}: claims.json and reproduce.json's claims differ; not touched")
    models = record["models"]
    k = core_rows(old, list(models))
    core = [c.record() for c in saved_claims(models)]
    changes(old[:k], core)
    claims = core + old[k:]
    found = section.CheckpointSection.of(str(folder / "checkpoints"), {}, folder, ())
    if found is not None:
        start, stop = checkpoint_rows(claims)
        rows = [c.record() for c in found.claims]
        changes(claims[start:stop], rows)
        print(f"checkpoint rows: {stop - start} -> {len(rows)}")
        claims = claims[:start] + rows + claims[stop:]
        kept = {"source", "folder"}  # where the run read them, as it recorded
        record["checkpoints"] = {
            **{k: v for k, v in record.get("checkpoints", {}).items() if k in kept},
            **{k: v for k, v in found.record().items() if k not in kept},
        }
    record["claims"] = claims
    write_json(folder / "claims.json", claims)
    write_json(folder / "reproduce.json", record)
    print(f"{folder}: {k} core rows -> {len(core)}; {len(claims)} rows in all")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
