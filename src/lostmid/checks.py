"""Shared input checks: one function and one message per kind of mistake.

Every config validates in its constructor with these, so a user sees the same words
for the same mistake whichever command they ran. Each raises :class:`UserError`.

>>> check_choice("--kernel", "rollout", ("rollout", "jacobian"))
'rollout'
>>> check_position("--target", None, 8)
8
>>> check_position("--target", 9, 8)
Traceback (most recent call last):
...
lostmid.errors.UserError: --target must be a position in 1..8 (1-indexed), got 9
"""

from __future__ import annotations

from collections.abc import Iterable

from lostmid.errors import UserError


def check_choice(name: str, value: str, options: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``options``, else one line naming them."""
    options = tuple(options)
    if value not in options:
        raise UserError(f"{name} {value!r} unknown; choose one of {', '.join(options)}")
    return value


def check_position(name: str, position: int | None, length: int) -> int:
    """A 1-indexed position in 1..length; ``None`` means the last one (``length``)."""
    if position is None:
        return length
    if not 1 <= position <= length:
        raise UserError(f"{name} must be a position in 1..{length} (1-indexed), got {position}")
    return int(position)


def check_positive(name: str, value: float, *, integer: bool = True) -> float:
    """A value > 0 (an integer unless ``integer=False``)."""
    if integer and int(value) != value:
        raise UserError(f"{name} must be a whole number, got {value}")
    if not value > 0:
        raise UserError(f"{name} must be positive, got {value}")
    return value


def check_unit_interval(name: str, value: float) -> float:
    """A value in [0, 1]."""
    if not 0.0 <= value <= 1.0:
        raise UserError(f"{name} must be in [0, 1], got {value}")
    return float(value)


MAX_SEED_COUNT = 100_000
"""More seeds than a run of one command can finish in a day (each seed trains or
measures a model): refused before any is listed."""

MAX_SEED = 2**32 - 1
"""The largest seed: every generator lostmid seeds (numpy, torch, Python's) takes it, and
seeds derived from it (``seed + i``) stay far from torch's 64-bit limit."""


def check_seed(seed: int, name: str = "--seed", count: int = 1) -> int:
    """A seed: a whole number in 0..:data:`MAX_SEED`; with ``count``, the last of the
    seeds ``seed .. seed + count - 1`` must be too.

    >>> check_seed(3)
    3
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --seed must be a whole number in 0..4294967295, got -1
    >>> check_seed(2**64)
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --seed must be a whole number in 0..4294967295,
    got 18446744073709551616
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"{name} must be a whole number in 0..{MAX_SEED}, got {seed!r}")
    if count > MAX_SEED_COUNT:
        raise UserError(
            f"--seeds {count:,} is more seeds than a run can finish (at most "
            f"{MAX_SEED_COUNT:,}, each seed a model trained or measured); give fewer"
        )
    if count > 1 and seed + count - 1 > MAX_SEED:
        raise UserError(
            f"{name} {seed} with {count} seeds reaches {seed + count - 1}, past the largest "
            f"seed {MAX_SEED}; start lower"
        )
    return seed
