"""`batio list` and `batio describe NAME`: what a policy is, from what its class declares.

The same declarations (``PAPER``, ``OPTIONS``, ``REQUIRES``) are the ones
``batio.requirements`` checks, so what `describe` prints is what a run is refused for.
"""

import re

from batio import catalog, requirements
from batio.errors import InputError
from batio.schedulers.options import as_json

# The seed papers' authors (../shared/seeds/README.md), which every attribution names.
AUTHORS = {"000": "Goponenko, Allan, Brandt, Dechev", "001": "Jeannot, Pallez, Vidal",
           "002": "Tseng, Kawai, Takahashi, Takizawa", "003": "Özden, Tarraf, Wolf",
           "004": "Gonthier, Marchal, Thibault, Larsson, Nettelblad"}
# Policies older than every paper: the papers compare with them, none introduced them.
BASELINES = {"fcfs": "first come, first served, without backfilling",
             "easy": "EASY backfilling (Lifka, JSSPP 1995)",
             "conservative": "conservative backfilling (Mu'alem and Feitelson, IEEE TPDS 2001)",
             "backfill": "Slurm's backfill, its depth set by backfill_max (0: FCFS, 1: EASY, null: conservative)",
             "easy-ljf": "EASY backfilling with the longest job first (paper 002's LJF-BF)"}
_DECLARED = re.compile(r"(?:paper|seed) (\d{3})(?: \(([^)]*)\))?,? ?(.*)", re.S)


def attribution(name, text):
    """A policy's credit, one form for all: a classic baseline, or
    'paper NNN (authors[, venue]): what, where' from its class's PAPER ``text``."""
    if name in BASELINES:
        return f"classic baseline: {BASELINES[name]}"
    match = _DECLARED.fullmatch(text or "")
    if not match or match.group(1) not in AUTHORS:
        return text or "-"
    number, inside, rest = match.groups()
    authors = AUTHORS[number]
    venue = topic = ""
    if inside and inside.startswith(authors.split(",")[0]):
        venue = inside[len(authors):] if inside.startswith(authors) else ""
    elif inside:
        topic = inside
    where = ", ".join(part for part in (topic, rest.strip()) if part)
    return f"paper {number} ({authors}{venue})" + (f": {where}" if where else "")


def _paper(declared):
    return attribution(declared.name, getattr(declared.scheduler, "PAPER", ""))


def _requirement(key, value):
    meaning = requirements.REQUIREMENT_KEYS[key]
    if value is True:
        return meaning
    return f"{meaning}: {', '.join(value)}" if value else ""


def list_lines():
    """One line per catalog policy: its name, presets and paper; then pybatsim's names."""
    lines = []
    width = max(map(len, catalog.SCHEDULERS))
    for name, (module, presets, *_) in catalog.SCHEDULERS.items():
        declared = catalog.declaration(name)
        setting = ", ".join(f"{key}={as_json(value)}" for key, value in presets.items())
        lines.append(f"{name:<{width}}  {module}{f' ({setting})' if setting else ''}: {_paper(declared)}")
    lines.append(f"{'(pybatsim)':<{width}}  {', '.join(sorted(catalog.pybatsim_schedulers()))}")
    return lines


def describe_lines(name):
    """What ``batio describe NAME`` prints: paper, file, needs and every option."""
    if name not in catalog.SCHEDULERS and name not in catalog.pybatsim_schedulers() and not name.endswith(".py"):
        known = [*catalog.SCHEDULERS, *catalog.pybatsim_schedulers()]
        raise InputError(name, f"not a scheduler batio knows{catalog.did_you_mean(name, known)}: see `batio list` "
                               "(or give a .py file)")
    declared = catalog.declaration(name)
    presets = catalog.SCHEDULERS.get(name, (None, {}))[1]
    lines = [f"{name}: {_paper(declared)}", f"file: {declared.file}"]
    if presets:
        lines.append("presets: " + ", ".join(f"{key}={as_json(value)}" for key, value in presets.items()))
    if declared.scheduler is None:
        return lines + ["declares no needs and no options of its own (not a batio policy)"]
    needs = [text for key, value in declared.requires.items() if (text := _requirement(key, value))]
    needs += [f"a job field it carries out itself: {key}" for key in declared.performs]
    lines += ["needs from platform and workload:"] + [f"  - {need}" for need in needs or ["nothing"]]
    lines.append("options (default, unit: meaning):")
    spec = declared.scheduler.declared_options()
    for key, option in sorted(spec.items()):
        if key in declared.scheduler.WITHDRAWN_OPTIONS:
            continue
        value = declared.settings[key]
        unit = f" {option.unit}" if option.unit else ""
        lines.append(f"  {key} = {as_json(value)}{unit}" + (" (preset)" if key in presets else "")
                     + f": {option.help + '; ' if option.help else ''}{option.allowed(with_help=False)}")
    return lines
