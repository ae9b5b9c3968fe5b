#!/usr/bin/env bash
# Sets batio up on a Debian/Ubuntu machine with Python 3.11 (idempotent):
#   - SimGrid's Python bindings (Debian package python3-simgrid, SimGrid 3.32)
#     and python3-venv, through apt when they are missing (needs root or sudo);
#   - a virtual environment in .venv made from Debian's Python, so that it
#     sees python3-simgrid (--system-site-packages);
#   - Debian's chromium when root (or sudo) can install it: tests/test_report_page.py
#     opens the report page in it, and skips without it;
#   - batio (editable) with its test, ecosystem (evalys) and darshan extras, so that
#     CI runs their tests too, and pybatsim 3.2.1 without its
#     pyzmq<23 pin, which does not build on Python 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=/usr/bin/python3
if [ ! -x "$PYTHON" ] || ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "batio needs Debian's Python 3.11 at $PYTHON (python3-simgrid is built for it)." >&2
    exit 1
fi

missing=()
"$PYTHON" -c 'import simgrid' 2>/dev/null || missing+=(python3-simgrid)
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        apt_get=(apt-get)
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        apt_get=(sudo apt-get)
    else
        echo "batio needs the Debian packages: ${missing[*]}" >&2
        echo "Installing them needs root. Run:  sudo apt-get install -y ${missing[*]}  then run this script again." >&2
        exit 1
    fi
    echo "Installing ${missing[*]} with apt..."
    "${apt_get[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq "${missing[@]}" >/dev/null
fi

# The browser test's Chromium: optional, so no failure when it cannot be installed.
if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" -eq 0 ] || (command -v sudo >/dev/null && sudo -n true 2>/dev/null); then
        sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
        echo "Installing chromium with apt (for the report page's browser test)..."
        "${sudo_[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo_[@]}" apt-get install -y -qq \
            chromium >/dev/null || echo "chromium could not be installed: the browser test will be skipped" >&2
    else
        echo "No chromium and no root: the report page's browser test will be skipped" >&2
    fi
fi

if [ ! -x .venv/bin/python ]; then
    echo "Creating .venv..."
    "$PYTHON" -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c 'import batio, batsim' 2>/dev/null || [ pyproject.toml -nt .venv/.batio-installed ]; then
    echo "Installing batio and pybatsim into .venv..."
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test,ecosystem,darshan]'
    .venv/bin/python -m pip install -q --no-deps 'pybatsim==3.2.1'
    touch .venv/.batio-installed
fi
