"""The names of :mod:`lostmid.compare`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .candidates import (
    Candidate as Candidate,
)
from .candidates import (
    compare_measurement as compare_measurement,
)
from .candidates import (
    compare_measurements as compare_measurements,
)
from .claims import (
    Claim as Claim,
)
from .claims import (
    format_interval as format_interval,
)
from .claims import (
    verdict_at_least as verdict_at_least,
)
from .claims import (
    verdict_at_most as verdict_at_most,
)
from .claims import (
    verdict_no_worse as verdict_no_worse,
)
from .claims import (
    verdict_order_of_magnitude as verdict_order_of_magnitude,
)
from .claims import (
    verdict_within_floor as verdict_within_floor,
)
from .config import CompareConfig as CompareConfig
from .fit import predict_theory as predict_theory
from .metrics import (
    ProfileComparison as ProfileComparison,
)
from .metrics import (
    compare_profiles as compare_profiles,
)
from .metrics import (
    log_bin as log_bin,
)
from .metrics import (
    wasserstein1 as wasserstein1,
)
from .run import (
    CompareResult as CompareResult,
)
from .run import (
    run_compare as run_compare,
)
from .scoring import (
    noise_floor as noise_floor,
)
from .scoring import (
    score_out_of_sample as score_out_of_sample,
)
