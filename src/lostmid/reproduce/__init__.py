"""The main job, ``lostmid reproduce``: the paper's core experiments end to end.

1. Untrained Qwen2-0.5B-shaped and GPT-2-shaped models, several seeds: the influence
   profile at step 0, the Jacobian branch gains of every layer (per source position,
   and the MLP's gain and coherence; the peer's forward ratio beside them), scored by
   :mod:`lostmid.compare` the fair way: zero-parameter predictions (the
   position-resolved theory from the measured gains, the uniform theory from
   a_l = s_l/(1+s_l)) on each seed, every fitted candidate (theory fits and naive
   baselines alike) out of sample, against the noise floor between seeds.
2. The same weights with positional encodings off (rotary for Qwen2, position
   embeddings for GPT-2): the profile with against without.
3. Depth 1, where the theory is exact (the layer-1 profile of every seed), and growth
   with depth: the per-layer profile l against the theory at H = l.
4. Training dynamics on the ``tiny`` preset (does the valley deepen?).
5. A claims table whose verdicts (reproduced, partly, not reproduced, below
   resolution) follow from the numbers by stated rules.

Each experiment is a resumable stage (:mod:`lostmid.runs.store`): a run restarted with the
same ``--out`` reuses the stages it finished. Results: ``report.html``, ``claims.json``,
``reproduce.json`` (every number), ``stages/*.json``, ``figures/*.png`` and, per model,
``MODEL/seed-S/measure.json`` (each seed) and ``MODEL/measure.json`` (the seeds pooled),
readable by ``lostmid compare``.

Modules: :mod:`~lostmid.reproduce.config` (what a run is), :mod:`~.core` (the core as
a section: its stages, result, claims and figures), :mod:`~.stages` (what each
stage computes), :mod:`~.analysis` (what the numbers say per model),
:mod:`~.claims` (verdicts), :mod:`~.figures`, :mod:`~.report` (the HTML layout) and
:mod:`~.run` (:func:`run_reproduce`); the sections beside the core are listed in
:mod:`~.sections`.

>>> from lostmid.reproduce import ReproduceConfig
>>> ReproduceConfig.at_scale("quick").scale.length
128
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
