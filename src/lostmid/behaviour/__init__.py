"""Behaviour: retrieval accuracy by position (the behavioural U) and its link to influence.

Tasks (:mod:`~lostmid.behaviour.tasks`): Liu et al.'s key-value retrieval, RULER's
needle in a haystack, MQAR; scoring (:mod:`~lostmid.behaviour.score`): greedy
generation with Liu's substring rule and teacher forcing, Wilson intervals; the
``lostmid retrieve`` job (:func:`run_retrieve`); small models trained on retrieval
(:func:`train_retrieval`).

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
    "tasks": (
        "RetrievalExample",
        "export_jsonl",
        "gold_distribution",
        "kv_example",
        "make_examples",
        "mqar_example",
        "niah_example",
    ),
    "tokenizers": ("ByteTokenizer", "load_tokenizer", "tokenizer_for_model"),
    "training": (
        "RETRIEVAL_PRESETS",
        "RetrievalCheckpoint",
        "RetrievalHooks",
        "RetrievalTask",
        "RetrievalTrainConfig",
        "RetrievalTrainResult",
        "resolve_retrieval_config",
        "retrieval_preset",
        "train_retrieval",
    ),
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
