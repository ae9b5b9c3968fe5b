"""A sweep's grid and its YAML form (docs/sweeps.md): read, checked, every error naming its field."""

from dataclasses import dataclass, field
import json
import logging
import math
from pathlib import Path

from batio import catalog, engines
from batio.catalog import is_batsched
from batio.engines import BATSCHED, DEFAULT_ENGINE, ENGINES
from batio.errors import InputError
from batio.inputs.spec import RUN_OPTIONS
from batio.inputs.workload import json_problem
from batio.readings import json_value
from batio.report import metrics
from batio.resolve import batsched_engines, refuse_unsupported
from batio.sweep.plan import check_run_option, load_generator, per_run_name

# Seeds of one grid at most: each is a run per policy, and the plan lists every run before the
# first starts (a hundred thousand seeds wrote 140 MB of plan before anything said no).
MAX_SEEDS = 1000

logger = logging.getLogger(__name__)

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
REQUIRED_KEYS = ("platforms", "workloads", "schedulers")
WORKLOAD_KEYS = ("generator", "args", "name")
SCHEDULER_KEYS = ("scheduler", "options", "grid", "label")


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
    engines: list = field(default_factory=lambda: [DEFAULT_ENGINE])
    baseline: str | None = None
    io_slowdown: bool = True
    run_options: dict = field(default_factory=dict)
    bsld_tau: float = metrics.DEFAULT_BSLD_TAU
    made_from: str | None = None   # what the report says the grid came from (default: source)
    allow_unfit: bool = False      # run policies that do not fit their inputs (batio.requirements), marked degraded

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
    reject_unknown_keys(config, CONFIG_KEYS, path, "")
    for key in REQUIRED_KEYS:
        if key not in config:
            raise InputError(path, f"missing: expected {CONFIG_KEYS[key]}", field=key)
    base = path.resolve().parent
    grid = Grid(
        source=str(path),
        platforms=[platform_entry(name, base, path, f"platforms[{i}]") for i, name in
                   enumerate(_list_of(config, "platforms", path))],
        workloads=[workload_entry(entry, base, path, f"workloads[{i}]") for i, entry in
                   enumerate(_list_of(config, "workloads", path))],
        policies=[policy for i, entry in enumerate(_list_of(config, "schedulers", path))
                  for policy in _policies(entry, base, path, f"schedulers[{i}]")],
        seeds=_seeds(config.get("seeds", [1]), path),
        engines=_engines(config.get("engines", [DEFAULT_ENGINE]), path),
        baseline=config.get("baseline"),
        io_slowdown=config.get("io_slowdown", True),
        run_options=run_options_entry(config.get("run_options", {}), path, per_run=True),
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


def platform_entry(name, base, source, where):
    if not isinstance(name, str):
        raise InputError(source, f"expected a platform file or bundled name, got {name!r}", field=where)
    try:
        path = catalog.platform_path(_as_input_path(name, base, ".xml"))
    except InputError as error:
        raise InputError(source, str(error), field=where) from None
    return (Path(name).stem, str(Path(path).resolve()))


def workload_entry(entry, base, source, where):
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
    reject_unknown_keys(entry, WORKLOAD_KEYS, source, where)
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
    reject_unknown_keys(entry, SCHEDULER_KEYS, source, where)
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
        per_run_name(value, source, f"{where}.options.{key}")
    for key, values in grid.items():
        for value in values:
            per_run_name(value, source, f"{where}.grid.{key}")
    scheduler = name if is_batsched(name) else _as_input_path(name, base, ".py")
    label = str(entry.get("label") or (name if is_batsched(name) else Path(name).stem))
    combinations: list[dict] = [{}]
    for key, values in grid.items():
        combinations = [{**done, key: value} for done in combinations for value in values]
    policies = []
    for combination in combinations:
        suffix = ",".join(f"{key}={json.dumps(value)}" for key, value in combination.items())
        policies.append(Policy(f"{label}[{suffix}]" if suffix else label, scheduler, {**options, **combination},
                               f"{where}.options"))
    return policies


def _seeds(value, source):
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SEEDS:
        return list(range(1, value + 1))
    if (isinstance(value, list) and 0 < len(value) <= MAX_SEEDS
            and all(isinstance(s, int) and not isinstance(s, bool) for s in value) and len(set(value)) == len(value)):
        return value
    raise InputError(source, f"expected {CONFIG_KEYS['seeds']} (distinct, at most {MAX_SEEDS}), got "
                             f"{json_value(value)}", field="seeds")


def _engines(value, source):
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not value or any(engine not in ENGINES for engine in value):
        raise InputError(source, f"expected {CONFIG_KEYS['engines']}, got {value!r}", field="engines")
    return value


def reject_unknown_keys(mapping, known, source, where):
    """An unknown key in a sweep file is an error naming it and the known ones."""
    for key in mapping:
        if key not in known:
            raise InputError(source, f"unknown key (known keys: {', '.join(known)})",
                             field=f"{where}.{key}" if where else key)


def run_options_entry(value, source, per_run=False):
    """Checked run options; with ``per_run``, a per-run value is checked once it is resolved (``plan``)."""
    if not isinstance(value, dict):
        raise InputError(source, f"expected {CONFIG_KEYS['run_options']}, got {value!r}", field="run_options")
    reject_unknown_keys(value, RUN_OPTIONS, source, "run_options")
    for key, given in value.items():
        if not (per_run and per_run_name(given, source, f"run_options.{key}")):
            check_run_option(key, given, source, f"run_options.{key}")
    return value


def check_tau(tau, source, where):
    """The bounded slowdown's threshold (``bsld_tau``, ``--bsld-tau``) is a number of seconds > 0."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau < math.inf:
        raise InputError(source, f"expected the bounded slowdown's threshold in seconds > 0, got {tau!r}",
                         field=where)


def check_grid(grid):
    """What a config and ``batio compare`` arguments must both satisfy, its engines available on this machine
    included."""
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
    # A run option an engine would ignore is refused, never recorded as if it ran.
    command_line = grid.source == "batio compare"
    for engine in grid.engines:
        refuse_unsupported(ENGINES[engine], grid.run_options, None if command_line else grid.source,
                           None if command_line else "run_options")
    unable = [engine for engine in grid.engines if BATSCHED not in ENGINES[engine].supports]
    for policy in grid.policies:
        try:
            catalog.scheduler_file_and_options(policy.scheduler, policy.options)
        except InputError as error:
            raise InputError(grid.source, str(error), field="schedulers") from None
        if is_batsched(policy.scheduler) and unable:
            able = " or ".join(f"[{name}]" for name in batsched_engines())
            raise InputError(grid.source, f"{policy.scheduler} is a batsched (C++) scheduler: it runs only "
                                          f"against real Batsim (engines: {able})", field="engines")
    engines.check_available(grid.engines)  # once, here, rather than in every run
