"""A run's names resolved once: a policy name (or a scheduler file) with its options into the
policy's declaration and a RunSpec, checked against the engine that will run it.

``resolve`` is the one way from a name to a RunSpec: `batio run` and the compose services
(batio.cli.run), `compare` and `sweep` (batio.sweep.plan), `parity` and the scripts. An engine's
name becomes its record (``checked_engine``), and what the record does not support is refused in
one line wherever it is given (``refuse_unsupported``: the command line, a sweep file's
run_options, compose's RUN_ARGS), before anything runs, rather than ignored and recorded as if it ran.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batio import catalog
from batio.catalog import Declaration, is_batsched
from batio.engines import BATSCHED, DEFAULT_ENGINE, ENGINE_RUN_OPTIONS, ENGINES, Engine
from batio.errors import InputError
from batio.inputs.spec import OPTION_FLAGS, RUN_OPTION_FIELDS, RunSpec


@dataclass(frozen=True)
class Resolved:
    """A policy resolved for one run."""
    declaration: Declaration   # what the policy says of itself: its file, its options with presets, its features
    given: dict                # its options as given, presets aside (batio.requirements reads them)
    spec: RunSpec


def resolve(name: str, options: dict | None, platform: str, workloads: list, out_prefix: str | Path,
            engine: str | None = DEFAULT_ENGINE, **fields: Any) -> Resolved:
    """``name`` (a catalog, pybatsim or batsched name, or a scheduler file) with ``options`` (as given)
    on ``platform`` and ``workloads`` (names or files), its outputs at ``out_prefix``: its declaration,
    its options not yet checked (``requirements.check_run`` reads the inputs first), and its RunSpec,
    whose other ``fields`` (mode, timeout_s, roles, ...) are given, the Batsim features the policy
    needs turned on. ``engine``: the engine that will run it, checked first (``checked_engine``);
    None when its caller checks every engine of a grid at once. Raises an InputError, one line."""
    if engine is not None:
        checked_engine(engine, name, fields)
    given = dict(options or {})
    declared = catalog.declaration(name, given, check_options=False)
    spec = RunSpec(platform=str(catalog.platform_path(platform)),
                   workloads=[str(catalog.workload_path(str(workload))) for workload in workloads],
                   scheduler=declared.path, out_prefix=str(out_prefix), options=declared.options,
                   **{**fields, **declared.features})
    return Resolved(declared, given, spec)


def checked_engine(name: str, scheduler: str, fields: dict) -> Engine:
    """The record of the engine ``name``, which must run ``scheduler`` (as typed) with the RunSpec
    ``fields`` given: an unknown engine, a run option it would ignore and a scheduler it cannot run
    each refused in one line, before the inputs are looked up."""
    if name not in ENGINES:
        raise InputError("--engine", f"unknown engine {name!r} (known: {', '.join(ENGINES)})")
    engine = ENGINES[name]
    refuse_unsupported(engine, {key: fields.get(field) for key, field in RUN_OPTION_FIELDS.items()})
    if BATSCHED not in engine.supports and is_batsched(scheduler):
        raise InputError("--scheduler", f"{scheduler} is batsched's C++ scheduler: it runs only against real "
                                        f"Batsim ({', or '.join(f'--engine {able}' for able in batsched_engines())})")
    return engine


def batsched_engines() -> list[str]:
    """The engines that run batsched's C++ schedulers."""
    return [name for name, record in ENGINES.items() if BATSCHED in record.supports]


def unsupported(engine: Engine, options: dict) -> list[str]:
    """The run options (RUN_OPTIONS keys -> values) given in ``options`` that ``engine`` cannot honour."""
    return [key for key, unset in ENGINE_RUN_OPTIONS.items()
            if key not in engine.supports and options.get(key, unset) not in (unset, None)]


def refuse_unsupported(engine: Engine, options: dict, source: str | None = None, field: str | None = None) -> None:
    """Refuse in one line, before anything runs, a run option ``engine`` would ignore (and its
    out_run.json record as if it ran); ``source``, ``field``: where the options were given
    (default: the command line, each named by its flag; ``field``: e.g. run_options)."""
    given = unsupported(engine, options)
    if not given:
        return
    names = ", ".join(OPTION_FLAGS[key] if source is None else key for key in given)
    able = [name for name, record in ENGINES.items() if set(given) <= record.supports]
    one = len(given) == 1
    raise InputError(source or f"--engine {engine.name}",
                     f"{names} {'is an option' if one else 'are options'} of the {' and '.join(able)} "
                     f"engine{'s' if len(able) > 1 else ''} only: the {engine.name} engine would ignore "
                     f"{'it' if one else 'them'} (drop {'it' if one else 'them'}, or use the {' or '.join(able)} "
                     "engine)", field=field and f"{field}.{given[0]}")


def spec_fields(run_options: dict) -> dict:
    """The RunSpec fields that run options (RUN_OPTIONS names -> values) set."""
    return {RUN_OPTION_FIELDS[key]: value for key, value in run_options.items() if key in RUN_OPTION_FIELDS}
