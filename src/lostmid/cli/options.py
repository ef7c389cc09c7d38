"""Command-line options made from the config dataclasses: one place for each default and
each help text.

A command's options are the fields of its config (their defaults), each with the help
of the config's ``HELP`` entry of the same name; :func:`options` turns them into typer
parameters and :func:`command` into a typer command whose body receives the parsed
values by field name. An option's flag is ``--field-name`` unless an :class:`Flag`
says otherwise (another name, a short alias, text parsed into a tuple, an override
whose default None means "the preset's").

Types a field may have on the command line: ``int``, ``float``, ``str``, ``bool``
(a ``--flag``), ``Path``, any of these ``| None``, and tuples, which are read from one
comma-separated value by a :class:`Flag` ``parse`` function, or repeated (``list``)
for paths.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     length: int = 8
...     kernel: str = "rollout"
>>> [(p.name, p.default) for p in options(Demo, {"length": "L.", "kernel": "K."})]
[('length', 8), ('kernel', 'rollout')]
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from lostmid.runs.budget import SIZE_CHECK_HELP

console = Console(markup=False)  # every command's tables and progress; a path is text

SIMPLE = (int, float, str, bool, Path)


@dataclass(frozen=True)
class Flag:
    """How one config field appears on the command line, where the default rule does not
    fit.

    Attributes:
        names: the flag and its aliases (default ``--field-name``).
        parse: text -> the field's value (for tuples: ``"0,10,20"`` -> (0, 10, 20)); the
            option is then a string.
        override: whose value the option overrides (``"the preset's"``, ``"the
            scale's"``): its default is None, meaning "keep that value"; the help says so.
        repeat: a list option (``--measured A --measured B``) for a tuple of paths.
        hidden: not shown in ``--help``.
    """

    names: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None
    override: str = ""
    repeat: bool = False
    hidden: bool = False


SHORT_FLAGS = {"length": "-L"}
"""The short flag of a field wherever a command has it (``-L`` for ``--length`` on every
command with a length), so the same letter means the same thing everywhere."""


def flag_name(field: str) -> str:
    """``per_position_gains`` -> ``--per-position-gains``."""
    return "--" + field.replace("_", "-")


def _cli_type(annotation: Any) -> tuple[type, bool]:
    """(the option's type, whether None is allowed) for a field annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        simple = [a for a in args if a in SIMPLE]
        if str in simple:  # str | Mask and the like: read as text
            return str, optional
        if len(simple) == 1:
            return simple[0], optional
        raise TypeError(f"no command-line type for {annotation!r}; give the field a Flag")
    if annotation in SIMPLE:
        return annotation, False
    raise TypeError(f"no command-line type for {annotation!r}; give the field a Flag")


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return inspect.Parameter.empty  # a required option


def options(
    config: type,
    help: Mapping[str, str],
    *,
    flags: Mapping[str, Flag] | None = None,
    only: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    panels: Mapping[str, Sequence[str]] | None = None,
) -> list[inspect.Parameter]:
    """One typer parameter per init field of the dataclass ``config`` (in field order;
    only those in ``only`` if given, none in ``skip``), with the field's default and
    ``help[field]``. A field without help is an error: every option is documented.
    ``panels``: the help's groups (panel title -> fields, shown in that order); given,
    every option must be in one, so none falls back to a catch-all box."""
    flags = flags or {}
    panel_of = {name: title for title, names in (panels or {}).items() for name in names}
    hints = typing.get_type_hints(config)
    wanted = None if only is None else list(only)
    fields = {f.name: f for f in dataclasses.fields(config) if f.init}
    names = wanted if wanted is not None else [n for n in fields if n not in set(skip)]
    params = []
    for name in names:
        field = fields[name]
        flag = flags.get(name, Flag())
        if name not in help:
            raise KeyError(f"{config.__name__}.{name} has no help text; add it to HELP")
        text = help[name]
        default = _default(field)
        if flag.repeat:
            kind: Any = list[Path]
            if default is not inspect.Parameter.empty:
                default = list(default) if default else inspect.Parameter.empty
        elif flag.parse is not None:
            kind = str | None if flag.override or default is None else str
            if flag.override:
                default = None
            elif isinstance(default, int):  # a count (--seeds)
                default = str(default)
            elif default is not inspect.Parameter.empty and default is not None:
                default = ",".join(str(v) for v in default)
        else:
            base, optional = _cli_type(hints[name])
            if flag.override:
                optional, default = True, None
            kind = base | None if optional else base
        if flag.override and "default" not in text:
            text = f"{text} (default: {flag.override})"
        short = (SHORT_FLAGS[name],) if name in SHORT_FLAGS else ()
        names_ = flag.names or (flag_name(name), *short)
        if panels is not None and name not in panel_of:
            raise KeyError(f"{config.__name__}.{name} is in no help panel; add it to one")
        info = typer.Option(
            *names_, help=text, hidden=flag.hidden, rich_help_panel=panel_of.get(name)
        )
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[kind, info],
            )
        )
    if panels is not None:  # the help shows the panels in the order given
        order = list(panels)
        params.sort(key=lambda p: order.index(panel_of[p.name]))
    return params


