"""A link study's design: the model and how it is prompted, the task's size and
difficulty, the examples a depth of the pretrained model and of its twin."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lostmid.models.spec import ModelSpec

DEPTHS = (0, 25, 50, 75, 100)
PRETRAINED, TWIN = "pretrained", "twin0"
"""The two arms of a run: the model as trained and its random-init twin (seed 0)."""


@dataclass(frozen=True)
class LinkScale:
    """One scale of a link study: which checkpoints, the task's size and difficulty
    (:meth:`design` makes one model's design from it)."""

    name: str
    models: tuple[str, ...]
    length: int
    per_depth: int
    distractors: int
    twin_per_depth: int = 5
    budget: int = 16
    probes: int = 1
    task: str = "niah-multikey"

    def design(self, model: ModelSpec | str, seed: int) -> dict[str, Any]:
        """What decides the run's records (the claim of its folder); the answer prefix
        only when it is not the default (``on``), so that older folders resume."""
        spec = ModelSpec.of(model)
        return {
            "model": spec.name,
            "task": self.task,
            "length": self.length,
            "distractors": self.distractors,
            "depths": list(DEPTHS),
            "per_depth": self.per_depth,
            "twin_per_depth": min(self.twin_per_depth, self.per_depth),
            "budget": self.budget,
            "probes": self.probes,
            "seed": seed,
            "twin_seed": 0,
            "chat_template": spec.chat_template,
            "scoring": "substring",
        } | spec.options()  # the answer prefix, tokenizer, dtype, ... only when set


def grows(saved: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """More examples a depth (of the pretrained model or the twin), nothing else changed."""
    counts = ("per_depth", "twin_per_depth")
    same = {k: v for k, v in saved.items() if k not in counts}
    return same == {k: v for k, v in wanted.items() if k not in counts} and all(
        int(wanted[k]) >= int(saved[k]) for k in counts
    )
