"""What one ``lostmid retrieve`` run is (:class:`RetrieveConfig`), checked when it is
made; the job itself is :func:`lostmid.behaviour.run.run_retrieve`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lostmid.behaviour.example import (
    TASKS,
    check_depths,
    check_gold_indices,
    default_depths,
    default_gold_indices,
)
from lostmid.behaviour.kv import KV_STYLES, UUID_CHARS
from lostmid.behaviour.niah import HAYSTACKS
from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError
from lostmid.influence.config import HELP as MEASURE_HELP

SCORINGS = ("generate", "teacher", "both")
NIAH_LENGTH = 1024

HELP = {  # the CLI's help for each option, and the meaning of each RetrieveConfig field
    "model": "Local directory, cached hub id, preset, or a lostmid checkpoint.",
    "task": " | ".join(TASKS),
    "pairs": "Key-value pairs (kv, mqar).",
    "gold_index": "Gold indices, 0-indexed, e.g. 0,10,20 (kv, mqar).",
    "depth": "Needle depths in %, e.g. 0,50,100 (niah).",
    "positions": "K evenly spaced positions, first and last included.",
    "examples": "Examples per gold position.",
    "length": f"Context length in tokens (niah; default {NIAH_LENGTH}).",
    "key_chars": f"Key/value characters ({UUID_CHARS}: a UUID4).",
    "style": "kv prompt: liu (Liu et al.) | compact {kv,kv,..}k",
    "query_aware": "Also put the key before the data (kv).",
    "haystack": "niah filler: " + " | ".join(HAYSTACKS),
    "vocab": "mqar vocabulary (keys | values).",
    "offset": "mqar: first token id of the key/value vocabulary.",
    "scoring": " | ".join(SCORINGS),
    "extra_tokens": "Greedy decoding runs len(target tokens) + this many new tokens.",
    "tokenizer": "Tokenizer directory, cached hub id, or 'bytes'.",
    "init": "auto | random | pretrained: weights of --model.",
    "seed": "Random seed.",
    "batch_size": "Examples per forward.",
    "padding": "left | right: how prompts of a batch are padded.",
    "device": "cpu | cuda[:N]",
    "dtype": "float32 | bfloat16 | float16",
    "device_map": MEASURE_HELP["device_map"],
    "export": "Also write the examples as JSON lines.",
}


@dataclass(frozen=True)
class RetrieveConfig:
    """What ``lostmid retrieve`` runs; validated on construction (one-line errors).

    Positions: ``gold_index`` (kv, mqar; 0-indexed), ``depth`` (niah; percent) or
    ``positions`` K evenly spaced, first and last included; by default 0, 1/4, 1/2,
    3/4 and the last. ``examples`` is the number of examples per position.
    ``length``: niah context length in tokens (kv and mqar lengths follow from
    ``pairs``). ``extra_tokens``: greedy decoding runs ``len(target tokens) +
    extra_tokens`` new tokens.
    """

    model: str
    task: str = "kv"
    pairs: int = 75
    gold_index: tuple[int, ...] | None = None
    depth: tuple[int, ...] | None = None
    positions: int | None = None
    examples: int = 20
    length: int | None = None
    key_chars: int = UUID_CHARS
    style: str = "liu"
    query_aware: bool = False
    haystack: str = "repeat"
    vocab: int = 64
    offset: int = 128
    scoring: str = "both"
    extra_tokens: int = 4
    tokenizer: str | None = None
    init: str = "auto"
    seed: int = 0
    batch_size: int = 8
    padding: str = "left"
    device: str = "cpu"
    dtype: str = "float32"
    device_map: str | None = None
    export: Path | None = None

    def __post_init__(self) -> None:
        check_choice("--task", self.task, TASKS)
        check_choice("--scoring", self.scoring, SCORINGS)
        check_choice("--style", self.style, KV_STYLES)
        check_choice("--haystack", self.haystack, HAYSTACKS)
        check_choice("--padding", self.padding, ("left", "right"))
        for name in ("pairs", "examples", "key_chars", "batch_size", "extra_tokens", "vocab"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        if self.positions is not None:
            check_positive("--positions", self.positions)
        if self.gold_index is not None and self.positions is not None:
            raise UserError("give at most one of --gold-index and --positions")
        if self.depth is not None and self.positions is not None:
            raise UserError("give at most one of --depth and --positions")
        if self.task == "niah":
            if self.gold_index is not None:
                raise UserError("--task niah places its needle by --depth, not --gold-index")
            if self.depth is not None:
                check_depths(self.depth)
            if self.length is not None:
                check_positive("--length", self.length)
        else:
            if self.depth is not None:
                raise UserError(f"--depth applies to --task niah; for {self.task} use --gold-index")
            if self.length is not None:
                raise UserError(
                    f"--length applies to --task niah; for {self.task} the length follows "
                    "from --pairs"
                )
            if self.gold_index is not None:
                check_gold_indices(self.gold_index, self.pairs)
        if self.device_map is not None:  # the map's form here; its modules at load time
            from lostmid.models.placement import parse_device_map

            parse_device_map(self.device_map)
        if self.query_aware and (self.task != "kv" or self.style != "liu"):
            raise UserError("--query-aware applies to --task kv with --style liu")
        if self.task == "mqar" and (self.vocab % 2 or self.vocab < 2 * self.pairs):
            raise UserError(
                f"--vocab must be even with at least 2 * pairs = {2 * self.pairs} ids, "
                f"got {self.vocab}"
            )

    @property
    def axis(self) -> str:
        return "depth" if self.task == "niah" else "index"

    def resolved_positions(self) -> tuple[int, ...]:
        """Gold indices (kv, mqar; 0-indexed) or depths (niah; percent) to evaluate."""
        if self.task == "niah":
            return check_depths(self.depth) if self.depth else default_depths(self.positions)
        if self.gold_index:
            return check_gold_indices(self.gold_index, self.pairs)
        return default_gold_indices(self.pairs, self.positions)

    def record(self) -> dict[str, Any]:
        data = asdict(self)
        data["export"] = None if self.export is None else str(self.export)
        data["resolved_positions"] = list(self.resolved_positions())
        data["resolved_length"] = self.resolved_length()
        return data

    def resolved_length(self) -> int | None:
        if self.task != "niah":
            return None
        return self.length if self.length is not None else NIAH_LENGTH
