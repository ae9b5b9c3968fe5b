"""Errors that batio reports to users as one clear line, never as a traceback.

Every error names what the user has to fix: the file, and where it applies
the job, the profile or the field.
"""
import functools
from pathlib import Path
import signal
import sys


def quoted(name):
    """A name in single quotes, escaped as Python would when it holds a quote or
    a control character (a line break must not split the one-line message)."""
    name = str(name)
    return f"'{name}'" if name.isprintable() and "'" not in name else repr(name)


def listed(names, limit=5):
    """Names for a message, the first ``limit`` then how many more: a line stays short."""
    names = [str(name) for name in names]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


class BatioError(Exception):
    """Base class: the CLI prints the message and exits non-zero."""

    @classmethod
    def from_message(cls, message):
        """Rebuild an error reported by a child process from its message."""
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        return error

    def __reduce__(self):
        """Pickled by its message (Dask and multiprocessing hand errors between processes)."""
        return type(self).from_message, (str(self),)


class InputError(BatioError):
    """A platform, workload or option that batio cannot use as given."""

    def __init__(self, source, problem, *, job=None, profile=None, field=None):
        where = [str(source)]
        if job is not None:
            where.append(f"job {quoted(job)}")
        if profile is not None:
            where.append(f"profile {quoted(profile)}")
        if field is not None:
            where.append(f"field {quoted(field)}")
        super().__init__(f"{', '.join(where)}: {problem}")
        self.source = source
        self.job = job
        self.profile = profile
        self.field = field


class OutputError(InputError):
    """A result file that cannot be written (full disk, no permission...): it
    stops a sweep rather than being recorded as a failed run."""


class InvalidValue(BatioError, ValueError):
    """A value a function does not accept (a scheduler option, a job's I/O
    demand, a history), reported with its message; a ValueError too, so that
    code checking values keeps catching it."""


class InvalidConfiguration(BatioError):
    """A scheduler, its options and inputs that make no valid run, found before time 0:
    not a crash, nothing ran."""


class SchedulerError(BatioError):
    """The scheduler crashed, stalled, or broke Batsim's protocol."""


class EngineError(BatioError):
    """The engine could not start or run (port in use, missing binary...)."""


class Interrupted(BaseException):
    """A signal (Ctrl-C, SIGTERM, SIGHUP) stopped batio, or a run's engine: no
    failure of the run, whose outputs stay partial, and which a sweep runs again.
    ``here``: this process got the signal (it must stop), rather than only the engine."""

    def __init__(self, signum, detail="", here=True):
        super().__init__(f"interrupted by {signal.Signals(signum).name}" + (f": {detail}" if detail else ""))
        self.signum = signum
        self.detail = detail
        self.here = here


def exits_on_error(main):
    """A script's ``main`` that ends on a BatioError with one line on stderr
    and exit status 2, as ``batio`` itself does, instead of a traceback."""
    @functools.wraps(main)
    def guarded(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except BatioError as error:
            print(f"{Path(sys.argv[0]).name}: error: {error}", file=sys.stderr)
            raise SystemExit(2) from None
    return guarded
