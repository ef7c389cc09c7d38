"""``lostmid score SAMPLES``: accuracy by position from per-sample results another tool
wrote, with lostmid's intervals and verdict.

Two tools' files are read (``--format``, ``auto`` tells them apart by the first line):

A model served where lostmid cannot load it (vLLM, llama.cpp's server, an API) still
gets lostmid's analysis: export a task with ``lostmid retrieve --export-lm-eval DIR``,
run it with lm-evaluation-harness and ``--log_samples``, and give the logged samples
(``samples_lostmid_TASK_*.jsonl``) to ``lostmid score``. Each sample's document carries
the position fields the export wrote (``depth`` for a needle task, ``gold_index`` for a
task placed by index, ``length_cell``, ``item``) and lm-eval's score (``acc``): lostmid
pools them by position into Wilson intervals, the primacy and recency contrasts and the
shape class (:mod:`lostmid.stats.shape`), per length cell and over all, exactly as
``retrieve`` does for a model it runs itself.

``ruler``: RULER's prediction files (``scripts/pred/call_api.py`` writes one line per
sample: ``index``, ``pred``, ``outputs``, ``others``, ...) of a needle task exported
with ``lostmid retrieve --export FILE`` and run through RULER's pipeline. The export puts
the needle's depth, item and length cell in ``others``, which RULER carries into its
predictions; a sample is correct by RULER's rule for its needle tasks
(``string_match_all``: every reference in the prediction, case-insensitive).

``needle-tester``: the results of the Needle In A Haystack tester (gkamradt's
``LLMTest_NeedleInAHaystack``: a folder of ``*_results.json``, one per context length and
depth, each with ``context_length``, ``depth_percent``, ``model_response`` and the
evaluator's ``score`` from 1 to 10). A result is correct when the evaluator gave it 10
(its "completely correct"); depths must be whole percents (its linear spacing), and the
context length is the item, so each contrast is paired over the lengths tested at both
depths.

The config and the readers are torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.runs.folder import RunFolder

FORMATS = ("auto", "lm-eval", "ruler", "needle-tester")
HELP = {
    "samples": "Per-sample results: lm-eval's samples_*.jsonl (--log_samples) of a task "
    "lostmid retrieve --export-lm-eval wrote, RULER's predictions (pred/TASK.jsonl) of "
    "a needle task lostmid retrieve --export wrote, or the Needle In A Haystack tester's "
    "results folder.",
    "format": "The format: auto (a folder: the needle tester's; a file: from its first "
    "line) | lm-eval | ruler | needle-tester.",
    "metric": "lm-eval: the per-sample score to read (its metric name; 1 correct, 0 not). "
    "RULER's predictions are scored by RULER's string_match_all.",
    "margin": "Primacy/recency margin of the shape class (as lostmid retrieve --margin).",
    "seed": "Recorded with the run (nothing here is random).",
    "overwrite": "Replace an earlier score.json in --out.",
}
OUTPUT_FILES = ["score.json"]


@dataclass(frozen=True)
class ScoreConfig:
    """What to score (module doc); checked when made."""

    samples: Path
    format: str = "auto"
    metric: str = "acc"
    margin: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        from lostmid.checks import check_choice

        object.__setattr__(self, "samples", Path(self.samples))
        check_choice("--format", self.format, FORMATS)
        if self.samples.is_dir() and self.format in ("auto", "needle-tester"):
            pass  # the needle tester's results folder
        elif not self.samples.is_file():
            raise UserError(
                f"--samples {self.samples}: no such file; give lm-eval's samples_*.jsonl "
                "(lm_eval ... --log_samples --output_path DIR writes it under DIR)"
            )
        if not 0.0 <= self.margin < 1.0:
            raise UserError(f"--margin must be in [0, 1), got {self.margin}")
        if self.format in ("ruler", "needle-tester") and self.metric != "acc":
            raise UserError(
                "--metric names lm-eval's score; RULER's predictions are scored by RULER's "
                "string_match_all and the needle tester's by its evaluator (drop --metric)"
            )

    def record(self) -> dict[str, Any]:
        return asdict(self) | {"samples": str(self.samples)}

    def resolved_format(self) -> str:
        """``format``, or for ``auto`` the one the file's first non-empty line shows."""
        if self.format != "auto":
            return self.format
        if self.samples.is_dir():
            return "needle-tester"
        return detect_samples_format(self.samples)


