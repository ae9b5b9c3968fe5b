"""Whether a policy fits its inputs: the one check of `batio run`, `compare`, `sweep` and `matrix`.

A policy declares itself next to its code, on its scheduler class
(``schedulers/backfill.py``'s ``QueueScheduler``): ``PAPER``, ``OPTIONS``,
``REQUIRES`` (or ``requirements(settings)`` when its needs depend on an
option; keys ``REQUIREMENT_KEYS``) and ``PERFORMS``. ``declaration`` reads
them and checks the options as the scheduler will; ``unmet`` lists what the
inputs (``InputFacts``) lack. A policy that does not fit is refused before
time 0 (``Unfit``, an ``InvalidConfiguration``) unless the user allows it, and then its
results are marked degraded (``mark_record`` and the ``degraded`` column of
a sweep's table). Schedulers that declare nothing, and files outside
batio's own schedulers (pybatsim's, a user's: not imported before the run),
fit every input.
"""

from dataclasses import dataclass
import functools
import json
import logging
import math
from pathlib import Path

from batio import catalog
from batio.errors import BatioError, InputError, InvalidConfiguration
from batio.inputs.platform import DEFAULT_MASTER_HOST, read_properties
from batio.inputs.workload import load_workload
from batio.launcher import batio_schedulers_folder, scheduler_class
from batio.schedulers.jobio import bytes_moved

logger = logging.getLogger(__name__)

REQUIREMENT_KEYS = {
    "storage": "a storage host (a host whose role is 'storage')",
    "io": "jobs whose profiles move bytes to or from storage",
    "storage_property": "a property that exactly one storage host carries",
    "host_properties": "numeric properties that every compute host carries",
    "job_fields": "fields that every job carries",
    "single_host_jobs": "every job asks for one host",
    "options": "options the input must give unless its platform is the scheduler's bundled one, "
               "which their defaults describe",
}
ALLOW_HINT = "--allow-unfit runs it anyway, its results marked degraded"


class Unfit(InvalidConfiguration):
    """A policy whose needs its inputs do not meet."""


@dataclass
class Declaration:
    """What a policy says of itself, with its options checked."""
    name: str                  # as the user typed it
    file: Path | None          # its scheduler file (None: batsched)
    module: str | None         # its path under batio's schedulers/ (catalog.BUNDLED_INPUTS' key)
    scheduler: type | None     # its class, when it declares itself
    settings: dict             # every option's value, the name's presets included
    requires: dict
    performs: tuple


def _module_key(path):
    path = Path(path).resolve()
    folder = batio_schedulers_folder()
    return path.relative_to(folder).as_posix() if path.is_relative_to(folder) else None


@functools.cache
def _declaring_class(path):
    """The scheduler class of ``path`` when it declares its needs, else None.

    Only batio's own scheduler files are imported here, in the command's
    process: a user's file runs its import under the run's ``--timeout`` and
    in the engine's process group (a file that loops or forks while imported
    must not hang or outlive batio), so it is checked by the run, not before.
    A file that cannot be loaded is left to the run, which reports it as it always has."""
    if not Path(path).resolve().is_relative_to(batio_schedulers_folder()):
        logger.debug("%s: a user's scheduler file, not imported before the run", path)
        return None
    try:
        found = scheduler_class(path)
    except Exception:  # noqa: BLE001 - the run reports the error in its own words
        logger.debug("%s: not checked before the run (it does not load)", path, exc_info=True)
        return None
    return found if isinstance(found, type) and hasattr(found, "requirements") else None


def declaration(name, options=None):
    """The declaration of the scheduler ``name`` (as typed) with ``options``; InvalidConfiguration
    on an option the scheduler would refuse at start-up."""
    path, merged = catalog.scheduler_file_and_options(name, options)
    if catalog.is_batsched(name):
        return Declaration(name, None, None, None, merged, {}, ())
    scheduler = _declaring_class(str(Path(path).resolve()))
    if scheduler is None:
        return Declaration(name, Path(path), _module_key(path), None, merged, {}, ())
    try:
        settings = scheduler.parse_settings(merged)
    except BatioError as error:
        raise InvalidConfiguration(f"invalid configuration: scheduler {name}: {error}") from None
    return Declaration(name, Path(path), _module_key(path), scheduler, settings,
                       scheduler.requirements(settings), tuple(scheduler.PERFORMS))


@functools.cache
def performers():
    """Job field -> the catalog scheduler files whose policies carry out the work it stands for."""
    found = {}
    for module in dict.fromkeys(entry[0] for entry in catalog.SCHEDULERS.values()):
        scheduler = _declaring_class(str((batio_schedulers_folder() / module).resolve()))
        for key in getattr(scheduler, "PERFORMS", ()):
            found.setdefault(key, []).append(module)
    return found


