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
  asked), ``"measured_config"`` (with ``--calibrate``: the knob as chosen),
  ``"factorial"`` (``--needle-order factorial``: the depth x rank cells, the model of
  depth and rank with items as clusters, its two adjusted effects with their verdicts,
  the one-factor contrasts and the error-direction table,
  :mod:`lostmid.behaviour.retrieve.factorial`; the positions are then those of the gold
  moved between distractors fixed at both ends) and ``"metadata"``;
* ``retrieve.cells.csv``: the printed table of cells;
* ``retrieve.png``: accuracy by position with Wilson intervals, one line per metric (one
  length) or per length (several); ``heatmap.png``: length x depth, accuracy as colour;
* ``predictions.jsonl``: per example its item, position, depth %, length cell, token
  count, value, greedy answer, scores (a factorial needle run: also its arrangement, the
  gold's rank, every needle's value in context order, the least gap, the gold's depth as
  placed and the needle the answer names);
* ``prompt.txt``: the first example's prompt as the tokenizer received it;
* ``stages/``: each stage's result as it finished: a cell's, every depth of a few items
  (a depth sweep, whose prompts of one item are read from a shared prefix),
  ``--design shared``: each length's; ``pilot-KNOBVALUE``: a calibration pilot's greedy
  answers;
  a rerun with the same ``--out`` and configuration reuses them (which were reused and
  which computed: ``metadata.stages``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lostmid.behaviour.decoding.answers import resolve_rule
from lostmid.behaviour.decoding.prompts import (
    Encoded,
    PromptFormat,
    encode,
    prompt_format,
)
from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.retrieve.calibrate import Calibration
from lostmid.behaviour.retrieve.config import LEARN, RetrieveConfig
from lostmid.behaviour.retrieve.examples import answer_budget, prefix_text, retrieval_examples
from lostmid.behaviour.retrieve.pilot import calibrate_run, learn_lead_in
from lostmid.behaviour.retrieve.result import (
    RetrieveResult,
    build_result,
    cells_table,
    summary_lines,
    write_outputs,
)
from lostmid.behaviour.retrieve.scoring import (
    NOT_IN_CELLS,
    guard_lengths,
    item_stages,
    prediction_rows,
    score_members,
)
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.behaviour.tasks.registry import depth_task, task_is_text
from lostmid.errors import UserError
from lostmid.files import schema_of, write_text
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer, write_json
from lostmid.runs.folder import OpenRun, RunFolder
from lostmid.runs.store import file_digest

FILES = ["retrieve.json", "retrieve.png", "heatmap.png", "predictions.jsonl"]


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
    folder = FOLDER.open(out, config.model_spec.claim(config.record()), overwrite=overwrite)
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
    """The ``--data`` file's digest in a stage's key (its first 16 hex digits)."""
    if path is None or not Path(path).is_file():
        return None
    return file_digest(Path(path))[:16]


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
    ``--data`` file: its records (:func:`lostmid.behaviour.formats.files.count_records`, the
    first ``--examples`` of them), each at least one example of the file's bytes a
    record; its text against the free memory when it is read
    (:func:`lostmid.behaviour.formats.files.check_text_size`)."""
    from lostmid.runs.budget import STEP_FLOOR_S, check_work

    passes = 2 if config.passes == "both" else 1
    if config.data is not None:
        from lostmid.behaviour.formats.files import count_records

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
    if config.calibrate and config.knob_values:  # a knob value is tokens, records or
        longest = max(longest, max(config.knob_values))  # needles: a token each at least
        pilot += f" at --knob-values up to {max(config.knob_values):,}"
    check_work(
        f"retrieve --examples {examples:,}{pilot} ({count:,} examples: {positions} positions x "
        f"{cells} length cells" + (f" of up to {longest:,} tokens)" if longest else ")"),
        passes=count * passes,
        seconds_each=STEP_FLOOR_S + longest * TOKEN_FLOOR_S,
        need_bytes=count * (EXAMPLE_BYTES + TOKEN_BYTES * longest),
    )


def _config_positions(config: RetrieveConfig) -> int | None:
    """The model's maximum positions as its config states them (nothing is loaded);
    None when it states none (the loaded model's limit is checked again)."""
    if depth_task(config.task) is None or not (config.length or config.lengths):
        return None
    from lostmid.models.budget import shape_of
    from lostmid.models.load import resolve_config

    spec = config.model_spec
    positions = shape_of(resolve_config(spec.name, trust_remote_code=spec.trust_remote_code))
    value = positions.get("positions")
    return int(value) if isinstance(value, int) and value > 0 else None


def check_requested_lengths(config: RetrieveConfig, model_max: int | None) -> None:
    """One line, before a haystack is built, when a needle task's ``--length`` or
    ``--lengths`` asks for more tokens than the model (or ``--max-length``) takes: every
    prompt would be refused after minutes of building it (:func:`guard_lengths` checks
    each prompt once it is made)."""
    if depth_task(config.task) is None or config.data is not None:
        return
    asked = [n for n in (config.length, *(config.lengths or ())) if n]
    given = ((model_max, "the model"), (config.max_length, "--max-length"))
    limits = [(m, w) for m, w in given if m is not None and m > 0]
    if not asked or not limits:
        return
    limit, who = min(limits)
    if max(asked) > limit:
        option = "--lengths" if config.lengths else "--length"
        raise UserError(
            f"{option} {max(asked):,}: longer than {who} takes ({limit:,} tokens); give "
            f"{option} of at most {limit:,}, or another model"
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
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec

    out = Path(out)
    if size_check:
        check_retrieve_size(config)
    check_requested_lengths(config, _config_positions(config))  # before --out is claimed
    folder = _check_out(out, config, overwrite)
    timer = Timer()
    with timer("load"):
        tokenizer = (
            None
            if not task_is_text(config.task) and config.tokenizer is None and config.data is None
            else tokenizer_for_spec(config.model_spec)
        )
        loaded = config.model_spec.load(init=config.init, seed=config.seed, size_check=size_check)
    check_requested_lengths(config, loaded.max_length)
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
    guard_lengths(examples, encoded, new_tokens, passes, loaded.max_length, config.max_length)
    tokens = [len(p) for p in encoded.prompts]
    _export(config, examples, tokens, rule, new_tokens, tokenizer, fmt)
    first_text = fmt.text(examples[0], tokenizer) if examples[0].prompt_ids is None else None
    write_text(
        out / "prompt.txt",
        first_text if first_text is not None else examples[0].prompt,
    )
    base = {k: v for k, v in config.record().items() if k not in NOT_IN_CELLS}
    base.update(new_tokens=new_tokens, data_digest=_file_digest(config.data))
    # the stage store (stages/) is made only once something is computed
    store = folder.stages()
    reading: dict[str, int] = {}  # the computed stages' prompt tokens and those read
    with _progress(console) as bar, timer("score"):
        scored = _Scoring(loaded, encoded, passes, new_tokens, config, shared, reading)
        done = scored.rows(examples, base, store, bar)
    with timer("summary"):
        result_rows = prediction_rows(examples, done, tokens, tokenizer, rule, passes)
    timer.seconds["total"] = sum(timer.seconds.values())
    result = build_result(config, examples, result_rows, passes, loaded, tokenizer, rule, timer)
    result = replace(
        result,
        prompt=_prompt_record(config, examples[0], encoded, tokenizer, fmt, first_text, new_tokens),
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
    write_outputs(out, result, result_rows)
    if console is not None:
        _print_summary(console, out, result, calibration, store.reused)
    return result


def _export(
    config: RetrieveConfig,
    examples: list[RetrievalExample],
    tokens: list[int],
    rule: str,
    new_tokens: int,
    tokenizer: Tokenizer | None,
    fmt: PromptFormat,
) -> None:
    """``--export`` (the examples' records) and ``--export-lm-eval`` (an lm-eval task)."""
    if config.export is not None:
        from lostmid.behaviour.formats.files import write_records

        write_records(examples, Path(config.export), tokens)
    if config.export_lm_eval is not None:
        from lostmid.behaviour.formats.lmeval import export_lm_eval, template_markers

        markers = (
            template_markers(tokenizer.render_chat) if fmt.applied and tokenizer is not None else []
        )
        export_lm_eval(
            examples,
            Path(config.export_lm_eval),
            rule=rule,
            new_tokens=new_tokens,
            tokenizer=None if tokenizer is None else tokenizer.name,
            add_special_tokens=fmt.add_special_tokens,
            chat_template=fmt.applied,
            markers=markers,
            model=config.model if Path(config.model).is_dir() else "MODEL_FOLDER",
        )


@dataclass(frozen=True)
class _Scoring:
    """The model's work on a run's examples, stage by stage (:func:`item_stages`), each
    stage saved as it finishes and reused by a rerun."""

    loaded: Any
    encoded: Encoded
    passes: list[str]
    new_tokens: int
    config: RetrieveConfig
    shared: bool
    reading: dict[str, int]  # the computed stages' prompt tokens and those read

    def rows(
        self, examples: list[RetrievalExample], base: dict[str, Any], store: Any, bar: Any
    ) -> list[dict[str, Any]]:
        """Every example's scores, in order; ``bar`` advances by examples."""
        rows: list[dict[str, Any] | None] = [None] * len(examples)
        task = bar.add_task("cells", total=len(examples))
        for name, members in item_stages(examples, self.shared, self.config.axis):
            moved = [0]  # examples the bar advanced inside this stage (none if reused)

            def advance(k: int, moved: list[int] = moved) -> None:
                moved[0] += k
                bar.update(task, advance=k)

            def compute(members: list[int] = members) -> list[dict[str, Any]]:
                return score_members(
                    self.loaded,
                    self.encoded,
                    members,
                    self.passes,
                    self.new_tokens,
                    self.config,
                    self.shared,
                    advance,
                    self.reading,
                )

            stage_config = {**base, "stage": name, "examples": len(members)}
            for i, row in zip(members, store.run(name, stage_config, compute), strict=True):
                rows[i] = row
            bar.update(task, advance=len(members) - moved[0])
        done = [r for r in rows if r is not None]
        assert len(done) == len(examples)
        return done


def _prompt_record(
    config: RetrieveConfig,
    first: RetrievalExample,
    encoded: Encoded,
    tokenizer: Tokenizer | None,
    fmt: PromptFormat,
    first_text: str | None,
    new_tokens: int,
) -> dict[str, Any]:
    """``retrieve.json``'s ``prompt``: the format as read, special tokens, the budget."""
    return {
        **fmt.record(first_text or first.prompt, encoded.prompts[0]),
        "boundary_tokens_match": encoded.boundary_matches,
        "bos_token_id": None if tokenizer is None else tokenizer.bos_id,
        "eos_token_id": None if tokenizer is None else tokenizer.eos_id,
        "answer_prefix_text": prefix_text(first, fmt),
        "budget": {
            "answer_tokens": max(len(t) for t in encoded.targets),
            "slack": config.extra_tokens,
            "rule": "longest answer in tokens + --extra-tokens for each answer an "
            "example asks for all of (one for the others)",
        },
        "new_tokens": new_tokens,
    }


def _print_summary(
    console: Any,
    out: Path,
    result: RetrieveResult,
    calibration: Calibration | None,
    reused: list[str],
) -> None:
    """The table of cells, the calibration's outcome, the summary and the files."""
    console.print(fit_table(cells_table(result)))
    if calibration is not None:
        console.print(calibration.outcome, highlight=False)
    for line in summary_lines(result):
        console.print(line, highlight=False)
    count = f" ({len(reused)} stages reused)" if reused else ""
    console.print(
        f"wrote {out / 'retrieve.json'}, retrieve.cells.csv, retrieve.png, heatmap.png{count}"
    )
