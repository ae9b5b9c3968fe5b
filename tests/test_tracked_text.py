"""What no file the repository tracks may hold (``git ls-files``; text files
only: a file with a NUL byte is skipped): a path of the machine it was made
on, or a reference to an issue tracker the repository does not hold ("issue
12", "#12": say what the issue was instead). Each hit fails its test as
file:line and what was found.

A machine path is an absolute path (a "/" that starts a word: not inside
another path such as ``$m/work/`` or ``/var/tmp/``, nor after a URL's
host) under:

- ``/work/``: where the project's checkouts and builds were on its machine;
- ``/home/NAME``, ``/Users/NAME``, ``/root/...``: someone's home folder;
- ``/tmp/NAME``: one particular temporary file or folder;
- ``/var/folders/``: macOS's temporary folders.

Not a machine path: a bare ``/tmp`` or ``/home`` in an explanation, the
paths of the image and of the systems batio runs on (``/batio``,
``/opt/...``, ``/etc/...``, scripts/check_systems.sh's documented default
``/var/tmp/batio-systems``), paths relative to the project. Write those, or
a placeholder the text explains (``PREFIX``, ``OUT``). The few ``/tmp``
paths that are deliberate are in ALLOWED, each with why; this file, which
names them, is not searched."""

from pathlib import Path
import re
import shutil
import subprocess

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINE_PATH = re.compile(r"(?<![\w$}.~-])/(?:work|home|Users|root|tmp|var/folders)/[^\s\"'`,;:()\[\]{}<>|]+")
# "issue 12", "Issues 19 and 48", "issue-8", "(#12)", "in #12": not a colour (color:#222;).
TRACKER_REFERENCE = re.compile(r"\bissues?[- ]#?\d+|(?:^|(?<=[\s(\[]))#\d{1,5}\b(?![\w;}])", re.IGNORECASE)
ALLOWED = {
    # Absolute paths the code must refuse (and the test checks nothing was written there).
    "tests/test_bad_benchmarks.py": ("/tmp/batio-absolute-system",),
    "tests/test_bad_workload_fields.py": ("/tmp/abs",),
    # A dump prefix handed through to Batsim's command line, which runs in a container.
    "tests/test_docker_engine.py": ("/tmp/d",),
    # The image build's own scratch folder, inside the build container.
    "containers/build.sh": ("/tmp/build",),
}


def tracked_files():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name]


def tracked_texts():
    """(name, text) of every tracked text file but this one."""
    names = tracked_files()
    assert len(names) > 100
    for name in names:
        path = ROOT / name
        if name == Path(__file__).relative_to(ROOT).as_posix() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" not in data:
            yield name, data.decode("utf-8", errors="replace")


def machine_paths(name, text):
    """``file:line: path`` for each machine path of the text of the tracked file ``name``."""
    allowed = ALLOWED.get(name, ())
    return [f"{name}:{number}: {found}"
            for number, line in enumerate(text.splitlines(), 1)
            for found in MACHINE_PATH.findall(line) if not found.startswith(allowed)]


def test_no_tracked_file_holds_a_machine_path():
    found = [hit for name, text in tracked_texts() for hit in machine_paths(name, text)]
    assert found == [], "machine paths (see this test's docstring):\n" + "\n".join(found)


def tracker_references(name, text):
    return [f"{name}:{number}: {found}" for number, line in enumerate(text.splitlines(), 1)
            for found in TRACKER_REFERENCE.findall(line)]


def test_no_tracked_file_cites_an_issue_tracker():
    found = [hit for name, text in tracked_texts() for hit in tracker_references(name, text)]
    assert found == [], "references to an issue tracker (say what the issue was):\n" + "\n".join(found)


@pytest.mark.parametrize("line", ["cd /work/batio", "x = '/home/ana/runs'", "HOME=/root/.cache",
                                  "at /tmp/pytest-of-x/0", "file:///home/ana/a.csv", "(/Users/bo/out)",
                                  "/var/folders/xy/T/run", "PATH=/x:/work/b/bin"])
def test_a_machine_path_is_found(line):
    assert len(machine_paths("x.md", line)) == 1


@pytest.mark.parametrize("line", ["files in /tmp are removed", "/home is elsewhere", "WORKDIR /batio", "$m/work/batio",
                                  "/var/tmp/batio-systems", "https://example.org/work/x", "HOME=/root x",
                                  "~/.cache/batio", "out/work/x", "../shared/data/x"])
def test_other_paths_are_not(line):
    assert machine_paths("x.md", line) == []


@pytest.mark.parametrize("line", ["(issue 12)", "Issues 19 and 48", "the issue-8 contract", "fixed in #57",
                                  "Issue #3", "(#12)"])
def test_a_tracker_reference_is_found(line):
    assert len(tracker_references("x.md", line)) == 1


@pytest.mark.parametrize("line", ["color:#222}", "an issue of size", "&#39;", "tissue 3", "x#1", "#fff"])
def test_other_text_is_not(line):
    assert tracker_references("x.md", line) == []
