"""A sweep's grid: axes given as flags or a TOML file, expanded into units of work.

A *unit* is one call of one task (``measure``, ``theory``, ``train``...) with fixed
parameters. A *grid* is a task and a list of axes; its units are the Cartesian product
of the axes, in the order the axes were given (the last axis varies fastest). Each
unit has a stable key, so a rerun finds the results of the units it already did.

>>> grid = grid_from_flags("theory", lengths="64,128", params=["alpha=0.1,0.3"])
>>> [u.params_dict() for u in grid.units()][:2]
[{'alpha': 0.1, 'length': 64}, {'alpha': 0.3, 'length': 64}]
>>> len(grid.units())
4
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lostmid.checks import check_positive, check_seed, parse_seeds
from lostmid.errors import UserError
from lostmid.files import read_bytes
from lostmid.runs.jobs import Resources
from lostmid.sweep.units import task_spec

Scalar = str | int | float | bool | None

# The grid flags, by the name of the flag (and of the TOML key); each task maps them to
# one of its own parameters (see lostmid.sweep.units.TaskSpec.axes).
AXIS_FLAGS = ("models", "seeds", "lengths")
_SLUG_CHARS = re.compile(r"[^A-Za-z0-9._=-]+")


def parse_value(text: str) -> Scalar:
    """A flag value as the TOML scalar it would be: int, float, true/false, none, else str.

    >>> [parse_value(v) for v in ("3", "0.5", "true", "none", "tiny-qwen2")]
    [3, 0.5, True, None, 'tiny-qwen2']
    """
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            value = kind(text.strip())
        except ValueError:
            continue
        if not math.isfinite(value):
            raise UserError(f"--param value {text!r} is not a finite number; give a number")
        return value
    return text.strip()


def parse_param(text: str) -> tuple[str, tuple[Scalar, ...]]:
    """``--param NAME=V1,V2``: a parameter and its values (one value: fixed; more: an axis).

    >>> parse_param("alpha=0.1,0.3")
    ('alpha', (0.1, 0.3))
    """
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise UserError(f"--param {text!r}: write NAME=VALUE or NAME=V1,V2 (an axis)")
    return name, tuple(parse_value(v) for v in values.split(","))


def _split_names(text: str | Sequence[str], flag: str) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    if not all(isinstance(v, str) for v in items):
        raise UserError(f"{flag} must be names, got {list(items)!r}")
    names = tuple(dict.fromkeys(v.strip() for v in items if v.strip()))
    if not names:
        raise UserError(f"{flag} is empty; give at least one name")
    return names


def _parse_lengths(text: str | int | Sequence[int], flag: str = "--lengths") -> tuple[int, ...]:
    items: Iterable[Any]
    if isinstance(text, str):
        items = [parse_value(v) for v in text.split(",") if v.strip()]
    elif isinstance(text, int):
        items = [text]
    else:
        items = text
    lengths = []
    for value in items:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"{flag} must be whole numbers such as 256,512, got {text!r}")
        lengths.append(int(check_positive(flag, value)))
    if not lengths:
        raise UserError(f"{flag} is empty; give at least one length")
    return tuple(dict.fromkeys(lengths))


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class Unit:
    """One unit of work: a task and its parameters (sorted by name, so order never matters).

    >>> a = Unit.make("theory", {"length": 64, "alpha": 0.1})
    >>> a == Unit.make("theory", {"alpha": 0.1, "length": 64})
    True
    >>> a.key[:-10]  # then 10 hex digits of the SHA-256 of task and parameters
    'theory-alpha=0.1-length=64-'
    """

    task: str
    params: tuple[tuple[str, Scalar], ...]
    resources: Resources = field(default=Resources(), compare=False)

    @classmethod
    def make(
        cls, task: str, params: Mapping[str, Scalar], resources: Resources | None = None
    ) -> Unit:
        return cls(task, tuple(sorted(params.items())), resources or Resources())

    def params_dict(self) -> dict[str, Scalar]:
        return dict(self.params)

    def record(self) -> dict[str, Any]:
        """What identifies the unit's result: the stage store reuses it only on equality.
        A local model or tokenizer is known by its content (its sha256, :func:`lostmid.
        models.identity.content_of`): a model changed in place is another unit."""
        from lostmid.models.identity import content_of

        params = self.params_dict()
        record: dict[str, Any] = {"task": self.task, "params": params}
        content = {}
        for name in ("model", "tokenizer"):
            value = params.get(name)
            found = content_of(value) if isinstance(value, str) else None
            if found is not None and "registry" not in found:
                content[name] = found["sha256"]
        return record | ({"content": content} if content else {})

    @property
    def key(self) -> str:
        """``TASK-name=value-...-HASH``: readable, safe as a file name, and distinct for
        distinct units (the hash covers task and parameters exactly)."""
        digest = hashlib.sha256(_canonical(self.record()).encode()).hexdigest()[:10]
        slug = "-".join(f"{k}={v}" for k, v in self.params)
        slug = _SLUG_CHARS.sub("_", slug)[:80].strip("-_")
        return f"{self.task}-{slug}-{digest}" if slug else f"{self.task}-{digest}"


@dataclass(frozen=True)
class Grid:
    """A task and its axes ``(parameter, values)``; a single value is a fixed parameter.

    Parameter names and values are checked against the task (see
    :mod:`lostmid.sweep.units`) on construction.
    """

    task: str
    axes: tuple[tuple[str, tuple[Scalar, ...]], ...]
    resources: Resources = Resources()

    def __post_init__(self) -> None:
        spec = task_spec(self.task)
        names = [name for name, _ in self.axes]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise UserError(
                f"parameter {repeated[0]!r} is given twice (an axis flag and --param, or "
                "twice); give it once"
            )
        for name, values in self.axes:
            spec.check_name(name)
            if not values:
                raise UserError(f"parameter {name!r} has no values; give at least one")

    @property
    def size(self) -> int:
        """How many units the grid has (the product of its axes), before listing them.

        >>> grid_from_flags("theory", lengths="64,128", params=["alpha=0.1,0.3"]).size
        4
        """
        return math.prod(len(values) for _, values in self.axes)

    def units(self) -> list[Unit]:
        """The product of the axes, each unit's parameters coerced to the task's types."""
        spec = task_spec(self.task)
        names = [name for name, _ in self.axes]
        units = []
        for values in itertools.product(*(vals for _, vals in self.axes)):
            params = spec.normalise(dict(zip(names, values, strict=True)))
            default = Resources(cpus=1.0, gpus=1.0 if spec.needs_gpu(params) else 0.0)
            units.append(Unit.make(self.task, params, self.resources.over(default)))
        return units

    def record(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "axes": {name: list(values) for name, values in self.axes},
            "resources": self.resources.record(),
        }


def _axis_values(
    task: str, flag: str, value: Any, first: int = 0
) -> list[tuple[str, tuple[Scalar, ...]]]:
    """The axes (or fixed parameters) a grid flag stands for. ``--seeds`` of a task that
    runs several seeds itself (reproduce, remedies: ``TaskSpec.seed_count``) is that
    task's own first seed and count, one unit for them all, not an axis."""
    spec = task_spec(task)
    name = spec.axes.get(flag)
    if name is None:
        known = ", ".join(f"--{f}" for f in spec.axes) or "none"
        raise UserError(
            f"task {task} takes no --{flag} (its axis flags: {known}); use --param NAME=V1,V2"
        )
    if flag == "seeds":
        seeds = parse_seeds(value, f"--{flag}", first)
        if spec.seed_count is None:
            return [(name, seeds)]
        if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
            raise UserError(
                f"--seeds {value!r}: task {task} runs consecutive seeds in one unit; give a "
                "count and --seed, or a range such as 2-4"
            )
        return [(name, (seeds[0],)), (spec.seed_count, (len(seeds),))]
    if flag == "lengths":
        return [(name, _parse_lengths(value, f"--{flag}"))]
    return [(name, _split_names(value, f"--{flag}"))]


