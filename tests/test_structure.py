"""The code's structure (issue 17): no import circles in batio (imports inside
functions included), policies that never reach the engine, and schedulers
that log rather than print. Read from the source with ``ast``, not by
importing it."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

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
    # sweep.run_grid imports report inside the function: the check would miss a circle through it otherwise.
    assert "batio.report" in graph["batio.sweep"] and "batio.engine.run" in graph["batio.pretrain"]


def test_policies_never_reach_the_engine(graph):
    reached, todo = set(), [name for name in graph if name.startswith("batio.schedulers.")]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += graph[name]
    assert not {name for name in reached if name.startswith("batio.engine")}


def test_schedulers_log_rather_than_print():
    printing = [f"{path.name}:{node.lineno}" for path in PACKAGES["batio.schedulers"].glob("*.py")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
    assert printing == []