def detect_samples_format(path: Path) -> str:
    """``lm-eval`` (a line with ``doc``) or ``ruler`` (a line with ``pred`` and
    ``outputs``), from the first non-empty line, read by the project's JSON rule
    (:func:`lostmid.files.parse_json`: a key twice, nesting too deep or a number past
    4,300 digits is one line naming the line); else one line saying what is read."""
    from lostmid.files import parse_json

    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    first = parse_json(line, f"--samples {path}, line {number}", _ADVICE)
                except UserError:
                    if line.lstrip().startswith("{"):
                        raise  # JSON of a known kind, unreadable: say why
                    first = None
                if isinstance(first, dict) and "doc" in first:
                    return "lm-eval"
                if isinstance(first, dict) and {"pred", "outputs"} <= set(first):
                    return "ruler"
                break
    raise UserError(
        f"--samples {path}: neither lm-eval's logged samples (a 'doc' on each line) nor "
        "RULER's predictions ('pred' and 'outputs'); give --format if it is one of them"
    )


_ADVICE = "give the file as the tool wrote it"


def _json_lines(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, object) of each non-empty line, each read by the project's JSON rule
    (:func:`lostmid.files.parse_json`); a line that is not a JSON object is one line
    naming it."""
    from lostmid.files import parse_json, read_text

    out = []
    lines = read_text(path, option="--samples", what="a JSON-lines file").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        value = parse_json(line, where, _ADVICE)
        if not isinstance(value, dict):
            raise UserError(f"{where}: not a JSON object")
        out.append((where, value))
    return out


def refuse_repeats(keys: Sequence[Any], path: Path) -> None:
    """One line when two samples are one (the same id, or the same item at the same
    length and position): a file concatenated twice would count each sample twice."""
    seen: dict[Any, int] = {}
    for number, key in enumerate(keys, 1):
        if key is None:
            continue
        if key in seen:
            raise UserError(
                f"--samples {path}: samples {seen[key]} and {number} are the same sample "
                f"({_sample_name(key)}); give each sample once (one run's file, not joined)"
            )
        seen[key] = number


def _sample_name(key: tuple[Any, ...]) -> str:
    name, value, axis, position, length = key
    at = f" at length {length}" if length is not None else ""
    return f"{name} {value!r} at {axis} {position}{at}"


def _sample_key(row: Mapping[str, Any], name: str, value: Any) -> tuple[Any, ...] | None:
    """What makes a sample one: the tool's id (``name``: ``doc_id``, ``index``) when it
    has one, else its item, at its position and length; None when neither is known."""
    if not isinstance(value, int | str) or isinstance(value, bool):
        name, value = "item", row["item"]
    if not isinstance(value, int | str) or isinstance(value, bool):
        return None
    return (name, value, row["axis"], row["position"], row["length"])


def ruler_correct(pred: str, references: Sequence[str]) -> bool:
    """RULER's ``string_match_all`` for one sample, as a yes/no: every reference is in
    the prediction, case-insensitive (RULER's score is the fraction found; 1 is correct).

    >>> ruler_correct("The numbers are 12 and 34.", ["12", "34"]), ruler_correct("12", ["12", "3"])
    (True, False)
    """
    return all(r.lower() in pred.lower() for r in references)


def read_ruler_predictions(path: Path) -> list[dict[str, Any]]:
    """One row per RULER prediction (as :func:`read_lm_eval_samples`), from the position
    fields lostmid's export put in ``others``; anything else is one line naming the line.

    >>> import json, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "niah.jsonl"
    >>> line = {"index": 3, "pred": " 7142 and", "outputs": ["7142"],
    ...         "others": {"depth": 50, "item": 3, "length_cell": 1024}}
    >>> _ = path.write_text(json.dumps(line) + "\\n")
    >>> read_ruler_predictions(path)
    [{'axis': 'depth', 'position': 50, 'length': 1024, 'item': 3, 'correct': True}]
    """
    rows, keys = [], []
    for where, sample in _json_lines(path):
        pred, outputs = sample.get("pred"), sample.get("outputs")
        if not isinstance(pred, str):
            raise UserError(f"{where}: no text under 'pred'; is this RULER's prediction file?")
        if (
            not isinstance(outputs, list)
            or not outputs
            or not all(isinstance(o, str) for o in outputs)
        ):
            raise UserError(f"{where}: 'outputs' must be a non-empty list of strings")
        others = sample.get("others")
        depth = others.get("depth") if isinstance(others, dict) else None
        if depth is None:
            raise UserError(
                f"{where}: no depth under 'others'; score reads the predictions of a needle "
                "task lostmid retrieve --export wrote (its records carry the depth there)"
            )
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 100:
            raise UserError(f"{where}: depth = {depth!r} is not a depth in % (0-100)")
        assert isinstance(others, dict)
        length, item = others.get("length_cell"), others.get("item", sample.get("index"))
        rows.append(
            {
                "axis": "depth",
                "position": depth,
                "length": length if isinstance(length, int) else None,
                "item": item,
                "correct": ruler_correct(pred, outputs),
            }
        )
        keys.append(_sample_key(rows[-1], "index", sample.get("index")))
    if not rows:
        raise UserError(f"{path}: no predictions in the file")
    refuse_repeats(keys, path)
    return rows


NEEDLE_TESTER_TOP = 10
"""The needle tester's evaluator score of a completely correct answer (1-10 scale)."""


def read_needle_tester(path: Path) -> list[dict[str, Any]]:
    """One row per result of the Needle In A Haystack tester (module doc): a folder of
    ``*_results.json`` or one such file; the item is the context length (and the
    results' ``version``), so depths pair over the lengths tested at both.

    >>> import json, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> one = {"context_length": 1000, "depth_percent": 50.0, "model_response": "x",
    ...        "score": 10, "version": 1}
    >>> _ = (folder / "m_len_1000_depth_5000_results.json").write_text(json.dumps(one))
    >>> read_needle_tester(folder)
    [{'axis': 'depth', 'position': 50, 'length': 1000, 'item': '1000/v1', 'correct': True}]
    """
    from lostmid.files import read_json

    path = Path(path)
    files = sorted(path.glob("*_results.json")) if path.is_dir() else [path]
    if not files:
        raise UserError(
            f"--samples {path}: no *_results.json in the folder; give the needle tester's "
            "results folder (its --results_dir)"
        )
    rows = []
    for file in files:
        result = read_json(file, option="--samples", what="a needle tester's result")
        if not isinstance(result, dict):
            raise UserError(f"{file}: not a JSON object; is it a needle tester's result?")
        length, depth, score = (result.get(k) for k in ("context_length", "depth_percent", "score"))
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise UserError(f"{file}: context_length = {length!r} is not a length in tokens")
        number = isinstance(depth, int | float) and not isinstance(depth, bool)
        percent = float(depth) if number else math.nan  # type: ignore[arg-type]
        if not math.isfinite(percent) or percent != int(percent) or not 0 <= percent <= 100:
            raise UserError(
                f"{file}: depth_percent = {depth!r} is not a whole percent in 0..100 "
                "(lostmid scores whole depths: the tester's linear spacing)"
            )
        if isinstance(score, bool) or not isinstance(score, int | float) or not 1 <= score <= 10:
            raise UserError(f"{file}: score = {score!r}; the evaluator's scores run 1 to 10")
        rows.append(
            {
                "axis": "depth",
                "position": int(percent),
                "length": length,
                "item": f"{length}/v{result.get('version', 1)}",
                "correct": score == NEEDLE_TESTER_TOP,
            }
        )
    return rows


def read_samples(config: ScoreConfig) -> list[dict[str, Any]]:
    """The rows of ``config.samples`` in its format (:func:`read_lm_eval_samples`,
    :func:`read_ruler_predictions`, :func:`read_needle_tester`)."""
    found = config.resolved_format()
    if found == "ruler":
        return read_ruler_predictions(config.samples)
    if found == "needle-tester":
        return read_needle_tester(config.samples)
    return read_lm_eval_samples(config.samples, config.metric)


def read_lm_eval_samples(path: Path, metric: str = "acc") -> list[dict[str, Any]]:
    """One row per logged sample: ``axis`` (``depth`` or ``index``), ``position``,
    ``length`` (the length cell, None when the run had one length), ``item`` and
    ``correct``. Anything else is one line naming the line and what was wrong.

    >>> import json, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> doc = {"depth": 50, "gold_index": None, "length_cell": 512, "item": 3}
    >>> _ = path.write_text(json.dumps({"doc": doc, "acc": 1.0}) + "\\n")
    >>> read_lm_eval_samples(path)
    [{'axis': 'depth', 'position': 50, 'length': 512, 'item': 3, 'correct': True}]
    """
    rows, keys = [], []
    for where, sample in _json_lines(path):
        doc = sample.get("doc")
        if not isinstance(doc, dict):
            raise UserError(f"{where}: no 'doc' object; is this lm-eval's --log_samples file?")
        if doc.get("depth") is not None:
            axis, position = "depth", doc["depth"]
        elif doc.get("gold_index") is not None:
            axis, position = "index", doc["gold_index"]
        else:
            raise UserError(
                f"{where}: its document has no depth or gold_index; score reads the "
                "samples of a task lostmid retrieve --export-lm-eval wrote"
            )
        score = sample.get(metric)
        if isinstance(score, list) and len(score) == 1:
            score = score[0]
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise UserError(f"{where}: no number under {metric!r} (--metric names lm-eval's)")
        if not math.isfinite(score) or score not in (0, 1):
            raise UserError(f"{where}: {metric} = {score!r}; expected 1 (correct) or 0")
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise UserError(f"{where}: {axis} = {position!r} is not a position")
        if axis == "depth" and position > 100:
            raise UserError(f"{where}: depth = {position!r} is not a depth in % (0-100)")
        length = doc.get("length_cell")
        rows.append(
            {
                "axis": axis,
                "position": position,
                "length": length if isinstance(length, int) else None,
                "item": doc.get("item"),
                "correct": score == 1,
            }
        )
        keys.append(_sample_key(rows[-1], "doc_id", sample.get("doc_id")))
    if not rows:
        raise UserError(f"{path}: no samples in the file")
    refuse_repeats(keys, path)
    if len({r["axis"] for r in rows}) > 1:
        raise UserError(f"{path}: samples of a depth task and an index task mixed; one task a file")
    return rows


def score_rows(rows: Sequence[Mapping[str, Any]], margin: float) -> dict[str, Any]:
    """Accuracy by position with Wilson intervals, the summary (primacy, recency, gap
    with Newcombe intervals, paired by the samples' item ids where they pair up) and the
    shape class (primacy and recency paired likewise), over all rows and per length
    cell."""
    from lostmid.behaviour.score import score_positions, shape_of, summarise_positions

    def one(part: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import numpy as np

        axis = part[0]["axis"]
        positions = np.array([int(r["position"]) for r in part])
        correct = np.array([bool(r["correct"]) for r in part])
        # the export's item ids pair the contrasts by item (one per length cell), when
        # every sample has one
        items = None
        if all(isinstance(r["item"], int | str) and not isinstance(r["item"], bool) for r in part):
            items = [(r["length"], r["item"]) for r in part]
        scores = score_positions(positions, correct, None, axis, items)
        summary = summarise_positions(scores, "generate")
        return {
            "positions": [s.record() for s in scores],
            "summary": summary.record(),
            "shape": shape_of(scores, summary, margin).record(),
        }

    lengths = sorted({r["length"] for r in rows if r["length"] is not None})
    result = {"axis": rows[0]["axis"], "samples": len(rows), **one(rows)}
    if len(lengths) > 1:
        result["by_length"] = {str(n): one([r for r in rows if r["length"] == n]) for n in lengths}
    return result


FOLDER = RunFolder("score", writes=tuple(OUTPUT_FILES))
"""What ``run_score`` writes into ``--out``."""


@FOLDER.holds
def run_score(
    config: ScoreConfig, *, out: Path, overwrite: bool = False, console: Any = None
) -> dict[str, Any]:
    """Read the samples, score them by position, write ``score.json``; returns its
    record (``schema`` ``lostmid.score/1``)."""
    import time

    from lostmid.files import schema_of
    from lostmid.runinfo import write_json

    start = time.perf_counter()
    rows = read_samples(config)
    if config.resolved_format() == "lm-eval":  # prompted as the export says lostmid did
        from lostmid.behaviour.formats.lmeval import check_chat_template

        check_chat_template(config.samples)
    folder = FOLDER.open(out, overwrite=overwrite)
    scored = score_rows(rows, config.margin)
    metadata = folder.metadata(
        {**config.record(), "out": str(out)},
        config.seed,
        {"total": time.perf_counter() - start},
    )
    record = {
        "schema": schema_of("score"),
        "source": str(config.samples),
        "format": config.resolved_format(),
        **scored,
    }
    write_json(out / "score.json", record | {"metadata": metadata})
    if console is not None:
        from rich.table import Table

        from lostmid.report.layout import fit_table

        axis = scored["axis"]
        table = Table(title=f"lostmid score: {config.samples.name}")
        for column in (config_axis(axis), "n", "correct", "accuracy [Wilson 95%]"):
            table.add_column(column)
        for p in scored["positions"]:
            table.add_row(
                str(p[axis]),
                str(p["n"]),
                str(p["correct"]),
                f"{p['accuracy']:.2f} [{p['ci_low']:.2f}, {p['ci_high']:.2f}]",
            )
        console.print(fit_table(table))
        console.print(f"shape {scored['shape']['shape']}; wrote {out / 'score.json'}")
    return record


def config_axis(axis: str) -> str:
    """The column name of a position axis."""
    return "depth %" if axis == "depth" else "gold index"
