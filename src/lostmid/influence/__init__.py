"""Measure influence profiles of real transformers (step 0 or trained).

>>> from lostmid.models import load_model
>>> from lostmid.influence import influence_profile, random_token_ids
>>> m = load_model("tiny-qwen2", seed=0)
>>> profile = influence_profile(m, random_token_ids(m.vocab_size, 2, 16, seed=0), probes=2)
>>> profile.influence.shape
(16,)
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
