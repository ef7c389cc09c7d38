"""Small models trained on retrieval (``lostmid train --task kv|mqar``), watched by gold
position and by influence at every checkpoint.

* :mod:`~lostmid.behaviour.training.task`: :class:`RetrievalTask`, what one row is;
* :mod:`~lostmid.behaviour.training.config`: :class:`RetrievalTrainConfig`, the presets;
* :mod:`~lostmid.behaviour.training.data`: the batches and the masked loss;
* :mod:`~lostmid.behaviour.training.evaluate`: one checkpoint's evaluation;
* :mod:`~lostmid.behaviour.training.run`: :func:`run_retrieval_training`.
"""

from lostmid.lazy import attach

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
            "mqar_training_row",
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
