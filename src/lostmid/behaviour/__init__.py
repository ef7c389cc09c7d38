"""Behaviour: retrieval accuracy by position (the behavioural U) and its link to influence.

Tasks (:mod:`~lostmid.behaviour.tasks`; one module each: ``kv``, ``niah``, ``mqar``, with
the example record in ``example`` and the training gold laws in ``gold``): Liu et al.'s
key-value retrieval, RULER's needle in a haystack, MQAR; scoring
(:mod:`~lostmid.behaviour.score`): greedy generation with Liu's substring rule and
teacher forcing, Wilson intervals; the ``lostmid retrieve`` job (:func:`run_retrieve`);
small models trained on retrieval (:func:`train_retrieval`, with ``training_data``,
``training_config`` and ``training_eval``).

>>> from lostmid.behaviour import kv_example, wilson_interval
>>> ex = kv_example(seed=0, index=0, pairs=4, gold_index=3, key_chars=2, style="compact")
>>> ex.records[3] == (ex.key, ex.value), [round(x, 3) for x in wilson_interval(9, 10)]
(True, [0.596, 0.982])
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "run": ("RetrieveConfig", "RetrieveResult", "ScoreSet", "run_retrieve"),
    "score": (
        "Difference",
        "PositionScore",
        "RetrievalSummary",
        "TeacherScores",
        "difference_interval",
        "greedy_decode",
        "is_correct",
        "score_positions",
        "summarise_positions",
        "teacher_forced",
        "wilson_interval",
    ),
    "example": ("RetrievalExample",),
    "gold": ("gold_distribution",),
    "kv": ("kv_example",),
    "mqar": ("mqar_example",),
    "niah": ("niah_example",),
    "tasks": ("export_jsonl", "make_examples"),
    "tokenizers": ("ByteTokenizer", "load_tokenizer", "tokenizer_for_model"),
    "training": (
        "RetrievalHooks",
        "RetrievalTrainResult",
        "train_retrieval",
    ),
    "training_config": (
        "RETRIEVAL_PRESETS",
        "RetrievalTrainConfig",
        "resolve_retrieval_config",
        "retrieval_preset",
    ),
    "training_data": ("RetrievalTask",),
    "training_eval": ("RetrievalCheckpoint",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Import on first use: ``lostmid.cli`` registers ``retrieve`` without loading torch."""
    if name not in _WHERE:
        raise AttributeError(f"module 'lostmid.behaviour' has no attribute {name!r}")
    return getattr(importlib.import_module(f"lostmid.behaviour.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
