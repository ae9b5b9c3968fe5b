"""A comparison's or sweep's output folder holds one grid: resumed when the same grid runs
into it again, refused in one line when another does (unless --force, which replaces it).

``OUT/grid.json`` records what the grid is: its inputs (by name and SHA-256), policies and
their options, seeds, engines, run options and reference runs. A scheduler file's code and
batio's version are not part of it: edited, they make new runs of the same comparison.
"""

import json
import logging
from pathlib import Path
import shutil

from batio.errors import InputError, listed
from batio.inputs.spec import file_digest
from batio.outfiles import write_text

logger = logging.getLogger(__name__)

GRID_FILE = "grid.json"
# What a comparison or sweep writes in its folder (runs: one folder per run).
OUTPUTS = ("runs", "workloads", "report", "results.csv")


def _digest(path):
    try:
        return file_digest(path)[:12]
    except OSError:
        return "unreadable"


def _policy(policy):
    name = policy.label if policy.label == policy.scheduler else f"{policy.label}={policy.scheduler}"
    return f"{name} {json.dumps(policy.options, sort_keys=True)}" if policy.options else name


def describe(grid):
    """What ``grid`` is, as grid.json records it: each entry a list of short texts."""
    workloads = [f"{w.label} ({w.generator} {json.dumps(w.args, sort_keys=True)})" if w.generator
                 else f"{w.label} (sha256 {_digest(w.path)})" for w in grid.workloads]
    return {"platforms": [f"{label} (sha256 {_digest(path)})" for label, path in grid.platforms],
            "workloads": workloads,
            "policies": [_policy(p) for p in grid.policies],
            "seeds": [str(seed) for seed in grid.seeds] if any(w.generator for w in grid.workloads) else [],
            "engines": list(grid.engines),
            "run options": [json.dumps(grid.run_options, sort_keys=True)],
            "reference runs": ["yes" if grid.io_slowdown else "no"]}


def differences(old, new):
    """What differs between two descriptions, in one short text."""
    parts = []
    for key in new:
        before, now = old.get(key, []), new[key]
        if sorted(before) != sorted(now):
            parts.append(f"{key}: {listed(before, 3) or 'none'} there, {listed(now, 3) or 'none'} now")
    return "; ".join(parts)


def _recorded(out):
    """The description in ``out``'s grid.json; {} for an older batio's folder; None when ``out`` holds no
    comparison."""
    path = Path(out) / GRID_FILE
    if path.is_file():
        try:
            return json.loads(path.read_text()).get("grid", {})
        except (ValueError, AttributeError):
            return {}
    runs = Path(out) / "runs"
    finished = runs.is_dir() and any(not run.name.startswith(".") for run in runs.iterdir())
    return {} if finished or (Path(out) / "results.csv").exists() else None


def check(out, grid, force=False, command="batio compare"):
    """Before anything is planned: refuse ``out`` when it holds another grid (InputError naming what
    differs) unless ``force``. Returns what differs when it is to be replaced (``take``), else None."""
    out = Path(out)
    old = _recorded(out)
    if old is None or old == describe(grid):
        return None
    what = differences(old, describe(grid)) if old else f"no {GRID_FILE} (made by an older batio)"
    if not force:
        kind = "comparison" if "compare" in command else "sweep"
        raise InputError("--out", f"{out} holds another {kind} ({what}): {command} --force replaces its "
                                  "results, or choose another folder")
    return what


def take(out, grid, replaced=None, command="batio compare"):
    """Once ``grid`` is planned (its inputs and options checked): record it as ``out``'s grid, the
    earlier grid's results removed first when ``replaced`` (``check``'s answer) says what differed."""
    out = Path(out)
    if replaced is not None:
        for name in OUTPUTS:
            target = out / name
            if name == "workloads":  # the new grid's generated workloads, written by its plan
                continue
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        kind = "comparison" if "compare" in command else "sweep"
        logger.warning("--force: the earlier %s in %s (%s) is replaced by this one", kind, out, replaced)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / GRID_FILE, json.dumps({"grid": describe(grid)}, indent=1) + "\n")
