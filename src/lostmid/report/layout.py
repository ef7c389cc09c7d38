"""Tables on a console of any width: rich's table when it fits, else one block per row.

rich squeezes a table wider than its console by narrowing columns until their cells
break one word per line, or mid-word (``COLUMNS=80``, a log file). Every table a command
prints goes through :func:`fit_table`: at its natural width (no cell wrapped) within the
console's width it is printed as rich draws it; otherwise each row becomes a block of
``header: value`` lines (the title first, the caption last, a blank line between rows),
whose values wrap at spaces in the width left beside the headers.

>>> import io
>>> from rich.console import Console
>>> from rich.table import Table
>>> table = Table(title="claims")
>>> for header in ("claim", "verdict"):
...     table.add_column(header)
>>> table.add_row("the valley lies in the middle third of the context", "reproduced")
>>> narrow = Console(file=io.StringIO(), width=40)
>>> narrow.print(fit_table(table))
>>> for line in narrow.file.getvalue().splitlines():
...     print(line.rstrip())
claims
claim:   the valley lies in the middle
         third of the context
verdict: reproduced
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

_UNBOUNDED = 1_000_000
"""A width no table reaches: its natural width is measured with this much room."""


def natural_width(table: Table, console: Console, options: ConsoleOptions) -> int:
    """The width ``table`` takes when no cell is wrapped (borders and padding included)."""
    return Measurement.get(console, options.update_width(_UNBOUNDED), table).maximum


def header_text(header: RenderableType) -> str:
    """A column header on one line: ``"Spear-\\nman"`` -> ``Spearman``."""
    text = header.plain if isinstance(header, Text) else str(header)
    return text.replace("-\n", "").replace("\n", " ")


class FittedTable:
    """A rich renderable: ``table`` as drawn when it fits the width it is given, else one
    ``header: value`` block per row (module doc)."""

    def __init__(self, table: Table):
        self.table = table

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        table = self.table
        if natural_width(table, console, options) <= options.max_width:
            yield table
            return
        if table.title:
            yield Text.from_markup(table.title) if isinstance(table.title, str) else table.title
        keys = [header_text(column.header) + ":" for column in table.columns]
        columns = [list(column.cells) for column in table.columns]
        for row in range(table.row_count):
            block = Table.grid(padding=(0, 1))
            block.add_column(no_wrap=True, style="bold")
            block.add_column(overflow="fold")  # only a word wider than the room is cut
            for key, cells in zip(keys, columns, strict=True):
                cell = cells[row] if row < len(cells) else ""
                if cell != "":
                    block.add_row(key, cell)
            if row:
                yield Text("")
            yield block
        if table.caption:
            yield Text("")
            yield (
                Text.from_markup(table.caption) if isinstance(table.caption, str) else table.caption
            )


def fit_table(table: Table) -> FittedTable:
    """``table`` laid out for the console that prints it (module doc); the one way a
    command prints a table."""
    return FittedTable(table)
