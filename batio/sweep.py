"""Sweeps: a grid of runs, each written atomically, run in parallel on Dask,
gathered into one tidy table.

A grid is platforms x workloads (x seeds, for workload generators) x
policies (a scheduler with its options) x engines; its YAML form is
described in docs/sweeps.md. ``batio compare`` builds a one-platform,
one-workload grid from its arguments and runs it through the same code.

Every run writes into a temporary folder of ``OUT/runs`` that is renamed to
``OUT/runs/RUN_ID`` once complete, with ``result.json`` (its row of the
table) next to Batsim's output files; a run whose folder exists is
finished, so rerunning a sweep after a crash only runs what is missing. The
run id ends with a hash of everything that determines the result (input
files' SHA-256, options, engine, batio version): changing an input makes new
runs instead of reusing stale ones. A failed run is finished too, with its
error in its row (``--retry-failed`` runs those again).

A scheduler option or run option whose whole value is ``"{seed}"`` or
``"{workload.FIELD}"`` is a per-run value: the run's workload seed, or the
top-level field FIELD of the run's workload file (a generator can so choose
a run option per workload). It is replaced before the run is hashed, so the
run id is that of the same run written with the value itself.

For the I/O slowdown (see ``metrics.job_io_slowdowns``) each platform x workload
instance also gets a *reference run*: the same jobs submitted one after the
other, each after the previous one's walltime, so that every job runs alone.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field
import hashlib
import importlib
import importlib.util
import json
import logging
import math
import multiprocessing
import os
from pathlib import Path
import re
import shutil
import signal
import threading
import time
import traceback
import uuid

import pandas as pd

from batio import __version__, catalog, engines, metrics
from batio.catalog import is_batsched
from batio.engines import ENGINES
from batio.errors import BatioError, EngineError, InputError, Interrupted, OutputError
from batio.inputs.spec import RUN_OPTIONS, RunSpec, file_digest, valid_run_option
from batio.inputs.workload import json_problem, load_workload
from batio.names import slug
from batio.outfiles import write_text, writing, written
from batio.progress import progress_bar

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.csv"
RESULT_FILE = "result.json"   # in each run folder: the run's row
# The status of a run that a signal stopped (or whose worker was lost): never a
# result, so no result.json; the next run of the same command runs it again.
INTERRUPTED = "interrupted"
RESUME_HINT = "run the same command again to redo it"
REFERENCE_SCHEDULER = "fcfs"
# Between two jobs of a reference workload: more than Batsim's message
# latencies, so that the next job never starts while the previous one ends.
REFERENCE_GAP_S = 1.0
# The reference run's I/O timeline is not used; a long period keeps its
# monitor from waking every second of a simulated time that sums walltimes.
REFERENCE_IO_SAMPLE_PERIOD = 1e6

CONFIG_KEYS = {
    "platforms": "a list of platform files or bundled names",
    "workloads": "a list of workload files, bundled names or {generator: MODULE:FUNCTION, args: {...}, name: ...}",
    "schedulers": "a list of scheduler names or {scheduler: NAME, options: {...}, grid: {...}, label: ...}",
    "seeds": "a list of integers, or a count K meaning seeds 1..K (workload generators only)",
    "engines": f"a list among {', '.join(ENGINES)}",
    "baseline": "the label of the policy the others are compared with",
    "io_slowdown": "true (default) or false: run the reference runs the I/O slowdown needs",
    "bsld_tau": "the bounded slowdown's threshold in seconds, > 0 (default 10)",
    "run_options": "{mode: inprocess|socket, io_sample_period: seconds, timeout: seconds, max_idle: seconds, "
                   "io_exclusive: true|false}",
    "allow_unfit": "true or false (default): run policies whose needs the inputs do not meet, marked degraded",
}
# A whole option value in braces is a per-run value (see the module docstring).
PER_RUN_VALUE = re.compile(r"\{([^{}]*)\}")
PER_RUN_VALUES = '"{seed}" (the workload seed) or "{workload.FIELD}" (a top-level field of the run\'s workload)'
WORKLOAD_FIELD = re.compile(r"workload\.([A-Za-z_][A-Za-z0-9_]*)")
REQUIRED_KEYS = ("platforms", "workloads", "schedulers")
WORKLOAD_KEYS = ("generator", "args", "name")
SCHEDULER_KEYS = ("scheduler", "options", "grid", "label")
# A run option's name in a sweep file -> RunSpec's field.
SPEC_FIELDS = {"mode": "mode", "timeout": "timeout_s", "max_idle": "max_idle_s", "io_sample_period": "io_sample_period",
               "io_exclusive": "io_exclusive", "dynamic_jobs": "dynamic_jobs", "compute_sharing": "compute_sharing"}


# -- the grid ---------------------------------------------------------------------------
@dataclass
class WorkloadSource:
    label: str
    path: str | None = None        # a workload file; seeds do not apply
    generator: str | None = None   # "module:function" or "file.py:function", called with seed=S
    args: dict = field(default_factory=dict)


@dataclass
class Policy:
    label: str
    scheduler: str                 # as written: batio/pybatsim name, .py file, or batsched:VARIANT
    options: dict = field(default_factory=dict)
    where: str = "schedulers"      # the config field of its options, which errors name


@dataclass
class Grid:
    source: str                    # the config file (or command) errors name
    platforms: list                # [(label, path)]
    workloads: list                # [WorkloadSource]
    policies: list                 # [Policy]
    seeds: list = field(default_factory=lambda: [1])
    engines: list = field(default_factory=lambda: ["embedded"])
    baseline: str | None = None
    io_slowdown: bool = True
    run_options: dict = field(default_factory=dict)
    bsld_tau: float = metrics.DEFAULT_BSLD_TAU
    made_from: str | None = None   # what the report says the grid came from (default: source)
    allow_unfit: bool = False      # run policies that do not fit their inputs (batio.fit), marked degraded


@dataclass
class PlannedRun:
    """One simulation of the grid, with everything a worker needs (paths are absolute)."""
    run_id: str
    kind: str                      # "policy", or "reference" (jobs run alone, for the I/O slowdown)
    policy: str
    scheduler: str                 # scheduler file, or batsched:VARIANT
    options: dict                  # as the scheduler receives them (presets included)
    platform: str
    platform_file: str
    workload: str
    workload_file: str
    seed: int | None
    engine: str
    run_options: dict
    sha256: dict                   # platform, workload, scheduler -> SHA-256 (scheduler: None for batsched)
    reference_run: str | None = None
    scheduler_name: str = ""       # the scheduler as the user wrote it
    degraded: tuple = ()           # why the policy does not fit its inputs, when run anyway

    def identity(self):
        """The row fields that say what the run is."""
        return {"run_id": self.run_id, "kind": self.kind, "policy": self.policy, "scheduler": self.scheduler,
                "options": json.dumps(self.options, sort_keys=True), "platform": self.platform,
                "workload": self.workload, "seed": self.seed, "engine": self.engine,
                "platform_file": self.platform_file, "workload_file": self.workload_file,
                "platform_sha256": self.sha256["platform"], "workload_sha256": self.sha256["workload"],
                "scheduler_sha256": self.sha256["scheduler"], "batio_version": __version__,
                "run_dir": f"runs/{self.run_id}", "reference_run": self.reference_run,
                "scheduler_name": self.scheduler_name, "degraded": "; ".join(self.degraded)}


def is_generator(name):
    """``module:function`` or ``path/file.py:function`` (a workload generator), not a file name."""
    target, sep, function = name.rpartition(":")
    return bool(sep and target and function.isidentifier())


# -- reading the YAML config ----------------------------------------------------------
def read_yaml(path, kind="sweep config"):
    """The parsed YAML file ``path``; a missing or unreadable file is an error naming it."""
    import yaml
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"no such {kind} file")
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(path, f"not valid YAML{where}: {problem}") from None
    except (ValueError, RecursionError) as error:  # an integer of thousands of digits, deep nesting
        raise InputError(path, f"not usable YAML: {json_problem(error)}") from None
    return config


def load_config(path):
    """Read and check a sweep config; every error names the file and the key."""
    path = Path(path)
    config = read_yaml(path)
    if not isinstance(config, dict):
        raise InputError(path, "must be a YAML mapping with keys " + ", ".join(REQUIRED_KEYS))
    _reject_unknown_keys(config, CONFIG_KEYS, path, "")
    for key in REQUIRED_KEYS:
        if key not in config:
            raise InputError(path, f"missing: expected {CONFIG_KEYS[key]}", field=key)
    base = path.resolve().parent
    grid = Grid(
        source=str(path),
        platforms=[_platform(name, base, path, f"platforms[{i}]") for i, name in
                   enumerate(_list_of(config, "platforms", path))],
        workloads=[_workload(entry, base, path, f"workloads[{i}]") for i, entry in
                   enumerate(_list_of(config, "workloads", path))],
        policies=[policy for i, entry in enumerate(_list_of(config, "schedulers", path))
                  for policy in _policies(entry, base, path, f"schedulers[{i}]")],
        seeds=_seeds(config.get("seeds", [1]), path),
        engines=_engines(config.get("engines", ["embedded"]), path),
        baseline=config.get("baseline"),
        io_slowdown=config.get("io_slowdown", True),
        run_options=_run_options(config.get("run_options", {}), path, per_run=True),
        bsld_tau=config.get("bsld_tau", metrics.DEFAULT_BSLD_TAU),
        allow_unfit=config.get("allow_unfit", False),
    )
    check_tau(grid.bsld_tau, path, "bsld_tau")
    for key in ("io_slowdown", "allow_unfit"):
        if not isinstance(getattr(grid, key), bool):
            raise InputError(path, f"expected true or false, got {getattr(grid, key)!r}", field=key)
    if "seeds" in config and not any(source.generator for source in grid.workloads):
        raise InputError(path, "seeds apply to workload generators only, and every workload here is a file "
                               "(remove seeds, or name a generator)", field="seeds")
    check_grid(grid)
    return grid


def _list_of(config, key, source):
    value = config[key]
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list) or not value:
        raise InputError(source, f"expected {CONFIG_KEYS[key]}, got {value!r}", field=key)
    return value


def _as_input_path(name, base, suffix):
    """Paths in a config are relative to its folder; bundled names stay names."""
    if Path(name).suffix == suffix or "/" in name:
        return str(base / name)
    return name


def _platform(name, base, source, where):
    if not isinstance(name, str):
        raise InputError(source, f"expected a platform file or bundled name, got {name!r}", field=where)
    try:
        path = catalog.platform_path(_as_input_path(name, base, ".xml"))
    except InputError as error:
        raise InputError(source, str(error), field=where) from None
    return (Path(name).stem, str(Path(path).resolve()))


def _workload(entry, base, source, where):
    if isinstance(entry, str):
        if is_generator(entry):
            entry = {"generator": entry}
        else:
            try:
                path = catalog.workload_path(_as_input_path(entry, base, ".json"))
            except InputError as error:
                raise InputError(source, str(error), field=where) from None
            return WorkloadSource(Path(entry).stem, path=str(Path(path).resolve()))
    if not isinstance(entry, dict):
        raise InputError(source, f"expected {CONFIG_KEYS['workloads']}, got {entry!r}", field=where)
    _reject_unknown_keys(entry, WORKLOAD_KEYS, source, where)
    if "generator" not in entry:
        raise InputError(source, "missing: expected MODULE:FUNCTION or FILE.py:FUNCTION", field=f"{where}.generator")
    generator, args = entry["generator"], entry.get("args", {})
    if not isinstance(generator, str) or not is_generator(generator):
        raise InputError(source, f"expected MODULE:FUNCTION or FILE.py:FUNCTION, got {generator!r}",
                         field=f"{where}.generator")
    if not isinstance(args, dict):
        raise InputError(source, f"expected a mapping of keyword arguments, got {args!r}", field=f"{where}.args")
    target, _, function = generator.rpartition(":")
    if target.endswith(".py") or "/" in target:
        generator = f"{base / target}:{function}"
    label = entry.get("name") or function
    load_generator(generator, source, f"{where}.generator")  # fail now, not in every run
    return WorkloadSource(str(label), generator=generator, args=args)


def _policies(entry, base, source, where):
    """A scheduler entry; its ``grid`` options make one policy per combination."""
    if isinstance(entry, str):
        entry = {"scheduler": entry}
    if not isinstance(entry, dict):
        raise InputError(source, f"expected {CONFIG_KEYS['schedulers']}, got {entry!r}", field=where)
    _reject_unknown_keys(entry, SCHEDULER_KEYS, source, where)
    if "scheduler" not in entry:
        raise InputError(source, "missing: expected a scheduler name or file", field=f"{where}.scheduler")
    name, options, grid = entry["scheduler"], entry.get("options", {}), entry.get("grid", {})
    if not isinstance(name, str):
        raise InputError(source, f"expected a scheduler name or file, got {name!r}", field=f"{where}.scheduler")
    for key, value in (("options", options), ("grid", grid)):
        if not isinstance(value, dict):
            raise InputError(source, f"expected a mapping, got {value!r}", field=f"{where}.{key}")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(source, f"expected a non-empty list of values, got {values!r}",
                             field=f"{where}.grid.{key}")
    for key, value in options.items():
        _per_run_name(value, source, f"{where}.options.{key}")
    for key, values in grid.items():
        for value in values:
            _per_run_name(value, source, f"{where}.grid.{key}")
    scheduler = name if is_batsched(name) else _as_input_path(name, base, ".py")
    label = str(entry.get("label") or (name if is_batsched(name) else Path(name).stem))
    combinations = [{}]
    for key, values in grid.items():
        combinations = [{**done, key: value} for done in combinations for value in values]
    policies = []
    for combination in combinations:
        suffix = ",".join(f"{key}={json.dumps(value)}" for key, value in combination.items())
        policies.append(Policy(f"{label}[{suffix}]" if suffix else label, scheduler, {**options, **combination},
                               f"{where}.options"))
    return policies


def _seeds(value, source):
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return list(range(1, value + 1))
    if (isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) for s in value)
            and len(set(value)) == len(value)):
        return value
    raise InputError(source, f"expected {CONFIG_KEYS['seeds']} (distinct), got {value!r}", field="seeds")


def _engines(value, source):
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not value or any(engine not in ENGINES for engine in value):
        raise InputError(source, f"expected {CONFIG_KEYS['engines']}, got {value!r}", field="engines")
    return value


def _reject_unknown_keys(mapping, known, source, where):
    """An unknown key in a sweep file is an error naming it and the known ones."""
    for key in mapping:
        if key not in known:
            raise InputError(source, f"unknown key (known keys: {', '.join(known)})",
                             field=f"{where}.{key}" if where else key)


def _run_options(value, source, per_run=False):
    """Checked run options; with ``per_run``, a per-run value is checked once it is resolved (``plan``)."""
    if not isinstance(value, dict):
        raise InputError(source, f"expected {CONFIG_KEYS['run_options']}, got {value!r}", field="run_options")
    _reject_unknown_keys(value, RUN_OPTIONS, source, "run_options")
    for key, given in value.items():
        if not (per_run and _per_run_name(given, source, f"run_options.{key}")):
            _check_run_option(key, given, source, f"run_options.{key}")
    return value


def _check_run_option(key, given, source, where):
    if not valid_run_option(key, given):
        raise InputError(source, f"expected {RUN_OPTIONS[key]}, got {given!r}", field=where)


def _per_run_name(value, source, where):
    """``seed`` or ``workload.FIELD`` for a per-run value, None for any other value; a value
    in braces that names neither is an error (a misspelt per-run value must not reach a run)."""
    if not isinstance(value, str):
        return None
    match = PER_RUN_VALUE.fullmatch(value)
    if match is None:
        return None
    name = match.group(1)
    if name != "seed" and not WORKLOAD_FIELD.fullmatch(name):
        raise InputError(source, f"unknown per-run value {value!r}: expected {PER_RUN_VALUES}", field=where)
    return name


def check_tau(tau, source, where):
    """The bounded slowdown's threshold (``bsld_tau``, ``--bsld-tau``) is a number of seconds > 0."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau < math.inf:
        raise InputError(source, f"expected the bounded slowdown's threshold in seconds > 0, got {tau!r}",
                         field=where)


