"""``lostmid list TOPIC``: what there is to run (:mod:`lostmid.listing`; the topic is
:class:`~lostmid.listing.ListConfig`'s, as its options are)."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table

from lostmid.cli.options import argument, command, console, options
from lostmid.listing import HELP, TOPICS, ListConfig

SUMMARY = (
    "List what there is to run: " + ", ".join(TOPICS) + " (registry checkpoints with "
    "their files, presets)."
)


def _run(**fields: Any) -> None:
    from lostmid.listing import listing

    config = ListConfig(**fields)
    rows = listing(config.topic)
    if config.json:
        print(json.dumps(rows, indent=1))
        return
    table = Table(title=f"lostmid list {config.topic}", show_lines=True)
    for column in rows[0]:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row.values())
    console.print(table)


COMMAND = command(
    "list",
    SUMMARY,
    [argument("topic", str, HELP["topic"]), *options(ListConfig, HELP, skip=("topic",))],
    _run,
)
