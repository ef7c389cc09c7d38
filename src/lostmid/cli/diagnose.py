"""``lostmid diagnose --model MODEL`` (or ``lostmid diagnose MODEL``): the trained-model
studies on one model (:class:`~lostmid.reproduce.diagnose.DiagnoseConfig`'s fields, the
backend's)."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import typer

from lostmid.capabilities import capability
from lostmid.cli.options import (
    backend_options,
    command,
    console,
    extra,
    options,
    run_options,
    split_backend,
)
from lostmid.errors import UserError
from lostmid.reproduce.diagnose import HELP, DiagnoseConfig

POSITIONAL = "MODEL"


def chosen_model(option: str | None, positional: str | None) -> tuple[str, str]:
    """(the model, the way the user named it: ``--model`` or ``MODEL``), from the option
    and the positional form; exactly one of them, or the same value twice.

    >>> chosen_model("./m", None), chosen_model(None, "./m")
    (('./m', '--model'), ('./m', 'MODEL'))
    """
    if option is None and positional is None:
        raise UserError("diagnose needs a model: --model MODEL (a folder, a .gguf file, ...)")
    if option is not None and positional is not None and option != positional:
        raise UserError(
            f"diagnose: two models, --model {option} and {positional}; give one of them"
        )
    return (option, "--model") if option is not None else (str(positional), POSITIONAL)


def _run(
    *, out: Any, overwrite: bool, model: str | None, model_arg: str | None, **values: Any
) -> None:
    from lostmid.reproduce.diagnose import run_diagnose

    name, typed = chosen_model(model, model_arg)
    fields, backend = split_backend(values)
    try:
        config = DiagnoseConfig(model=name, **fields)
        run_diagnose(config, out=out, overwrite=overwrite, console=console, backend=backend)
    except UserError as err:  # the model's checks say --model: say what the user typed
        text = str(err)
        if typed == POSITIONAL and text.startswith("--model "):
            raise UserError(f"{POSITIONAL} {text.removeprefix('--model ')}") from None
        raise


_POSITIONAL = inspect.Parameter(
    "model_arg",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Argument(
            metavar=POSITIONAL, help=f"The same as --model. {HELP['model']}", show_default=False
        ),
    ],
)

COMMAND = command(
    "diagnose",
    capability("diagnose").summary,
    [
        _POSITIONAL,
        extra("model", str | None, None, "--model", help=HELP["model"], panel=None),
        *options(DiagnoseConfig, HELP, skip=("model",)),
        *backend_options(),
        *run_options("diagnose", HELP["overwrite"]),
    ],
    _run,
)