def check_grid(grid):
    """What a config and ``batio compare`` arguments must both satisfy."""
    for axis, labels in (("platforms", [label for label, _ in grid.platforms]),
                         ("workloads", [w.label for w in grid.workloads]),
                         ("schedulers", [p.label for p in grid.policies])):
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise InputError(grid.source, f"two entries are labelled {duplicates[0]!r}: give one a "
                                          f"{'label' if axis == 'schedulers' else 'name'}", field=axis)
    if grid.baseline is not None and grid.baseline not in [p.label for p in grid.policies]:
        raise InputError(grid.source, f"{grid.baseline!r} is not a policy of this grid "
                                      f"(policies: {', '.join(p.label for p in grid.policies)})", field="baseline")
    # Real Batsim has no exclusive I/O model: its runs would silently share the storage.
    if grid.run_options.get("io_exclusive") and set(grid.engines) - {"embedded"}:
        raise InputError(grid.source, "io_exclusive is an option of the embedded engine only "
                                      f"(engines: {', '.join(grid.engines)})", field="run_options.io_exclusive")
    for policy in grid.policies:
        try:
            catalog.scheduler_file_and_options(policy.scheduler, policy.options)
        except InputError as error:
            raise InputError(grid.source, str(error), field="schedulers") from None
        if is_batsched(policy.scheduler) and "embedded" in grid.engines:
            raise InputError(grid.source, f"{policy.scheduler} is a batsched (C++) scheduler: it runs only "
                                          "against real Batsim (engines: [batsim] or [docker])", field="engines")


