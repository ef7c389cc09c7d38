"""``lostmid reproduce``: a named scale (``--quick``, the default, ``--full``) with the
overrides of its :class:`~lostmid.reproduce.config.Scale` fields, the run's own fields
(:class:`~lostmid.reproduce.config.ReproduceConfig`) and the backend's."""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

from lostmid.capabilities import capability
from lostmid.checks import seed_arg
from lostmid.cli.options import (
    BACKEND_PANEL,
    Flag,
    backend_options,
    command,
    console,
    extra,
    flag_name,
    options,
    out_option,
    overwrite_option,
    parsed,
    split_backend,
)
from lostmid.errors import UserError
from lostmid.reproduce.config import (
    HELP,
    SECTION_OPTIONS,
    ReproduceConfig,
    Scale,
    parse_models,
)

SCALE_OVERRIDES = (
    "length",
    "seeds",
    "samples",
    "probes",
    "train_steps",
    "train_preset",
    "train_seeds",
    "behaviour_preset",
    "behaviour_steps",
    "behaviour_seeds",
    *(option.field for option in SECTION_OPTIONS),  # the sections with scales of their own
)
FLAGS = {"models": Flag(parse=parse_models), "trained": Flag(parse=parse_models)} | {
    f: Flag(
        override="the scale's", parse=partial(seed_arg, flag=flag_name(f)) if "seeds" in f else None
    )
    for f in SCALE_OVERRIDES
}


OUTPUT = "Run and output"
PANELS = {
    "Models": (
        "models", "trained", "chat_template", "answer_prefix", "tokenizer", "dtype",
        "trust_remote_code", "twin_init_std",
    ),
    "Sizes (override the scale's)": (
        "length", "seeds", "samples", "probes", "train_steps", "train_preset", "train_seeds",
        "behaviour_preset", "behaviour_steps", "behaviour_seeds",
    ),
    "Sections (each: a scale, off, or a finished folder to read)": (
        "remedies", *(option.field for option in SECTION_OPTIONS),
    ),
    BACKEND_PANEL: ("device",),
    OUTPUT: ("seed",),
}  # fmt: skip
"""``lostmid reproduce --help``'s groups of options."""


def _in_panel_order(*params: inspect.Parameter) -> list[inspect.Parameter]:
    """The options of two configs in :data:`PANELS`' order (each config's own call
    orders only its own fields)."""
    order = list(PANELS)
    where = {name: order.index(title) for title, names in PANELS.items() for name in names}
    return sorted(params, key=lambda p: where[p.name])


def _run(*, quick: bool, full: bool, out: Any, overwrite: bool, **values: Any) -> None:
    from lostmid.reproduce.run import run_reproduce

    if quick and full:
        raise UserError("choose at most one of --quick and --full")
    fields, backend = split_backend(values)
    fields = parsed(fields, FLAGS)
    scale = "quick" if quick else "full" if full else ReproduceConfig.scale.name
    config = ReproduceConfig.at_scale(scale, **fields)
    run_reproduce(config, out=out, overwrite=overwrite, console=console, backend=backend)


COMMAND = command(
    "reproduce",
    capability("reproduce").summary,
    [
        extra("quick", bool, False, help=HELP["quick"], panel="Scale"),
        extra("full", bool, False, help=HELP["full"], panel="Scale"),
        *_in_panel_order(
            *options(ReproduceConfig, HELP, flags=FLAGS, skip=("scale",), panels=PANELS),
            *options(Scale, HELP, flags=FLAGS, only=SCALE_OVERRIDES, panels=PANELS),
        ),
        *backend_options(),
        out_option("reproduce", panel=OUTPUT),
        overwrite_option(HELP["overwrite"], panel=OUTPUT),
    ],
    _run,
)
