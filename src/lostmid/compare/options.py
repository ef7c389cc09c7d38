"""The options of ``lostmid compare``: help text and defaults, one wording for the
config (:class:`lostmid.compare.run.CompareConfig`) and the command line.

Nothing heavy is imported here, so the CLI can read it at start-up. The command line
maps one option to each :class:`~lostmid.compare.run.CompareConfig` field:
``--measured PATH`` (repeatable: one measure.json per seed), ``--theory PATH``,
``--predict``, ``--kernel rollout|jacobian|both``, ``--fit-metric w1|log-lsq``,
``--spike free|pinned``, ``--bins N``, ``--seed``, plus ``--out`` and ``--overwrite``
for :func:`~lostmid.compare.run.run_compare`.

>>> OPTION_DEFAULTS["fit_metric"], OPTION_DEFAULTS["spike"]
('w1', 'free')
"""

from __future__ import annotations

FIT_METRICS = ("w1", "log-lsq")
"""What a fitted candidate minimises (see :mod:`lostmid.compare.fitting`)."""
SPIKE_POLICIES = ("free", "pinned")
"""How every candidate treats the target's share (see :mod:`lostmid.compare.fitting`)."""
LOG_BINS = 32
"""Log-position bins before the target (see :func:`lostmid.compare.metrics.log_bin`)."""

OPTION_DEFAULTS = {"kernel": "both", "fit_metric": "w1", "spike": "free", "bins": LOG_BINS}
# --pool defaults to False (refuse measurements of different models or settings)

OPTION_HELP = {
    "measured": "measure.json written by lostmid measure; repeat the option for several "
    "seeds of one model (noise floor and out-of-sample scores need at least 2).",
    "theory": "theory.json written by lostmid theory.",
    "predict": "Also predict the theory from the measured a_l and, where measured, the "
    "per-position gains (nothing fitted).",
    "kernel": "rollout | jacobian | both: the kernels of the predicted and fitted theory.",
    "fit_metric": "w1 | log-lsq: what the fitted candidates minimise (w1: the metric they "
    "are judged by).",
    "spike": "free | pinned: the target's share is fitted for every fitted candidate "
    "(free), or set to the measured share for every candidate (pinned).",
    "bins": "Log-position bins for the binned Spearman and W1.",
    "pool": "Pool measurements of different models or settings (default: refuse them; "
    "lengths and targets must agree either way).",
}
