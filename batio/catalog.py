"""Names users type for bundled platforms, workloads and schedulers.

A name is either a path to an existing file or the name of a bundled one:
``platforms/NAME.xml``, ``workloads/NAME.json``, a scheduler of
``SCHEDULERS`` below, or one of pybatsim's bundled schedulers (e.g.
``easyBackfill``, ``fillerSched``).
"""

from importlib import resources
from pathlib import Path

from batio.errors import InputError
from batio.launcher import pybatsim_schedulers_folder

# batsched's C++ schedulers, named batsched:VARIANT: run by a `batsched`
# binary against real Batsim, never on the embedded engine.
BATSCHED_PREFIX = "batsched:"


def is_batsched(name):
    return name.startswith(BATSCHED_PREFIX)

# name -> (module file in batio's schedulers/, a paper's in its sub-folder, preset options[, Batsim features])
# Batsim features are RunSpec flags the scheduler cannot work without (e.g.
# "dynamic_jobs", "compute_sharing"); `batio run/compare/sweep` turn them on
# for the name, as a user would pass --enable-dynamic-jobs to Batsim.
# File loads are dynamic jobs run on nodes their jobs share (paper 004).
LOCALITY_FEATURES = ("dynamic_jobs", "compute_sharing")
SCHEDULERS: dict[str, tuple] = {
    "fcfs": ("backfill.py", {"backfill_max": 0}),
    "easy": ("backfill.py", {"backfill_max": 1}),
    "conservative": ("backfill.py", {"backfill_max": None}),
    "backfill": ("backfill.py", {}),
    "io_aware": ("workload_adaptive/ioAware.py", {}),
    "adaptive": ("workload_adaptive/workloadAdaptive.py", {}),
    "adaptive_naive": ("workload_adaptive/workloadAdaptive.py", {"two_group": False}),
    "iolist": ("list_vs_pack/ioList.py", {}),
    "iopack": ("list_vs_pack/ioPack.py", {}),
    "iopack-random": ("list_vs_pack/ioPack.py", {"packs": "Random"}),
    "iopack-max": ("list_vs_pack/ioPack.py", {"packs": "Max"}),
    "iopack-char": ("list_vs_pack/ioPack.py", {"packs": "Char"}),
    "equilibrio": ("equilibrio/equilibrio.py", {}),
    "equilibrio-listing": ("equilibrio/equilibrio.py", {"backfill_guard": False, "backfill_order": "fixed"}),
    "easy-ljf": ("backfill.py", {"backfill_max": 1, "order": "ljf"}),
    # Jobs start at their recorded start times (batio import jobsio): what `batio validate` runs.
    "replay": ("replay/replay.py", {}),
    # CATIOS and TIOAS predict each job's I/O from the bundled history by default.
    **{f"catios{suffix}{knowledge}": ("catios/catios.py", {**options, **demand})
       for suffix, options in (("", {}), ("-ljf", {"priority": "ljf"}), ("-mix", {"priority": "mix"}),
                               ("-greedy", {"reserve_first": False}))
       for knowledge, demand in (("", {"history": "catios_bw_history"}), ("-oracle", {"demand": "oracle"}))},
    "tioas": ("catios/tioas.py", {"backfill_max": 1, "history": "catios_bw_history"}),
    "tioas-oracle": ("catios/tioas.py", {"backfill_max": 1, "demand": "oracle"}),
    **{name: ("locality/locality.py", {"policy": policy, "backfill": backfill}, LOCALITY_FEATURES)
       for policy, plain in (("fcfs", "locality-fcfs"), ("eft", "locality-eft"), ("lea", "lea"), ("leo", "leo"),
                             ("lem", "lem"))
       for backfill, name in ((False, plain), (True, f"{plain}-bf"))},
}