# -- workload generators ----------------------------------------------------------------
def load_generator(reference, source, where):
    target, _, function = reference.rpartition(":")
    if target.endswith(".py") or "/" in target:
        if not Path(target).is_file():
            raise InputError(source, f"no such generator file {target}", field=where)
        spec = importlib.util.spec_from_file_location(f"batio_generator_{slug(Path(target).stem)}", target)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # noqa: BLE001 - any error in the user's file
            raise InputError(source, f"cannot load {target}: {type(error).__name__}: {error}", field=where) from None
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as error:
            raise InputError(source, f"cannot import generator module {target!r}: {error}", field=where) from None
    generate = getattr(module, function, None)
    if not callable(generate):
        raise InputError(source, f"{target} has no function {function!r}", field=where)
    return generate


def _write_if_changed(path, text):
    """Write atomically, and not at all when the file already holds ``text``."""
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with written(path):  # the message names the file the user asked for, not the temporary one
        temporary.write_text(text)
    os.replace(temporary, path)


def generate_workload(source, seed, folder, grid_source):
    """Call the generator with ``seed`` and write its workload (JSON as the bundled ones are)."""
    generate = load_generator(source.generator, grid_source, "workloads")
    try:
        workload = generate(seed=seed, **source.args)
    except Exception as error:  # noqa: BLE001 - any error in the user's generator
        raise InputError(grid_source, f"generator {source.generator} failed with seed {seed} and args "
                                      f"{source.args}: {type(error).__name__}: {error}", field="workloads") from None
    if not isinstance(workload, dict) or "jobs" not in workload:
        raise InputError(grid_source, f"generator {source.generator} must return a workload dict with 'jobs', "
                                      f"got {type(workload).__name__}", field="workloads")
    path = Path(folder) / f"{slug(source.label)}-s{seed}.json"
    try:
        text = json.dumps(workload, indent=1) + "\n"
    except (TypeError, ValueError) as error:
        raise InputError(grid_source, f"generator {source.generator} with seed {seed} and args {source.args} "
                                      f"returned a workload that is not JSON: {error}", field="workloads") from None
    _write_if_changed(path, text)
    # What the generator made from its arguments is checked as any workload file is.
    try:
        jobs = load_workload(path, "w0").jobs
    except InputError as error:
        raise InputError(grid_source, f"generator {source.generator} with seed {seed} and args {source.args} "
                                      f"made an unusable workload: {error}", field="workloads") from None
    if not jobs:
        raise InputError(grid_source, f"generator {source.generator} with seed {seed} and args {source.args} made "
                                      "a workload without jobs: check the arguments' values", field="workloads")
    return str(path)


