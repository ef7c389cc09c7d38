"""Small models trained on retrieval (``lostmid train --task kv|mqar``), watched by gold
position and by influence at every checkpoint.

* :mod:`~lostmid.behaviour.training.task`: :class:`RetrievalTask`, what one row is;
* :mod:`~lostmid.behaviour.training.config`: :class:`RetrievalTrainConfig`, the presets;
* :mod:`~lostmid.behaviour.training.data`: the batches and the masked loss;
* :mod:`~lostmid.behaviour.training.evaluate`: one checkpoint's evaluation;
* :mod:`~lostmid.behaviour.training.run`: :func:`run_retrieval_training`.
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
