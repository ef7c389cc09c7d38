"""Pretrained checkpoints against their random-init twins: does pretraining deepen the
valley, does the U persist, where is the valley?

A study measures each checkpoint of its design and S random-init twins (same
architecture and initialiser range, one per seed) on the same inputs of each kind, one
influence profile an input, saved as it is computed, and judges each cell with
:func:`lostmid.compare.pretraining.compare_pretraining`:

* :mod:`~lostmid.pretrained.inputs`: the input kinds (random token ids, English prose,
  Liu's key-value records prompts, the prose in the model's own chat template);
* :mod:`~lostmid.pretrained.cells`: the saved profiles of a cell (``.npz``), resumable;
* :mod:`~lostmid.pretrained.study`: the design (``study.json``), the controls, the run
  and the comparisons read back from the saved profiles;
* :mod:`~lostmid.pretrained.plot`: the study's figure.

It reads behaviour's inputs (tokenizers, the key-value records), so it sits above
:mod:`lostmid.behaviour`; ``lostmid reproduce`` runs it as its real-checkpoint section
(:mod:`lostmid.reproduce.checkpoints`), ``benchmarks/bench_checkpoints.py`` directly.

>>> from lostmid.pretrained import StudyConfig
>>> StudyConfig(checkpoints=("./my-model",), lengths=(128,)).kinds
('random', 'text', 'records', 'chat')
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