def _checked_workload(path, grid_source):
    """A workload file, checked once before any run (naming its job and field) rather than in every run."""
    try:
        load_workload(path, "w0")
    except InputError as error:
        raise InputError(grid_source, str(error), field="workloads") from None
    return path


def alone_workload(workload):
    """The reference workload: the same jobs and profiles, each submitted
    after the previous one's walltime (plus a gap), so that FCFS runs every
    job alone on the machine. None when a job has no walltime (nothing then
    bounds how long it holds the machine)."""
    jobs = sorted(workload["jobs"], key=lambda job: job["subtime"])
    if any(job.get("walltime", -1) <= 0 for job in jobs):
        return None
    alone, submit = [], 0.0
    for job in jobs:
        alone.append({**job, "subtime": submit})
        submit += job["walltime"] + REFERENCE_GAP_S
    return {**workload, "jobs": alone}


# -- planning ---------------------------------------------------------------------------
@dataclass
class _Instance:
    """One workload of the grid: a file, or a generator's workload for one seed."""
    label: str
    workload_file: str
    seed: int | None
    alone_file: str | None          # its reference workload, for the I/O slowdown
    _fields: dict | None = field(default=None, repr=False, compare=False)  # its top-level fields, once read

    def workload_field(self, name, source, where):
        if self._fields is None:
            self._fields = json.loads(Path(self.workload_file).read_text())
        if name not in self._fields:
            raise InputError(source, f"workload {self.label}" + ("" if self.seed is None else f" seed {self.seed}")
                             + f" ({self.workload_file}) has no top-level field {name!r}", field=where)
        return self._fields[name]

    def resolve(self, values, source, where):
        """``values`` (options or run options) with their per-run values replaced by this workload's."""
        resolved = {}
        for key, value in values.items():
            name = _per_run_name(value, source, f"{where}.{key}")
            if name is None:
                resolved[key] = value
            elif name == "seed":
                if self.seed is None:
                    raise InputError(source, f"\"{{seed}}\" is the seed of a generated workload, and workload "
                                             f"{self.label} is a file", field=f"{where}.{key}")
                resolved[key] = self.seed
            else:
                resolved[key] = self.workload_field(name.split(".", 1)[1], source, f"{where}.{key}")
        return resolved

    def resolve_run_options(self, run_options, source):
        resolved = self.resolve(run_options, source, "run_options")
        for key, value in run_options.items():
            if _per_run_name(value, source, f"run_options.{key}"):  # the others were checked when read
                _check_run_option(key, resolved[key], source, f"run_options.{key}")
        return resolved


