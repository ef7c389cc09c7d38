"""Hugging Face causal LMs for measurement: presets, building, loading, adapters, ablations.

>>> from lostmid.models import load_model
>>> loaded = load_model("tiny-gpt2", no_pos_emb=True)
>>> loaded.adapter.name, loaded.num_layers
('gpt2', 2)
>>> gemma = load_model("tiny-gemma2")  # local (W = 16) and global layers alternate
>>> gemma.adapter.layer_masks(gemma.model.config, 64)
['sliding:16', 'causal']
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
