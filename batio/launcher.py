"""Loading a pybatsim scheduler file under one module name, and serving it.

pybatsim's launcher imports a file with its folders on ``sys.path``: batio's
policies would load a second time beside ``batio.schedulers.X``, and the
top-level folder ``schedulers/`` would take the name of pybatsim's bundled
schedulers. Here a file of batio's schedulers is ``batio.schedulers[.PAPER].STEM``,
one of pybatsim's ``schedulers.STEM``, any other ``batio.scheduler_files.STEM_DIGEST``
(one per resolved path, with its folder and that folder's parent on ``sys.path``
while it loads, as pybatsim allows for imports of its neighbours). ``main`` is
pybatsim's launcher (``pybatsim FILE -s ENDPOINT -o OPTIONS``) with this loading.
"""

import argparse
import hashlib
import importlib
import importlib.util
import json
import logging
from pathlib import Path
import re
import sys
import types

from batio.errors import BatioError, InputError

BATIO_PACKAGE = "batio.schedulers"
PYBATSIM_PACKAGE = "schedulers"
FILE_PACKAGE = "batio.scheduler_files"  # not a real package: a prefix that no import can reach by accident


def batio_schedulers_folder():
    return Path(str(importlib.import_module(BATIO_PACKAGE).__file__)).resolve().parent


def pybatsim_schedulers_folder():
    """pybatsim's bundled schedulers: the top-level package ``schedulers`` its wheel installs next to ``batsim``."""
    import batsim
    return Path(batsim.__file__).resolve().parent.parent / PYBATSIM_PACKAGE


def class_name(path):
    """pybatsim's rule: the class is named after the file, first letter upper-cased."""
    stem = Path(path).stem
    return stem[:1].upper() + stem[1:]


def module_name(path):
    """The one name under which the scheduler file ``path`` is loaded."""
    path = Path(path).resolve()
    batio_folder = batio_schedulers_folder()
    if path.is_relative_to(batio_folder) and (path.parent / "__init__.py").is_file():  # in a package of it
        return ".".join([BATIO_PACKAGE, *path.relative_to(batio_folder).parent.parts, path.stem])
    if path.parent == pybatsim_schedulers_folder():
        return f"{PYBATSIM_PACKAGE}.{path.stem}"
    stem = re.sub(r"\W", "_", path.stem)  # a valid identifier
    return f"{FILE_PACKAGE}.{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"


def load_module(path):
    """The module of the scheduler file ``path``, loaded once per process."""
    name = module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    if name.startswith(f"{PYBATSIM_PACKAGE}."):
        _pybatsim_package()
    if not name.startswith(f"{FILE_PACKAGE}."):
        return importlib.import_module(name)
    return _load_file(name, Path(path).resolve())


def _pybatsim_package():
    """pybatsim's ``schedulers`` package, loaded from its own folder: a folder
    named ``schedulers`` in the current directory must not stand in for it."""
    folder = pybatsim_schedulers_folder()
    package = sys.modules.get(PYBATSIM_PACKAGE)
    if package is None:
        spec = importlib.util.spec_from_file_location(PYBATSIM_PACKAGE, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        if spec is None or spec.loader is None:
            raise InputError(folder, "pybatsim's bundled schedulers are missing (is pybatsim 3.2.1 installed?)")
        package = _execute(PYBATSIM_PACKAGE, spec)
    elif Path(package.__file__ or "").resolve().parent != folder:
        raise InputError(package.__file__, f"this module holds the name {PYBATSIM_PACKAGE!r}, which pybatsim's "
                                           f"bundled schedulers ({folder}) need")
    return package


def _load_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(path, "not a Python file that can be imported")
    neighbours = [str(path.parent), str(path.parent.parent)]
    sys.path[:0] = neighbours
    try:
        return _execute(name, spec)
    finally:
        for entry in neighbours:
            sys.path.remove(entry)


def _execute(name, spec):
    """The module of ``spec``, registered as ``name`` while it runs (so that it
    can import itself) and unregistered if it fails."""
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def scheduler_class(path):
    """The class (or scheduling function) named after the file."""
    module = load_module(path)
    try:
        return getattr(module, class_name(path))
    except AttributeError:
        raise InputError(path, f"no scheduler class in this file (pybatsim expects a class named after the file: "
                               f"{class_name(path)})") from None


def instantiate(path, options):
    """A scheduler object from the file ``path``, as pybatsim's ``instanciate_scheduler`` makes it."""
    from batsim.batsim import BatsimScheduler
    found = scheduler_class(path)
    if isinstance(found, types.FunctionType):
        from batsim.sched import as_scheduler
        found = as_scheduler()(found)
    scheduler = found(options)
    if not isinstance(scheduler, BatsimScheduler):
        scheduler = scheduler()  # pybatsim treats what it got as a factory of the scheduler
    return scheduler


def _json_options(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError("--options", f"not JSON: {error}") from None


def main(argv=None):
    """``pybatsim FILE -s ENDPOINT -o OPTIONS [-t TIMEOUT] [-v LEVEL]``, loading FILE by ``instantiate``."""
    parser = argparse.ArgumentParser(prog="python -m batio.launcher", description=main.__doc__)
    parser.add_argument("scheduler", help="pybatsim scheduler file")
    parser.add_argument("-s", "--socket-endpoint", default="tcp://*:28000")
    parser.add_argument("-o", "--options", default="{}", help="the scheduler's options as JSON")
    parser.add_argument("-t", "--timeout", type=int, default=2000,
                        help="seconds to wait for Batsim's messages (0: no limit)")
    parser.add_argument("-v", "--verbosity", default="info", choices=["debug", "info", "warning", "error", "critical"])
    args = parser.parse_args(argv)
    logging.basicConfig(format="[pybatsim - %(asctime)s - %(name)s - %(levelname)s] %(message)s",
                        level=args.verbosity.upper())
    try:
        options = _json_options(args.options)
        scheduler = instantiate(args.scheduler, options)
    except BatioError as error:
        # One line, named as Python names errors: batio's socket mode finds it in this process's output.
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 2
    from batsim.tools.launcher import launch_scheduler
    return launch_scheduler(scheduler, args.socket_endpoint, None, options, args.timeout, protect=False)


if __name__ == "__main__":
    sys.exit(main())