def _run_id(kind, label, workload, seed, platform, engine, key):
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    seed_part = "" if seed is None else f"-s{seed}"
    return f"{slug(label, 32)}-{slug(workload, 24)}{seed_part}-{slug(platform, 24)}-{engine}-{digest}"


def _planned(kind, policy_label, scheduler, options, platform, workload_label, workload_file, seed, engine,
             run_options, digest, reference_run=None):
    platform_label, platform_file = platform
    sha = {"platform": digest(platform_file), "workload": digest(workload_file),
           "scheduler": None if is_batsched(scheduler) else digest(scheduler)}
    key = {"sha256": sha, "scheduler": scheduler if is_batsched(scheduler) else None, "options": options,
           "engine": engine, "run_options": run_options, "batio": __version__, "kind": kind}
    return PlannedRun(_run_id(kind, policy_label, workload_label, seed, platform_label, engine, key), kind,
                      policy_label, scheduler, options, platform_label, platform_file, workload_label,
                      workload_file, seed, engine, run_options, sha, reference_run)


def plan(grid, out):
    """Every run of ``grid`` (generating the workloads in ``OUT/workloads``), reference runs first."""
    workloads_dir = Path(out) / "workloads"
    digests = {}

    def digest(path):  # every input is hashed once, however many runs use it
        if path not in digests:
            digests[path] = file_digest(path)
        return digests[path]

    instances = []
    for source in grid.workloads:
        files = ([(_checked_workload(source.path, grid.source), None)] if source.path else
                 [(generate_workload(source, seed, workloads_dir, grid.source), seed) for seed in grid.seeds])
        for workload_file, seed in files:
            alone_file = None
            alone = alone_workload(json.loads(Path(workload_file).read_text())) if grid.io_slowdown else None
            if alone is not None:
                alone_file = str(workloads_dir / f"{Path(workload_file).stem}-{digest(workload_file)[:8]}-alone.json")
                _write_if_changed(alone_file, json.dumps(alone, indent=1) + "\n")
            instances.append(_Instance(source.label, workload_file, seed, alone_file))
    reference_scheduler, reference_options = catalog.scheduler_file_and_options(REFERENCE_SCHEDULER)
    reference_run_options = {**grid.run_options, "io_sample_period": REFERENCE_IO_SAMPLE_PERIOD}
    policies = []
    for policy in grid.policies:
        if is_batsched(policy.scheduler):
            policies.append((policy, policy.scheduler, policy.options, grid.run_options))
        else:
            scheduler, options = catalog.scheduler_file_and_options(policy.scheduler, policy.options)
            policies.append((policy, str(Path(scheduler).resolve()), options,
                             {**grid.run_options, **catalog.batsim_features(policy.scheduler)}))
    references, runs = [], []
    for platform in grid.platforms:
        for instance in instances:
            label, seed = instance.label, instance.seed
            unfit = _check_fit(grid, platform, instance)
            for engine in grid.engines:
                reference = None
                if instance.alone_file:
                    reference = _planned("reference", "alone", str(Path(reference_scheduler).resolve()),
                                         reference_options, platform, label, instance.alone_file, seed, engine,
                                         instance.resolve_run_options(reference_run_options, grid.source), digest)
                    references.append(reference)
                for policy, scheduler, options, run_options in policies:
                    run = _planned("policy", policy.label, scheduler,
                                   instance.resolve(options, grid.source, policy.where), platform, label,
                                   instance.workload_file, seed, engine,
                                   instance.resolve_run_options(run_options, grid.source), digest,
                                   reference.run_id if reference else None)
                    run.scheduler_name, run.degraded = policy.scheduler, unfit[policy.label]
                    runs.append(run)
    return references + runs


