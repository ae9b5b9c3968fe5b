"""Markdown tables: the one writer behind batio's reports and the scripts' results.

A caller chooses the columns and shows each value as text; this module lays
the cells out. Every table looks the same: ``| a | b |`` rows under a
``| --- | ---: |`` rule, right-aligned from a chosen column on (numbers
line up), and no cell can break its row: a ``|`` in a cell is escaped and a
line break becomes a space.
"""

from collections.abc import Callable, Iterable, Sequence
from typing import Any


def _cell(value: object) -> str:
    """``value`` as the text of one cell: ``|`` escaped, line breaks folded into spaces."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]],
                   align_right_from: int | None = None) -> str:
    """The lines of a Markdown table, joined by newlines (no final one).

    Cells are shown with ``str()`` (format numbers before). Columns from
    ``align_right_from`` (0-based) on are right-aligned; with None, none is.
    """
    def line(cells: Iterable[object]) -> str:
        return "| " + " | ".join(_cell(cell) for cell in cells) + " |"

    right = len(header) if align_right_from is None else align_right_from
    rule = "| " + " | ".join("---:" if i >= right else "---" for i in range(len(header))) + " |"
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def bold_best(values: Sequence[Any], show: Callable[[Any], str],
              best: Callable[[Iterable[Any]], Any] = min) -> list[str]:
    """``values`` shown by ``show``, those equal to ``best(values)`` in bold: a row's winners."""
    target = best(values)
    return [f"**{show(value)}**" if value == target else show(value) for value in values]
