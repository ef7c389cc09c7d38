"""Training dynamics: train small causal LMs on a CPU and watch the valley form.

>>> from lostmid.train import checkpoint_steps
>>> checkpoint_steps(300)
[0, 10, 30, 100, 300]

Main entry points: :func:`run_training` (the ``lostmid train`` job, returning a
:class:`TrainResult` of typed :class:`Checkpoint` records), :func:`training_claims`
(verdicts for the reproduce report), the loop (:class:`Trainer`) and its plug-in points
(:class:`Interventions`).
"""

from lostmid.lazy import attach

# Names are imported from their modules on first use (lostmid.lazy): lostmid --help reads
# lostmid.train.config without loading torch.
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "claims": ["training_claims"],
        "config": [
            "TRAIN_PRESETS",
            "checkpoint_steps",
            "DynamicsProbeConfig",
            "ModelSpec",
            "TrainConfig",
            "from_dict",
            "load_config_file",
            "preset",
        ],
        "corpus": [
            "BatchSampler",
            "Corpus",
            "RandomWindows",
            "encode",
            "heldout_windows",
            "load_corpus",
        ],
        "dynamics": ["Checkpoint", "CheckpointMeasurement"],
        "signal": ["learning_signal", "rho_cell_masses"],
        "loop": [
            "Interventions",
            "PositionWeight",
            "Trainer",
            "learning_rate",
            "next_token_loss",
        ],
        "model": ["ModelVariant", "build_model"],
        "run": ["TrainResult", "run_training"],
    },
)