def _check_fit(grid, platform, instance):
    """Policy label -> why it does not fit this input (run anyway: ``allow_unfit``); refuses,
    naming the policy's config field, an option the scheduler would refuse or, unless allowed,
    a policy that does not fit."""
    from batio import fit
    facts = fit.InputFacts.of_files(platform[1], [instance.workload_file])
    unfit = {}
    for policy in grid.policies:
        options = instance.resolve(policy.options, grid.source, policy.where)
        try:
            unfit[policy.label] = tuple(fit.check(policy.scheduler, options, facts, grid.allow_unfit)[1])
        except fit.InvalidConfiguration as error:
            where = policy.where.removesuffix(".options") if isinstance(error, fit.Unfit) else policy.where
            raise InputError(grid.source, f"{error} (platform {platform[0]}, workload {instance.label})",
                             field=where) from None
    return unfit


# -- running one simulation ----------------------------------------------------------------
def _spec(run, prefix):
    given = {SPEC_FIELDS[key]: value for key, value in run.run_options.items() if key in SPEC_FIELDS}
    return RunSpec(platform=run.platform_file, workloads=[run.workload_file], scheduler=run.scheduler,
                   out_prefix=str(prefix), options=run.options, **given)


def _publish(temporary, final):
    """Make the finished run visible in one rename (replacing a failed attempt)."""
    if final.exists():
        stale = final.with_name(f".stale-{final.name}-{uuid.uuid4().hex[:8]}")
        os.rename(final, stale)
        os.rename(temporary, final)
        shutil.rmtree(stale, ignore_errors=True)
    else:
        os.rename(temporary, final)


def _rebase_run_record(prefix, final_prefix, row):
    """out_run.json and the row's error were written naming the temporary folder: name the final one."""
    def rebased(text):
        return text.replace(str(Path(prefix).parent), str(Path(final_prefix).parent))
    row["error"] = rebased(row.get("error", ""))
    path = Path(f"{prefix}_run.json")
    if path.exists():
        record = json.loads(path.read_text())
        record.setdefault("spec", {})["out_prefix"] = str(final_prefix)
        if record.get("error"):
            record["error"] = rebased(record["error"])
        write_text(path, json.dumps(record, indent=1))


def execute_run(run, out):
    """Simulate one planned run into ``OUT/runs/RUN_ID``; return its row. Never raises for a
    failed simulation: the row says ``status: failed`` with the error."""
    runs_dir = Path(out) / "runs"
    final = runs_dir / run.run_id
    temporary = runs_dir / f".tmp-{run.run_id}-{uuid.uuid4().hex[:8]}"
    temporary.mkdir(parents=True)
    prefix = temporary / "out"
    row = run.identity()
    started = time.perf_counter()
    try:
        nb_compute = engines.run(_spec(run, prefix), run.engine)["nb_compute"]
        row.update(metrics.summarize(prefix, nb_compute))
        row.update(status="ok", error="")
    except Interrupted as stop:
        shutil.rmtree(temporary, ignore_errors=True)  # not a result: the next sweep runs it again
        if stop.here:
            raise
        return {**row, "status": INTERRUPTED, "error": f"{stop}; {RESUME_HINT}"}
    except OutputError:
        raise  # a full disk is no result of the run: stop, and redo it on resume
    except BatioError as error:
        row.update(status="failed", error=str(error))
    except Exception as error:  # noqa: BLE001 - a bug must not stop the sweep: keep its traceback
        (temporary / "traceback.log").write_text(traceback.format_exc())
        row.update(status="failed", error=f"unexpected {type(error).__name__}: {error} "
                                          f"(traceback in {final / 'traceback.log'})")
    row["wall_time_s"] = time.perf_counter() - started
    if run.kind == "policy":
        from batio.fit import mark_record
        mark_record(prefix, run.scheduler_name, run.degraded)
    _rebase_run_record(prefix, final / "out", row)
    write_text(temporary / RESULT_FILE, json.dumps(row, indent=1, default=str))
    _publish(temporary, final)
    return row


def lost_run(run, error):
    """The row of a run whose worker died (killed, out of memory): interrupted, not
    a result of the run, so not written; the next sweep runs it again."""
    return {**run.identity(), "status": INTERRUPTED,
            "error": f"the run's worker was lost ({type(error).__name__}: {error}); {RESUME_HINT}"}