# The bundled platform and workload each scheduler file's policies are made
# for (`batio parity` runs every catalog name on them); a name may differ
# from its file's.
BUNDLED_INPUTS = {
    "backfill.py": ("cluster16_pfs", "demo"),
    "workload_adaptive/ioAware.py": ("stria15_lustre", "stria_w2"),
    "workload_adaptive/workloadAdaptive.py": ("stria15_lustre", "stria_w2"),
    "list_vs_pack/ioList.py": ("periodic_rack", "periodic_mbn_a06"),
    "list_vs_pack/ioPack.py": ("periodic_rack", "periodic_mbn_a06"),
    "equilibrio/equilibrio.py": ("theta_quarter", "equilibrio_theta"),
    "catios/catios.py": ("catios_cluster", "catios_bw"),
    "catios/tioas.py": ("catios_cluster", "catios_bw"),
    "locality/locality.py": ("memcluster486", "memcluster486_slice"),
    "replay/replay.py": ("cluster16_pfs", "jobsio_demo"),
}
BUNDLED_INPUTS_OF_NAME = {"easy-ljf": ("catios_cluster", "catios_bw")}


def bundled_inputs(name):
    """(platform, workload) names a catalog scheduler runs on in the papers' studies."""
    return BUNDLED_INPUTS_OF_NAME.get(name) or BUNDLED_INPUTS[SCHEDULERS[name][0]]


def _bundled(package, suffix):
    folder = resources.files(package)
    return {Path(entry.name).stem: Path(str(entry)) for entry in folder.iterdir()
            if entry.name.endswith(suffix)}


def bundled_platforms():
    return _bundled("batio.platforms", ".xml")


def bundled_workloads():
    return _bundled("batio.workloads", ".json")


def pybatsim_schedulers():
    """pybatsim's bundled schedulers: its modules that define a class named
    after the file, as its launcher requires."""
    folder = pybatsim_schedulers_folder()
    return {path.stem: path for path in folder.glob("*.py")
            if f"class {path.stem[0].upper()}{path.stem[1:]}" in path.read_text()}


def _resolve(name, bundled, kind, suffix):
    path = Path(name)
    if path.suffix == suffix or "/" in name:
        if not path.is_file():
            raise InputError(name, f"no such {kind} file")
        return path
    if name in bundled:
        return bundled[name]
    raise InputError(name, f"unknown {kind}: neither a file nor a bundled {kind} "
                           f"(bundled: {', '.join(sorted(bundled)) or 'none'})")


def platform_path(name):
    return _resolve(name, bundled_platforms(), "platform", ".xml")


def workload_path(name):
    return _resolve(name, bundled_workloads(), "workload", ".json")


def batsim_features(name):
    """The Batsim features (RunSpec flag -> True) the named scheduler needs;
    none for a file or a pybatsim scheduler."""
    entry = SCHEDULERS.get(name, ())
    return {feature: True for feature in (entry[2] if len(entry) > 2 else ())}


def scheduler_file_and_options(name, options=None):
    """(scheduler file, options with the name's presets under the user's);
    ``batsched:VARIANT`` stays as it is."""
    options = dict(options or {})
    if is_batsched(name):
        if not name[len(BATSCHED_PREFIX):]:
            raise InputError(name, "expected batsched:VARIANT, e.g. batsched:easy_bf")
        return name, options
    if name in SCHEDULERS:
        module, presets = SCHEDULERS[name][:2]
        return Path(str(resources.files("batio.schedulers") / module)), {**presets, **options}
    pybatsim = pybatsim_schedulers()
    if name in pybatsim:
        return pybatsim[name], options
    path = Path(name)
    if path.suffix == ".py" or "/" in name:
        if not path.is_file():
            raise InputError(name, "no such scheduler file")
        if path.suffix != ".py":
            raise InputError(name, "a scheduler file is a Python file (.py) defining a pybatsim scheduler class")
        return path, options
    raise InputError(name, "unknown scheduler: neither a .py file, a batio scheduler "
                           f"({', '.join(SCHEDULERS)}) nor a pybatsim one ({', '.join(sorted(pybatsim))})")
