"""The sweep's tasks: each sweepable capability (:mod:`lostmid.capabilities`, the one
registry of what lostmid runs: its run function, result file and headline numbers) with
what a sweep adds to it: its parameters and their defaults, its grid axes, how a unit's
parameters become its config, and how a unit reruns.

A runner writes the task's usual files into the unit's own folder and returns a small
JSON-ready summary: ``{"file": NAME, ...headline numbers}``, read back from the written
file (:meth:`~lostmid.capabilities.Capability.headline_of`), so a runner does not depend
on the return type of ``run_X``. Units of ``theory``, ``measure``, ``train`` and
``retrieve`` recompute; ``remedies`` and ``reproduce`` resume their own stages inside the
unit's folder; ``train-retrieval`` (``lostmid train --task``) resumes an interrupted
unit and summarises the finished units as the depth dose-response
(:mod:`lostmid.behaviour.dose.verdict`).

>>> sorted(TASKS)
['measure', 'remedies', 'reproduce', 'retrieve', 'theory', 'train', 'train-retrieval']
>>> task_spec("theory").normalise({"length": 64, "alpha": 1})
{'length': 64, 'alpha': 1.0}
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.capabilities import capability, sweepable
from lostmid.checks import check_choice
from lostmid.errors import UserError

Params = Mapping[str, Any]
Summarise = Callable[[Sequence[tuple[Params, Path]], Path], dict[str, Any]]
"""(each finished unit's parameters and folder, the sweep folder) -> ``{"file": ...}``."""


def _never(params: Params) -> bool:
    return False


@dataclass(frozen=True)
class TaskSpec:
    """How the sweep turns a unit's parameters into a config and runs it.

    Attributes:
        name: the task name used by ``--task``.
        defaults: () -> every parameter the task takes, with its default (its type is
            used to coerce values: an int given for a float parameter becomes a float);
            a function, so that the library is imported only when a task is used.
        axes: grid flag (``models``, ``seeds``, ``lengths``) -> parameter name.
        build: parameters -> the task's validated config (raises ``UserError``).
        run: (config, unit folder) -> summary ``{"file": ..., ...}``.
        needs_gpu: parameters -> whether the unit asks Ray for a GPU by default.
        seed_count: for a task that runs several seeds in one unit (reproduce,
            remedies), the parameter holding their count: ``--seeds`` then sets that
            count and the first seed (``axes["seeds"]``), one unit for them all.
        summarise: None, or what to make of the task's finished units together once the
            sweep has run them (a summary file in the sweep folder; see :data:`Summarise`).
        result_file: the file a unit writes into its folder (the capability's result
            file): the stage store keeps its SHA-256, so a unit is reused only while the
            file is the one it wrote. None: only the file its summary names, read whole.
    """

    name: str
    defaults: Callable[[], Mapping[str, Any]]
    axes: Mapping[str, str]
    build: Callable[[Params], Any]
    run: Callable[[Any, Path], dict[str, Any]]
    needs_gpu: Callable[[Params], bool] = _never
    seed_count: str | None = None
    summarise: Summarise | None = None
    result_file: str | None = None

    def check_name(self, name: str) -> None:
        known = self.defaults()
        if name not in known:
            raise UserError(
                f"task {self.name} has no parameter {name!r}; known: {', '.join(known)}"
            )

    def normalise(self, params: Params) -> dict[str, Any]:
        """Parameters checked by name, ints given for float parameters made floats."""
        clean: dict[str, Any] = {}
        for name, value in params.items():
            self.check_name(name)
            default = self.defaults()[name]
            if (
                isinstance(default, float)
                and isinstance(value, int)
                and not isinstance(value, bool)
            ):
                value = float(value)
            clean[name] = value
        return clean


def _fields(cls: type, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Parameter name -> default, from a config dataclass's fields."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _on_cuda(params: Params) -> bool:
    return str(params.get("device", "cpu")).startswith("cuda")


# -- theory ----------------------------------------------------------------------------


@functools.cache
def _theory_defaults() -> dict[str, Any]:
    from lostmid.theory.run import TheoryConfig

    return _fields(TheoryConfig)


def _build_theory(params: Params) -> Any:
    from lostmid.theory.run import TheoryConfig

    return TheoryConfig(**params)  # validates on construction (mask, schedule, kernel)


# -- measure ---------------------------------------------------------------------------


@functools.cache
def _measure_defaults() -> dict[str, Any]:
    from lostmid.influence.config import MeasureConfig

    return _fields(MeasureConfig)


def _build_measure(params: Params) -> Any:
    from lostmid.influence.config import MeasureConfig

    return MeasureConfig(**params)  # validates on construction


# -- train -----------------------------------------------------------------------------
# Axis flags: --models are training presets (micro, tiny, small), --lengths set the
# model's context. Nested fields are dotted: model.layers, probe.influence_probes.


@functools.cache
def _train_defaults() -> dict[str, Any]:
    from lostmid.train.config import DynamicsProbeConfig, ModelSpec, TrainConfig

    top = _fields(TrainConfig, skip=("model", "probe"))
    nested = {f"model.{k}": v for k, v in _fields(ModelSpec).items()}
    nested |= {f"probe.{k}": v for k, v in _fields(DynamicsProbeConfig).items()}
    return {**top, "context": ModelSpec().context, **nested}


def _build_train(params: Params) -> Any:
    from lostmid.train.config import from_dict

    data: dict[str, Any] = {"model": {}, "probe": {}}
    for name, value in params.items():
        if name == "context":
            data["model"]["context"] = value
        elif "." in name:
            group, _, key = name.partition(".")
            data[group][key] = value
        else:
            data[name] = value
    return from_dict(data)  # the preset (default tiny), then these changes; validated


# -- train-retrieval -------------------------------------------------------------------
# Axis flags: --models are retrieval presets (retrieval-depth-2/4/8, ...), --seeds the
# seed. The other parameters are lostmid train --task's options (None: the preset's; no
# preset: the task's own, as lostmid train --task picks it).


@functools.cache
def _train_retrieval_defaults() -> dict[str, Any]:
    from lostmid.behaviour.training.config import RUN_OVERRIDES, TASK_OVERRIDES

    return {"preset": None, **{name: None for name in (*TASK_OVERRIDES, *RUN_OVERRIDES)}}


def _build_train_retrieval(params: Params) -> Any:
    from lostmid.behaviour.training.config import resolve_retrieval_config

    p = {**_train_retrieval_defaults(), **params}
    return resolve_retrieval_config(p.pop("preset"), **p)  # validated on construction


def _run_train_retrieval(config: Any, folder: Path) -> dict[str, Any]:
    from lostmid.behaviour.training.run import can_resume, run_retrieval_training

    resume = can_resume(config, folder)  # an interrupted unit continues where it was
    run_retrieval_training(config, out=folder, overwrite=not resume, resume=resume, console=None)
    return capability("train-retrieval").headline_of(folder)


def _summarise_train_retrieval(units: Sequence[tuple[Params, Path]], out: Path) -> dict[str, Any]:
    from lostmid.behaviour.dose.run import write_dose_summary

    return write_dose_summary([folder for _, folder in units], out)


# -- retrieve --------------------------------------------------------------------------


@functools.cache
def _retrieve_defaults() -> dict[str, Any]:
    from lostmid.behaviour.retrieve.config import RetrieveConfig

    return {"model": None, **_fields(RetrieveConfig)}  # no default model, as the command


def _build_retrieve(params: Params) -> Any:
    from lostmid.behaviour.retrieve.config import RetrieveConfig

    if params.get("model") is None:
        raise UserError(
            "a retrieve unit needs a model, as lostmid retrieve needs --model: "
            "give sweep --models (or --param model=...)"
        )
    return RetrieveConfig(**params)  # validates on construction


# -- remedies --------------------------------------------------------------------------
# Axis flags: --models are retrieval presets; --seeds the unit's own seeds (first,
# count). ``remedies`` lists the remedies of one unit joined by "+" (a comma would make
# them a grid axis: one unit per remedy), e.g. remedies=baseline+loss-weight.


@functools.cache
def _remedies_defaults() -> dict[str, Any]:
    from lostmid.remedies.config import RemediesConfig

    fields = _fields(RemediesConfig)
    return {**fields, "remedies": "+".join(fields["remedies"])}


def _build_remedies(params: Params) -> Any:
    from lostmid.remedies.config import RemediesConfig

    changes = dict(params)
    if "remedies" in changes:
        changes["remedies"] = tuple(str(changes["remedies"]).split("+"))
    return RemediesConfig(**changes)  # validates on construction


# -- reproduce -------------------------------------------------------------------------
# Axis flags: --models (one model spec per unit, or a comma-separated list), --seeds the
# unit's own seeds (first, count), --lengths L. ``scale`` is quick, default or full; the
# other parameters override the scale's fields (Scale) or set the run's (remedies, device).


@functools.cache
def _reproduce_defaults() -> dict[str, Any]:
    from lostmid.reproduce.config import ReproduceConfig, Scale

    fields = _fields(ReproduceConfig)  # the command's defaults: its scale and models
    scale = {f.name: None for f in dataclasses.fields(Scale) if f.name != "name"}
    run = {"scale": fields["scale"].name, "models": ",".join(fields["models"])}
    run |= {name: fields[name] for name in ("seed", "device", "remedies")}
    return {**run, **scale}


def _build_reproduce(params: Params) -> Any:
    from lostmid.reproduce.config import ReproduceConfig, parse_models

    p = {**_reproduce_defaults(), **params}
    run = {k: p.pop(k) for k in ("scale", "models", "seed", "device", "remedies")}
    return ReproduceConfig.at_scale(
        str(run["scale"]),
        models=parse_models(str(run["models"])),
        seed=int(run["seed"]),
        device=str(run["device"]),
        remedies=run["remedies"],
        **p,
    )


def _run_capability(name: str, config: Any, folder: Path, *, overwrite: bool) -> dict[str, Any]:
    """Run the capability ``name`` into the unit's folder (``overwrite``: recompute; else
    the run resumes its own stages) and read its headline back
    (:meth:`lostmid.capabilities.Capability.headline_of`)."""
    spec = capability(name)
    spec.run_function()(config, out=folder, overwrite=overwrite, console=None)
    return spec.headline_of(folder)


def _runner(name: str, *, overwrite: bool) -> Callable[[Any, Path], dict[str, Any]]:
    """:func:`_run_capability` for ``name``: a partial of a module-level function, so that
    a unit's job pickles for a worker process or Ray (a closure would not)."""
    return functools.partial(_run_capability, name, overwrite=overwrite)


# What the sweep adds to each sweepable capability (lostmid.capabilities): its
# parameters, grid axes, config builder and how a unit reruns.
_SHAPES: dict[str, dict[str, Any]] = {
    "theory": {
        "defaults": _theory_defaults,
        "axes": {"seeds": "seed", "lengths": "length"},
        "build": _build_theory,
        "run": _runner("theory", overwrite=True),
    },
    "measure": {
        "defaults": _measure_defaults,
        "axes": {"models": "model", "seeds": "seed", "lengths": "length"},
        "build": _build_measure,
        "run": _runner("measure", overwrite=True),
        "needs_gpu": _on_cuda,
    },
    "train": {
        "defaults": _train_defaults,
        "axes": {"models": "preset", "seeds": "seed", "lengths": "context"},
        "build": _build_train,
        "run": _runner("train", overwrite=True),
        "needs_gpu": _on_cuda,
    },
    "train-retrieval": {
        "defaults": _train_retrieval_defaults,
        "axes": {"models": "preset", "seeds": "seed"},
        "build": _build_train_retrieval,
        "run": _run_train_retrieval,
        "summarise": _summarise_train_retrieval,
    },
    "reproduce": {
        "defaults": _reproduce_defaults,
        "axes": {"models": "models", "seeds": "seed", "lengths": "length"},
        "build": _build_reproduce,
        "run": _runner("reproduce", overwrite=False),
        "needs_gpu": _on_cuda,
        "seed_count": "seeds",
    },
    "retrieve": {
        "defaults": _retrieve_defaults,
        "axes": {"models": "model", "seeds": "seed", "lengths": "length"},
        "build": _build_retrieve,
        "run": _runner("retrieve", overwrite=True),
        "needs_gpu": _on_cuda,
    },
    "remedies": {
        "defaults": _remedies_defaults,
        "axes": {"models": "preset", "seeds": "seed"},
        "build": _build_remedies,
        "run": _runner("remedies", overwrite=False),
        "seed_count": "seeds",
    },
}
TASKS: dict[str, TaskSpec] = {
    c.name: TaskSpec(name=c.name, result_file=c.result_file, **_SHAPES[c.name]) for c in sweepable()
}
"""The sweep's tasks: every sweepable capability, in the registry's order."""

# Tasks the sweep knows of but this version cannot run yet: name -> why, what to do.
PENDING: dict[str, str] = {}


def task_spec(name: str) -> TaskSpec:
    """The registered task ``name``, or one line naming the tasks there are."""
    if name in PENDING:
        raise UserError(PENDING[name])
    check_choice("--task", name, TASKS)
    return TASKS[name]