@dataclass
class InputFacts:
    """What the requirements are checked against."""
    platform: Path             # the platform file, resolved
    storage: dict              # storage host -> its properties
    compute: dict              # compute host -> its properties
    jobs: list                 # the workloads' jobs (dicts)
    does_io: bool

    @classmethod
    def of(cls, platform_path, *workloads):
        """The facts of a platform file and workloads (parsed JSON)."""
        properties, _ = read_properties(platform_path)
        storage = {host: props for host, props in properties.items() if props.get("role") == "storage"}
        compute = {host: props for host, props in properties.items()
                   if props.get("role", "compute_node") == "compute_node" and host != DEFAULT_MASTER_HOST}
        does_io = any(sum(bytes_moved(workload["profiles"][job["profile"]], workload["profiles"], job["res"])) > 0
                      for workload in workloads for job in workload["jobs"])
        jobs = [job for workload in workloads for job in workload["jobs"]]
        return cls(Path(platform_path).resolve(), storage, compute, jobs, does_io)

    @classmethod
    def of_files(cls, platform_path, workload_paths, strict=True):
        """The facts of files, each checked first as the embedded engine checks it (one line naming
        what is wrong); not ``strict``, only read, for real Batsim, which runs profiles it does not."""
        workloads = []
        for index, path in enumerate(workload_paths):
            if strict:  # read once: the checked workload keeps its jobs as given
                loaded = load_workload(path, f"w{index}")
                workloads.append({"jobs": loaded.raw_jobs, "profiles": loaded.profiles})
                continue
            try:
                workloads.append(json.loads(Path(path).read_text()))
            except (OSError, ValueError, RecursionError) as error:
                raise InputError(path, f"not a readable JSON workload: {error}") from None
        try:
            return cls.of(platform_path, *workloads)
        except (KeyError, TypeError, AttributeError) as error:
            raise InputError(workload_paths[0], f"not a Batsim workload: {type(error).__name__}: {error}") from None


def _numeric(value):
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def unmet(declared, facts, given_options):
    """Why the declared policy does not fit the input: one reason per unmet requirement.
    ``given_options``: the options the user (or the input) gave, presets aside."""
    needs = declared.requires
    reasons = []
    if needs.get("storage") and not facts.storage:
        reasons.append("no storage host (no host has role 'storage')")
    if needs.get("io") and not facts.does_io:
        reasons.append("no job moves bytes to or from storage (the profiles only compute or wait)")
    for prop in needs.get("storage_property", ()):
        carriers = [host for host, props in facts.storage.items() if prop in props]
        if len(carriers) != 1:
            reasons.append(f"needs exactly one storage host with property '{prop}', found {len(carriers)}")
    lacking = {prop: sum(not _numeric(props.get(prop)) for props in facts.compute.values())
               for prop in needs.get("host_properties", ())}
    if any(lacking.values()):
        reasons.append(f"compute hosts lack numeric properties (hosts lacking, of {len(facts.compute)}): "
                       + ", ".join(f"'{prop}' ({count})" for prop, count in lacking.items() if count))
    lacking = {key: sum(key not in job for job in facts.jobs) for key in needs.get("job_fields", ())}
    if any(lacking.values()):
        reasons.append(f"jobs lack fields (jobs lacking, of {len(facts.jobs)}): "
                       + ", ".join(f"'{key}' ({count})" for key, count in lacking.items() if count))
    if needs.get("single_host_jobs"):
        wide = [job for job in facts.jobs if job["res"] != 1]
        if wide:
            reasons.append(f"{len(wide)} of {len(facts.jobs)} jobs ask for more than one host "
                           f"(e.g. job {wide[0]['id']}: {wide[0]['res']})")
    for key, modules in performers().items():
        carrying = sum(key in job for job in facts.jobs)
        if key not in declared.performs and carrying:
            reasons.append(f"{carrying} of {len(facts.jobs)} jobs carry field '{key}', work that only the policies "
                           f"of {', '.join(modules)} carry out: this one would run the jobs without it")
    bundled = catalog.BUNDLED_INPUTS_OF_NAME.get(declared.name) or catalog.BUNDLED_INPUTS.get(declared.module)
    if bundled and Path(catalog.platform_path(bundled[0])).resolve() != facts.platform:
        for option in needs.get("options", ()):
            if option not in given_options:
                reasons.append(f"needs option '{option}' from the input (its default describes {bundled[0]}), "
                               "which this input does not give")
    return reasons


def check(name, options, facts, allow_unfit=False):
    """The declaration of ``name`` and what it lacks on ``facts`` (its degradation, when allowed);
    InvalidConfiguration when it does not fit and ``allow_unfit`` is false."""
    declared = declaration(name, options)
    reasons = unmet(declared, facts, options or {})
    if reasons and not allow_unfit:
        raise Unfit(f"{name} does not fit these inputs: {'; '.join(reasons)} ({ALLOW_HINT})")
    if reasons:
        logger.warning("%s does not fit these inputs, run anyway (degraded): %s", name, "; ".join(reasons))
    return declared, reasons


def check_run(name, options, spec, allow_unfit=False, strict=True):
    """What the policy ``name`` with ``options`` (as given) lacks on the inputs of ``spec`` (a RunSpec),
    as ``check``; ``strict``: the workloads checked as the embedded engine checks them."""
    facts = InputFacts.of_files(spec.platform, spec.workloads, strict=strict)
    return check(name, options, facts, allow_unfit)[1]


def mark_record(prefix, name, degraded):
    """Record in ``PREFIX_run.json`` the scheduler name as typed and, for an unfit policy run
    anyway, why its result is degraded."""
    path = Path(f"{prefix}_run.json")
    if not path.exists():
        return
    record = json.loads(path.read_text())
    record["scheduler_name"] = name
    record["degraded"] = list(degraded)
    path.write_text(json.dumps(record, indent=1))
