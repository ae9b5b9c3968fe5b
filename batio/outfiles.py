"""Writing result files: the destination checked first, every failure one line naming the file,
a set of files that go together replaced whole (``file_set``); and the Markdown tables of
batio's reports and the scripts' results pages, all laid out alike.

A full disk raises ENOSPC when the buffered text is flushed, often at
close, where Python's OSError carries no file name: the name comes from here.

A Markdown table's caller chooses the columns and shows each value as text;
``markdown_table`` lays the cells out: ``| a | b |`` rows under a
``| --- | ---: |`` rule, right-aligned from a chosen column on (numbers
line up), and no cell can break its row: a ``|`` in a cell is escaped and a
line break becomes a space.
"""

from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
import logging
import os
from pathlib import Path
import shutil
import signal
import tempfile
from typing import Any

from batio.errors import InputError, OutputError

logger = logging.getLogger(__name__)


def _problem(error):
    return error.strerror or str(error) or type(error).__name__


def shown_path(path):
    """``path`` as a result line prints it: relative to the current folder when it lies inside it
    (what the user typed; and inside a compose service, whose current folder is the project folder
    mounted at /batio, the path on the host relative to that folder), else absolute."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def check_destination(path, option="--out"):
    """Make the folder of file ``path``, or say in one line why ``path`` cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise InputError(option, f"{path} is a folder; expected the name of a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(option, f"cannot write {path}: {path.parent} is not a folder") from None
    except OSError as error:
        raise InputError(option, f"cannot create folder {path.parent}: {_problem(error)}") from None
    if not path.parent.is_dir():
        raise InputError(option, f"cannot write {path}: {path.parent} is not a folder")


def make_folder(path, option="--out"):
    """Create an output folder, or say in one line why it cannot be."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(option, f"{path} exists and is not a folder") from None
    except OSError as error:
        raise InputError(option, f"cannot create folder {str(path)[:200]}"
                                  f"{'...' if len(str(path)) > 200 else ''}: {error.strerror}") from None


def fresh_folder(path, force):
    """``make_folder`` for a run's outputs, which must not mix with an earlier run's:
    a non-empty folder needs --force, which removes the earlier run's outputs
    (``out_*`` and report.html; nothing else) and says so."""
    try:
        used = Path(path).is_dir() and any(Path(path).iterdir())
    except OSError:
        used = False  # an unusable path: make_folder says why
    if used and not force:
        raise InputError("--out", f"{path} is not empty: another run's outputs may be there "
                                  "(--force replaces them, or choose another folder)")
    if used:
        earlier = [file for file in Path(path).iterdir()
                   if file.is_file() and (file.name.startswith("out_") or file.name == "report.html")]
        for file in earlier:
            with written(file):
                file.unlink()
        if earlier:
            logger.warning("--force: the earlier run's outputs in %s (%d files) are replaced by this run's",
                           path, len(earlier))
    make_folder(path)


@contextmanager
def written(path, option="--out"):
    """Any OSError in the block (full disk, no permission, a folder in the way)
    becomes one OutputError naming ``path``, the file the block writes."""
    try:
        yield
    except OSError as error:
        raise OutputError(option, f"cannot write {path}: {_problem(error)}") from None


@contextmanager
def writing(path, option="--out", newline=None):
    """An open text stream on ``path``, with the one-line errors of ``written``."""
    with written(path, option), open(path, "w", encoding="utf-8", newline=newline) as stream:
        yield stream


def write_text(path, text, option="--out"):
    """``path.write_text(text)`` with the one-line errors of ``written``."""
    with writing(path, option) as stream:
        stream.write(text)


@contextmanager
def file_set(folder, replaces=(), option="--out"):
    """A staging folder, inside ``folder``, for files meant to go together: once the block ends
    without error they replace ``folder``'s files of the same names (and the files named in
    ``replaces`` that the new set lacks are removed), with Ctrl-C, SIGTERM and SIGHUP held
    until every rename is done. An interrupted or failed command leaves the earlier set
    whole, never new files beside old ones."""
    folder = Path(folder)
    make_folder(folder, option)
    with written(folder, option):
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder))
    try:
        yield staging
        held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            with written(folder, option):
                names = {file.name for file in staging.iterdir()}
                for name in sorted(names):
                    os.replace(staging / name, folder / name)
                for name in set(replaces) - names:
                    (folder / name).unlink(missing_ok=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# -- Markdown tables ------------------------------------------------------------------------
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
