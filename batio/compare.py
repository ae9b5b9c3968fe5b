"""`batio compare`: several schedulers on one platform and one workload, side by side.

Design notes: docs/internals.md.
"""

import json
from pathlib import Path

from batio import catalog
from batio.catalog import is_batsched
from batio.engines import DEFAULT_ENGINE
from batio.errors import InputError
from batio.importers.common import parse_duration
from batio.report.metrics import DEFAULT_BSLD_TAU
from batio.sweep.config import MAX_SEEDS, Grid, Policy, WorkloadSource, check_grid, check_tau, is_generator
from batio.sweep.grid import run_grid
from batio.sweep.plan import load_generator
from batio.windows import window_count


def parse_schedulers(text):
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise InputError("--schedulers", "expected names separated by commas, e.g. fcfs,easy,conservative")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InputError("--schedulers", f"{duplicates[0]!r} is given twice; to compare option sets use "
                                         "`batio sweep` with a grid")
    return names


def parse_options_of(pairs, schedulers):
    """``--options-of NAME=JSON`` (repeated) -> {NAME: options}."""
    options = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise InputError("--options-of", f"expected NAME='{{\"key\": value}}', got {pair!r}")
        if name not in schedulers:
            raise InputError("--options-of", f"{name!r} is not one of --schedulers ({', '.join(schedulers)})")
        if name in options:
            # argparse's append keeps both: the first would be silently dropped.
            raise InputError("--options-of", f"{name!r} is given twice; give each scheduler's options once, in one "
                                             "JSON object")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError("--options-of", f"{name}: malformed JSON: {error}") from None
        if not isinstance(value, dict):
            raise InputError("--options-of", f"{name}: must be a JSON object, e.g. '{{\"backfill_max\": 2}}'")
        options[name] = value
    return options


def workload_source(name):
    if is_generator(name) and not Path(name).is_file():
        load_generator(name, "--workload", None)
        return WorkloadSource(name.rpartition(":")[2], generator=name)
    return WorkloadSource(Path(name).stem, path=str(Path(catalog.workload_path(name)).resolve()))


def windows_source(source, windows, count=None, warmup=None, cooldown=None):
    """The replicas of a trace: (a generator source of its windows, their number); see batio.windows."""
    if source.generator:
        raise InputError("--windows", f"cut a workload file (an imported trace) into windows, not the generator "
                                      f"{source.generator}: its replicas are --seeds")
    length = parse_duration(windows, "--windows")
    margins = {key: parse_duration(text, option) if text is not None else 0.0
               for key, text, option in (("warmup", warmup, "--window-warmup"),
                                         ("cooldown", cooldown, "--window-cooldown"))}
    count = window_count(source.path, length, count)
    args = {"path": source.path, "length": length, **margins, "count": count}
    return WorkloadSource(f"{source.label}-{windows}-windows", generator="batio.windows:trace_window",
                          args=args), count


def replicas(workload, source, seeds, windows, window_options):
    """The workload source of a comparison and its number of replicas (None
    for one run): the windows of a trace (``windows_source``) or the seeds of
    a generator, never both."""
    given = [key for key, value in (window_options or {}).items() if value is not None]
    if windows is None and given:
        raise InputError(f"--window-{given[0]}", "applies to the windows of a trace: give --windows LENGTH too")
    if windows is not None:
        if seeds is not None:
            raise InputError("--windows", "windows are the replicas of a trace, seeds those of a generator: "
                                          "give one of --windows and --seeds")
        source, seeds = windows_source(source, windows, **(window_options or {}))
    if seeds is not None:
        check_seeds(workload, source, seeds)
    return source, seeds


def check_seeds(workload, source, seeds):
    """Seeds apply to a generator, from 1 to MAX_SEEDS of them."""
    if source.path:
        raise InputError("--seeds", f"workload {workload!r} is a file, the same on every run: seeds apply to "
                                    "workload generators (--workload MODULE:FUNCTION, e.g. "
                                    "batio.workloads.demo:demo_workload)")
    if not 1 <= seeds <= MAX_SEEDS:
        raise InputError("--seeds", f"expected a number of seeds from 1 to {MAX_SEEDS}, got {seeds}")


def scheduler_label(name):
    """A scheduler file is labelled by its name without folder and suffix, as pybatsim names its class."""
    return Path(name).stem if not is_batsched(name) and (name.endswith(".py") or "/" in name) else name


def replica_flags(seeds, windows, window_options):
    """The command line's flags that give the replicas (``replicas``)."""
    return (([f"--windows {windows}"] if windows else [f"--seeds {seeds}"] if seeds else [])
            + [f"--window-{key} {value}" for key, value in (window_options or {}).items() if value is not None])


def run_flags(bsld_tau, baseline, engine, io_slowdown, allow_unfit):
    """The command line's flags that set how runs are made and compared."""
    return (([f"--bsld-tau {bsld_tau:g}"] if bsld_tau != DEFAULT_BSLD_TAU else [])
            + ([f"--baseline {baseline}"] if baseline else []) + [f"--engine {engine}"]
            + ([] if io_slowdown else ["--no-io-slowdown"]) + (["--allow-unfit"] if allow_unfit else []))


def comparison_grid(platform, workload, schedulers, options_of=(), seeds=None, baseline=None, engine=DEFAULT_ENGINE,
                    io_slowdown=True, run_options=None, windows=None, window_options=None, bsld_tau=DEFAULT_BSLD_TAU,
                    allow_unfit=False):
    """The grid of a comparison, from ``batio compare``'s arguments; ``window_options``:
    ``windows_source``'s count, warmup and cooldown."""
    names = parse_schedulers(schedulers) if isinstance(schedulers, str) else list(schedulers)
    options = parse_options_of(options_of, names)
    source = workload_source(workload)
    check_tau(bsld_tau, "--bsld-tau", None)
    source, seeds = replicas(workload, source, seeds, windows, window_options)
    labels = {name: scheduler_label(name) for name in names}
    if baseline is not None and baseline not in names:
        raise InputError("--baseline", f"{baseline!r} is not one of --schedulers ({', '.join(names)})")
    policies = [Policy(labels[name], name, options.get(name, {})) for name in names]
    command = " ".join([f"batio compare --platform {platform} --workload {workload} --schedulers {','.join(names)}"]
                       + [f"--options-of '{pair}'" for pair in options_of]
                       + replica_flags(seeds, windows, window_options)
                       + run_flags(bsld_tau, baseline, engine, io_slowdown, allow_unfit))
    platform_file = str(Path(catalog.platform_path(platform)).resolve())
    grid = Grid(source="batio compare", made_from=command, platforms=[(Path(platform).stem, platform_file)],
                workloads=[source], policies=policies, seeds=list(range(1, (seeds or 1) + 1)), engines=[engine],
                baseline=labels[baseline] if baseline is not None else policies[0].label,
                io_slowdown=io_slowdown, run_options=dict(run_options or {}), bsld_tau=bsld_tau,
                allow_unfit=allow_unfit)
    check_grid(grid)
    return grid


def compare(grid, out, workers=0, progress=True, force=False):
    """Run the comparison (one run after the other unless ``workers``); see ``sweep.run_grid``."""
    return run_grid(grid, out, workers=workers, progress=progress, force=force, command="batio compare",
                    title=f"comparison: {', '.join(p.label for p in grid.policies)}")
