"""Reading the fields of a result record (JSON written by lostmid), with one-line errors
naming the file: the checks every record's ``from_json`` shares.

>>> json_floats({"x": [1, 2.5, None]}, "x", "a.json").tolist()
[1.0, 2.5, nan]
>>> json_target(None, 8, "a.json"), json_target(3, 8, "a.json")
(8, 3)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lostmid.checks import check_position
from lostmid.errors import UserError


def json_object(data: Any, where: str, key: str | None = None) -> dict[str, Any]:
    """``data`` if it is a JSON object, else one line naming ``where`` (and ``key``)."""
    if not isinstance(data, dict):
        what = f"'{key}'" if key else "the file"
        raise UserError(f"{where}: {what} must be a JSON object")
    return data


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a bool (``true`` is not 1) nor text
    (``"0.5"`` is not 0.5): the strict rule every record reader follows.

    >>> is_number(2), is_number(0.5), is_number(True), is_number("0.5")
    (True, True, False, False)
    """
    return isinstance(value, int | float) and not isinstance(value, bool)


def _all_numbers(values: Any, nullable: bool) -> bool:
    """Every leaf of nested lists is a number (:func:`is_number`), or null if allowed."""
    if isinstance(values, list):
        return all(_all_numbers(v, nullable) for v in values)
    return is_number(values) or (nullable and values is None)


def json_floats(data: Mapping[str, Any], key: str, where: str) -> np.ndarray:
    """``data[key]``: a non-empty list of numbers (null read as NaN), as float64; a bool
    or a number written as text is refused, not converted.

    >>> json_floats({"x": [1, True]}, "x", "a.json")
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: a.json: 'x' entry 2 is True, not a number
    """
    values = data.get(key)
    if not isinstance(values, list) or not values:
        raise UserError(f"{where}: '{key}' must be a non-empty list of numbers")
    for index, value in enumerate(values, 1):
        if value is not None and not is_number(value):
            raise UserError(f"{where}: '{key}' entry {index} is {_short(value)}, not a number")
    try:
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    except OverflowError:  # an integer past float's range (1e308)
        raise UserError(f"{where}: '{key}' has a number too large for a float") from None


def check_profile(values: Any, name: str) -> np.ndarray:
    """An influence profile as a 1-D float64 array, checked (one line naming ``name``):
    at least 2 positions, finite, non-negative, not all zero.

    >>> check_profile([1, 2, 3], "p").tolist()
    [1.0, 2.0, 3.0]
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < 2:
        raise UserError(
            f"{name} must be a 1-D array of at least 2 positions, got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise UserError(f"{name} has non-finite values (nan or inf); check the input file")
    if np.any(array < 0):
        j = int(np.flatnonzero(array < 0)[0]) + 1
        raise UserError(f"{name} has a negative value at position {j}; influence is >= 0")
    if not np.any(array > 0):
        raise UserError(f"{name} is all zeros; there is no profile to compare")
    with np.errstate(over="ignore"):
        total = float(np.sum(array))
    if not math.isfinite(total):  # every later step (shares, fits) would overflow
        raise UserError(
            f"{name} is too large to add up (its sum passes 1e308); rescale the profile"
        )
    return array


def json_profile(data: Mapping[str, Any], key: str, where: str) -> np.ndarray:
    """``data[key]`` as an influence profile (:func:`check_profile`)."""
    return check_profile(json_floats(data, key, where), f"{where}: {key}")


def json_array(
    data: Mapping[str, Any], key: str, where: str, shape: tuple[int, ...], undefined: bool = False
) -> np.ndarray | None:
    """``data[key]`` as a finite float array of ``shape``, or None when absent;
    ``undefined``: null entries are allowed and read as NaN."""
    if data.get(key) is None:
        return None
    raw = data[key]
    try:
        if not _all_numbers(raw, undefined):
            raise TypeError("not numbers")
        if undefined:
            raw = (
                [[math.nan if v is None else v for v in row] for row in raw]
                if len(shape) == 2
                else [math.nan if v is None else v for v in raw]
            )
        values = np.array(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        values = np.array([])
    finite = np.isfinite(values) | (undefined & np.isnan(values))
    if values.shape != shape or not np.all(finite):
        dims = " x ".join(map(str, shape))
        what = "finite numbers or null" if undefined else "finite numbers"
        raise UserError(f"{where}: '{key}' must be {dims} {what}, one per layer/position")
    return values


def json_whole(value: Any, where: str, key: str, low: int = 0) -> int:
    """A whole number >= ``low`` from a record (``2``, or ``2.0`` as JSON may write
    it), else one line naming ``where`` and ``key``.

    >>> json_whole(2.0, "a.json", "config.layers", 1)
    2
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or int(value) != value
        or value < low
    ):
        raise UserError(f"{where}: {key} must be a whole number >= {low}, got {value!r}")
    return int(value)


def json_strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    """A list of strings from a record (null: none), else one line naming ``where``.

    >>> json_strings(["a"], "a.json", "notes"), json_strings(None, "a.json", "notes")
    (('a',), ())
    """
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{where}: {key} must be a list of strings, got {_short(value)}")
    return tuple(value)


def json_text(value: Any, where: str, key: str) -> str | None:
    """A string (or null) from a record, else one line naming ``where``."""
    if value is not None and not isinstance(value, str):
        raise UserError(f"{where}: {key} must be a string, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def json_target(target: Any, length: int, where: str) -> int:
    """A 1-indexed target position (null: the last, ``length``)."""
    if target is not None and (
        isinstance(target, bool) or not isinstance(target, int | float) or int(target) != target
    ):
        raise UserError(f"{where}: target must be a whole number or null, got {target!r}")
    return check_position(f"{where}: target", None if target is None else int(target), length)
