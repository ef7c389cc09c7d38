"""``lostmid retrieve``: retrieval accuracy by gold position on any causal LM.

Writes under ``--out``:

* ``retrieve.json``: ``"positions"`` (one record per gold position: ``index`` or
  ``depth``, ``n``, ``correct``, ``accuracy``, ``ci_low``, ``ci_high``,
  ``mean_logprob``) and ``"summary"`` of the primary metric (greedy generation when
  it ran, else the teacher-forced argmax), ``"by_metric"`` with both when both ran,
  the model, the tokenizer, ``"config"`` and ``"metadata"``;
* ``retrieve.png``: accuracy by position with Wilson intervals;
* ``predictions.jsonl``: per example its position, value, greedy answer, scores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.behaviour.decoding import greedy_decode, teacher_forced
from lostmid.behaviour.retrieve_config import NIAH_LENGTH, RetrieveConfig
from lostmid.behaviour.score import (
    PositionScore,
    RetrievalSummary,
    encode_examples,
    generation_correct,
    score_positions,
    summarise_positions,
)
from lostmid.behaviour.tasks import export_jsonl, make_examples
from lostmid.errors import UserError
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json

FILES = ["retrieve.json", "retrieve.png", "predictions.jsonl"]


@dataclass(frozen=True)
class ScoreSet:
    """Accuracy by position and its summary under one metric (``generate``: Liu's
    substring rule on the greedy answer; ``teacher``: all target tokens argmax)."""

    metric: str
    positions: tuple[PositionScore, ...]
    summary: RetrievalSummary

    def record(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "positions": [p.record() for p in self.positions],
            "summary": self.summary.record(),
        }


@dataclass(frozen=True)
class RetrieveResult:
    """What ``run_retrieve`` measured; ``scores[0]`` is the primary metric."""

    config: RetrieveConfig
    task: str
    axis: str
    scores: tuple[ScoreSet, ...]
    model: dict[str, Any]
    tokenizer: str | None
    examples: int
    seconds: float

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
            "by_metric": {s.metric: s.record() for s in self.scores},
            "model": self.model,
            "tokenizer": self.tokenizer,
            "examples": self.examples,
            "seconds": self.seconds,
            "config": self.config.record(),
        }


def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    return Progress(
        "[bold]retrieve[/] {task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=console is None,
        transient=True,
    )


def run_retrieve(
    config: RetrieveConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
) -> RetrieveResult:
    """Generate the examples, score them on the model, write the files listed in the
    module docstring, print a table.

    Raises:
        UserError: results (or the ``export`` file) already there without
            ``overwrite``; a model without a tokenizer; examples longer than the model
            takes; token ids outside its vocabulary.
    """
    from lostmid.behaviour.plot import plot_accuracy_by_position
    from lostmid.behaviour.tokenizers import tokenizer_for_model
    from lostmid.models import load_model
    from lostmid.report.plots import save_figure

    out = Path(out)
    if config.export is not None and Path(config.export).exists() and not overwrite:
        raise UserError(f"{config.export} already exists; pass --overwrite or choose another file")
    prepare_out(out, FILES, overwrite)
    timer = Timer()
    with timer("load"):
        tokenizer = (
            None
            if config.task == "mqar" and config.tokenizer is None
            else tokenizer_for_model(config.model, config.tokenizer)
        )
        loaded = load_model(
            config.model,
            init=config.init,
            seed=config.seed,
            dtype=config.dtype,
            device=config.device,
            device_map=config.device_map,
        )
    with timer("examples"):
        examples = make_examples(
            config.task,
            positions=config.resolved_positions(),
            examples=config.examples,
            seed=config.seed,
            pairs=config.pairs,
            key_chars=config.key_chars,
            query_aware=config.query_aware,
            style=config.style,
            length=config.resolved_length() or NIAH_LENGTH,
            count_tokens=(lambda s: len(tokenizer.encode(s, special=True)))
            if tokenizer is not None
            else len,
            haystack=config.haystack,
            vocab=config.vocab,
            offset=config.offset,
        )
        if config.export is not None:
            export_jsonl(examples, Path(config.export))
        prompts, targets = encode_examples(examples, tokenizer)
    positions = np.array([ex.position for ex in examples])
    limits = {
        "max_length": loaded.max_length,
        "vocab_size": loaded.vocab_size,
        "device": loaded.input_device,  # with a device map: where the embeddings compute
    }
    model = loaded.model
    passes = [m for m in ("generate", "teacher") if config.scoring in (m, "both")]
    teacher = generated = None
    with _progress(console) as bar:
        for name in passes:
            task = bar.add_task(name, total=len(examples))

            def advance(done: int, task: Any = task) -> None:
                bar.update(task, advance=done)

            with timer(name):
                if name == "teacher":
                    teacher = teacher_forced(
                        model,
                        prompts,
                        targets,
                        batch_size=config.batch_size,
                        padding=config.padding,
                        progress=advance,
                        **limits,
                    )
                else:
                    generated = greedy_decode(
                        model,
                        prompts,
                        [len(t) + config.extra_tokens for t in targets],
                        batch_size=config.batch_size,
                        progress=advance,
                        **limits,
                    )
    logprob = None if teacher is None else teacher.logprob
    scores: list[ScoreSet] = []
    answers: list[str] | None = None
    gen_correct = None
    if generated is not None:
        gen_correct, answers = generation_correct(examples, generated, tokenizer)
        scores.append(_score_set("generate", positions, gen_correct, logprob, config.axis))
    if teacher is not None:
        scores.append(_score_set("teacher", positions, teacher.argmax, logprob, config.axis))
    timer.seconds["total"] = sum(timer.seconds.values())
    result = RetrieveResult(
        config=config,
        task=config.task,
        axis=config.axis,
        scores=tuple(scores),
        model=loaded.describe(),
        tokenizer=None if tokenizer is None else tokenizer.name,
        examples=len(examples),
        seconds=timer.seconds["total"],
    )
    record = result.record()
    record["metadata"] = run_metadata("retrieve", config.record(), config.seed, timer.seconds)
    write_json(out / "retrieve.json", record)
    _write_predictions(out / "predictions.jsonl", examples, answers, gen_correct, teacher)
    chance = 2.0 / config.vocab if config.task == "mqar" else None
    fig = plot_accuracy_by_position(
        {s.metric: s.positions for s in scores},
        xlabel="gold index (0-indexed)" if config.axis == "index" else "needle depth (%)",
        title=f"{config.task} retrieval, {config.model} ({len(examples)} examples)",
        chance=chance,
    )
    save_figure(fig, out / "retrieve.png")
    if console is not None:
        console.print(_table(result))
        for line in summary_lines(result):
            console.print(line, highlight=False)
        console.print(f"wrote {out / 'retrieve.json'} and {out / 'retrieve.png'}")
    return result


def _score_set(
    metric: str,
    positions: np.ndarray,
    correct: np.ndarray,
    logprob: np.ndarray | None,
    axis: str,
) -> ScoreSet:
    scores = score_positions(positions, correct, logprob, axis)
    return ScoreSet(metric, scores, summarise_positions(scores, metric))


def _write_predictions(
    path: Path,
    examples: list[Any],
    answers: list[str] | None,
    correct: np.ndarray | None,
    teacher: Any,
) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i, ex in enumerate(examples):
            row: dict[str, Any] = {"position": ex.position, "key": ex.key, "value": ex.value}
            if answers is not None and correct is not None:
                row["answer"] = answers[i]
                row["generate_correct"] = bool(correct[i])
            if teacher is not None:
                row["logprob"] = float(teacher.logprob[i])
                row["teacher_correct"] = bool(teacher.argmax[i])
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _table(result: RetrieveResult) -> Any:
    from rich.table import Table

    table = Table(title=f"lostmid retrieve: {result.task} on {result.config.model}")
    table.add_column(result.axis, justify="right")
    table.add_column("n", justify="right")
    for s in result.scores:
        table.add_column(f"{s.metric} acc [95% CI]", justify="right")
    if result.scores[0].positions[0].mean_logprob is not None:
        table.add_column("mean log p", justify="right")
    for i, p in enumerate(result.primary.positions):
        row = [str(p.position), str(p.n)]
        for s in result.scores:
            q = s.positions[i]
            row.append(f"{q.accuracy:.3f} [{q.ci_low:.3f}, {q.ci_high:.3f}]")
        if p.mean_logprob is not None:
            row.append(f"{p.mean_logprob:.3f}")
        table.add_row(*row)
    return table


def summary_lines(result: RetrieveResult) -> list[str]:
    """One line per metric: mean accuracy, gap, primacy and recency with intervals."""
    lines = []
    for s in result.scores:
        m = s.summary
        lines.append(
            f"{s.metric}: mean {m.mean_accuracy:.3f} [{m.mean_ci_low:.3f}, {m.mean_ci_high:.3f}]"
            f"; gap {m.gap.estimate:+.3f}; primacy {m.primacy.estimate:+.3f} "
            f"[{m.primacy.ci_low:+.3f}, {m.primacy.ci_high:+.3f}]; recency "
            f"{m.recency.estimate:+.3f} [{m.recency.ci_low:+.3f}, {m.recency.ci_high:+.3f}]"
        )
    return lines
