"""What one ``lostmid retrieve`` run is (:class:`RetrieveConfig`), checked when it is
made, with the help text of every option (:data:`HELP`); the job itself is
:func:`lostmid.behaviour.retrieve.run.run_retrieve`."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lostmid.behaviour.decoding.answers import RULE_CHOICES
from lostmid.behaviour.retrieve.grid import DESIGNS
from lostmid.behaviour.tasks.example import (
    check_depths,
    check_gold_indices,
    default_depths,
    default_gold_indices,
)
from lostmid.behaviour.tasks.kv import KV_STYLES, UUID_CHARS
from lostmid.behaviour.tasks.needle_design import DEFAULT_GAP, check_design
from lostmid.behaviour.tasks.needles import (
    NEEDLE_ORDERS,
    NEEDLE_TYPES,
    VARIANTS,
    check_needles_fit,
    needle_count,
    resolved_distractors,
)
from lostmid.behaviour.tasks.niah import HAYSTACKS
from lostmid.behaviour.tasks.registry import (
    depth_task,
    index_task,
    task_names,
    task_of,
)
from lostmid.checks import check_choice, check_positive, check_seed
from lostmid.errors import UserError
from lostmid.influence.config import HELP as MEASURE_HELP
from lostmid.models.spec import ANSWER_PREFIXES, CHAT_TEMPLATES, DTYPE_NAMES, LoadsModel

PASSES = ("generate", "teacher", "both")
NIAH_LENGTH = 1024
EXAMPLES = 20

HELP: dict[str, str] = {
    "model": "Local directory, cached hub id, preset, or a lostmid checkpoint.",
    "task": f"{' | '.join(task_names())} (with --data: the file's task).",
    "pairs": "Key-value pairs (kv, mqar) without --lengths.",
    "gold_index": "Gold indices, 0-indexed, e.g. 0,10,20 (kv, mqar, kv/QA data).",
    "depth": "Needle depths in %, e.g. 0,50,100 (niah, RULER/LongBench data).",
    "positions": "K evenly spaced positions, first and last included.",
    "examples": f"Examples per position (default {EXAMPLES}; with --data: the first N "
    "records, default all).",
    "length": f"Context length in tokens (niah; default {NIAH_LENGTH}).",
    "lengths": "Context lengths in tokens, e.g. 256,512,1024: a length x position grid "
    "(niah fills the haystack, kv the pairs that fit, mqar (L-1)/2 pairs); heatmap.png.",
    "key_chars": f"Key/value characters ({UUID_CHARS}: a UUID4).",
    "style": "kv prompt: liu (Liu et al.) | compact {kv,kv,..}k",
    "query_aware": "Also put the key (QA, niah-*: the question) before the data.",
    "haystack": "needle tasks' filler: repeat | varied",
    "distractors": "niah-*: needles with other keys besides the asked ones (default: 3 for "
    "niah-multikey, RULER's; 0 for the others).",
    "values_per_key": "niah-multivalue: needles (values) of the one asked key.",
    "queries": "niah-multiquery: keys asked at once.",
    "needle_type": "niah-* variants: numbers (7 digits) | uuids, the needles' values.",
    "needle_order": "niah-*: scattered (RULER's: the distractors anywhere, so the gold "
    "needle is the first needle at depth 0 and the last at 100) | fixed (the distractors "
    "around the asked needles, moving with them: only the depth changes) | factorial "
    "(niah-multikey: the gold's depth crossed with its rank among the needles, first / "
    "middle / last, on the same items, plus the gold moved between distractors fixed at "
    "both ends; a model of depth and rank with items as clusters separates the two).",
    "needle_gap": "--needle-order factorial: filler tokens at least between two needles "
    f"(never adjacent; default {DEFAULT_GAP}).",
    "answer_prefix": "on: the answer starts in the prompt (RULER's style; after the chat "
    "template's assistant tag when applied) | off: the prompt asks and stops.",
    "lead_in": "Text the model writes between the answer prefix and the answer (a base "
    "model's ':'), kept for teacher forcing: TEXT, or learn (from a pilot's replies).",
    "calibrate": "First a pilot at the middle position moves the task's difficulty knob "
    "until greedy accuracy lands in --band (pilot items are never measured).",
    "band": "Calibration target for greedy accuracy at the middle position, LOW,HIGH.",
    "pilot_examples": "Calibration: examples per knob value tried.",
    "knob_values": "Calibration: the knob's values to search, easiest first (default: the "
    "task's ladder).",
    "vocab": "mqar vocabulary (keys | values).",
    "offset": "mqar: the first token id of the vocabulary range.",
    "passes": "generate (greedy + --scoring rule) | teacher (log p, all-argmax) | both",
    "scoring": "Answer rule of greedy generation: auto (best-subspan for QA data, else "
    "substring) | substring (Liu's kv rule) | exact | best-subspan (Liu's QA rule).",
    "extra_tokens": "Greedy decoding runs (longest target in tokens) + this many new tokens "
    "for each answer an example asks for all of (multi-value, multi-query; one otherwise).",
    "tokenizer": "Tokenizer directory, cached hub id, or 'bytes'.",
    "chat_template": "auto (apply the tokenizer's chat template when it has one) | on | off.",
    "max_length": "Refuse prompts longer than this (also the model's maximum positions).",
    "design": "moved (Liu's: the gold record moved, one prompt per example) | shared (one "
    "prefill per context, every record's key asked of its cache; kv, mqar).",
    "data": "Read examples from a file: Liu et al.'s kv or QA (.jsonl/.jsonl.gz), RULER's "
    "or LongBench-style records.",
    "init": "auto | random | pretrained: weights of --model.",
    "seed": "Random seed.",
    "batch_size": "Examples per forward (--design shared: questions read in one forward).",
    "padding": "left | right: how prompts of a batch are padded (teacher forcing).",
    "device": "cpu | cuda[:N]",
    "dtype": "float32 | float64 | bfloat16 | float16",
    "device_map": MEASURE_HELP["device_map"],
    "export": "Also write the examples in their field's format (Liu's kv/QA, RULER's, "
    "LongBench's; .jsonl or .jsonl.gz).",
    "export_lm_eval": "Also write an lm-evaluation-harness task per task and length "
    "(YAML + data + scoring rule) into this directory.",
    "margin": "Shape class: a contrast counts as zero when its 95% interval is inside "
    "+-margin (accuracy units).",
    "trust_remote_code": MEASURE_HELP["trust_remote_code"],
}


LEARN = "learn"  # --lead-in learn: the pilot chooses it
MAX_LEAD_IN = 16


def check_lead_in(value: str) -> str:
    """``--lead-in``: a short text on one line, or ``learn``.

    >>> check_lead_in(":")
    ':'
    """
    if "\n" in value or len(value) > MAX_LEAD_IN:
        raise UserError(
            f"--lead-in {value!r}: give a short text on one line (at most {MAX_LEAD_IN} "
            "characters) or learn"
        )
    return value


OUTPUT_PANEL = "Run and output"
PANELS = {
    "Model and prompt": (
        "model", "init", "tokenizer", "chat_template", "answer_prefix", "lead_in",
        "max_length", "trust_remote_code",
    ),
    "Task": ("task", "data", "pairs", "key_chars", "style", "query_aware", "vocab", "offset"),
    "Needles (niah-*)": (
        "haystack", "distractors", "values_per_key", "queries", "needle_type", "needle_order",
        "needle_gap",
    ),
    "Positions and size": ("gold_index", "depth", "positions", "examples", "length", "lengths"),
    "Scoring": ("passes", "scoring", "extra_tokens", "margin"),
    "Calibration": ("calibrate", "band", "pilot_examples", "knob_values"),
    "Compute": ("design", "batch_size", "padding", "device", "dtype", "device_map"),
    OUTPUT_PANEL: ("seed", "export", "export_lm_eval"),
}  # fmt: skip
"""``lostmid retrieve --help``'s groups of options."""


