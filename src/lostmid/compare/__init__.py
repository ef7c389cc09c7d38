"""Theory against measurement: metrics, naive baselines, predicted and fitted theory,
fair scoring over seeds, and claim verdicts.

The public surface, by task:

* run a comparison: :class:`CompareConfig`, :func:`run_compare` -> :class:`CompareResult`
  (``lostmid compare``);
* read a measurement: :func:`lostmid.influence.read_measure` ->
  :class:`~lostmid.influence.MeasureRecord` (the one reader of measure.json);
* score two profiles: :func:`compare_profiles` -> :class:`ProfileComparison` (the one
  agreement record), :func:`wasserstein1`, :func:`log_bin`;
* score candidates: :func:`compare_measurements` (seeds of one model: in and out of
  sample, noise floor, verdicts) or :func:`compare_measurement` (one measurement) ->
  :class:`Candidate` by name; :func:`predict_theory`;
* fair scoring from arrays: :func:`noise_floor`, :func:`score_out_of_sample`;
* claims: :class:`Claim`, judged by :func:`verdict_at_least`, :func:`verdict_at_most`,
  :func:`verdict_no_worse`, :func:`verdict_order_of_magnitude`,
  :func:`verdict_within_floor` on 95% intervals, with our number written by
  :func:`format_interval`.

Everything else lives in the submodules: :mod:`~lostmid.compare.metrics`,
:mod:`~lostmid.compare.fitting` (the objective and spike policy every fit shares),
:mod:`~lostmid.compare.baselines`, :mod:`~lostmid.compare.fit`,
:mod:`~lostmid.compare.scoring`, :mod:`~lostmid.compare.candidates`,
:mod:`~lostmid.compare.claims` (the verdict strings), :mod:`~lostmid.compare.inputs`,
:mod:`~lostmid.compare.config` (the command's config and help),
:mod:`~lostmid.compare.run`.

>>> from lostmid.compare import compare_profiles
>>> compare_profiles([3.0, 1.0, 2.0], [6.0, 2.0, 4.0]).wasserstein1
0.0
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
