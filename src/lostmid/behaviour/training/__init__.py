"""Small models trained on retrieval (``lostmid train --task kv|mqar``), watched by gold
position and by influence at every checkpoint.

* :mod:`~lostmid.behaviour.training.task`: :class:`RetrievalTask`, what one row is;
* :mod:`~lostmid.behaviour.training.config`: :class:`RetrievalTrainConfig`, the presets;
* :mod:`~lostmid.behaviour.training.data`: the batches and the masked loss;
* :mod:`~lostmid.behaviour.training.evaluate`: one checkpoint's evaluation;
* :mod:`~lostmid.behaviour.training.run`: :func:`run_retrieval_training`.
"""

from typing import TYPE_CHECKING

from lostmid.lazy import attach

# Type checkers cannot see through attach: they read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.behaviour.training.task import (
        TRAIN_TASKS as TRAIN_TASKS,
        RetrievalTask as RetrievalTask,
        example_ids as example_ids,
        sequence_length as sequence_length,
    )
    from lostmid.behaviour.training.config import (
        GENERATION_MARGIN as GENERATION_MARGIN,
        RETRIEVAL_PRESETS as RETRIEVAL_PRESETS,
        RetrievalTrainConfig as RetrievalTrainConfig,
        resolve_retrieval_config as resolve_retrieval_config,
        retrieval_preset as retrieval_preset,
    )
    from lostmid.behaviour.training.data import (
        MaskedTrainer as MaskedTrainer,
        RetrievalBatches as RetrievalBatches,
        masked_next_token_loss as masked_next_token_loss,
    )
    from lostmid.behaviour.training.evaluate import (
        HeldOut as HeldOut,
        RetrievalCheckpoint as RetrievalCheckpoint,
        evaluate_checkpoint as evaluate_checkpoint,
        span_means as span_means,
    )
    from lostmid.behaviour.training.run import (
        RetrievalHooks as RetrievalHooks,
        RetrievalTrainResult as RetrievalTrainResult,
        run_retrieval_training as run_retrieval_training,
        training_table as training_table,
    )
    # isort: on

# Names are imported from their modules on first use (lostmid.lazy): the task and config
# modules are light, the rest loads torch.
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "task": ["TRAIN_TASKS", "RetrievalTask", "example_ids", "sequence_length"],
        "config": [
            "GENERATION_MARGIN",
            "RETRIEVAL_PRESETS",
            "RetrievalTrainConfig",
            "resolve_retrieval_config",
            "retrieval_preset",
        ],
        "data": [
            "MaskedTrainer",
            "RetrievalBatches",
            "masked_next_token_loss",
        ],
        "evaluate": ["HeldOut", "RetrievalCheckpoint", "evaluate_checkpoint", "span_means"],
        "run": [
            "RetrievalHooks",
            "RetrievalTrainResult",
            "run_retrieval_training",
            "training_table",
        ],
    },
)
