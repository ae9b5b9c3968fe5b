"""A grid's runs: its generated workloads, its reference runs and the id of every run."""

from dataclasses import dataclass
import hashlib
import json
import logging
import os
from pathlib import Path
import uuid

from batio import __version__, catalog
from batio.catalog import is_batsched
from batio.errors import InputError
from batio.inputs.spec import file_digest
from batio.inputs.workload import load_workload
from batio.names import slug
from batio.outfiles import written
from batio.sweep.config import WorkloadInstance, load_generator

logger = logging.getLogger(__name__)

REFERENCE_SCHEDULER = "fcfs"
# Between two jobs of a reference workload: more than Batsim's message
# latencies, so that the next job never starts while the previous one ends.
REFERENCE_GAP_S = 1.0
# The reference run's I/O timeline is not used; a long period keeps its
# monitor from waking every second of a simulated time that sums walltimes.
REFERENCE_IO_SAMPLE_PERIOD = 1e6


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

# -- workload generators ----------------------------------------------------------------
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
            instances.append(WorkloadInstance(source.label, workload_file, seed, alone_file))
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
            # The per-run values of this workload, resolved once for all engines.
            alone_run_options = (instance.resolve_run_options(reference_run_options, grid.source)
                                 if instance.alone_file else None)
            resolved = [(policy, scheduler, instance.resolve(options, grid.source, policy.where),
                         instance.resolve_run_options(run_options, grid.source))
                        for policy, scheduler, options, run_options in policies]
            for engine in grid.engines:
                reference = None
                if instance.alone_file:
                    reference = _planned("reference", "alone", str(Path(reference_scheduler).resolve()),
                                         reference_options, platform, label, instance.alone_file, seed, engine,
                                         alone_run_options, digest)
                    references.append(reference)
                for policy, scheduler, options, run_options in resolved:
                    run = _planned("policy", policy.label, scheduler, options, platform, label,
                                   instance.workload_file, seed, engine, run_options, digest,
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
            declared = catalog.declaration(policy.scheduler, options)
            unfit[policy.label] = tuple(fit.check(declared, options, facts, grid.allow_unfit))
        except fit.InvalidConfiguration as error:
            where = policy.where.removesuffix(".options") if isinstance(error, fit.Unfit) else policy.where
            raise InputError(grid.source, f"{error} (platform {platform[0]}, workload {instance.label})",
                             field=where) from None
    return unfit
