"""``lostmid retrieve``: retrieval accuracy by gold position on any causal LM, over one
context length or a length x position grid.

Writes under ``--out``:

* ``retrieve.json``: ``"positions"`` (one record per gold position: ``index`` or
  ``depth``, ``n``, ``correct``, ``accuracy``, ``ci_low``, ``ci_high``,
  ``mean_logprob``; over several lengths the positions are the heatmap rows, depth in
  %, pooled), ``"summary"`` and ``"shape"`` of the primary metric (greedy generation
  when it ran, else the teacher-forced argmax), ``"by_metric"`` with both when both
  ran, ``"cells"`` (one record per length x position and metric, Wilson intervals),
  ``"by_length"`` (positions, summary and shape at each length), ``"scoring"`` (the
  answer rule, the passes), ``"prompt"`` (chat template choice, special tokens, whether
  the answer prefix starts the assistant's turn, the prefix as read, the greedy budget,
  the rendered prompt of the first example), ``"calibration"`` (``--calibrate``: every
  knob value tried with its Wilson interval, the choice, the one-line outcome; else
  None), ``"design"``, ``"data"``, the model, the tokenizer, ``"config"`` (the run as
  asked), ``"measured_config"`` (with ``--calibrate``: the knob as chosen) and
  ``"metadata"``;
* ``retrieve.cells.csv``: the printed table of cells;
* ``retrieve.png``: accuracy by position with Wilson intervals, one line per metric (one
  length) or per length (several); ``heatmap.png``: length x depth, accuracy as colour;
* ``predictions.jsonl``: per example its item, position, depth %, length cell, token
  count, value, greedy answer, scores;
* ``prompt.txt``: the first example's prompt as the tokenizer received it;
* ``stages/``: each stage's result as it finished: a cell's, every depth of a few items
  (a depth sweep, whose prompts of one item are read from a shared prefix),
  ``--design shared``: each length's; ``pilot-KNOBVALUE``: a calibration pilot's greedy
  answers;
  a rerun with the same ``--out`` and configuration reuses them (which were reused and
  which computed: ``metadata.stages``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.behaviour.answers import answer_correct, cut_at_eos, resolve_rule
from lostmid.behaviour.calibrate import PILOT_FIRST_ITEM, Calibration, calibrate_knob
from lostmid.behaviour.decoding import (
    TeacherScores,
    greedy_decode,
    padded_batches_pay,
    teacher_forced,
)
from lostmid.behaviour.example import RetrievalExample
from lostmid.behaviour.prompts import (
    Encoded,
    PromptFormat,
    encode,
    prompt_format,
    shared_lead_in,
    with_lead_in,
)
from lostmid.behaviour.registry import depth_task, index_task, task_is_text
from lostmid.behaviour.retrieve_config import LEARN, MAX_LEAD_IN, NIAH_LENGTH, RetrieveConfig
from lostmid.behaviour.score import (
    PositionScore,
    RetrievalSummary,
    contains_ids,
    score_positions,
    shape_of,
    summarise_positions,
)
from lostmid.behaviour.tokenizers import Tokenizer
from lostmid.errors import UserError
from lostmid.files import schema_of, write_text
from lostmid.recordable import fields_record
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer, write_json
from lostmid.runs.folder import OpenRun, RunFolder
from lostmid.stats.shape import ShapeIndices, reference_points

FILES = ["retrieve.json", "retrieve.png", "heatmap.png", "predictions.jsonl"]
# fields that do not change a cell's numbers (a rerun that changes only these reuses cells)
_NOT_IN_CELLS = ("export", "export_lm_eval", "scoring", "margin")
# kv and mqar: the pairs --calibrate tries, easiest first
PAIR_LADDER = (2, 5, 10, 20, 40, 80, 160, 320)


@dataclass(frozen=True)
class ScoreSet:
    """Accuracy by position, its summary and shape under one metric (``generate``: the
    ``--scoring`` rule on the greedy answer; ``teacher``: all target tokens argmax)."""

    metric: str
    positions: tuple[PositionScore, ...]
    summary: RetrievalSummary
    shape: ShapeIndices

    def record(self) -> dict[str, Any]:
        return fields_record(self)


@dataclass(frozen=True)
class LengthScores:
    """The score sets of one length cell (``length`` None: the run's one length)."""

    length: int | None
    pairs: int | None
    scores: tuple[ScoreSet, ...]

    def record(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "pairs": self.pairs,
            "by_metric": {s.metric: s.record() for s in self.scores},
        }


@dataclass(frozen=True)
class RetrieveResult:
    """What ``run_retrieve`` measured; ``scores[0]`` is the primary metric (pooled over
    lengths by heatmap row when there are several)."""

    config: RetrieveConfig
    task: str
    axis: str
    scores: tuple[ScoreSet, ...]
    by_length: tuple[LengthScores, ...]
    cells: tuple[dict[str, Any], ...]
    model: dict[str, Any]
    tokenizer: str | None
    examples: int
    seconds: float
    rule: str
    prompt: dict[str, Any]
    data: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None

    @property
    def primary(self) -> ScoreSet:
        return self.scores[0]

    def record(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "axis": self.axis,
            "metric": self.primary.metric,
            "positions": [p.record() for p in self.primary.positions],
            "summary": self.primary.summary.record(),
            "shape": self.primary.shape.record(),
            "by_metric": {s.metric: s.record() for s in self.scores},
            "lengths": [b.length for b in self.by_length],
            "by_length": [b.record() for b in self.by_length],
            "cells": list(self.cells),
            "scoring": {
                "rule": self.rule,
                "requested": self.config.scoring,
                "passes": self.config.passes,
            },
            "prompt": self.prompt,
            "calibration": self.calibration,
            "design": self.config.design,
            "data": self.data,
            "model": self.model,
            "tokenizer": self.tokenizer,
            "examples": self.examples,
            "seconds": self.seconds,
            "config": self.config.record(),
        }


def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, TimeRemainingColumn

    from lostmid.runs.progress import progress

    return progress(
        "retrieve",
        "[bold]retrieve[/] {task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
    )


FOLDER = RunFolder("retrieve", resumes="stages", result="retrieve.json")
"""What ``run_retrieve`` writes into ``--out``: its cells as stages, kept for a rerun."""


def _check_out(out: Path, config: RetrieveConfig, overwrite: bool) -> OpenRun:
    """Open ``out`` for this run (resumed when it holds this configuration's run).

    Raises:
        UserError: ``out`` holds a run with another configuration, or ``--export`` would
            replace a file of another run, without ``overwrite``.
    """
    folder = FOLDER.open(out, config.record(), overwrite=overwrite)
    same = folder.resumed
    export = config.export
    if export is not None and Path(export).exists() and not (overwrite or same):
        raise UserError(f"{export} already exists; pass --overwrite or choose another file")
    tasks = config.export_lm_eval
    if tasks is not None and Path(tasks).exists():
        if not Path(tasks).is_dir():
            raise UserError(
                f"--export-lm-eval {tasks}: a file, not a directory; give a directory for the "
                "task files (it is created)"
            )
        if any(Path(tasks).iterdir()) and not (overwrite or same):
            raise UserError(
                f"--export-lm-eval {tasks} already holds files; pass --overwrite to replace "
                "the tasks there, or choose another directory"
            )
    return folder


def _file_digest(path: Path | None) -> str | None:
    if path is None or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


EXAMPLE_BYTES = 1024.0
"""The least memory one generated example holds (its prompt text, token ids and record):
a lower bound for the size check."""
TOKEN_BYTES = 8.0
"""The least memory a prompt token holds (its id); with ``--length`` a lower bound."""
TOKEN_FLOOR_S = 1e-6
"""The least time a model reads a prompt token in (a tiny model on a fast machine)."""


def check_retrieve_size(config: RetrieveConfig) -> None:
    """Refuse, before anything is generated, a request for more examples than this
    machine can hold (:data:`EXAMPLE_BYTES` each) or score in a day (each pass at least
    :data:`lostmid.runs.budget.STEP_FLOOR_S`): examples x positions x length cells. A
    ``--data`` file: its records (:func:`lostmid.behaviour.data.count_records`, the
    first ``--examples`` of them), each at least one example of the file's bytes a
    record; its text against the free memory when it is read
    (:func:`lostmid.behaviour.data.check_text_size`)."""
    from lostmid.runs.budget import STEP_FLOOR_S, check_work

    passes = 2 if config.passes == "both" else 1
    if config.data is not None:
        from lostmid.behaviour.data import count_records

        path = Path(config.data)
        records = count_records(path)
        used = min(records, int(config.resolved_examples or records))
        each = path.stat().st_size / records if path.is_file() else 0.0
        check_work(
            f"retrieve --data {path} ({records:,} records, {used:,} used)",
            passes=used * passes,
            seconds_each=STEP_FLOOR_S + each / 4 * TOKEN_FLOOR_S,
            need_bytes=used * (EXAMPLE_BYTES + each),
        )
        return
    cells = len(config.resolved_lengths())
    if config.lengths is None:
        positions = len(config.resolved_positions())
    else:
        positions = config.positions or len(config.gold_index or config.depth or ()) or 5
    examples = int(config.resolved_examples or 1)
    count = examples * positions * cells
    if config.calibrate:  # the pilot's examples, at one knob value at least
        count += int(config.pilot_examples)
    longest = max([config.length or 0, *(n for n in config.resolved_lengths() if n)])
    pilot = f" and --pilot-examples {config.pilot_examples:,}" if config.calibrate else ""
    check_work(
        f"retrieve --examples {examples:,}{pilot} ({count:,} examples: {positions} positions x "
        f"{cells} length cells" + (f" of up to {longest:,} tokens)" if longest else ")"),
        passes=count * passes,
        seconds_each=STEP_FLOOR_S + longest * TOKEN_FLOOR_S,
        need_bytes=count * (EXAMPLE_BYTES + TOKEN_BYTES * longest),
    )


@FOLDER.holds
def run_retrieve(
    config: RetrieveConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
    size_check: bool = True,
) -> RetrieveResult:
    """Make (or read) the examples, score them on the model cell by cell, write the files
    listed in the module docstring, print a table.

    ``size_check``: refuse a request too big for this machine before anything is
    generated (:func:`check_retrieve_size`, and the model's weights in
    :func:`lostmid.models.load_model`); off for ``--no-size-check``.

    Raises:
        UserError: results of another configuration in ``out`` without ``overwrite``; a
            model without a tokenizer; a prompt longer than the model takes (or than
            ``--max-length``), before any forward; token ids outside its vocabulary.
    """
    from lostmid.behaviour.tokenizers import tokenizer_for_spec

    out = Path(out)
    if size_check:
        check_retrieve_size(config)
    folder = _check_out(out, config, overwrite)
    timer = Timer()
    with timer("load"):
        tokenizer = (
            None
            if not task_is_text(config.task) and config.tokenizer is None and config.data is None
            else tokenizer_for_spec(config.model_spec)
        )
        loaded = config.model_spec.load(init=config.init, seed=config.seed, size_check=size_check)
    fmt = prompt_format(config.chat_template, tokenizer, config.answer_prefix)
    shared = config.design == "shared"
    calibration = None
    requested = config
    if config.calibrate:
        with timer("calibrate"):
            calibration = calibrate_run(config, loaded, tokenizer, fmt, folder.stages())
        config = config.with_changes(**{config.knob: calibration.chosen})
        if console is not None:
            console.print(calibration.outcome, highlight=False)
    lead_in = None
    if config.lead_in == LEARN:
        with timer("lead_in"):
            lead_in = learn_lead_in(config, loaded, tokenizer, fmt, folder.stages())
        config = config.with_changes(lead_in=lead_in["text"])
        if console is not None:
            console.print(lead_in["outcome"], highlight=False)
    with timer("examples"):
        if console is not None and config.data is not None:  # a large file takes minutes
            console.print(
                f"retrieve: reading --data {config.data} and making its prompts", highlight=False
            )
        examples, data = retrieval_examples(config, tokenizer, fmt)
        if console is not None and config.data is not None:
            console.print(
                f"retrieve: {len(examples):,} examples; counting their tokens", highlight=False
            )
        encoded = encode(examples, tokenizer, fmt, shared=shared)
    rule = resolve_rule(config.scoring, examples[0].task)
    new_tokens = answer_budget(examples, encoded, config.extra_tokens)
    passes = [m for m in ("generate", "teacher") if config.passes in (m, "both")]
    _guard_lengths(examples, encoded, new_tokens, passes, loaded.max_length, config.max_length)
    tokens = [len(p) for p in encoded.prompts]
    if config.export is not None:
        from lostmid.behaviour.data import write_records

        write_records(examples, Path(config.export), tokens)
    if config.export_lm_eval is not None:
        from lostmid.behaviour.lmeval_export import export_lm_eval

        export_lm_eval(
            examples,
            Path(config.export_lm_eval),
            rule=rule,
            new_tokens=new_tokens,
            tokenizer=None if tokenizer is None else tokenizer.name,
            add_special_tokens=fmt.add_special_tokens,
            chat_template=fmt.applied,
        )
    first_text = fmt.text(examples[0], tokenizer) if examples[0].prompt_ids is None else None
    write_text(
        out / "prompt.txt",
        first_text if first_text is not None else examples[0].prompt,
    )
    base = {k: v for k, v in config.record().items() if k not in _NOT_IN_CELLS}
    base.update(new_tokens=new_tokens, data_digest=_file_digest(config.data))
    # the stage store (stages/) is made only once something is computed
    store = folder.stages()
    rows: list[dict[str, Any] | None] = [None] * len(examples)
    reading: dict[str, int] = {}  # the computed stages' prompt tokens and those read
    with _progress(console) as bar, timer("score"):
        task = bar.add_task("cells", total=len(examples))
        for name, members in _stages(examples, shared, config.axis):
            moved = [0]  # examples the bar advanced inside this stage (none if reused)

            def advance(k: int, moved: list[int] = moved) -> None:
                moved[0] += k
                bar.update(task, advance=k)

            def compute(members: list[int] = members) -> list[dict[str, Any]]:
                return _score_members(
                    loaded, encoded, members, passes, new_tokens, config, shared, advance, reading
                )

            stage_config = {**base, "stage": name, "examples": len(members)}
            for i, row in zip(members, store.run(name, stage_config, compute), strict=True):
                rows[i] = row
            bar.update(task, advance=len(members) - moved[0])
    done = [r for r in rows if r is not None]
    assert len(done) == len(examples)
    with timer("summary"):
        result_rows = _prediction_rows(examples, done, tokens, tokenizer, rule, passes)
    timer.seconds["total"] = sum(timer.seconds.values())
    result = _result(config, examples, result_rows, passes, loaded, tokenizer, rule, timer)
    result = replace(
        result,
        prompt={
            **fmt.record(first_text or examples[0].prompt, encoded.prompts[0]),
            "boundary_tokens_match": encoded.boundary_matches,
            "bos_token_id": None if tokenizer is None else tokenizer.bos_id,
            "eos_token_id": None if tokenizer is None else tokenizer.eos_id,
            "answer_prefix_text": _prefix_text(examples[0], fmt),
            "budget": {
                "answer_tokens": max(len(t) for t in encoded.targets),
                "slack": config.extra_tokens,
                "rule": "longest answer in tokens + --extra-tokens for each answer an "
                "example asks for all of (one for the others)",
            },
            "new_tokens": new_tokens,
        },
        data=data,
        calibration=None if calibration is None else calibration.record(),
    )
    record = {"schema": schema_of("retrieval"), **result.record()}
    # the run as asked (a rerun compares it); with --calibrate the measured one differs
    # by the knob the pilot chose
    record["config"] = requested.record()
    if calibration is not None or lead_in is not None:
        record["measured_config"] = config.record()
    if lead_in is not None:
        record["lead_in"] = lead_in
    record["metadata"] = folder.metadata(requested.record(), config.seed, timer.seconds)
    record["metadata"]["stages"] = store.record()
    if reading:
        record["metadata"]["reading"] = reading
    write_json(out / "retrieve.json", record)
    _write_outputs(out, result, result_rows)
    if console is not None:
        console.print(fit_table(_table(result)))
        if calibration is not None:
            console.print(calibration.outcome, highlight=False)
        for line in summary_lines(result):
            console.print(line, highlight=False)
        reused = f" ({len(store.reused)} stages reused)" if store.reused else ""
        console.print(
            f"wrote {out / 'retrieve.json'}, retrieve.cells.csv, retrieve.png, heatmap.png{reused}"
        )
    return result


# -- examples -----------------------------------------------------------------------------


def retrieval_examples(
    config: RetrieveConfig, tokenizer: Tokenizer | None, fmt: PromptFormat, first_item: int = 0
) -> tuple[list[RetrievalExample], dict[str, Any] | None]:
    """The examples ``config`` asks for (its task's grid, or its ``--data`` file), lengths
    counted in ``tokenizer``'s tokens as ``fmt`` renders them; and the data file's record
    (None for generated examples)."""
    if config.data is not None:
        from lostmid.behaviour.data import data_examples

        fmt_name, found, left_out = data_examples(
            config.data,
            gold_index=config.gold_index,
            depth=config.depth,
            positions=config.positions,
            examples=config.resolved_examples,
            lengths=config.lengths,
            query_aware=config.query_aware,
            style=config.style,
            shared=config.design == "shared",
            task=config.task,
        )
        found = with_lead_in(found, _fixed_lead_in(config))
        return found, {"path": str(config.data), "format": fmt_name, "left_out": left_out}
    from lostmid.behaviour.grid import grid_examples

    def count(text: str) -> int:
        if tokenizer is None:
            return len(text)
        example = RetrievalExample("kv", text, "", "", "")
        return len(tokenizer.encode(fmt.text(example, tokenizer), special=fmt.add_special_tokens))

    found = grid_examples(
        config.task,
        lengths=config.resolved_lengths(),
        examples=int(config.resolved_examples or 1),
        seed=config.seed,
        pairs=config.pairs,
        gold_index=config.gold_index,
        depth=config.depth,
        positions=config.positions,
        key_chars=config.key_chars,
        style=config.style,
        query_aware=config.query_aware,
        haystack=config.haystack,
        vocab=config.vocab,
        offset=config.offset,
        niah_length=config.resolved_length() or NIAH_LENGTH,
        design=config.design,
        count_tokens=count,
        options=config,
        first_item=first_item,
    )
    return with_lead_in(found, _fixed_lead_in(config)), None


def _fixed_lead_in(config: RetrieveConfig) -> str:
    """The lead-in to append (none while ``learn`` is still to be learnt)."""
    return "" if config.lead_in == LEARN else config.lead_in


def _prefix_text(example: RetrievalExample, fmt: PromptFormat) -> str | None:
    """The answer prefix as the model reads it (None: the prompt asks and stops)."""
    if not example.answer_prefix:
        return None
    return example.answer_prefix.lstrip() if fmt.prefix_in_answer else example.answer_prefix


def _middle_pilot(
    config: RetrieveConfig, length: int | None, **changes: Any
) -> tuple[RetrieveConfig, int]:
    """A pilot's configuration (``changes`` applied, ``pilot_examples`` items at the
    middle position of the run's positions, at ``length``) and that middle position."""
    at = config.with_changes(
        **changes,
        calibrate=False,  # the pilot's own configuration
        examples=config.pilot_examples,
        lengths=None if length is None else (length,),
        export=None,
        export_lm_eval=None,
    )
    positions = at.resolved_positions()
    middle = positions[reference_points(positions)[1]]
    where = "depth" if depth_task(config.task) is not None else "gold_index"
    return at.with_changes(**{where: (middle,), "positions": None}), middle


def answer_budget(examples: Sequence[RetrievalExample], encoded: Encoded, extra: int) -> int:
    """Greedy decoding's new tokens: the longest target, plus ``extra`` for each answer an
    example asks for all of (``match == "all"``: RULER's multi-value and multi-query
    needles; one for the others). A model lists several answers in its own format (a
    bullet and a newline before each), which the target's ", " does not count: with
    one ``extra`` for the list, SmolLM2 ran out one digit before the end of its second
    value and a two-value needle read 0 of 12.

    >>> from lostmid.behaviour.prompts import Encoded
    >>> one = RetrievalExample("niah", "p", "k", "1", " 1", None, depth=0)
    >>> two = RetrievalExample("niah", "p", "k", "1", " 1, 2", None, depth=0, answers=("1", "2"),
    ...                        match="all")
    >>> answer_budget([one, two], Encoded([[0], [0]], [[1], [1, 2, 3]]), 4)
    11
    """
    return max(
        len(target) + extra * (len(ex.references) if ex.match == "all" else 1)
        for ex, target in zip(examples, encoded.targets, strict=True)
    )


def learn_lead_in(
    config: RetrieveConfig,
    loaded: Any,
    tokenizer: Tokenizer | None,
    fmt: PromptFormat,
    store: Any,
) -> dict[str, Any]:
    """``--lead-in learn``: greedy replies to ``pilot_examples`` pilot items
    (``PILOT_FIRST_ITEM + i``, never measured) at the middle position, with room for a
    lead-in, and the lead-in most of them put before the answer
    (:func:`~lostmid.behaviour.prompts.shared_lead_in`); saved as a stage
    (``pilot-lead-in``). Returns its record: ``text``, the counts and an outcome line."""
    cells = config.resolved_lengths()
    at, middle = _middle_pilot(config, cells[(len(cells) - 1) // 2], lead_in="")
    examples, _ = retrieval_examples(at, tokenizer, fmt, first_item=PILOT_FIRST_ITEM)
    encoded = encode(examples, tokenizer, fmt)
    new_tokens = answer_budget(examples, encoded, at.extra_tokens) + MAX_LEAD_IN
    _guard_lengths(examples, encoded, new_tokens, ["generate"], loaded.max_length, at.max_length)
    stage = {k: v for k, v in at.record().items() if k not in _NOT_IN_CELLS}
    stage.update(stage="pilot-lead-in", new_tokens=new_tokens, first_item=PILOT_FIRST_ITEM)
    members = list(range(len(examples)))

    def compute() -> list[dict[str, Any]]:
        return _score_members(loaded, encoded, members, ["generate"], new_tokens, at, False)

    raw = store.run("pilot-lead-in", stage, compute)
    tokens = [len(prompt) for prompt in encoded.prompts]
    rule = resolve_rule(at.scoring, examples[0].task)
    rows = _prediction_rows(examples, raw, tokens, tokenizer, rule, ["generate"])
    replies = [str(r["answer"]) for r in rows]
    text, agree, found = shared_lead_in(
        replies, [e.target for e in examples], [e.value for e in examples]
    )
    outcome = (
        f"lead-in: {agree} of the {found} pilot replies holding the answer put {text!r} before "
        f"it ({len(examples)} pilot items at the middle position); appended to the answer prefix"
        if text
        else f"lead-in: none shared by most pilot replies ({found} of {len(examples)} held the "
        "answer); the answer prefix is unchanged"
    )
    return {
        "text": text,
        "agree": agree,
        "found": found,
        "pilot_items": len(examples),
        "position": middle,
        "replies": replies,
        "outcome": outcome,
    }


def calibrate_run(
    config: RetrieveConfig,
    loaded: Any,
    tokenizer: Tokenizer | None,
    fmt: PromptFormat,
    store: Any,
) -> Calibration:
    """The ``--calibrate`` pilot (:mod:`lostmid.behaviour.calibrate`): greedy accuracy at
    the middle position (:func:`lostmid.stats.shape.reference_points` of the run's
    positions) for knob values chosen by bisection, on pilot items only
    (``PILOT_FIRST_ITEM + i``), each value's answers saved as a stage (``pilot-...``)."""
    knob = config.knob
    ladder = config.knob_values or _ladder(config)
    cells = config.resolved_lengths()
    length = cells[(len(cells) - 1) // 2]  # the lower median length cell
    middles: dict[int, int] = {}

    def accuracy_at(value: int) -> tuple[int, int] | None:
        try:
            at, middle = _middle_pilot(config, length, **{knob: value})
            examples, _ = retrieval_examples(at, tokenizer, fmt, first_item=PILOT_FIRST_ITEM)
            encoded = encode(examples, tokenizer, fmt)
            new_tokens = answer_budget(examples, encoded, at.extra_tokens)
            _guard_lengths(
                examples, encoded, new_tokens, ["generate"], loaded.max_length, at.max_length
            )
        except UserError:
            return None  # the prompt does not fit (the model, the length, the keys)
        middles[value] = middle
        name = f"pilot-{knob}{value}"
        stage = {k: v for k, v in at.record().items() if k not in _NOT_IN_CELLS}
        stage.update(stage=name, new_tokens=new_tokens, first_item=PILOT_FIRST_ITEM)
        members = list(range(len(examples)))

        def compute() -> list[dict[str, Any]]:
            return _score_members(loaded, encoded, members, ["generate"], new_tokens, at, False)

        raw = store.run(name, stage, compute)
        rule = resolve_rule(at.scoring, examples[0].task)
        tokens = [len(p) for p in encoded.prompts]
        rows = _prediction_rows(examples, raw, tokens, tokenizer, rule, ["generate"])
        return sum(bool(r["generate_correct"]) for r in rows), len(rows)

    found = calibrate_knob(knob, ladder, accuracy_at, band=config.band)
    return replace(
        found, position=middles.get(found.chosen), length=length, examples=config.pilot_examples
    )


def _ladder(config: RetrieveConfig) -> tuple[int, ...]:
    """The knob's default values, easiest first: the plug-in's, or pairs for kv, mqar."""
    plugin = depth_task(config.task)
    if plugin is not None:
        return plugin.ladder
    return PAIR_LADDER


def _guard_lengths(
    examples: Sequence[RetrievalExample],
    encoded: Encoded,
    new_tokens: int,
    passes: Sequence[str],
    model_max: int | None,
    option_max: int | None,
) -> None:
    """One line and no compute when a prompt (plus what is generated or scored after it)
    exceeds the model's maximum positions or ``--max-length``: never a silent cut."""
    limits = [(m, w) for m, w in ((model_max, "the model"), (option_max, "--max-length")) if m]
    if not limits:
        return
    limit, who = min(limits)
    for i, (p, t) in enumerate(zip(encoded.prompts, encoded.targets, strict=True)):
        after = max(new_tokens - 1 if "generate" in passes else 0, len(t) - 1)
        if len(p) + after > limit:
            ex = examples[i]
            cell = f", length cell {ex.length}" if ex.length is not None else ""
            raise UserError(
                f"example {i} ({ex.task}, position {ex.position}{cell}) needs {len(p) + after} "
                f"tokens (prompt {len(p)} + {after} after it) but {who} takes at most {limit}; "
                "use shorter --lengths/--length, fewer --pairs, or another model"
            )


ITEMS_PER_STAGE = 4
"""A depth sweep's stage: every depth of this many items (their prompts share the
haystack up to the shallowest needle, read once: :mod:`lostmid.behaviour.shared`)."""


def _stages(
    examples: Sequence[RetrievalExample], shared: bool, axis: str
) -> list[tuple[str, list[int]]]:
    """(stage name, example indices): one stage per length (shared design), per block
    of :data:`ITEMS_PER_STAGE` items at every depth (a depth sweep: an item's prompts
    begin alike), else per cell.

    >>> from lostmid.behaviour.example import RetrievalExample
    >>> def ex(item, depth):
    ...     return RetrievalExample("niah", "p", "k", "v", " v", None, depth=depth, item=item)
    >>> _stages([ex(i, d) for d in (0, 50) for i in range(6)], False, "depth")
    [('items-0-3', [0, 1, 2, 3, 6, 7, 8, 9]), ('items-4-7', [4, 5, 10, 11])]
    """
    groups: dict[str, list[int]] = {}
    by_items = not shared and axis == "depth" and len({ex.position for ex in examples}) > 1
    for i, ex in enumerate(examples):
        length = "" if ex.length is None else f"L{ex.length}"
        if shared:
            name = f"shared-{length or 'one'}"
        elif by_items:
            lo = ex.item - ex.item % ITEMS_PER_STAGE
            name = f"items-{length + '-' if length else ''}{lo}-{lo + ITEMS_PER_STAGE - 1}"
        else:
            name = f"cell-{length}-{axis}{ex.position}" if length else f"cell-{axis}{ex.position}"
        groups.setdefault(name, []).append(i)
    return list(groups.items())


def _score_members(
    loaded: Any,
    encoded: Encoded,
    members: list[int],
    passes: Sequence[str],
    new_tokens: int,
    config: RetrieveConfig,
    shared: bool,
    progress: Callable[[int], None] | None = None,
    reading: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """The raw result of examples ``members``: greedy ids and teacher-forced scores;
    ``progress`` is called with the examples done as they finish (a long stage reports
    before its end); ``reading`` counts the prompt tokens and those read where prompts
    are read from shared prefixes (:func:`~lostmid.behaviour.shared.shared_scores`)."""
    prompts = [encoded.prompts[i] for i in members]
    targets = [encoded.targets[i] for i in members]
    limits = {"max_length": loaded.max_length, "vocab_size": loaded.vocab_size}
    teacher: TeacherScores | None = None
    generated: list[list[int]] | None = None
    # the moved design from one prefill per prompt (its last token read from the cache,
    # exact as --design shared is): with both passes half the compute of two; also for
    # one pass where padded batches do not pay (a CPU)
    one_prefill = (
        not shared
        and (len(passes) == 2 or not padded_batches_pay(loaded.input_device))
        and config.device_map is None
        and all(len(p) > 1 for p in prompts)
    )
    if shared or one_prefill:
        from lostmid.behaviour.shared import shared_scores

        if shared:
            assert encoded.contexts is not None and encoded.questions is not None
            contexts = [encoded.contexts[i] for i in members]
            questions = [encoded.questions[i] for i in members]
        else:
            contexts, questions = [p[:-1] for p in prompts], [p[-1:] for p in prompts]
        _check_vocab(prompts, targets, loaded.vocab_size)
        teacher, generated = shared_scores(
            loaded.model,
            loaded.adapter,
            contexts,
            questions,
            targets,
            teacher="teacher" in passes,
            new_tokens=new_tokens if "generate" in passes else None,
            batch_size=config.batch_size,
            device=loaded.input_device,
            progress=progress,
            reading=reading,
        )
    else:
        if "generate" in passes:
            generated = greedy_decode(
                loaded.model,
                prompts,
                new_tokens,
                batch_size=config.batch_size,
                device=loaded.input_device,
                progress=progress,
                **limits,
            )
        if "teacher" in passes:
            teacher = teacher_forced(
                loaded.model,
                prompts,
                targets,
                batch_size=config.batch_size,
                padding=config.padding,
                device=loaded.input_device,
                progress=None if "generate" in passes else progress,
                **limits,
            )
    rows = []
    for j in range(len(members)):
        row: dict[str, Any] = {}
        if generated is not None:
            row["ids"] = [int(t) for t in generated[j]]
        if teacher is not None:
            row["logprob"] = float(teacher.logprob[j])
            row["teacher_correct"] = bool(teacher.argmax[j])
        rows.append(row)
    return rows


def _check_vocab(prompts: list[list[int]], targets: list[list[int]], vocab: int) -> None:
    top = max(max(max(p), max(t)) for p, t in zip(prompts, targets, strict=True))
    if top >= vocab:
        raise UserError(
            f"token id {top} is outside the model's vocabulary (size {vocab}); "
            "the tokenizer (or --vocab for mqar) does not match the model"
        )


# -- results ------------------------------------------------------------------------------


def _prediction_rows(
    examples: Sequence[RetrievalExample],
    raw: Sequence[dict[str, Any]],
    tokens: Sequence[int],
    tokenizer: Tokenizer | None,
    rule: str,
    passes: Sequence[str],
) -> list[dict[str, Any]]:
    eos = None if tokenizer is None else tokenizer.eos_id
    out = []
    for ex, r, n in zip(examples, raw, tokens, strict=True):
        row: dict[str, Any] = {
            "item": ex.item,
            "position": ex.position,
            "gold_index": ex.gold_index,
            "depth": ex.depth,
            "depth_pct": ex.depth_pct,
            "length": ex.length,
            "pairs": ex.pairs,
            "tokens": n,
            "key": ex.key,
            "value": ex.value,
        }
        if "generate" in passes:
            ids = r["ids"]
            if ex.target_ids is not None:
                row["answer"] = " ".join(str(t) for t in ids)
                row["generate_correct"] = contains_ids(ex.target_ids, ids)
            else:
                assert tokenizer is not None
                text = tokenizer.decode(cut_at_eos(ids, eos))
                row["answer"] = text
                row["generate_correct"] = answer_correct(rule, text, ex.references, ex.match)
        if "teacher" in passes:
            row["logprob"] = r["logprob"]
            row["teacher_correct"] = r["teacher_correct"]
        out.append(row)
    return out


def _score_set(
    metric: str, rows: Sequence[dict[str, Any]], key: str, axis: str, margin: float
) -> ScoreSet:
    positions = np.array([int(r[key]) for r in rows])
    correct = np.array([bool(r[f"{metric}_correct"]) for r in rows])
    logprob = np.array([r["logprob"] for r in rows]) if "logprob" in rows[0] else None
    # an item is one haystack, needle and question of one length cell, read at every
    # position: the contrasts pair by it (lostmid.behaviour.score)
    items = [(r["length"], r["item"]) for r in rows]
    scores = score_positions(positions, correct, logprob, axis, items)
    summary = summarise_positions(scores, metric)
    return ScoreSet(metric, scores, summary, shape_of(scores, summary, margin))


def _result(
    config: RetrieveConfig,
    examples: Sequence[RetrievalExample],
    rows: list[dict[str, Any]],
    passes: Sequence[str],
    loaded: Any,
    tokenizer: Tokenizer | None,
    rule: str,
    timer: Timer,
) -> RetrieveResult:
    task = examples[0].task
    axis = "index" if examples[0].gold_index is not None else "depth"
    metrics = [m for m in ("generate", "teacher") if m in passes]
    lengths = list(dict.fromkeys(r["length"] for r in rows))
    for r in rows:
        r["row"] = int(round(r["depth_pct"])) if r["depth_pct"] is not None else r["position"]
    by_length = []
    cells: list[dict[str, Any]] = []
    for length in lengths:
        mine = [r for r in rows if r["length"] == length]
        sets = tuple(_score_set(m, mine, "position", axis, config.margin) for m in metrics)
        pairs = mine[0]["pairs"]
        by_length.append(LengthScores(length, pairs, sets))
        depth_of = {r["position"]: r["depth_pct"] for r in mine}
        for i, p in enumerate(sets[0].positions):
            cell: dict[str, Any] = {
                "length": length,
                "pairs": pairs,
                axis: p.position,
                "depth_pct": depth_of[p.position],
                "n": p.n,
            }
            for s in sets:
                q = s.positions[i]
                cell[f"{s.metric}_correct"] = q.correct
                cell[f"{s.metric}_accuracy"] = q.accuracy
                cell[f"{s.metric}_ci_low"] = q.ci_low
                cell[f"{s.metric}_ci_high"] = q.ci_high
            cell["mean_logprob"] = p.mean_logprob
            cell["logprob_ci_low"] = p.logprob_ci_low
            cell["logprob_ci_high"] = p.logprob_ci_high
            cells.append(cell)
    if len(lengths) == 1:
        pooled = by_length[0].scores
    else:  # pooled over lengths by heatmap row (depth in %)
        pooled = tuple(_score_set(m, rows, "row", "depth", config.margin) for m in metrics)
    return RetrieveResult(
        config=config,
        task=task,
        axis=axis if len(lengths) == 1 else "depth",
        scores=pooled,
        by_length=tuple(by_length),
        cells=tuple(cells),
        model=loaded.describe(),
        tokenizer=None if tokenizer is None else tokenizer.name,
        examples=len(examples),
        seconds=timer.seconds["total"],
        rule=rule,
        prompt={},
    )


def _write_outputs(out: Path, result: RetrieveResult, rows: list[dict[str, Any]]) -> None:
    from lostmid.behaviour.plot import plot_accuracy_by_position, plot_heatmap
    from lostmid.report.plots import save_figure
    from lostmid.report.tables import write_table

    lines = []
    for row in rows:
        clean = {k: v for k, v in row.items() if k != "row" and v is not None}
        lines.append(json.dumps(clean, ensure_ascii=False) + "\n")
    write_text(out / "predictions.jsonl", "".join(lines))
    write_table(out / "retrieve.cells", list(result.cells))
    config = result.config
    indexed = index_task(result.task)
    chance = indexed.chance(config) if indexed is not None else None
    label = f"{result.task} retrieval, {config.model} ({result.examples} examples)"
    series: dict[str, Sequence[PositionScore]]
    if len(result.by_length) == 1:
        series = {s.metric: s.positions for s in result.scores}
        xlabel = "gold index (0-indexed)" if result.axis == "index" else "depth (%)"
    else:
        metric = result.primary.metric
        series = {}
        for b in result.by_length:
            s = next(x for x in b.scores if x.metric == metric)
            series[f"L = {b.length}"] = _as_rows(s.positions, result.cells, b.length)
        xlabel = "gold position (% of the context)"
    save_figure(
        plot_accuracy_by_position(series, xlabel=xlabel, title=label, chance=chance),
        out / "retrieve.png",
    )
    metric = result.primary.metric
    save_figure(
        plot_heatmap(result.cells, metric=metric, title=f"{label}: {metric} accuracy"),
        out / "heatmap.png",
    )


def _axis_key(cell: dict[str, Any]) -> str:
    return "index" if "index" in cell else "depth"


def _as_rows(
    positions: Sequence[PositionScore], cells: Sequence[dict[str, Any]], length: int | None
) -> tuple[PositionScore, ...]:
    """Position scores of one length with the heatmap row (depth %) as their position."""
    depth = {c[_axis_key(c)]: c["depth_pct"] for c in cells if c["length"] == length}
    return tuple(replace(p, position=int(round(depth[p.position]))) for p in positions)


def _table(result: RetrieveResult) -> Any:
    from rich.table import Table

    table = Table(title=f"lostmid retrieve: {result.task} on {result.config.model}")
    several = len(result.by_length) > 1
    key = "index" if "index" in result.cells[0] else "depth"
    if several:
        table.add_column("length", justify="right")
    table.add_column(key, justify="right")
    if key == "index" and several:
        table.add_column("depth %", justify="right")
    table.add_column("n", justify="right")
    metrics = [s.metric for s in result.scores]
    for m in metrics:
        table.add_column(f"{m} acc [95% CI]", justify="right")
    has_lp = result.cells[0]["mean_logprob"] is not None
    if has_lp:
        table.add_column("mean log p [95% t]", justify="right")
    for c in result.cells:
        row = [str(c["length"])] if several else []
        row.append(str(c[key]))
        if key == "index" and several:
            row.append(f"{c['depth_pct']:.0f}")
        row.append(str(c["n"]))
        for m in metrics:
            row.append(
                f"{c[f'{m}_accuracy']:.3f} [{c[f'{m}_ci_low']:.3f}, {c[f'{m}_ci_high']:.3f}]"
            )
        if has_lp:
            low, high = c["logprob_ci_low"], c["logprob_ci_high"]
            ci = "" if low is None else f" [{low:.2f}, {high:.2f}]"
            row.append(f"{c['mean_logprob']:.3f}{ci}")
        table.add_row(*row)
    return table


def summary_lines(result: RetrieveResult) -> list[str]:
    """One line per metric (and length when several): mean accuracy, gap, primacy and
    recency with intervals, and the shape class the intervals decide."""
    lines = [f"scoring: {result.rule} (greedy), design {result.config.design}"]
    groups: list[tuple[str, tuple[ScoreSet, ...]]] = [("", result.scores)]
    if len(result.by_length) > 1:
        groups += [(f"L = {b.length}, ", b.scores) for b in result.by_length]
    for prefix, sets in groups:
        for s in sets:
            m, shape = s.summary, s.shape
            lines.append(
                f"{prefix}{s.metric}: mean {m.mean_accuracy:.3f} [{m.mean_ci_low:.3f}, "
                f"{m.mean_ci_high:.3f}]; gap {m.gap.estimate:+.3f}; primacy "
                f"{m.primacy.estimate:+.3f} [{m.primacy.ci_low:+.3f}, {m.primacy.ci_high:+.3f}]"
                f"; recency {m.recency.estimate:+.3f} [{m.recency.ci_low:+.3f}, "
                f"{m.recency.ci_high:+.3f}]; shape {shape.shape}"
            )
    lines += readout_disagreement(result.scores)
    return lines


def readout_disagreement(sets: Sequence[ScoreSet]) -> list[str]:
    """One line when greedy accuracy lies above teacher-forced accuracy (their Wilson
    intervals apart): the model writes something before the answer that the teacher
    target lacks (a base model's ``: 9440050`` after "... is"), so the teacher readout
    is not this model's behaviour under this prompt; else nothing."""
    by = {s.metric: s.summary for s in sets}
    g, t = by.get("generate"), by.get("teacher")
    if g is None or t is None or not t.mean_ci_high < g.mean_ci_low:
        return []
    return [
        f"note: teacher forcing reads {t.mean_accuracy:.3f} where greedy decoding reads "
        f"{g.mean_accuracy:.3f}: the model's replies put text before the answer that the "
        "teacher target lacks (see predictions.jsonl), so the teacher readout does not "
        "measure this model here: read the generate rows"
    ]
