"""The engines a run can use, each one record (``Engine``): its name, its runner, and what it supports.

``ENGINES`` registers them: the embedded engine (SimGrid's Python bindings), a local Batsim
binary, and Batsim's container image. ``run(spec, engine)`` runs a RunSpec on one of them; what
only some engines support (``SUPPORTS``) is read from their records, never from their names,
and ``batio.resolve`` refuses in one line an option the chosen engine cannot honour, whichever
way it is given (`batio run`, `compare`, a sweep file, compose's RUN_ARGS).

Adding an engine (Batsim 5, say) is one module and one record:
  1. ``batio/engines/batsim5.py`` with its runner, ``run(spec, on_progress=None, wall_timeout_s=None)
     -> {"prefix": ..., ...}``, which writes the outputs and ``PREFIX_run.json`` at
     ``spec.out_prefix``, and, when it needs something of this machine (a binary, a daemon), a
     function that raises an EngineError saying what is missing;
  2. its ``Engine`` record added to ``ENGINES`` below: its name (what --engine and a sweep's
     ``engines`` take), ``"batio.engines.batsim5:run"``, what it supports, its --engine help
     and its availability check.
Nothing else names an engine. A runner's module is imported only when its engine runs
(SimGrid's bindings, the Docker SDK), so a record names it and does not import it.
"""

from collections.abc import Callable
from dataclasses import dataclass
import importlib
import json
from pathlib import Path
from typing import Any

from batio.errors import EngineError
from batio.inputs.spec import DEFAULT_IO_SAMPLE_PERIOD_S, DEFAULT_MAX_IDLE_S, RunSpec
from batio.progress import JobProgress

# What an engine may support. The run options (inputs.spec.RUN_OPTIONS) among them are
# refused on an engine that does not (batio.resolve); the others say what it does.
IO_EXCLUSIVE = "io_exclusive"          # run option: each storage host serves one transfer at a time
IO_SAMPLE_PERIOD = "io_sample_period"  # run option: seconds between the samples of PREFIX_io.csv
DECISION_TIMEOUT = "timeout"           # run option: wall-clock bound on one scheduler decision
MAX_IDLE = "max_idle"                  # run option: simulated seconds with jobs waiting and none running
IO_TIMELINE = "io_timeline"            # writes PREFIX_io.csv, the storage throughput over time
IN_PROCESS = "in_process"              # can drive a pybatsim scheduler in its own process (mode inprocess)
BATSCHED = "batsched"                  # runs batsched's C++ schedulers (batsched:VARIANT)
CHECKED_WORKLOADS = "checked_workloads"  # refuses profiles it cannot simulate: workloads checked as it checks them
JOB_PROGRESS = "job_progress"          # reports each job's end while it runs (the progress bar)
WALL_TIMEOUT = "wall_timeout"          # bounds the whole run's wall time (``run``'s wall_timeout_s)
SUPPORTS = (IO_EXCLUSIVE, IO_SAMPLE_PERIOD, DECISION_TIMEOUT, MAX_IDLE, IO_TIMELINE, IN_PROCESS, BATSCHED,
            CHECKED_WORKLOADS, JOB_PROGRESS, WALL_TIMEOUT)
# The run options that only some engines honour, each with its value when not given.
ENGINE_RUN_OPTIONS = {IO_EXCLUSIVE: False, IO_SAMPLE_PERIOD: DEFAULT_IO_SAMPLE_PERIOD_S, DECISION_TIMEOUT: None,
                      MAX_IDLE: DEFAULT_MAX_IDLE_S}


