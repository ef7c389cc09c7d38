"""Behaviour: retrieval accuracy by position (the behavioural U) and its link to influence.

One folder a concept:

* :mod:`~lostmid.behaviour.tasks`: the retrieval tasks, one module each (Liu et al.'s
  key-value retrieval ``kv``, RULER's needle ``niah`` and its variants ``needles``,
  ``mqar``), the example record, the gold laws, the plug-in shapes and their registry;
* :mod:`~lostmid.behaviour.decoding`: how a model reads a prompt and answers: prompt
  formats and tokenizers, greedy decoding and teacher forcing, one prefill shared by
  several questions, the answer rules;
* :mod:`~lostmid.behaviour.retrieve`: the ``lostmid retrieve`` job (its config, grids,
  the ``--calibrate`` and ``--lead-in learn`` pilots, results, figures);
* :mod:`~lostmid.behaviour.formats`: the field's files in and out (Liu, RULER, LongBench,
  lm-eval; ``lostmid score`` on another tool's samples);
* :mod:`~lostmid.behaviour.training`: small models trained on retrieval, when each record
  is learnt and the learning signal it receives;
* :mod:`~lostmid.behaviour.dose`: the depth dose-response analysis;
* :mod:`~lostmid.behaviour.link`: structure and behaviour on the same prompts (the
  needle's share of the influence beside the greedy answer's correctness);
* :mod:`~lostmid.behaviour.score`: accuracy by position with intervals
  (:mod:`lostmid.stats`).

>>> from lostmid.behaviour import kv_example
>>> from lostmid.stats import wilson_interval
>>> ex = kv_example(seed=0, index=0, pairs=4, gold_index=3, key_chars=2, style="compact")
>>> ex.records[3] == (ex.key, ex.value), [round(x, 3) for x in wilson_interval(9, 10)]
(True, [0.596, 0.982])
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