def parsed(values: Mapping[str, Any], flags: Mapping[str, Flag]) -> dict[str, Any]:
    """The values of a command's options as config fields: text parsed by each field's
    :class:`Flag`, repeated paths as tuples."""
    out = dict(values)
    for name, flag in flags.items():
        if name not in out or out[name] is None:
            continue
        if flag.parse is not None:
            out[name] = flag.parse(out[name])
        elif flag.repeat:
            out[name] = tuple(out[name])
    return out


def extra(
    name: str, kind: Any, default: Any, *names: str, help: str, panel: str | None = None
) -> inspect.Parameter:
    """A parameter that is not a config field (``--out``, ``--overwrite``, ``--quick``);
    ``panel``: its group in the help (:func:`options`)."""
    info = typer.Option(*(names or (flag_name(name),)), help=help, rich_help_panel=panel)
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


def argument(name: str, kind: Any, help: str) -> inspect.Parameter:
    """A required positional parameter (``lostmid diagnose MODEL``, ``lostmid score
    SAMPLES``), with its help."""
    info = typer.Argument(help=help, show_default=False)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[kind, info])


def out_dir(text: str | Path) -> Path:
    """``--out``'s value as a path; empty text (``--out ""``, an unset shell variable)
    is refused, where ``Path("")`` would quietly be the current directory.

    >>> out_dir("results/x")
    PosixPath('results/x')
    """
    if isinstance(text, Path):  # the default
        return text
    if not text.strip():
        raise typer.BadParameter(
            "an empty path; give a directory (--out . for the current one)", param_hint="--out"
        )
    path = Path(text)
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest > NAME_MAX or len(os.fsencode(path.absolute())) > PATH_MAX:
        raise typer.BadParameter(
            f"a name of {longest} bytes (at most {NAME_MAX}) or a path of "
            f"{len(os.fsencode(path.absolute()))} bytes (at most {PATH_MAX}); choose a "
            "shorter one",
            param_hint="--out",
        )
    return path


NAME_MAX, PATH_MAX = 255, 4096
"""The longest file name and path (bytes) Linux file systems take: an ``--out`` beyond
them is refused before anything is written (it was an OSError after the run)."""


def out_option(command: str, panel: str | None = None) -> inspect.Parameter:
    """``--out DIR`` (default ``results/COMMAND``; empty text refused: :func:`out_dir`)."""
    info = typer.Option(
        "--out", help="Directory for results.", parser=out_dir, rich_help_panel=panel
    )
    return inspect.Parameter(
        "out",
        inspect.Parameter.KEYWORD_ONLY,
        default=Path(f"results/{command}"),
        annotation=Annotated[Path, info],
    )


OVERWRITE_HELP = "Recompute everything instead of reusing saved results."


def overwrite_option(help: str = OVERWRITE_HELP, panel: str | None = None) -> inspect.Parameter:
    """``--overwrite``: never replace results without it."""
    return extra("overwrite", bool, False, help=help, panel=panel)


def run_options(
    command: str,
    overwrite_help: str = OVERWRITE_HELP,
    *,
    panel: str | None = None,
    size_check: bool = False,
) -> list[inspect.Parameter]:
    """``--out``, ``--overwrite`` and, with ``size_check``, ``--no-size-check``
    (:data:`~lostmid.runs.budget.SIZE_CHECK_HELP`): the options a run command ends
    with, in that order, in the help group ``panel``."""
    params = [out_option(command, panel=panel), overwrite_option(overwrite_help, panel=panel)]
    if size_check:
        params.append(extra("no_size_check", bool, False, help=SIZE_CHECK_HELP, panel=panel))
    return params


