"""scripts/install.sh on a system it does not support says so in one line."""

import os
from pathlib import Path
import shutil
import subprocess

from conftest import found

INSTALL = Path(__file__).resolve().parents[1] / "scripts" / "install.sh"


def test_without_apt_the_set_up_names_what_is_missing_and_the_alternatives(tmp_path):
    """macOS or a non-Debian distribution: no apt-get, hence no python3-simgrid."""
    for tool in ("bash", "dirname"):  # all the script needs before its first check
        os.symlink(found(shutil.which(tool)), tmp_path / tool)
    done = subprocess.run([str(tmp_path / "bash"), str(INSTALL)], env={"PATH": str(tmp_path)},
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "needs Debian 12/13 or Ubuntu" in done.stderr and "--engine batsim" in done.stderr
    assert "container image" in done.stderr
