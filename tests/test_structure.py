"""The code's structure: no import circles in batio (imports inside
functions included), a core that knows no paper, policies that never reach
the engine, and schedulers that log rather than print. Read from the source
with ``ast``, not by importing it."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from batio import catalog, launcher

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"batio": ROOT / "batio", "batio.schedulers": ROOT / "schedulers"}


def modules():
    """Module name -> source file, for batio and its schedulers."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join((package, *parts)).removesuffix(".__init__")] = path
    return found


def imports(path, known):
    """The known modules a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


@pytest.fixture(scope="module")
def graph():
    known = modules()
    # A package's __init__ is imported with each of its modules but imports none of them here.
    return {name: imports(path, known) - {name} for name, path in known.items()}


def test_no_import_circle(graph):
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        pytest.fail(f"import circle: {' -> '.join(error.args[1])}")


def test_the_graph_sees_imports_inside_functions(graph):
    # batio.compose imports the command line inside its functions: the check would miss a circle through it
    # otherwise.
    assert "batio.cli" in graph["batio.compose"]
    assert "batio.engines" in graph["batio.schedulers.workload_adaptive.pretrain"]


def is_paper(module):
    """A module of a paper's sub-package of schedulers/ (not of the kit beside backfill.py)."""
    return module.startswith("batio.schedulers.") and module.count(".") > 2


def test_the_core_knows_no_paper(graph):
    """batio/ (engine, metrics, cli, sweep, report) imports nothing of a
    paper's sub-package of schedulers/: each paper's policy, model and
    metrics sit there, and the core reaches a policy only by loading the file
    a name stands for (the catalog finds the papers' entries, it does not name
    them). It may use the scheduling kit (options, the bytes of profiles)."""
    core = {name: imported for name, imported in graph.items() if not name.startswith("batio.schedulers")}
    assert {name: sorted(filter(is_paper, imported)) for name, imported in core.items()
            if any(map(is_paper, imported))} == {}


def test_every_paper_module_sits_in_its_papers_package():
    """schedulers/ itself holds the generic policy and the kit policies are made of."""
    assert {path.name for path in PACKAGES["batio.schedulers"].glob("*.py")} == {
        "__init__.py", "backfill.py", "jobio.py", "options.py", "reservation.py", "running.py"}


def reached_by_policies(graph):
    """The modules a catalog policy loads, directly or through its imports."""
    policies = {launcher.module_name(catalog.scheduler_file_and_options(name)[0]) for name in catalog.SCHEDULERS}
    reached, todo = set(), list(policies)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += graph[name]
    return reached


def test_policies_never_reach_the_engine(graph):
    reached = reached_by_policies(graph)
    assert {"batio.schedulers.locality.locality", "batio.schedulers.catios.matcher"} <= reached
    assert not {name for name in reached if name.startswith("batio.engine")}


def test_schedulers_log_rather_than_print(graph):
    """What a policy runs logs; a paper's command-line tools (``pretrain``) print their answer."""
    files = [path for name, path in modules().items()
             if name in reached_by_policies(graph) and name.startswith("batio.schedulers")]
    printing = [f"{path.name}:{node.lineno}" for path in files
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
    assert len(files) >= 14 and printing == []
