"""The names of :mod:`lostmid.behaviour.training`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .config import (
    GENERATION_MARGIN as GENERATION_MARGIN,
)
from .config import (
    RETRIEVAL_PRESETS as RETRIEVAL_PRESETS,
)
from .config import (
    RetrievalTrainConfig as RetrievalTrainConfig,
)
from .config import (
    resolve_retrieval_config as resolve_retrieval_config,
)
from .config import (
    retrieval_preset as retrieval_preset,
)
from .data import (
    MaskedTrainer as MaskedTrainer,
)
from .data import (
    RetrievalBatches as RetrievalBatches,
)
from .data import (
    masked_next_token_loss as masked_next_token_loss,
)
from .evaluate import (
    HeldOut as HeldOut,
)
from .evaluate import (
    RetrievalCheckpoint as RetrievalCheckpoint,
)
from .evaluate import (
    evaluate_checkpoint as evaluate_checkpoint,
)
from .evaluate import (
    span_means as span_means,
)
from .run import (
    RetrievalHooks as RetrievalHooks,
)
from .run import (
    RetrievalTrainResult as RetrievalTrainResult,
)
from .run import (
    run_retrieval_training as run_retrieval_training,
)
from .run import (
    training_table as training_table,
)
from .task import (
    TRAIN_TASKS as TRAIN_TASKS,
)
from .task import (
    RetrievalTask as RetrievalTask,
)
from .task import (
    example_ids as example_ids,
)
from .task import (
    sequence_length as sequence_length,
)
