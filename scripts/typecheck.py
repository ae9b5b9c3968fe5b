"""mypy over the project as it is imported: `python scripts/typecheck.py`
(arguments as mypy's; the files and settings are pyproject.toml's).

The top-level ``schedulers/``, ``platforms/`` and ``workloads/`` are
installed as ``batio.schedulers``... (pyproject.toml's ``package-dir``), a
mapping mypy does not know: plain ``mypy`` names them ``schedulers...`` and
sees every ``import batio.schedulers...`` as missing (``Any`` under
``ignore_missing_imports``), so a policy breaking a hook's signature passed.
This gives each of their files its installed module name before mypy builds;
errors keep the checkout's paths. It uses mypy's own option parser and build
(``mypy.main.process_options``, ``mypy.build.build``, as mypy's stubtest
does): no temporary tree to keep in step with the checkout.
"""

from pathlib import Path
import sys
import time
import tomllib

from mypy import build, util
from mypy.fscache import FileSystemCache
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent


def installed_names() -> dict[str, str]:
    """The module name mypy gives each mapped folder -> its installed name
    ({"schedulers": "batio.schedulers", ...}), from pyproject.toml."""
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {folder: package for package, folder in folders.items() if folder != package}


def as_imported(source: BuildSource, names: dict[str, str]) -> BuildSource:
    """``source`` under its installed module name (unchanged if not mapped)."""
    top, _, rest = source.module.partition(".")
    if top not in names or source.base_dir is None or Path(source.base_dir).resolve() != ROOT:
        return source
    module = names[top] + ("." + rest if rest else "")
    return BuildSource(source.path, module, source.text, source.base_dir, source.followed)


def main(args: list[str]) -> int:
    """mypy's exit status: 0 clean, 1 errors, 2 a blocking error."""
    fscache = FileSystemCache()
    sources, options = process_options(args, fscache=fscache)
    names = installed_names()
    sources = [as_imported(source, names) for source in sources]
    # A cache of its own: plain mypy's entries for the same files name other
    # modules, and reading them here gives stale errors.
    options.cache_dir = str(Path(options.cache_dir) / "as-imported")
    formatter = util.FancyFormatter(sys.stdout, sys.stderr, options.hide_error_codes)
    messages: list[str] = []

    def show(_path: str | None, new: list[str], serious: bool) -> None:
        messages.extend(new)
        for line in new:
            print(formatter.colorize(line) if options.color_output else line,
                  file=sys.stderr if serious else sys.stdout)

    started, blocked = time.time(), False
    try:
        build.build(sources, options, None, show, fscache, sys.stdout, sys.stderr)
    except build.CompileError:
        blocked = True
    errors, _, files = util.count_stats(messages)
    color = options.color_output
    if errors or blocked:
        print(formatter.format_error(errors, files, len(sources), blockers=blocked, use_color=color))
    else:
        print(formatter.format_success(len(sources), color), f"({time.time() - started:.1f} s)")
    return 2 if blocked else 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