@dataclass(frozen=True)
class Engine:
    """One engine: what runs a RunSpec on it, and what it supports (``SUPPORTS``' values)."""
    name: str                  # what --engine and a sweep file's ``engines`` take
    runner: str                # "module:function": run(spec, on_progress=None, wall_timeout_s=None) -> dict
    supports: frozenset[str]
    help: str                  # what --engine's help says of it
    available: str | None = None  # "module:function" raising an EngineError when this machine cannot run it

    def __post_init__(self) -> None:
        unknown = set(self.supports) - set(SUPPORTS)
        if unknown:
            raise ValueError(f"engine {self.name}: unknown capabilities {sorted(unknown)} (known: {SUPPORTS})")

    def runner_function(self) -> Callable[..., dict]:
        """Its runner, its module imported now."""
        return _imported(self.runner)

    def check_available(self) -> None:
        """Raise an EngineError when this machine cannot run it (no binary, no daemon)."""
        if self.available:
            _imported(self.available)()


def _imported(reference: str) -> Any:
    """The function ``module:function`` names, its module imported now."""
    module, _, function = reference.partition(":")
    return getattr(importlib.import_module(module), function)


_REAL_BATSIM = frozenset({BATSCHED, WALL_TIMEOUT})
ENGINES = {engine.name: engine for engine in (
    Engine("embedded", "batio.engines.embedded.run:simulate",
           frozenset({IO_EXCLUSIVE, IO_SAMPLE_PERIOD, DECISION_TIMEOUT, MAX_IDLE, IO_TIMELINE, IN_PROCESS,
                      CHECKED_WORKLOADS, JOB_PROGRESS}),
           "batio's SimGrid engine"),
    Engine("batsim", "batio.engines.batsim:run_with_batsim_binary", _REAL_BATSIM, "a `batsim` binary on PATH",
           "batio.engines.batsim:check_binary"),
    Engine("docker", "batio.engines.docker:run_with_docker", _REAL_BATSIM,
           "the Batsim image of docker-compose.yml, started by batio", "batio.engines.docker:check_daemon"),
)}
DEFAULT_ENGINE = "embedded"


def engines_help() -> str:
    """What --engine's help says: each engine, the default marked."""
    return "; ".join(f"{engine.name}: {engine.help}{' (default)' if engine.name == DEFAULT_ENGINE else ''}"
                     for engine in ENGINES.values())


def run(spec: RunSpec, engine: str = DEFAULT_ENGINE, progress: bool = False, wall_timeout_s: float | None = None,
        marks: dict | None = None) -> dict:
    """Run ``spec`` (checked against its engine by ``batio.resolve``) on ``engine`` and write its
    outputs at ``spec.out_prefix``.

    Returns ``{"prefix", ...}`` (the embedded engine adds its measures; ``PREFIX_run.json``
    records the run, the number of compute hosts included);
    ``progress``: a bar of the jobs on the terminal, on an engine that reports them;
    ``wall_timeout_s`` bounds the run's wall time on an engine that supports it (the embedded
    engine bounds each decision instead: ``spec.timeout_s``); ``marks``: keys added to the
    run's ``PREFIX_run.json`` however the run ends (the scheduler as typed, why its result is
    degraded: batio.requirements). Raises a ``BatioError`` saying what failed.
    """
    record = ENGINES[engine]
    if wall_timeout_s is not None and WALL_TIMEOUT not in record.supports:
        raise EngineError(f"the {engine} engine has no bound on a run's wall time (it bounds each decision)")
    bar = JobProgress() if progress and JOB_PROGRESS in record.supports else None
    try:
        return record.runner_function()(spec, bar, wall_timeout_s)
    finally:
        if bar is not None:
            bar.close()
        if marks:
            mark_record(spec.out_prefix, marks)


def mark_record(prefix: str, marks: dict) -> None:
    """``marks`` added to ``PREFIX_run.json``, when the run got as far as writing it."""
    path = Path(f"{prefix}_run.json")
    if not path.exists():
        return
    record = json.loads(path.read_text())
    record.update(marks)
    path.write_text(json.dumps(record, indent=1))


def check_available(names: list[str]) -> None:
    """Fail once, before any run of a grid, rather than in every run (checked on this machine only)."""
    for name in names:
        ENGINES[name].check_available()
