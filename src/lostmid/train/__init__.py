"""Training dynamics: train small causal LMs on a CPU and watch the valley form.

>>> from lostmid.train import checkpoint_steps
>>> checkpoint_steps(300)
[0, 10, 30, 100, 300]

Main entry points: :func:`run_training` (the ``lostmid train`` job, returning a
:class:`TrainResult` of typed :class:`Checkpoint` records), :func:`training_claims`
(verdicts for the reproduce report), the loop (:class:`Trainer`) and its plug-in points
(:class:`Interventions`).
"""

from typing import TYPE_CHECKING

from lostmid.lazy import attach

# Type checkers cannot see through attach: they read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.train.claims import training_claims as training_claims
    from lostmid.train.config import (
        TRAIN_PRESETS as TRAIN_PRESETS,
        checkpoint_steps as checkpoint_steps,
        DynamicsProbeConfig as DynamicsProbeConfig,
        ModelSpec as ModelSpec,
        TrainConfig as TrainConfig,
        from_dict as from_dict,
        load_config_file as load_config_file,
        preset as preset,
    )
    from lostmid.train.corpus import (
        BatchSampler as BatchSampler,
        Corpus as Corpus,
        RandomWindows as RandomWindows,
        encode as encode,
        heldout_windows as heldout_windows,
        load_corpus as load_corpus,
    )
    from lostmid.train.dynamics import (
        Checkpoint as Checkpoint,
        CheckpointMeasurement as CheckpointMeasurement,
    )
    from lostmid.train.signal import (
        learning_signal as learning_signal,
        rho_cell_masses as rho_cell_masses,
    )
    from lostmid.train.loop import (
        Interventions as Interventions,
        PositionWeight as PositionWeight,
        Trainer as Trainer,
        learning_rate as learning_rate,
        next_token_loss as next_token_loss,
    )
    from lostmid.train.model import ModelVariant as ModelVariant, build_model as build_model
    from lostmid.train.run import TrainResult as TrainResult, run_training as run_training
    # isort: on

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