def command(
    name: str, doc: str, params: Iterable[inspect.Parameter], body: Callable[..., None]
) -> Callable[..., None]:
    """A function typer can register as command ``name``: its signature is ``params``
    (keyword-only, in order; the options of one help group brought together where its
    first one stands) and calling it calls ``body(**values)``."""
    params = _grouped(list(params))
    seen: set[str] = set()
    for p in params:
        if p.name in seen:
            raise ValueError(f"command {name}: option {p.name!r} declared twice")
        seen.add(p.name)

    def run(**values: Any) -> None:
        if values.get("out") is not None:  # the user's --out, never a run's own stage
            from lostmid.runs.claim import refuse_inside_run

            refuse_inside_run(Path(str(values["out"])), name)
        try:
            body(**values)
        except KeyboardInterrupt as interrupt:  # Ctrl-C: one line, once, exit 130
            from lostmid.errors import INTERRUPTED, Interrupted

            if not isinstance(interrupt, Interrupted):
                print(INTERRUPTED, file=sys.stderr, flush=True)
            raise typer.Exit(130) from None

    run.__name__ = name.replace("-", "_")
    run.__doc__ = doc
    # inspect (and so typer) reads __signature__; typeshed's function type does not declare it
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return run


def _panel(param: inspect.Parameter) -> str | None:
    info = typing.get_args(param.annotation)[1:2]
    return getattr(info[0], "rich_help_panel", None) if info else None


def _grouped(params: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """``params`` with each help group's options together, the groups in the order of
    their first option (the help and the docs' tables read them in this order)."""
    first: dict[str | None, int] = {}
    for i, p in enumerate(params):
        first.setdefault(_panel(p), i)
    return sorted(params, key=lambda p: first[_panel(p)])


# -- the backend options of every command with stages ---------------------------------

BACKEND_FLAGS = {
    "name": Flag(names=("--backend",)),
    "cpus": Flag(names=("--cpus-per-job", "--cpus-per-stage")),
    "gpus": Flag(names=("--gpus-per-job", "--gpus-per-stage")),
}
BACKEND_PREFIX = "backend_"  # the parameters' names, apart from the command's own fields


BACKEND_PANEL = "Where the stages run"


def backend_options() -> list[inspect.Parameter]:
    """``--backend``, ``--address``, ``--cpus-per-job``, ``--gpus-per-job`` from the
    fields of :class:`lostmid.runs.backend.Backend` and its help, in one help group."""
    from lostmid.runs.backend import HELP, Backend

    names = tuple(f.name for f in dataclasses.fields(Backend) if f.init)
    found = options(Backend, HELP, flags=BACKEND_FLAGS, panels={BACKEND_PANEL: names})
    return [p.replace(name=BACKEND_PREFIX + p.name) for p in found]


def split_backend(values: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """(the command's own values, the :class:`~lostmid.runs.backend.Backend` the backend
    options describe)."""
    from lostmid.runs.backend import Backend

    own = {k: v for k, v in values.items() if not k.startswith(BACKEND_PREFIX)}
    backend = {
        k[len(BACKEND_PREFIX) :]: v for k, v in values.items() if k.startswith(BACKEND_PREFIX)
    }
    return own, Backend(**backend)


def comma_names(text: str) -> tuple[str, ...]:
    """``"a, b,"`` -> ("a", "b"): comma-separated names, blanks dropped.

    >>> comma_names("baseline, loss-weight,")
    ('baseline', 'loss-weight')
    """
    return tuple(part.strip() for part in text.split(",") if part.strip())


def comma_ints(option: str) -> Callable[[str], tuple[int, ...]]:
    """A parser of ``"0,10,20"`` -> (0, 10, 20) for ``option``; anything else is one line.

    >>> comma_ints("--gold-index")("0, 10,20")
    (0, 10, 20)
    """
    from lostmid.errors import UserError

    def parse(text: str) -> tuple[int, ...]:
        try:
            return tuple(int(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise UserError(
                f"{option} takes comma-separated whole numbers, e.g. 0,10,20; got {text!r}"
            ) from None

    return parse
