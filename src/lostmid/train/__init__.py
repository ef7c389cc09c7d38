"""Training dynamics: train small causal LMs on a CPU and watch the valley form.

>>> from lostmid.train import checkpoint_steps
>>> checkpoint_steps(300)
[0, 10, 30, 100, 300]

Main entry points: :func:`run_training` (the ``lostmid train`` job),
:func:`training_claims` (verdicts for the reproduce report), the loop
(:class:`Trainer`) and its plug-in points (:class:`Interventions`).
"""

from lostmid.train.claims import training_claims
from lostmid.train.config import (
    PRESETS,
    MeasureConfig,
    ModelSpec,
    TrainConfig,
    from_dict,
    load_config_file,
    preset,
)
from lostmid.train.corpus import (
    BatchSampler,
    Corpus,
    RandomWindows,
    decode,
    encode,
    heldout_windows,
    load_corpus,
)
from lostmid.train.dynamics import Checkpoint, CheckpointMeasurement
from lostmid.train.learning_signal import learning_signal, rho_cell_masses
from lostmid.train.loop import (
    Interventions,
    PositionWeight,
    Trainer,
    checkpoint_steps,
    learning_rate,
    next_token_loss,
)
from lostmid.train.model import ModelVariant, build_model
from lostmid.train.run import run_training

__all__ = [
    "PRESETS",
    "BatchSampler",
    "Checkpoint",
    "CheckpointMeasurement",
    "Corpus",
    "Interventions",
    "MeasureConfig",
    "ModelSpec",
    "ModelVariant",
    "PositionWeight",
    "RandomWindows",
    "TrainConfig",
    "Trainer",
    "build_model",
    "checkpoint_steps",
    "decode",
    "encode",
    "from_dict",
    "heldout_windows",
    "learning_rate",
    "learning_signal",
    "load_config_file",
    "load_corpus",
    "next_token_loss",
    "preset",
    "rho_cell_masses",
    "run_training",
    "training_claims",
]
