"""The names of :mod:`lostmid.behaviour`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .decoding.answers import answer_correct as answer_correct
from .decoding.generate import (
    TeacherScores as TeacherScores,
)
from .decoding.generate import (
    greedy_decode as greedy_decode,
)
from .decoding.generate import (
    teacher_forced as teacher_forced,
)
from .decoding.shared import shared_scores as shared_scores
from .decoding.tokenizers import (
    ByteTokenizer as ByteTokenizer,
)
from .decoding.tokenizers import (
    load_tokenizer as load_tokenizer,
)
from .decoding.tokenizers import (
    tokenizer_for_model as tokenizer_for_model,
)
from .formats.files import (
    read_records as read_records,
)
from .formats.files import (
    write_records as write_records,
)
from .formats.records import data_examples as data_examples
from .formats.samples import (
    ScoreConfig as ScoreConfig,
)
from .formats.samples import (
    run_score as run_score,
)
from .retrieve.calibrate import (
    Calibration as Calibration,
)
from .retrieve.calibrate import (
    calibrate_knob as calibrate_knob,
)
from .retrieve.config import RetrieveConfig as RetrieveConfig
from .retrieve.result import (
    RetrieveResult as RetrieveResult,
)
from .retrieve.result import (
    ScoreSet as ScoreSet,
)
from .retrieve.run import run_retrieve as run_retrieve
from .score import (
    Difference as Difference,
)
from .score import (
    PositionScore as PositionScore,
)
from .score import (
    RetrievalSummary as RetrievalSummary,
)
from .score import (
    score_positions as score_positions,
)
from .score import (
    summarise_positions as summarise_positions,
)
from .tasks import make_examples as make_examples
from .tasks.example import RetrievalExample as RetrievalExample
from .tasks.gold import gold_distribution as gold_distribution
from .tasks.kv import kv_example as kv_example
from .tasks.mqar import mqar_example as mqar_example
from .tasks.needles import needles_example as needles_example
from .tasks.niah import niah_example as niah_example
from .training import (
    RETRIEVAL_PRESETS as RETRIEVAL_PRESETS,
)
from .training import (
    RetrievalCheckpoint as RetrievalCheckpoint,
)
from .training import (
    RetrievalTask as RetrievalTask,
)
from .training import (
    RetrievalTrainConfig as RetrievalTrainConfig,
)
from .training import (
    retrieval_preset as retrieval_preset,
)
from .training import (
    run_retrieval_training as run_retrieval_training,
)
