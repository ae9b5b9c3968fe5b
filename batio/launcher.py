"""Loading a pybatsim scheduler file under one module name, and serving it.

pybatsim's launcher imports ``schedulers/backfill.py`` as ``schedulers.backfill``
after putting the file's folders on ``sys.path``, so batio's ``schedulers/``
folder would both load a second copy of every module that batio imports as
``batio.schedulers.backfill`` and take the name ``schedulers`` from pybatsim's
own bundled schedulers. Here each file has one module, whichever way it is
named (a catalog name, a file path or an import), kept in ``sys.modules``:

- a file of batio's ``schedulers/`` folder is ``batio.schedulers.STEM``, and
  one in a paper's sub-package ``batio.schedulers.PAPER.STEM``;
- a file of pybatsim's bundled schedulers is ``schedulers.STEM``, as pybatsim
  names it (the name ``schedulers`` stays pybatsim's);
- any other file is ``batio.scheduler_files.STEM_DIGEST``, one module per
  resolved path, with its folder and that folder's parent on ``sys.path``
  while it loads, as pybatsim allows for imports of its neighbours.

The class used is the one named after the file (``easyBackfill.py`` ->
``EasyBackfill``), instantiated as pybatsim does. ``main`` is pybatsim's
launcher (``pybatsim FILE -s ENDPOINT -o OPTIONS``) with this loading.
"""

import argparse
import hashlib
import importlib
import importlib.util
import json
import logging
from pathlib import Path
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
    if path.is_relative_to(batio_folder) and (path.parent == batio_folder or (path.parent / "__init__.py").is_file()):
        return ".".join([BATIO_PACKAGE, *path.relative_to(batio_folder).parent.parts, path.stem])
    if path.parent == pybatsim_schedulers_folder():
        return f"{PYBATSIM_PACKAGE}.{path.stem}"
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f"{FILE_PACKAGE}.{_identifier(path.stem)}_{digest}"


def _identifier(text):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in text)


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
