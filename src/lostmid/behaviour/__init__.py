"""Behaviour: retrieval accuracy by position (the behavioural U) and its link to influence.

Tasks (:mod:`~lostmid.behaviour.tasks`): Liu et al.'s key-value retrieval, RULER's
needle in a haystack, MQAR; scoring (:mod:`~lostmid.behaviour.score`): Liu's substring
rule, accuracy by position with Wilson intervals; model calls
(:mod:`~lostmid.behaviour.decoding`): greedy generation and teacher forcing; the
``lostmid retrieve`` job (:func:`run_retrieve`); small models trained on retrieval
(:func:`train_retrieval`).

>>> from lostmid.behaviour import kv_example, wilson_interval
>>> ex = kv_example(seed=0, index=0, pairs=4, gold_index=3, key_chars=2, style="compact")
>>> ex.records[3] == (ex.key, ex.value), [round(x, 3) for x in wilson_interval(9, 10)]
(True, [0.596, 0.982])
"""

from lostmid.lazy import attach

# Names are imported from their modules on first use (lostmid.lazy): lostmid.cli registers
# ``retrieve`` without loading torch.
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "run": ["RetrieveConfig", "RetrieveResult", "ScoreSet", "run_retrieve"],
        "score": [
            "Difference",
            "PositionScore",
            "RetrievalSummary",
            "difference_interval",
            "is_correct",
            "score_positions",
            "summarise_positions",
            "wilson_interval",
        ],
        "decoding": ["TeacherScores", "greedy_decode", "teacher_forced"],
        "tasks": [
            "RetrievalExample",
            "export_jsonl",
            "gold_distribution",
            "kv_example",
            "make_examples",
            "mqar_example",
            "niah_example",
        ],
        "tokenizers": ["ByteTokenizer", "load_tokenizer", "tokenizer_for_model"],
        "training": [
            "RETRIEVAL_PRESETS",
            "RetrievalCheckpoint",
            "RetrievalHooks",
            "RetrievalTask",
            "RetrievalTrainConfig",
            "RetrievalTrainResult",
            "resolve_retrieval_config",
            "retrieval_preset",
            "train_retrieval",
        ],
    },
)
