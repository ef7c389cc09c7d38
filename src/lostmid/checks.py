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

import re
from collections.abc import Iterable, Sequence

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


SEEDS_HELP = "write e.g. 3 (a count), 0-4 or 0,2,5-7"  # ranges inclusive, seeds >= 0
MAX_SEEDS = 1_000_000
"""More seeds than any sweep plans (see ``--max-units``): refused before they are listed."""


def parse_seeds(
    text: str | int | Sequence[int], flag: str = "--seeds", first: int = 0
) -> tuple[int, ...]:
    """A set of seeds, the one meaning of ``--seeds`` in every command: a bare number N
    is a count (N seeds from ``first``, the ``--seed``), ``"0-4"`` (inclusive),
    ``"0,2,5-7"`` or a list name the seeds themselves; repeats dropped.

    >>> parse_seeds("3"), parse_seeds(3, first=10), parse_seeds("0-2,7")
    ((0, 1, 2), (10, 11, 12), (0, 1, 2, 7))
    >>> parse_seeds("4-1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --seeds '4-1' is not a seed list; write e.g. 3 (a count), ...
    """
    if isinstance(text, bool):
        raise UserError(f"{flag} {text!r} is not a seed list; {SEEDS_HELP}")
    if isinstance(text, int) or (isinstance(text, str) and text.strip().isdigit()):
        count = int(text)
        if count < 1:
            raise UserError(f"{flag} {text!r}: a count of seeds must be >= 1; {SEEDS_HELP}")
        _check_seed_count(flag, text, count)
        check_seed(first, "--seed", count)
        return tuple(range(first, first + count))
    if not isinstance(text, str):  # a TOML list
        if not isinstance(text, list | tuple):  # a float, a table: no seeds at all
            raise UserError(f"{flag} {text!r} is not a seed list; {SEEDS_HELP}")
        whole = all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in text)
        if not text or not whole:
            raise UserError(f"{flag} {list(text)!r} is not a seed list; {SEEDS_HELP}")
        for seed in text:
            check_seed(seed, flag)
        return tuple(dict.fromkeys(int(s) for s in text))
    seeds: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if match is None:
            raise UserError(f"{flag} {text!r} is not a seed list; {SEEDS_HELP}")
        start = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else start
        if last < start:
            raise UserError(f"{flag} {text!r} is not a seed list; {SEEDS_HELP}")
        _check_seed_count(flag, text, len(seeds) + last - start + 1)
        check_seed(last, flag)
        seeds.extend(range(start, last + 1))
    return tuple(dict.fromkeys(seeds))


def _check_seed_count(flag: str, text: object, count: int) -> None:
    if count > MAX_SEEDS:
        raise UserError(
            f"{flag} {text!r} is {count:,} seeds, more than a sweep can plan "
            f"({MAX_SEEDS:,}); give fewer"
        )


def seed_arg(text: str, flag: str = "--seeds") -> int | tuple[int, ...]:
    """``--seeds`` as a config holds it: a bare count stays a count (the seeds ``--seed``,
    ``--seed + 1``, ...; the config checks it); a range or list (:func:`parse_seeds`)
    names the seeds.

    >>> seed_arg("3"), seed_arg("0-2,7")
    (3, (0, 1, 2, 7))
    """
    if text.strip().isdigit():
        return int(text)
    return parse_seeds(text, flag)


def seed_set(seeds: int | Sequence[int], first: int, flag: str = "--seeds") -> tuple[int, ...]:
    """The seeds a config's ``seeds`` field stands for: a count N -> ``first .. first + N
    - 1``; a set of seeds -> those seeds. One rule for every command's ``--seeds``.

    >>> seed_set(3, 10), seed_set((4, 9), 10)
    ((10, 11, 12), (4, 9))
    """
    if isinstance(seeds, bool) or not isinstance(seeds, int | Sequence):
        raise UserError(f"{flag} {seeds!r} is not a seed list; {SEEDS_HELP}")
    if isinstance(seeds, int):
        check_positive(flag, seeds)
        check_seed(first, "--seed", seeds)
        return tuple(range(first, first + seeds))
    return parse_seeds(tuple(seeds), flag)
