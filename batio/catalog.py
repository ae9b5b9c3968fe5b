"""Names users type for bundled platforms, workloads and schedulers.

A name is either a path to an existing file or the name of a bundled one:
``platforms/NAME.xml``, ``workloads/NAME.json``, a scheduler name that
schedulers/ or one of its paper folders declares (``SCHEDULERS`` below
gathers them, see ``discover``), or one of pybatsim's bundled schedulers
(e.g. ``easyBackfill``, ``fillerSched``).
"""

import importlib
from importlib import resources
from pathlib import Path
import pkgutil

from batio.errors import InputError, InvalidConfiguration
from batio.launcher import BATIO_PACKAGE, pybatsim_schedulers_folder

# batsched's C++ schedulers, named batsched:VARIANT: run by a `batsched`
# binary against real Batsim, never on the embedded engine.
BATSCHED_PREFIX = "batsched:"


def is_batsched(name):
    return name.startswith(BATSCHED_PREFIX)


def discover(package=BATIO_PACKAGE):
    """The catalog's tables, gathered from the ``__init__.py`` of ``package``
    and of each of its sub-packages (a paper's folder), in name order.

    Each declares, file names relative to its folder: ``SCHEDULERS``, name ->
    (file, preset options); ``BUNDLED_INPUTS``, file -> the bundled platform
    and workload its policies are made for (`batio parity` runs every name on
    them); and where needed ``BUNDLED_INPUTS_OF_NAME``, name -> a name's own,
    and ``BATSIM_FEATURES``, the RunSpec flags (e.g. "dynamic_jobs") its
    policies cannot work without, which `batio run/compare/sweep` turn on as
    a user passes --enable-dynamic-jobs to Batsim.

    Returns (``SCHEDULERS``: name -> (file, presets[, features]),
    ``BUNDLED_INPUTS``, ``BUNDLED_INPUTS_OF_NAME``), files relative to
    ``package``'s folder (``"catios/catios.py"``)."""
    root = importlib.import_module(package)
    folders = [root] + [importlib.import_module(f"{package}.{found.name}")
                        for found in pkgutil.iter_modules(root.__path__) if found.ispkg]
    schedulers, inputs, inputs_of_name = {}, {}, {}
    for folder in folders:
        prefix = folder.__name__.removeprefix(package).lstrip(".").replace(".", "/")
        features = tuple(getattr(folder, "BATSIM_FEATURES", ()))
        for name, (file, presets) in getattr(folder, "SCHEDULERS", {}).items():
            if name in schedulers:
                raise InvalidConfiguration(f"{folder.__name__} declares the scheduler name {name!r}, "
                                           f"which {schedulers[name][0]} already has")
            schedulers[name] = (f"{prefix}/{file}".lstrip("/"), presets, *((features,) if features else ()))
        inputs.update({f"{prefix}/{file}".lstrip("/"): pair
                       for file, pair in getattr(folder, "BUNDLED_INPUTS", {}).items()})
        inputs_of_name.update(getattr(folder, "BUNDLED_INPUTS_OF_NAME", {}))
    return schedulers, inputs, inputs_of_name


SCHEDULERS, BUNDLED_INPUTS, BUNDLED_INPUTS_OF_NAME = discover()


def bundled_inputs(name):
    """(platform, workload) names a catalog scheduler runs on in the papers' studies."""
    return BUNDLED_INPUTS_OF_NAME.get(name) or BUNDLED_INPUTS[SCHEDULERS[name][0]]


def scheduler_file(file):
    """The path of a catalog file (``"catios/catios.py"``), in its package's folder."""
    folder, _, name = file.rpartition("/")
    package = importlib.import_module(".".join([BATIO_PACKAGE, *filter(None, folder.split("/"))]))
    return Path(str(package.__file__)).parent / name


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
        file, presets = SCHEDULERS[name][:2]
        return scheduler_file(file), {**presets, **options}
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
