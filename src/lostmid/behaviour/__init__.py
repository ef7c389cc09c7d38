"""Behaviour: retrieval accuracy by position (the behavioural U) and its link to influence.

Tasks (:mod:`~lostmid.behaviour.tasks`; one module each: ``kv``, ``niah``, ``mqar``, with
the example record in ``example`` and the training gold laws in ``gold``): Liu et al.'s
key-value retrieval, RULER's needle in a haystack, MQAR; scoring
(:mod:`~lostmid.behaviour.score`): Liu's substring rule, accuracy by position with
Wilson intervals (:mod:`lostmid.stats`); model calls (:mod:`~lostmid.behaviour.decoding`):
greedy generation and teacher forcing; the ``lostmid retrieve`` job
(:func:`run_retrieve`); small models trained on retrieval (the subpackage
:mod:`~lostmid.behaviour.training`, :func:`run_retrieval_training`).

>>> from lostmid.behaviour import kv_example
>>> from lostmid.stats import wilson_interval
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
        "run": ["RetrieveResult", "ScoreSet", "run_retrieve"],
        "retrieve_config": ["RetrieveConfig"],
        "score": [
            "Difference",
            "PositionScore",
            "RetrievalSummary",
            "score_positions",
            "summarise_positions",
        ],
        "decoding": ["TeacherScores", "greedy_decode", "teacher_forced"],
        "answers": ["answer_correct"],
        "shared": ["shared_scores"],
        "example": ["RetrievalExample"],
        "gold": ["gold_distribution"],
        "kv": ["kv_example"],
        "mqar": ["mqar_example"],
        "niah": ["niah_example"],
        "tasks": ["make_examples"],
        "data": ["data_examples", "read_records", "write_records"],
        "tokenizers": ["ByteTokenizer", "load_tokenizer", "tokenizer_for_model"],
        "training": [
            "RETRIEVAL_PRESETS",
            "RetrievalCheckpoint",
            "RetrievalTask",
            "RetrievalTrainConfig",
            "run_retrieval_training",
        ],
    },
)