@dataclass(frozen=True)
class RetrieveConfig(LoadsModel):
    """What ``lostmid retrieve`` runs; validated on construction (one-line errors). Each
    field's meaning is its :data:`HELP` entry.

    Positions: ``gold_index`` (kv, mqar; 0-indexed), ``depth`` (niah; percent) or
    ``positions`` K evenly spaced, first and last included; by default 0, 1/4, 1/2,
    3/4 and the last. ``lengths``: a grid of context lengths crossed with the positions
    (:mod:`lostmid.behaviour.retrieve.grid`); without it one length (``pairs``, or ``length``
    for niah). ``data``: examples from a file (:mod:`lostmid.behaviour.formats.records`).
    ``trust_remote_code``: run custom code that the model's or tokenizer's config names
    (``auto_map``); off: such a model is refused.
    """

    model: str
    task: str = "kv"
    pairs: int = 75
    gold_index: tuple[int, ...] | None = None
    depth: tuple[int, ...] | None = None
    positions: int | None = None
    examples: int | None = None
    length: int | None = None
    lengths: tuple[int, ...] | None = None
    key_chars: int = UUID_CHARS
    style: str = "liu"
    query_aware: bool = False
    haystack: str = "repeat"
    distractors: int | None = None
    values_per_key: int = 4
    queries: int = 4
    needle_type: str = "numbers"
    needle_order: str = "scattered"
    needle_gap: int = DEFAULT_GAP
    answer_prefix: str = "on"
    lead_in: str = ""
    vocab: int = 64
    offset: int = 128
    passes: str = "both"
    scoring: str = "auto"
    extra_tokens: int = 4
    tokenizer: str | None = None
    chat_template: str = "auto"
    max_length: int | None = None
    design: str = "moved"
    data: Path | None = None
    init: str = "auto"
    seed: int = 0
    batch_size: int = 8
    padding: str = "left"
    device: str = "cpu"
    dtype: str = "float32"
    device_map: str | None = None
    export: Path | None = None
    export_lm_eval: Path | None = None
    margin: float = 0.05
    calibrate: bool = False
    band: tuple[float, float] = (0.3, 0.8)
    pilot_examples: int = 12
    knob_values: tuple[int, ...] | None = None
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        self._check_choices()
        self._check_counts()
        self._check_positions()
        self._check_calibration()
        if self.data is None:  # a file's task: positions are checked against its records
            self._check_task()

    def _check_choices(self) -> None:
        """The seed and every option that names one of a list (task, rule, format, ...)."""
        check_seed(self.seed)
        check_choice("--task", self.task, task_names())
        if self.scoring in PASSES:
            raise UserError(
                f"--scoring now names the answer rule ({' | '.join(RULE_CHOICES)}); choose "
                f"what runs with --passes {self.scoring}"
            )
        check_choice("--scoring", self.scoring, RULE_CHOICES)
        check_choice("--passes", self.passes, PASSES)
        check_choice("--style", self.style, KV_STYLES)
        check_choice("--haystack", self.haystack, HAYSTACKS)
        check_choice("--padding", self.padding, ("left", "right"))
        check_choice("--chat-template", self.chat_template, CHAT_TEMPLATES)
        check_choice("--dtype", self.dtype, DTYPE_NAMES)
        check_choice("--design", self.design, DESIGNS)
        check_choice("--needle-type", self.needle_type, NEEDLE_TYPES)
        check_choice("--needle-order", self.needle_order, NEEDLE_ORDERS)
        if self.needle_order != "scattered" and (self.task not in VARIANTS or self.data):
            raise UserError(
                f"--needle-order is for generated needle tasks ({', '.join(VARIANTS)}); "
                f"--task {self.task}{' with --data' if self.data else ''} has no distractor "
                "needles to order"
            )
        if self.needle_order == "factorial":
            self._check_factorial()
        check_choice("--answer-prefix", self.answer_prefix, ANSWER_PREFIXES)
        check_lead_in(self.lead_in)
        indexed = index_task(self.task)
        if self.lead_in and self.data is None and indexed is not None and not indexed.text:
            raise UserError(f"--lead-in is for text prompts; {self.task}'s are token ids")

    def _check_factorial(self) -> None:
        """What ``--needle-order factorial`` needs: multi-key with two distractors or more,
        a gap of a token or more, one length, no calibration, and depths on both sides
        of the middle (three at least), so that depth and distance to the nearer end
        are told apart."""
        check_design(self.task, resolved_distractors(self.task, self.distractors), self.needle_gap)
        if self.lengths is not None:
            raise UserError(
                "--needle-order factorial analyses one length; give --length, not --lengths"
            )
        if self.calibrate:
            raise UserError(
                "--needle-order factorial does not take --calibrate; choose --distractors "
                "from a scattered-order calibration"
            )
        depths = self.depth or default_depths(self.positions)
        if len(set(depths)) < 3 or min(depths) >= 50 or max(depths) <= 50:
            raise UserError(
                "--needle-order factorial needs three depths or more, one under 50 and one "
                f"over 50 (depth and distance to the nearer end apart), got "
                f"{','.join(map(str, sorted(set(depths))))}"
            )

    def _check_counts(self) -> None:
        """Counts that must be positive, the needles a context must hold, the margin."""
        for name in (
            "pairs",
            "key_chars",
            "batch_size",
            "extra_tokens",
            "vocab",
            "values_per_key",
            "queries",
            "pilot_examples",
        ):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        for name in ("examples", "positions", "max_length"):
            if getattr(self, name) is not None:
                check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        if self.task in VARIANTS and self.data is None:  # before any folder is claimed
            count = needle_count(self.task, self)
            check_needles_fit(count, min(self.lengths or (self.length or NIAH_LENGTH,)))
        if not self.margin >= 0:
            raise UserError(f"--margin must be >= 0, got {self.margin}")

    def _check_positions(self) -> None:
        """Where the answers go (gold indices, depths, positions, lengths) and the
        options that exclude each other."""
        for name, given in (("--gold-index", self.gold_index), ("--depth", self.depth)):
            repeated = sorted(v for v, n in Counter(given or ()).items() if n > 1)
            if repeated:
                raise UserError(
                    f"{name} gives {repeated[0]} more than once; give each position once "
                    "(--examples sets how many examples each one gets)"
                )
        if self.gold_index is not None and self.positions is not None:
            raise UserError("give at most one of --gold-index and --positions")
        if self.depth is not None and self.positions is not None:
            raise UserError("give at most one of --depth and --positions")
        if self.lengths is not None:
            if not self.lengths:
                raise UserError("--lengths needs at least one length")
            for length in self.lengths:
                check_positive("--lengths", length)
            if self.length is not None:
                raise UserError("give at most one of --length and --lengths")
        if self.design == "shared" and self.query_aware:
            raise UserError(
                "--design shared needs the key after the data; --query-aware puts it before"
            )
        if self.device_map is not None:  # the map's form here; its modules at load time
            from lostmid.models.placement import parse_device_map

            parse_device_map(self.device_map)
        if self.distractors is not None and self.distractors < 0:
            raise UserError(f"--distractors must be >= 0, got {self.distractors}")

    def _check_task(self) -> None:
        """What the task's own plug-in accepts (a depth task, an index task)."""
        plugin = depth_task(self.task)
        if plugin is not None:
            plugin.check(self)
            if self.gold_index is not None:
                raise UserError(
                    f"--task {self.task} places its needle by --depth, not --gold-index"
                )
            if self.depth is not None:
                check_depths(self.depth)
            if self.positions is not None and self.positions > 101:
                raise UserError(
                    f"--positions {self.positions}: a needle task places its needle at whole "
                    "depths 0-100%, 101 at most; give --positions 101 or fewer"
                )
            if self.length is not None:
                check_positive("--length", self.length)
            if self.design == "shared":
                raise UserError(
                    "--design shared needs records to query (kv, mqar); a needle in a "
                    "haystack has one per context"
                )
        else:
            if self.depth is not None:
                raise UserError(
                    f"--depth applies to needle tasks (niah*); for {self.task} use --gold-index"
                )
            if self.length is not None:
                raise UserError(
                    f"--length applies to needle tasks (niah*); for {self.task} the length follows "
                    "from --pairs (or give --lengths)"
                )
            if self.gold_index is not None and self.lengths is None:
                check_gold_indices(self.gold_index, self.pairs)
            fixed_pairs = self.lengths is None and not (self.calibrate and self.knob == "pairs")
            if self.positions is not None and fixed_pairs and self.positions > self.pairs:
                raise UserError(
                    f"--positions {self.positions}: --pairs {self.pairs} gives {self.pairs} "
                    f"places for the answer; give --positions {self.pairs} or fewer "
                    "(or more --pairs)"
                )
        if self.query_aware and not task_of(self.task).supports_query_aware(self):
            takes = [n for n in task_names() if task_of(n).supports_query_aware(self)]
            raise UserError(
                f"--query-aware does not apply to --task {self.task} with these options; "
                f"it applies to {', '.join(takes)} (kv with --style liu)"
            )
        indexed = index_task(self.task)
        if indexed is not None:
            indexed.check(self)
            if not indexed.text and self.export_lm_eval is not None:
                raise UserError(
                    f"--export-lm-eval needs text prompts; {self.task} examples are token ids"
                )

    def _check_calibration(self) -> None:
        low, high = self.band
        if not 0 <= low < high <= 1:
            raise UserError(f"--band must be LOW,HIGH with 0 <= LOW < HIGH <= 1, got {low},{high}")
        if self.knob_values is not None:
            if not self.knob_values or any(v < 0 for v in self.knob_values):
                raise UserError("--knob-values needs one or more values >= 0")
            if list(self.knob_values) != sorted(set(self.knob_values)):
                raise UserError("--knob-values must be increasing (easiest first)")
        if not self.calibrate:
            return
        if self.data is not None:
            raise UserError("--calibrate needs a generated task; a --data file has no knob")
        if self.passes == "teacher":
            raise UserError("--calibrate judges greedy answers; use --passes generate or both")
        knob = self.knob
        if knob == "pairs" and self.gold_index is not None:
            raise UserError("--calibrate moves --pairs; give --positions instead of --gold-index")
        if self.lengths is not None and knob in ("length", "pairs"):
            raise UserError(
                f"--calibrate moves {knob} for --task {self.task}; give one length, not --lengths"
            )

    def with_changes(self, **changes: Any) -> RetrieveConfig:
        """This configuration with some fields changed (checked again), e.g. the knob
        ``--calibrate`` chose: ``config.with_changes(**{config.knob: 8})``."""
        from dataclasses import replace

        return replace(self, **changes)

    @property
    def knob(self) -> str:
        """The option ``--calibrate`` moves: the plug-in's knob, ``pairs`` for kv, mqar."""
        plugin = depth_task(self.task)
        return "pairs" if plugin is None else plugin.knob

    @property
    def axis(self) -> str:
        return "index" if depth_task(self.task) is None else "depth"

    @property
    def resolved_examples(self) -> int | None:
        """Examples per position (generated: 20 by default; data: None = every record)."""
        if self.examples is not None:
            return self.examples
        return None if self.data is not None else EXAMPLES

    def resolved_lengths(self) -> tuple[int | None, ...]:
        """The length cells: ``lengths`` sorted, or (None,) for the one length."""
        return tuple(sorted(set(self.lengths))) if self.lengths else (None,)

    def resolved_positions(self) -> tuple[int, ...]:
        """Gold indices (kv, mqar; 0-indexed) or depths (niah; percent) at ``pairs``
        (the positions of a run without ``lengths``)."""
        if depth_task(self.task) is not None:
            return check_depths(self.depth) if self.depth else default_depths(self.positions)
        if self.gold_index:
            return check_gold_indices(self.gold_index, self.pairs)
        return default_gold_indices(self.pairs, self.positions)

    def record(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("export", "export_lm_eval", "data"):
            value = getattr(self, name)
            data[name] = None if value is None else str(value)
        for name in ("gold_index", "depth", "lengths", "band", "knob_values"):
            value = getattr(self, name)
            data[name] = None if value is None else list(value)
        if self.data is None and self.lengths is None:
            data["resolved_positions"] = list(self.resolved_positions())
        data["resolved_length"] = self.resolved_length()
        data["resolved_examples"] = self.resolved_examples
        if not self.lead_in:  # runs saved before --lead-in existed resume as the same run
            del data["lead_in"]
        if self.needle_order == "scattered":  # likewise before --needle-order
            del data["needle_order"]
        if self.needle_order != "factorial":  # and before --needle-gap, which only it reads
            del data["needle_gap"]
        return data

    def resolved_length(self) -> int | None:
        if depth_task(self.task) is None or self.data is not None or self.lengths is not None:
            return None
        return self.length if self.length is not None else NIAH_LENGTH
