"""Writing result files: the destination checked first, every failure one line naming the file.

A full disk raises ENOSPC when the buffered text is flushed, often at
close, where Python's OSError carries no file name: the name comes from here.
"""

from contextlib import contextmanager
from pathlib import Path

from batio.errors import InputError, OutputError


def _problem(error):
    return error.strerror or str(error) or type(error).__name__


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
    a non-empty folder needs --force."""
    try:
        used = not force and Path(path).is_dir() and any(Path(path).iterdir())
    except OSError:
        used = False  # an unusable path: make_folder says why
    if used:
        raise InputError("--out", f"{path} is not empty: another run's outputs may be there "
                                  "(--force writes into it anyway, or choose another folder)")
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