def grid_from_flags(
    task: str | None,
    *,
    models: str | None = None,
    seeds: str | int | None = None,
    lengths: str | None = None,
    params: Sequence[str] = (),
    resources: Resources | None = None,
    seed: int = 0,
) -> Grid:
    """The grid of ``lostmid sweep --task T --models a,b --seeds 0-4 --lengths ... --param``
    (``seed``: the first seed of a ``--seeds`` count)."""
    if task is None:
        raise UserError("give --task (measure, theory, train...) or a sweep file with --config")
    task_spec(task)
    check_seed(seed)  # also without --seeds: a seed no unit can take is a mistake
    axes = [
        axis
        for flag, value in (("models", models), ("seeds", seeds), ("lengths", lengths))
        if value is not None
        for axis in _axis_values(task, flag, value, seed)
    ]
    axes += [parse_param(p) for p in params]
    return Grid(task, tuple(axes), resources or Resources())


_FILE_KEYS = ("task", *AXIS_FLAGS, "seed", "params", "resources")


def _grid_from_table(table: Mapping[str, Any], where: str) -> Grid:
    unknown = sorted(set(table) - set(_FILE_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(_FILE_KEYS)}")
    task = table.get("task")
    if not isinstance(task, str):
        raise UserError(f'{where}: give task = "measure" (or theory, train...)')
    task_spec(task)
    first = table.get("seed", 0)
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise UserError(f"{where}: seed (the first seed of a seeds count) must be an int >= 0")
    axes = [
        axis
        for flag in AXIS_FLAGS
        if flag in table
        for axis in _axis_values(task, flag, table[flag], first)
    ]
    params = table.get("params", {})
    if not isinstance(params, Mapping):
        raise UserError(f"{where}: params must be a table, e.g. [params] samples = 4")
    for name, value in params.items():
        values = tuple(value) if isinstance(value, list) else (value,)
        if not all(v is None or isinstance(v, str | int | float | bool) for v in values):
            raise UserError(f"{where}: params.{name} must be a value or a list of values")
        axes.append((name, values))
    res = table.get("resources", {})
    if not isinstance(res, Mapping) or set(res) - {"cpus", "gpus", "memory_gb"}:
        raise UserError(f"{where}: resources takes cpus, gpus and memory_gb only")
    return Grid(task, tuple(axes), Resources(**res))


def load_sweep_file(path: Path) -> list[Grid]:
    """The grids of a TOML sweep file: its top level is one grid, or ``[[grid]]`` tables
    are several (units of all of them run in one sweep).

    One grid::

        task = "measure"
        models = ["tiny-qwen2", "tiny-gpt2"]   # axis flags: models, seeds, lengths
        seeds = "0-1"                          # or [0, 1]; 2 (a count) from seed
        lengths = [32, 64]
        [params]                               # a scalar is fixed, a list is an axis
        samples = 2
        probes = [2, 4]
        [resources]                            # per unit, for --backend ray
        cpus = 1
        gpus = 0
        memory_gb = 2
    """
    raw = read_bytes(path, option="--config", what="a TOML sweep file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"--config {path}: not valid TOML ({err})") from None
    if "grid" in data:
        if set(data) != {"grid"} or not isinstance(data["grid"], list):
            raise UserError(
                f"--config {path}: with [[grid]] tables, put every key inside a [[grid]]"
            )
        return [
            _grid_from_table(t, f"--config {path} grid {i + 1}") for i, t in enumerate(data["grid"])
        ]
    return [_grid_from_table(data, f"--config {path}")]


def expand(grids: Sequence[Grid]) -> list[Unit]:
    """Every grid's units, in order, each unit once (a repeat is the same work)."""
    seen: dict[str, Unit] = {}
    for grid in grids:
        for unit in grid.units():
            seen.setdefault(unit.key, unit)
    if not seen:
        raise UserError("the sweep has no units; give at least one value per axis")
    return list(seen.values())
