"""The pilots of a ``lostmid retrieve`` run, on items never measured: ``--calibrate``
(the task's knob placed where the model is between its ceiling and its floor) and
``--lead-in learn`` (what the model writes before its answer).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lostmid.behaviour.decoding.answers import resolve_rule
from lostmid.behaviour.decoding.prompts import (
    PromptFormat,
    encode,
    shared_lead_in,
)
from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.retrieve.calibrate import PILOT_FIRST_ITEM, Calibration, calibrate_knob
from lostmid.behaviour.retrieve.config import MAX_LEAD_IN, RetrieveConfig
from lostmid.behaviour.retrieve.examples import answer_budget, retrieval_examples
from lostmid.behaviour.retrieve.scoring import (
    NOT_IN_CELLS,
    guard_lengths,
    prediction_rows,
    score_members,
)
from lostmid.behaviour.tasks.registry import depth_task
from lostmid.errors import UserError
from lostmid.stats.shape import reference_points

# kv and mqar: the pairs --calibrate tries, easiest first
PAIR_LADDER = (2, 5, 10, 20, 40, 80, 160, 320)


def middle_pilot(
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
    (:func:`~lostmid.behaviour.decoding.prompts.shared_lead_in`); saved as a stage
    (``pilot-lead-in``). Returns its record: ``text``, the counts and an outcome line."""
    cells = config.resolved_lengths()
    at, middle = middle_pilot(config, cells[(len(cells) - 1) // 2], lead_in="")
    examples, _ = retrieval_examples(at, tokenizer, fmt, first_item=PILOT_FIRST_ITEM)
    encoded = encode(examples, tokenizer, fmt)
    new_tokens = answer_budget(examples, encoded, at.extra_tokens) + MAX_LEAD_IN
    guard_lengths(examples, encoded, new_tokens, ["generate"], loaded.max_length, at.max_length)
    stage = {k: v for k, v in at.record().items() if k not in NOT_IN_CELLS}
    stage.update(stage="pilot-lead-in", new_tokens=new_tokens, first_item=PILOT_FIRST_ITEM)
    members = list(range(len(examples)))

    def compute() -> list[dict[str, Any]]:
        return score_members(loaded, encoded, members, ["generate"], new_tokens, at, False)

    raw = store.run("pilot-lead-in", stage, compute)
    tokens = [len(prompt) for prompt in encoded.prompts]
    rule = resolve_rule(at.scoring, examples[0].task)
    rows = prediction_rows(examples, raw, tokens, tokenizer, rule, ["generate"])
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
    """The ``--calibrate`` pilot (:mod:`lostmid.behaviour.retrieve.calibrate`): greedy accuracy at
    the middle position (:func:`lostmid.stats.shape.reference_points` of the run's
    positions) for knob values chosen by bisection, on pilot items only
    (``PILOT_FIRST_ITEM + i``), each value's answers saved as a stage (``pilot-...``)."""
    knob = config.knob
    ladder = config.knob_values or knob_ladder(config)
    cells = config.resolved_lengths()
    length = cells[(len(cells) - 1) // 2]  # the lower median length cell
    middles: dict[int, int] = {}

    def accuracy_at(value: int) -> tuple[int, int] | None:
        try:
            at, middle = middle_pilot(config, length, **{knob: value})
            examples, _ = retrieval_examples(at, tokenizer, fmt, first_item=PILOT_FIRST_ITEM)
            encoded = encode(examples, tokenizer, fmt)
            new_tokens = answer_budget(examples, encoded, at.extra_tokens)
            guard_lengths(
                examples, encoded, new_tokens, ["generate"], loaded.max_length, at.max_length
            )
        except UserError:
            return None  # the prompt does not fit (the model, the length, the keys)
        middles[value] = middle
        name = f"pilot-{knob}{value}"
        stage = {k: v for k, v in at.record().items() if k not in NOT_IN_CELLS}
        stage.update(stage=name, new_tokens=new_tokens, first_item=PILOT_FIRST_ITEM)
        members = list(range(len(examples)))

        def compute() -> list[dict[str, Any]]:
            return score_members(loaded, encoded, members, ["generate"], new_tokens, at, False)

        raw = store.run(name, stage, compute)
        rule = resolve_rule(at.scoring, examples[0].task)
        tokens = [len(p) for p in encoded.prompts]
        rows = prediction_rows(examples, raw, tokens, tokenizer, rule, ["generate"])
        return sum(bool(r["generate_correct"]) for r in rows), len(rows)

    found = calibrate_knob(knob, ladder, accuracy_at, band=config.band)
    return replace(
        found, position=middles.get(found.chosen), length=length, examples=config.pilot_examples
    )


def knob_ladder(config: RetrieveConfig) -> tuple[int, ...]:
    """The knob's default values, easiest first: the plug-in's, or pairs for kv, mqar."""
    plugin = depth_task(config.task)
    if plugin is not None:
        return plugin.ladder
    return PAIR_LADDER
