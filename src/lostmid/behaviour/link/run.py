"""A link study's run in its folder: every example of the pretrained model and its twin,
one JSON line each in ``examples.jsonl`` (kept for a rerun, grown by a larger design),
then ``link.json`` (the summary with the run's metadata) and ``link.png``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lostmid.behaviour.link.design import PRETRAINED, TWIN, grows
from lostmid.behaviour.link.example import link_example
from lostmid.behaviour.link.summary import plot_link, summarise
from lostmid.files import loads, write_text
from lostmid.models.identity import identified
from lostmid.models.spec import ModelSpec
from lostmid.runs.folder import RunFolder

RESULT = "link.json"
EXAMPLES = "examples.jsonl"
COMMAND = "real-link"
RUN_FOLDER = RunFolder(COMMAND, resumes="stages", result=RESULT)
"""What :func:`link_run` writes into its folder: the examples so far, kept for a rerun."""


def read_examples(path: Path) -> list[dict[str, Any]]:
    """The records of ``examples.jsonl``; a line cut short by a killed run is dropped
    (and the file rewritten without it), so a resumed run recomputes only that one."""
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    records = []
    for line in lines:
        try:
            records.append(loads(line))
        except ValueError:  # cut short, nested too deep, a number past int's digits: recomputed
            continue
    if len(records) != len(lines) or (lines and not path.read_text().endswith("\n")):
        write_text(path, "".join(json.dumps(r) + "\n" for r in records))
    return records


def _append(path: Path, record: Mapping[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def link_run(
    design: Mapping[str, Any], folder: Path, *, console: Any = None, overwrite: bool = False
) -> dict[str, Any]:
    """Run (or resume, or grow) the link study of ``design`` in ``folder``: every example
    of the pretrained model and its twin, then ``link.json`` (the summary, with the
    run's configuration, versions, checkpoint and timings) and ``link.png``. Returns
    the summary (:func:`summarise`)."""
    from lostmid.behaviour.decoding.prompts import prompt_format
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec
    from lostmid.runinfo import write_json
    from lostmid.runs.progress import progress

    begin = time.perf_counter()
    folder = Path(folder)
    with RUN_FOLDER.lock(folder):
        claim = identified(design, (design.get("model"), design.get("tokenizer")))
        opened = RUN_FOLDER.open(folder, claim, overwrite=overwrite, grows=grows)
        path = folder / EXAMPLES
        if overwrite and path.exists():
            path.unlink()
        records = read_examples(path)
        seen = {(r["model"], r["depth"], r["index"]) for r in records}
        spec = ModelSpec.from_record(design)
        model = spec.name
        tokenizer = tokenizer_for_spec(spec)
        fmt = prompt_format(
            str(design["chat_template"]), tokenizer, str(design.get("answer_prefix", "on"))
        )
        arms: tuple[tuple[str, str, int], ...] = (
            (PRETRAINED, "pretrained", int(design["per_depth"])),
            (TWIN, "random", int(design["twin_per_depth"])),
        )
        todo = [
            (label, init, d, i)
            for label, init, n in arms
            for i in range(n)
            for d in design["depths"]
            if (label, d, i) not in seen
        ]
        checkpoint = None
        with progress(f"real-link {model}", console=console) as bar:
            task = bar.add_task(f"real-link {model}", total=len(todo))
            for label, init, _n in arms:
                mine = [t for t in todo if t[0] == label]
                if not mine:
                    continue
                loaded = spec.load(init=init, seed=int(design["twin_seed"]))
                checkpoint = checkpoint or loaded.checkpoint
                for _, _, depth, index in mine:
                    t0 = time.perf_counter()
                    record = {"model": label} | link_example(
                        loaded, tokenizer, fmt, design, depth, index
                    )
                    record["seconds"] = time.perf_counter() - t0
                    _append(path, record)
                    records.append(record)
                    bar.update(task, last=f"{label} depth {depth} #{index}")
                    bar.advance(task)
                del loaded
        summary = summarise(records, design)
        meta = opened.metadata(
            dict(design), int(design["seed"]), {"total": time.perf_counter() - begin}
        )
        meta["checkpoint"] = checkpoint
        meta["example_seconds"] = float(sum(r.get("seconds", 0.0) for r in records))
        write_json(folder / RESULT, summary | {"metadata": meta})
        plot_link(summary, folder / "link.png")
    return summary
