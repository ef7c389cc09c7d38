"""The names of :mod:`lostmid.train`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .claims import training_claims as training_claims
from .config import (
    TRAIN_PRESETS as TRAIN_PRESETS,
)
from .config import (
    DynamicsProbeConfig as DynamicsProbeConfig,
)
from .config import (
    ModelSpec as ModelSpec,
)
from .config import (
    TrainConfig as TrainConfig,
)
from .config import (
    checkpoint_steps as checkpoint_steps,
)
from .config import (
    from_dict as from_dict,
)
from .config import (
    load_config_file as load_config_file,
)
from .config import (
    preset as preset,
)
from .corpus import (
    BatchSampler as BatchSampler,
)
from .corpus import (
    Corpus as Corpus,
)
from .corpus import (
    RandomWindows as RandomWindows,
)
from .corpus import (
    encode as encode,
)
from .corpus import (
    heldout_windows as heldout_windows,
)
from .corpus import (
    load_corpus as load_corpus,
)
from .dynamics import (
    Checkpoint as Checkpoint,
)
from .dynamics import (
    CheckpointMeasurement as CheckpointMeasurement,
)
from .loop import (
    Interventions as Interventions,
)
from .loop import (
    PositionWeight as PositionWeight,
)
from .loop import (
    Trainer as Trainer,
)
from .loop import (
    learning_rate as learning_rate,
)
from .loop import (
    next_token_loss as next_token_loss,
)
from .model import (
    ModelVariant as ModelVariant,
)
from .model import (
    build_model as build_model,
)
from .run import (
    TrainResult as TrainResult,
)
from .run import (
    run_training as run_training,
)
from .signal import (
    learning_signal as learning_signal,
)
from .signal import (
    rho_cell_masses as rho_cell_masses,
)
