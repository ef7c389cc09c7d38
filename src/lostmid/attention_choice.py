"""Which attention implementation a measurement runs: defined once, light (no torch).

Eager attention up to :data:`EAGER_MAX_LENGTH` (the probe VJPs batch well: fastest),
SDPA beyond it or with gradient checkpointing (no L x L matrix kept per layer, so long
contexts fit in memory); see docs/BENCHMARKS.md. :mod:`lostmid.models` (building) and
:mod:`lostmid.influence.config` (``--attention auto``, read by ``lostmid --help``, which
must not import torch) both use it, so it lives outside either package.

>>> attention_for(512), attention_for(2048), attention_for(512, checkpointing=True)
('eager', 'sdpa', 'sdpa')
"""

from __future__ import annotations

EAGER_MAX_LENGTH = 1024
"""Longest input measured with eager attention by default; SDPA beyond (memory O(L))."""


def attention_for(length: int, checkpointing: bool = False) -> str:
    """``eager`` up to :data:`EAGER_MAX_LENGTH` without checkpointing, else ``sdpa``.

    >>> attention_for(1024), attention_for(1025)
    ('eager', 'sdpa')
    """
    return "eager" if length <= EAGER_MAX_LENGTH and not checkpointing else "sdpa"
