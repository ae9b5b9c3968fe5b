"""The one way in to a simulation: ``run(spec, engine)`` on the embedded engine (SimGrid's
Python bindings), a local Batsim binary, or Batsim's container image."""

import json
import logging
from pathlib import Path
import shutil

from batio.errors import EngineError, InputError
from batio.inputs.spec import DEFAULT_IO_SAMPLE_PERIOD_S, DEFAULT_MAX_IDLE_S, OPTION_FLAGS
from batio.progress import JobProgress

ENGINES = ("embedded", "batsim", "docker")
# The engine each name stands for, by module and function, imported only when chosen:
# SimGrid's bindings, the Docker SDK and the Batsim binary's pieces are needed only by their own engine.
_RUNNERS = {"embedded": ("batio.engines.embedded.run", "simulate"),
            "batsim": ("batio.engines.batsim", "run_with_batsim_binary"),
            "docker": ("batio.engines.docker", "run_with_docker")}

logger = logging.getLogger(__name__)

# Run options that only the embedded engine honours (real Batsim has no exclusive I/O
# model, no out_io.csv and no decision bounds), each with its value when not given.
EMBEDDED_ONLY = {"io_exclusive": False, "io_sample_period": DEFAULT_IO_SAMPLE_PERIOD_S, "timeout": None,
                 "max_idle": DEFAULT_MAX_IDLE_S}


def unsupported_options(engine, options):
    """The run options (RUN_OPTIONS keys -> values) given in ``options`` that ``engine`` cannot honour."""
    if engine == "embedded":
        return []
    return [key for key, unset in EMBEDDED_ONLY.items() if options.get(key, unset) not in (unset, None)]


def check_run_options(engine, options, source=None, field=None):
    """Refuse in one line, before anything runs, a run option ``engine`` would ignore (and its
    out_run.json record as if it ran); ``source``, ``field``: where the options were given
    (default: the command line, each named by its flag; ``field``: e.g. run_options)."""
    given = unsupported_options(engine, options)
    if not given:
        return
    names = ", ".join(OPTION_FLAGS[key] if source is None else key for key in given)
    one = len(given) == 1
    raise InputError(source or f"--engine {engine}",
                     f"{names} {'is an option' if one else 'are options'} of the embedded engine only: "
                     f"the {engine} engine would ignore {'it' if one else 'them'} "
                     f"(drop {'it' if one else 'them'}, or use the embedded engine)",
                     field=field and f"{field}.{given[0]}")


def spec_run_options(spec):
    """The run options of a RunSpec, by their RUN_OPTIONS names."""
    return {"io_exclusive": spec.io_exclusive, "io_sample_period": spec.io_sample_period,
            "timeout": spec.timeout_s, "max_idle": spec.max_idle_s}


def check_engine(engine, scheduler):
    """Refuse an unknown engine, and batsched's C++ scheduler on the embedded engine."""
    if engine not in ENGINES:
        raise InputError("--engine", f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    from batio.catalog import is_batsched
    if is_batsched(scheduler) and engine == "embedded":
        raise InputError("--scheduler", f"{scheduler} is batsched's C++ scheduler: it runs only against real "
                                        "Batsim (--engine batsim, or --engine docker)")


def run(spec, engine="embedded", progress=False, wall_timeout_s=None, marks=None):
    """Run ``spec`` (an inputs.spec.RunSpec) on ``engine`` and write its outputs at ``spec.out_prefix``.

    Returns ``{"prefix", ...}`` (the embedded engine adds its measures; ``PREFIX_run.json``
    records the run, the number of compute hosts included);
    ``progress``: a bar of the embedded engine's jobs on the terminal; ``wall_timeout_s`` bounds
    a real Batsim's run; ``marks``: keys added to the run's ``PREFIX_run.json`` however the run
    ends (the scheduler as typed, why its result is degraded: batio.requirements). Raises a ``BatioError``
    saying what failed.
    """
    import importlib
    try:
        check_engine(engine, spec.scheduler)
        check_run_options(engine, spec_run_options(spec))
        module, function = _RUNNERS[engine]
        runner = getattr(importlib.import_module(module), function)
        if engine == "embedded":
            return _embedded(runner, spec, progress)
        runner(spec, timeout_s=wall_timeout_s)
        return {"prefix": str(spec.out_prefix)}
    finally:
        if marks:
            mark_record(spec.out_prefix, marks)


def _embedded(runner, spec, progress):
    """The embedded engine's run, with its bar of jobs when ``progress``."""
    bar = JobProgress() if progress else None
    try:
        return runner(spec, bar)
    finally:
        if bar is not None:
            bar.close()


def mark_record(prefix, marks):
    """``marks`` added to ``PREFIX_run.json``, when the run got as far as writing it."""
    path = Path(f"{prefix}_run.json")
    if not path.exists():
        return
    record = json.loads(path.read_text())
    record.update(marks)
    path.write_text(json.dumps(record, indent=1))


def check_available(names):
    """Fail once, before any run of a grid, rather than in every run (checked on this machine only)."""
    if "docker" in names:
        from batio.engines.docker import connect
        connect().close()
    if "batsim" in names and shutil.which("batsim") is None:
        raise EngineError("engine batsim needs a `batsim` binary on PATH (Batsim 4.2), or use the docker engine")
