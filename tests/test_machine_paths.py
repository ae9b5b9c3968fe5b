"""No path of the machine a file was made on, in any file the repository
tracks (``git ls-files``; text files only: a file with a NUL byte is
skipped). Each hit fails the test as file:line and the path.

What counts is an absolute path (a "/" that starts a word: not inside
another path such as ``$m/work/`` or ``/var/tmp/``, nor after a URL's
host) under:

- ``/work/``: where the project's checkouts and builds were on its machine;
- ``/home/NAME``, ``/Users/NAME``, ``/root/...``: someone's home folder;
- ``/tmp/NAME``: one particular temporary file or folder;
- ``/var/folders/``: macOS's temporary folders.

What does not count: a bare ``/tmp`` or ``/home`` in an explanation, the
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


def machine_paths(name, text):
    """``file:line: path`` for each machine path of the text of the tracked file ``name``."""
    allowed = ALLOWED.get(name, ())
    return [f"{name}:{number}: {found}"
            for number, line in enumerate(text.splitlines(), 1)
            for found in MACHINE_PATH.findall(line) if not found.startswith(allowed)]


def test_no_tracked_file_holds_a_machine_path():
    names = tracked_files()
    assert len(names) > 100
    found = []
    for name in names:
        path = ROOT / name
        if name == Path(__file__).relative_to(ROOT).as_posix() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" not in data:
            found += machine_paths(name, data.decode("utf-8", errors="replace"))
    assert found == [], "machine paths (see this test's docstring):\n" + "\n".join(found)


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
