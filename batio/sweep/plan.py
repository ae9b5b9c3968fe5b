"""A grid's runs: its generated workloads, its reference runs, every policy checked against its
inputs (batio.requirements) with its per-run values resolved."""

from dataclasses import dataclass, field, replace
import importlib
import importlib.util
import json
import logging
import os
from pathlib import Path
import re
import uuid

from batio import requirements
from batio.errors import InputError, InvalidConfiguration
from batio.inputs.spec import RUN_OPTIONS, file_digest, valid_run_option
from batio.inputs.workload import load_workload
from batio.names import slug
from batio.outfiles import written
from batio.resolve import Resolved, resolve, spec_fields
from batio.sweep.run import PlannedRun

logger = logging.getLogger(__name__)

REFERENCE_SCHEDULER = "fcfs"
# Between two jobs of a reference workload: more than Batsim's message
# latencies, so that the next job never starts while the previous one ends.
REFERENCE_GAP_S = 1.0
# The reference run's I/O timeline is not used; a long period keeps its
# monitor from waking every second of a simulated time that sums walltimes.
REFERENCE_IO_SAMPLE_PERIOD = 1e6
# A whole option value in braces is a per-run value (docs/internals.md, batio/sweep/).
PER_RUN_VALUE = re.compile(r"\{([^{}]*)\}")
PER_RUN_VALUES = '"{seed}" (the workload seed) or "{workload.FIELD}" (a top-level field of the run\'s workload)'
WORKLOAD_FIELD = re.compile(r"workload\.([A-Za-z_][A-Za-z0-9_]*)")


# -- per-run values -----------------------------------------------------------------------
@dataclass
class WorkloadInstance:
    """One workload of the grid (a file, or a generator's workload for one seed), which its runs'
    per-run values (``"{seed}"``, ``"{workload.FIELD}"``) are resolved against."""
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
            name = per_run_name(value, source, f"{where}.{key}")
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
        """``run_options`` resolved as ``resolve`` does, each per-run value then checked as a run option."""
        resolved = self.resolve(run_options, source, "run_options")
        per_run = [key for key, value in run_options.items() if per_run_name(value, source, f"run_options.{key}")]
        for key in per_run:  # the others were checked when read
            check_run_option(key, resolved[key], source, f"run_options.{key}")
        return resolved


def check_run_option(key, given, source, where):
    if not valid_run_option(key, given):
        raise InputError(source, f"expected {RUN_OPTIONS[key]}, got {given!r}", field=where)


def per_run_name(value, source, where):
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


# -- workload generators ----------------------------------------------------------------
def load_generator(reference, source, where):
    """The function ``module:function`` or ``path/file.py:function`` names; InputError naming ``where``."""
    target, _, function = reference.rpartition(":")
    if target.endswith(".py") or "/" in target:
        if not Path(target).is_file():
            raise InputError(source, f"no such generator file {target}", field=where)
        spec = importlib.util.spec_from_file_location(f"batio_generator_{slug(Path(target).stem)}", target)
        if spec is None or spec.loader is None:  # a file not named .py
            raise InputError(source, f"generator file {target} is not a Python file (.py)", field=where)
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


def _workload_instances(grid, workloads_dir, digest):
    """Every workload of ``grid``: its files checked, its generators' workloads made (one per seed),
    each with its reference workload when the grid measures the I/O slowdown."""
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
            instances.append(WorkloadInstance(source.label, workload_file, seed, alone_file))
    return instances


# -- planning ---------------------------------------------------------------------------
def plan(grid, out):
    """Every run of ``grid`` (generating the workloads in ``OUT/workloads``), reference runs first.

    Per platform and workload: the per-run values resolved, each policy resolved once (batio.resolve:
    its declaration and its RunSpec, which every engine's run of it shares) and held against the
    inputs (``batio.requirements``: refused, naming the policy's field, unless ``allow_unfit``)."""
    workloads_dir = Path(out) / "workloads"
    digests = {}

    def digest(path):  # every input is hashed once, however many runs use it
        if path not in digests:
            digests[path] = file_digest(path)
        return digests[path]

    instances = _workload_instances(grid, workloads_dir, digest)
    references, runs = [], []
    for platform in grid.platforms:
        for instance in instances:
            where = f"(platform {platform[0]}, workload {instance.label})"
            # The per-run values of this workload, resolved once for all engines.
            given = [(policy, instance.resolve(policy.options, grid.source, policy.where)) for policy in grid.policies]
            run_options = instance.resolve_run_options(grid.run_options, grid.source)
            resolved = []
            for policy, options in given:  # the engines: checked by the grid (sweep.config.check_grid)
                found = _resolved(policy.scheduler, options, platform[1], instance.workload_file, run_options)
                try:
                    found.declaration.check_options()
                except InvalidConfiguration as error:  # an option the scheduler would refuse
                    raise InputError(grid.source, f"{error} {where}", field=policy.where) from None
                resolved.append(found)
            facts = requirements.InputFacts.of_files(platform[1], [instance.workload_file])
            policies, refused, fields = [], {}, []
            for (policy, options), found in zip(given, resolved):
                try:
                    unfit = requirements.check(found.declaration, options, facts, grid.allow_unfit)
                except requirements.Unfit as error:
                    refused.update(error.reasons_of)
                    fields.append(policy.where.removesuffix(".options"))
                    continue
                policies.append((policy, found.spec, {**run_options, **found.declaration.features}, unfit))
            if refused:  # every policy that does not fit is named, in one line
                raise InputError(grid.source, f"{requirements.Unfit(refused)} {where}",
                                 field=fields[0] if len(fields) == 1 else "schedulers")
            alone_run_options = {**run_options, "io_sample_period": REFERENCE_IO_SAMPLE_PERIOD}
            alone = None if instance.alone_file is None else _resolved(
                REFERENCE_SCHEDULER, {}, platform[1], instance.alone_file, alone_run_options).spec
            for engine in grid.engines:
                reference = None
                if alone is not None:
                    reference = PlannedRun.planned("reference", "alone", alone, platform[0], instance.label,
                                                   instance.seed, engine, alone_run_options, digest)
                    references.append(reference)
                for policy, spec, policy_run_options, unfit in policies:
                    run = PlannedRun.planned("policy", policy.label, spec, platform[0], instance.label, instance.seed,
                                             engine, policy_run_options, digest,
                                             reference.run_id if reference else None)
                    run.scheduler_name, run.degraded = policy.scheduler, tuple(unfit)
                    runs.append(run)
    return references + runs


def _resolved(name: str, options: dict, platform_file: str, workload_file: str, run_options: dict) -> Resolved:
    """``name`` resolved for one run of the grid, its options not yet checked: its RunSpec names its
    scheduler file resolved, as a worker in another folder finds it."""
    found = resolve(name, options, platform_file, [workload_file], "out", None, **spec_fields(run_options))
    file = found.declaration.file
    return found if file is None else replace(found, spec=replace(found.spec, scheduler=str(file)))
