"""Residual strength per layer: the a_l in N_l = (1 - a_l) I + a_l A.

a_l in [0, 1] is the weight of the attention branch against the residual stream.
A schedule is resolved to one float per layer before any computation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lostmid.errors import UserError
from lostmid.typing import Float

SCHEDULE_HELP = "constant | power:BETA (a_l = a_0/(l+1)^BETA, l = 0..H-1) | list:a1,a2,..."


def resolve_alphas(
    alpha: float | Sequence[float] | Float[np.ndarray, " H"], layers: int
) -> Float[np.ndarray, " H"]:
    """One residual strength per layer, validated.

    Args:
        alpha: a scalar (the same for every layer) or a sequence of ``layers`` values.
        layers: depth H >= 0.

    >>> resolve_alphas(0.5, 3)
    array([0.5, 0.5, 0.5])
    """
    if isinstance(layers, bool) or int(layers) != layers or layers < 0:
        raise UserError(f"number of layers must be an integer >= 0, got {layers}")
    values = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    if values.ndim != 1:
        raise UserError("alpha must be a scalar or a flat list with one value per layer")
    if values.size == 1:
        values = np.full(layers, values[0])
    elif values.size != layers:
        raise UserError(
            f"alpha schedule has {values.size} values but there are {layers} layers; "
            "give one value per layer or a single scalar"
        )
    if not np.all(np.isfinite(values)) or np.any((values < 0) | (values > 1)):
        bad = values[~((values >= 0) & (values <= 1))][0]
        raise UserError(f"residual strength alpha must lie in [0, 1], got {bad}")
    return values


def power_schedule(alpha0: float, beta: float, layers: int) -> Float[np.ndarray, " H"]:
    """a_l = a_0 / (l + 1)^beta for l = 0..H-1 (beta = 0 is the constant schedule).

    >>> power_schedule(0.5, 1e12, 3).tolist()  # (l + 1)^beta overflows to inf: a_l = 0
    [0.5, 0.0, 0.0]
    """
    if not np.isfinite(beta) or beta < 0:
        raise UserError(f"power schedule exponent must be >= 0, got {beta}")
    with np.errstate(over="ignore"):  # (l + 1)^beta past float64's range is inf: a_l = 0
        values = alpha0 / np.arange(1, layers + 1, dtype=np.float64) ** beta
    return resolve_alphas(values, layers)


def parse_schedule(spec: str | None, alpha: float, layers: int) -> Float[np.ndarray, " H"]:
    """Resolve a CLI schedule spec (see ``SCHEDULE_HELP``) and base ``alpha`` to H values."""
    if spec is None or spec.strip().lower() == "constant":
        return resolve_alphas(alpha, layers)
    name, _, arg = spec.strip().partition(":")
    name = name.lower()
    try:
        if name == "power":
            return power_schedule(alpha, float(arg), layers)
        if name == "list":
            values = [float(v) for v in arg.split(",") if v.strip()]
            if len(values) != layers:  # one value is no list: --alpha says that
                many = "value" if len(values) == 1 else "values"
                raise UserError(
                    f"alpha schedule has {len(values)} {many} but there are {layers} layers; "
                    "give one value per layer (or --alpha for one value for all)"
                )
            return resolve_alphas(values, layers)
    except ValueError as err:
        if isinstance(err, UserError):
            raise
        raise UserError(f"alpha schedule '{spec}' has a value that is not a number") from None
    raise UserError(f"unknown alpha schedule '{spec}'; use {SCHEDULE_HELP}")
