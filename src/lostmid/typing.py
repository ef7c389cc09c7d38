"""Shape annotations for the public maths: one convention, used everywhere.

Arrays are annotated jaxtyping-style with their dtype kind and named axes, for example
``Float[np.ndarray, "H L"]`` (H layers by L positions) or ``Float[Tensor, "B L d"]``.
The annotations document; nothing checks them at run time. Axis names used across the
package:

* ``L``: sequence length (positions 1..L in maths, 0..L-1 in arrays);
* ``H``: depth (layers 1..H);
* ``K``: path length (attention hops 0..H);
* ``B``: batch (samples); ``d``: model width; ``S``: seeds.

>>> import numpy as np
>>> from lostmid.typing import Float
>>> def last(row: Float[np.ndarray, "L"]) -> float:
...     return float(row[-1])
>>> last(np.arange(3.0))
2.0
"""

from __future__ import annotations

from jaxtyping import Bool, Float, Int

__all__ = ["Bool", "Float", "Int"]
