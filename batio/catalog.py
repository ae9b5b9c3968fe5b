"""Names users type for bundled platforms, workloads and schedulers.

A name is either a path to an existing file or the name of a bundled one:
``platforms/NAME.xml``, ``workloads/NAME.json``, a scheduler name that
schedulers/ or one of its paper folders declares (``SCHEDULERS`` below
gathers them, see ``discover``), or one of pybatsim's bundled schedulers
(e.g. ``easyBackfill``, ``fillerSched``). ``declaration`` is what a named
policy says of itself on its class (needs, options checked, the work it
performs), complete for ``batio.requirements`` to hold against the inputs.
"""

from dataclasses import dataclass
import difflib
import functools
import importlib
from importlib import resources
import logging
from pathlib import Path
import pkgutil
from typing import Any

from batio.errors import BatioError, InputError, InvalidConfiguration
from batio.launcher import BATIO_PACKAGE, batio_schedulers_folder, pybatsim_schedulers_folder, scheduler_class

logger = logging.getLogger(__name__)

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
    schedulers: dict[str, tuple]
    inputs_of_name: dict[str, list[str]]
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


def did_you_mean(name, known):
    """' (did you mean 'easy'?)' for a name close to one of ``known``, else ''."""
    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _resolve(name, bundled, kind, suffix):
    path = Path(name)
    if path.suffix == suffix or "/" in name:
        if not path.is_file():
            raise InputError(name, f"no such {kind} file{did_you_mean(path.stem, bundled) if '/' not in name else ''}")
        return path
    if name in bundled:
        return bundled[name]
    if path.is_file():  # a file in this folder, named without ./ or its usual suffix
        return path
    raise InputError(name, f"unknown {kind}{did_you_mean(name, bundled)}: neither a file nor a bundled {kind} "
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
    raise InputError(name, f"unknown scheduler{did_you_mean(name, [*SCHEDULERS, *pybatsim])}: neither a .py file, "
                           "a batio scheduler "
                           f"({', '.join(SCHEDULERS)}) nor a pybatsim one ({', '.join(sorted(pybatsim))})")


@dataclass(frozen=True)
class Declaration:
    """What a policy says of itself (``batio.requirements`` holds it against the inputs), with its options
    checked as its scheduler will check them, by ``settings`` (at once unless ``declaration`` is told not to)."""
    name: str                  # as the user typed it
    path: str                  # what a RunSpec names: its scheduler file as found, or batsched:VARIANT
    file: Path | None          # its scheduler file, resolved (None: batsched)
    module: str | None         # its path under batio's schedulers/ (BUNDLED_INPUTS' key)
    scheduler: Any             # its class (a batio.schedulers.options.Declared), when it declares itself; else None
    options: dict              # the options the scheduler receives: the name's presets under the user's
    features: dict             # the Batsim features it needs (RunSpec flag -> True): batsim_features
    performs: tuple
    bundled_platform: tuple | None  # (name, resolved file) of the platform its options' defaults describe
    performed_elsewhere: dict  # job field -> the catalog files whose policies alone carry out its work

    @functools.cached_property
    def settings(self) -> dict:
        """Every option's value, parsed by the scheduler (else ``options``); InvalidConfiguration
        on an option the scheduler would refuse at start-up."""
        if self.scheduler is None:
            return self.options
        try:
            return self.scheduler.parse_settings(self.options)
        except BatioError as error:
            raise InvalidConfiguration(f"invalid configuration: scheduler {self.name}: {error}") from None

    def check_options(self) -> dict:
        """Its ``settings``, parsed now: InvalidConfiguration on an option the scheduler would refuse."""
        return self.settings

    @property
    def requires(self) -> dict:
        """What it needs of its inputs (``batio.requirements.REQUIREMENT_KEYS``), for its settings."""
        return {} if self.scheduler is None else self.scheduler.requirements(self.settings)


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


@functools.cache
def performers():
    """Job field -> the catalog scheduler files whose policies carry out the work it stands for."""
    found: dict[str, list[str]] = {}
    for module in dict.fromkeys(entry[0] for entry in SCHEDULERS.values()):
        scheduler = _declaring_class(str((batio_schedulers_folder() / module).resolve()))
        for key in getattr(scheduler, "PERFORMS", ()):
            found.setdefault(key, []).append(module)
    return found


def declaration(name: str, options: dict | None = None, check_options: bool = True) -> Declaration:
    """The declaration of the scheduler ``name`` (as typed) with ``options``; InvalidConfiguration
    on an option the scheduler would refuse at start-up, unless not ``check_options``: then the
    first use of its ``settings`` (or ``requires``) raises it (batio.requirements reads the inputs first)."""
    path, merged = scheduler_file_and_options(name, options)
    features = batsim_features(name)
    file = None if is_batsched(name) else Path(path).resolve()
    module = _module_key(file) if file else None
    bundled = BUNDLED_INPUTS_OF_NAME.get(name) or BUNDLED_INPUTS.get(module)
    bundled_platform = (bundled[0], Path(platform_path(bundled[0])).resolve()) if bundled else None
    scheduler = _declaring_class(str(file)) if file else None
    performs = tuple(scheduler.PERFORMS) if scheduler is not None else ()
    declared = Declaration(name, str(path), file, module, scheduler, merged, features, performs, bundled_platform,
                           {key: modules for key, modules in performers().items() if key not in performs})
    if check_options:
        declared.check_options()
    return declared
