"""Whether a policy fits its inputs: the one check of `batio run`, `compare`, `sweep` and `matrix`.

A policy declares itself next to its code, on its scheduler class
(``schedulers/backfill.py``'s ``QueueScheduler``): ``PAPER``, ``OPTIONS``,
``REQUIRES`` (or ``requirements(settings)`` when its needs depend on an
option; keys ``REQUIREMENT_KEYS``) and ``PERFORMS``. ``catalog.declaration``
reads them and checks the options as the scheduler will; ``unmet`` lists what
the inputs (``InputFacts``) lack. A policy that does not fit is refused before
time 0 (``Unfit``, an ``InvalidConfiguration``) unless the user allows it, and then its
results are marked degraded (in the run's record, the ``marks`` of
``engines.run``, and the ``degraded`` column of a sweep's table). Schedulers that declare nothing, and files outside
batio's own schedulers (pybatsim's, a user's: not imported before the run),
fit every input.
"""

from dataclasses import dataclass
import json
import logging
import math
from pathlib import Path

from batio import catalog
from batio.errors import InputError, InvalidConfiguration
from batio.inputs.platform import DEFAULT_MASTER_HOST, read_properties
from batio.inputs.spec import RunSpec
from batio.inputs.workload import load_workload
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
ALLOW_HINT_SEVERAL = "--allow-unfit runs them anyway, their results marked degraded"


class Unfit(InvalidConfiguration):
    """Policies whose needs their inputs do not meet: name -> the reasons (``unmet``)."""

    def __init__(self, reasons_of):
        self.reasons_of = dict(reasons_of)
        if len(self.reasons_of) == 1:
            [(name, reasons)] = self.reasons_of.items()
            super().__init__(f"{name} does not fit these inputs: {'; '.join(reasons)} ({ALLOW_HINT})")
            return
        names = list(self.reasons_of)
        super().__init__(f"{', '.join(names[:-1])} and {names[-1]} do not fit these inputs: "
                         + "; ".join(f"{name} ({'; '.join(reasons)})" for name, reasons in self.reasons_of.items())
                         + f" ({ALLOW_HINT_SEVERAL})")


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
    for key, modules in declared.performed_elsewhere.items():
        carrying = sum(key in job for job in facts.jobs)
        if carrying:
            reasons.append(f"{carrying} of {len(facts.jobs)} jobs carry field '{key}', work that only the policies "
                           f"of {', '.join(modules)} carry out: this one would run the jobs without it")
    bundled = declared.bundled_platform
    if bundled and bundled[1] != facts.platform:
        for option in needs.get("options", ()):
            if option not in given_options:
                reasons.append(f"needs option '{option}' from the input (its default describes {bundled[0]}), "
                               "which this input does not give")
    return reasons


def check(declared, options, facts, allow_unfit=False):
    """What the policy ``declared`` (a ``catalog.Declaration`` of the ``options`` as given) lacks on
    ``facts`` (its degradation, when allowed); Unfit when it does not fit and ``allow_unfit`` is false."""
    name = declared.name
    reasons = unmet(declared, facts, options or {})
    if reasons and not allow_unfit:
        raise Unfit({name: reasons})
    if reasons:
        logger.warning("%s does not fit these inputs, run anyway (degraded): %s", name, "; ".join(reasons))
    return reasons


def check_run(declared: catalog.Declaration, options: dict, spec: RunSpec, allow_unfit: bool = False,
              strict: bool = True) -> list:
    """What the policy ``declared`` (by batio.resolve, its options not yet checked) lacks on the inputs
    of ``spec``, as ``check``; ``options``: as given; ``strict``: the workloads checked as the embedded
    engine checks them. The inputs are read before the options are checked: a broken file is the
    error reported first."""
    facts = InputFacts.of_files(spec.platform, spec.workloads, strict=strict)
    return check(declared, options, facts, allow_unfit)
