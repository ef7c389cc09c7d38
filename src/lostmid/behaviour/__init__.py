"""Behaviour: retrieval accuracy by position (the behavioural U) and its link to influence.

Tasks (:mod:`~lostmid.behaviour.tasks`; one module each: ``kv``, ``niah``, ``mqar``, with
the example record in ``example`` and the training gold laws in ``gold``): Liu et al.'s
key-value retrieval, RULER's needle in a haystack and its variants (``needles``, served
by the registry of tasks placed by depth, ``registry``), MQAR; the ``--calibrate`` pilot
(:func:`calibrate_knob`); scoring
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

from typing import TYPE_CHECKING

from lostmid.lazy import attach

# Type checkers cannot see through attach: they read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.behaviour.run import (
        RetrieveResult as RetrieveResult,
        ScoreSet as ScoreSet,
        run_retrieve as run_retrieve,
    )
    from lostmid.behaviour.retrieve_config import RetrieveConfig as RetrieveConfig
    from lostmid.behaviour.score import (
        Difference as Difference,
        PositionScore as PositionScore,
        RetrievalSummary as RetrievalSummary,
        score_positions as score_positions,
        summarise_positions as summarise_positions,
    )
    from lostmid.behaviour.decoding import (
        TeacherScores as TeacherScores,
        greedy_decode as greedy_decode,
        teacher_forced as teacher_forced,
    )
    from lostmid.behaviour.answers import answer_correct as answer_correct
    from lostmid.behaviour.shared import shared_scores as shared_scores
    from lostmid.behaviour.example import RetrievalExample as RetrievalExample
    from lostmid.behaviour.gold import gold_distribution as gold_distribution
    from lostmid.behaviour.kv import kv_example as kv_example
    from lostmid.behaviour.mqar import mqar_example as mqar_example
    from lostmid.behaviour.niah import niah_example as niah_example
    from lostmid.behaviour.needles import needles_example as needles_example
    from lostmid.behaviour.calibrate import (
        Calibration as Calibration,
        calibrate_knob as calibrate_knob,
    )
    from lostmid.behaviour.tasks import make_examples as make_examples
    from lostmid.behaviour.data import (
        data_examples as data_examples,
        read_records as read_records,
        write_records as write_records,
    )
    from lostmid.behaviour.tokenizers import (
        ByteTokenizer as ByteTokenizer,
        load_tokenizer as load_tokenizer,
        tokenizer_for_model as tokenizer_for_model,
    )
    from lostmid.behaviour.training import (
        RETRIEVAL_PRESETS as RETRIEVAL_PRESETS,
        RetrievalCheckpoint as RetrievalCheckpoint,
        RetrievalTask as RetrievalTask,
        RetrievalTrainConfig as RetrievalTrainConfig,
        retrieval_preset as retrieval_preset,
        run_retrieval_training as run_retrieval_training,
    )
    # isort: on

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
        "needles": ["needles_example"],
        "calibrate": ["Calibration", "calibrate_knob"],
        "tasks": ["make_examples"],
        "data": ["data_examples", "read_records", "write_records"],
        "tokenizers": ["ByteTokenizer", "load_tokenizer", "tokenizer_for_model"],
        "training": [
            "RETRIEVAL_PRESETS",
            "RetrievalCheckpoint",
            "RetrievalTask",
            "RetrievalTrainConfig",
            "retrieval_preset",
            "run_retrieval_training",
        ],
    },
)