def read_result(run, out):
    path = Path(out) / "runs" / run.run_id / RESULT_FILE
    return json.loads(path.read_text()) if path.exists() else None


# -- running many, on Dask ---------------------------------------------------------------
def _worker_is_daemonic():
    return multiprocessing.current_process().daemon


@contextmanager
def _ctrl_c_ignored():
    """SIGINT ignored while the local workers start, which keep it so: Ctrl-C to the
    process group is then this process's to handle (closing the cluster), instead
    of a KeyboardInterrupt traceback from each worker."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def dask_client(workers=None, scheduler_address=None):
    """A Dask client on an existing cluster, or on a LocalCluster of ``workers`` processes."""
    import dask
    from dask.distributed import Client, LocalCluster
    cluster = None
    if scheduler_address:
        try:
            client = Client(scheduler_address, timeout="10s")
        except ValueError as error:  # not an address: Dask's own message names what it expected
            raise InputError("--scheduler-address", f"{scheduler_address!r} is not a Dask scheduler address "
                                                    f"({error}); expected e.g. tcp://10.0.0.1:8786") from None
        except (OSError, TimeoutError) as error:
            raise EngineError(f"--scheduler-address {scheduler_address}: no Dask scheduler answers ({error})") from None
        daemonic = [worker for worker, flag in client.run(_worker_is_daemonic).items() if flag]
        if daemonic:
            client.close()
            raise EngineError(f"the Dask workers at {scheduler_address} run as daemonic processes, which cannot "
                              "start the simulation processes; start them with "
                              f"DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker {scheduler_address}")
    else:
        # Dask's own notices (workers closing, a comm reset when batio is
        # killed) are not the user's business: failed runs are in results.csv.
        logging.getLogger("distributed").setLevel(logging.WARNING)
        # Each simulation runs in its own child process (SimGrid allows one
        # engine per process): workers must be allowed to have children.
        with dask.config.set({"distributed.worker.daemon": False}), _ctrl_c_ignored():
            cluster = LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.CRITICAL)
        client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_all(runs, out, workers=None, scheduler_address=None, retry_failed=False, progress=True):
    """Run the runs not finished yet: in this process one after the other when
    ``workers == 0``, else on Dask. Returns counts: planned, ran, skipped, failed."""
    out = Path(out)
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    for leftover in list(runs_dir.glob(".tmp-*")) + list(runs_dir.glob(".stale-*")):
        shutil.rmtree(leftover, ignore_errors=True)  # from a sweep that crashed mid-run
    todo = []
    for run in runs:
        result = read_result(run, out)
        if result is None or (retry_failed and result["status"] != "ok"):
            todo.append(run)
    counts = {"planned": len(runs), "ran": len(todo), "skipped": len(runs) - len(todo), "failed": 0}
    if not todo:
        return counts
    if workers:
        workers = min(workers, len(todo))  # more would only start and sit idle
    bar = progress_bar(len(todo), progress)
    try:
        if workers == 0:
            for run in todo:
                row = execute_run(run, out)
                counts["failed"] += row["status"] == "failed"
                bar.update()
        else:
            from dask.distributed import as_completed
            with dask_client(workers, scheduler_address) as client:
                # One run in flight per worker thread, the next submitted as one
                # ends: Dask assigns all submitted tasks to workers up front and
                # does not move hour-long ones, which left a worker idle while
                # another had a queue. This also runs the grid in its order.
                waiting = iter(todo)
                futures = {}

                def submit_next(done):
                    run = next(waiting, None)
                    if run is not None:
                        future = client.submit(execute_run, run, str(out), key=f"batio-{run.run_id}", pure=False)
                        futures[future] = run
                        done.add(future)

                in_flight = as_completed()
                for _ in range(max(1, sum(client.nthreads().values()))):
                    submit_next(in_flight)
                for future in in_flight:
                    try:
                        row = future.result()
                    except OutputError:
                        raise
                    except Exception as error:  # noqa: BLE001 - a dead worker: the run is to be redone
                        row = lost_run(futures[future], error)
                    counts["failed"] += row["status"] == "failed"
                    bar.set_postfix_str(f"{counts['failed']} failed", refresh=False)
                    bar.update()
                    submit_next(in_flight)
    finally:
        bar.close()
    return counts


# -- the table ------------------------------------------------------------------------------
def gather(runs, out, tau=metrics.DEFAULT_BSLD_TAU):
    """The tidy table of the policy runs (one row each) with the I/O slowdown from their reference runs;
    a run summarised with another bounded slowdown threshold than ``tau`` is summarised again."""
    out = Path(out)
    # A run without a result did not finish: a signal or a lost worker interrupted it.
    results = {run.run_id: read_result(run, out) or {**run.identity(), "status": INTERRUPTED,
                                                     "error": f"not finished; {RESUME_HINT}"}
               for run in runs}
    rows = []
    for run in runs:
        if run.kind != "policy":
            continue
        row = dict(results[run.run_id])
        if row["status"] == "ok" and row.get("bsld_tau") != tau:
            row.update(metrics.summarize(out / row["run_dir"] / "out", tau=tau))
        row["degraded"] = "; ".join(run.degraded)  # as this grid's check says, whenever the run was made
        row["mean_io_slowdown"] = row["max_io_slowdown"] = math.nan
        reference = results.get(run.reference_run)
        # Without its reference run a row has no I/O slowdown: say why.
        row["reference_error"] = reference["error"] if reference and reference["status"] != "ok" else ""
        if row["status"] == "ok" and reference and reference["status"] == "ok":
            ratios = metrics.job_io_slowdowns(out / row["run_dir"] / "out", out / reference["run_dir"] / "out")
            if len(ratios):
                row["mean_io_slowdown"], row["max_io_slowdown"] = float(ratios.mean()), float(ratios.max())
        for key, value in run.options.items():
            row[f"opt_{key}"] = json.dumps(value) if isinstance(value, (dict, list)) else value
        rows.append(row)
    table = pd.DataFrame(rows)
    first = ["run_id", "status", "error", "policy", "scheduler", "options", "platform", "workload", "seed", "engine"]
    metric_columns = [m for m in metrics.METRICS if m in table.columns]
    options = sorted(c for c in table.columns if c.startswith("opt_"))
    rest = [c for c in table.columns if c not in first + metric_columns + options and c != "kind"]
    table = table.reindex(columns=first + metric_columns + options + rest)
    table["seed"] = table["seed"].astype("Int64")
    return table


def write_results(table, out):
    path = Path(out) / RESULTS_FILE
    temporary = path.with_name(f".{path.name}.tmp")
    with writing(temporary, newline="") as stream:
        table.to_csv(stream, index=False)
    os.replace(temporary, path)
    return path


def read_results(out, config="CONFIG", *, partial=False):
    """The policy runs of the sweep output folder ``out`` as ``gather``
    tabulates them, split into (ok, failed) for a step that makes a paper's
    tables and figures; each failed run is logged. ``results.csv``, or with
    ``partial`` every run's ``result.json`` (a sweep writes ``results.csv``
    only at its end: a partial sweep is then usable, without the reference
    runs' I/O slowdown). ``seed`` is empty (<NA>) for a workload file;
    ``error`` is "" for a run that did not fail. InputError, naming the
    folder and the command to run, when it holds no run."""
    out = Path(out)
    if partial:
        rows = [json.loads(path.read_text()) for path in sorted(out.glob(f"runs/*/{RESULT_FILE}"))]
        table = pd.DataFrame([row for row in rows if row.get("kind") == "policy"])
    elif (out / RESULTS_FILE).is_file():
        table = pd.read_csv(out / RESULTS_FILE)
    else:
        table = pd.DataFrame()
    if table.empty:
        what = f"runs/*/{RESULT_FILE} of a policy run" if partial else RESULTS_FILE
        raise InputError(out, f"no {what}: run `batio sweep {config} --out {out}` first")
    # An all-empty column reads as floats (NaN): make it text.
    table["error"] = [error if isinstance(error, str) else "" for error in table.get("error", [None] * len(table))]
    table["seed"] = pd.array(table["seed"].where(table["seed"].notna(), None), dtype="Int64")
    failed = table["status"] != "ok"
    for row in table[failed].itertuples():
        logger.warning("run %s (%s) failed: %s", row.run_id, row.policy, row.error)
    return table[~failed].reset_index(drop=True), table[failed].reset_index(drop=True)


def check_engines_answer(engines):
    """Fail once, before any run, rather than in every run (checked on this machine only)."""
    if "docker" in engines:
        from batio.engines.docker import connect
        connect().close()
    if "batsim" in engines and shutil.which("batsim") is None:
        raise EngineError("engine batsim needs a `batsim` binary on PATH (Batsim 4.2), or use the docker engine")


def run_grid(grid, out, workers=None, scheduler_address=None, retry_failed=False, progress=True, title=None):
    """Plan, run (resuming), gather and report ``grid`` into ``out``; ``workers``: 0 runs
    one after the other in this process, N on a LocalCluster of N processes (None: one
    per CPU), unless ``scheduler_address`` names a Dask scheduler.
    Returns (results table, counts, path of report.md)."""
    from batio import html_report, report
    check_engines_answer(grid.engines)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs = plan(grid, out)
    try:
        counts = run_all(runs, out, workers, scheduler_address, retry_failed, progress)
    except (KeyboardInterrupt, Interrupted) as stop:
        table = gather(runs, out, grid.bsld_tau)
        write_results(table, out)
        unfinished = int((table["status"] == INTERRUPTED).sum())
        raise Interrupted(getattr(stop, "signum", signal.SIGINT),
                          f"{len(table) - unfinished} of {len(table)} runs finished; {out / RESULTS_FILE} marks the "
                          f"{unfinished} others {INTERRUPTED}: run the same command again to resume") from None
    table = gather(runs, out, grid.bsld_tau)
    write_results(table, out)
    report_path = report.write_report(table, out, baseline=grid.baseline, title=title or Path(grid.source).stem,
                                      made_from=grid.made_from or grid.source)
    html_report.write_folder_page(table, out, baseline=grid.baseline, title=title or Path(grid.source).stem)
    return table, counts, report_path

