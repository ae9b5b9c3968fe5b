#!/usr/bin/env bash
# Sets batio up on Debian 12 or 13 (or an Ubuntu with python3-simgrid), idempotent:
#   - the system's Python and SimGrid's Python bindings built for it (Debian
#     package python3-simgrid: SimGrid 3.32 on Python 3.11 in Debian 12, 4.0
#     on Python 3.13 in Debian 13) and python3-venv, through apt when they are
#     missing (needs root or sudo);
#   - a virtual environment in .venv made from that Python, so that it sees
#     python3-simgrid (--system-site-packages);
#   - batio (editable) with its dev (the tests' packages, ruff, mypy,
#     pre-commit) and ecosystem (evalys) extras, so that CI runs the checks and
#     those tests too; the darshan extra where PyDarshan has a wheel for
#     this Python (its sdist needs Darshan's C library); and pybatsim 3.2.1
#     without its pyzmq<23 pin (no wheel for Python 3.11 and later).
#   - with --with-browser (scripts/test.sh gives it; the demo does not: it
#     needs no browser, and Debian's chromium is about 381 MB), Debian's
#     chromium when root (or sudo) can install it: tests/test_report_page.py
#     opens the report page in it, and skips without it.
# Anything else gets one line naming what is missing and the alternative.
set -euo pipefail
cd "$(dirname "$0")/.."
BROWSER=no
for arg in "$@"; do
    case $arg in
        --with-browser) BROWSER=yes ;;
        *) echo "install.sh: unknown argument $arg (known: --with-browser)" >&2; exit 2 ;;
    esac
done

PYTHON=/usr/bin/python3
ELSEWHERE="or use the container image (docker compose, see README) or --engine batsim with a Batsim binary"

say() { echo "$*" >&2; }

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
    say "batio's set-up needs Debian 12/13 or Ubuntu (apt and python3-simgrid): on this system, $ELSEWHERE."
    exit 1
fi

missing=()
if [ ! -x "$PYTHON" ] || ! "$PYTHON" -c 'import simgrid' 2>/dev/null; then missing+=(python3-simgrid); fi
if [ ! -x "$PYTHON" ] || ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then missing+=(python3-venv); fi
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        apt_get=(apt-get)
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        apt_get=(sudo apt-get)
    else
        say "batio needs the system packages: ${missing[*]}"
        say "Installing them needs root. Run:  sudo apt-get install -y ${missing[*]}  then run this script again."
        exit 1
    fi
    echo "Installing ${missing[*]} with apt..."
    log=$(mktemp)
    if ! { "${apt_get[@]}" update -qq && DEBIAN_FRONTEND=noninteractive \
            "${apt_get[@]}" install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
        say "apt could not install ${missing[*]} ($(grep -m1 '^E:' "$log" || tail -n1 "$log")): $ELSEWHERE."
        exit 1
    fi
    rm -f "$log"
fi

# python3-simgrid is built for the system's Python: batio supports 3.11 to 3.13.
if ! "$PYTHON" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))'; then
    say "batio needs Python 3.11 to 3.13 at $PYTHON (found $("$PYTHON" -V 2>&1)): $ELSEWHERE."
    exit 1
fi

# pip's output goes to a log; a failure prints its first error line only.
pip_install() {
    if ! .venv/bin/python -m pip install -q "$@" >.venv/pip.log 2>&1; then
        say "pip could not install $*: $( (grep -E '^ *ERROR:' .venv/pip.log || tail -n1 .venv/pip.log) | tail -n1 | sed 's/^ *//') (log: .venv/pip.log)"
        return 1
    fi
}

# The browser test's Chromium: optional, so no failure when it cannot be installed.
if [ "$BROWSER" = yes ] && ! command -v chromium >/dev/null; then
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
if ! .venv/bin/python -c 'import batio, batsim' 2>/dev/null || [ pyproject.toml -nt .venv/.batio-installed ] \
        || [ setup.py -nt .venv/.batio-installed ]; then
    echo "Installing batio and pybatsim into .venv..."
    pip_install --upgrade pip
    pip_install -e '.[dev,ecosystem]'
    if ! .venv/bin/python -m pip install -q --only-binary=darshan -e '.[darshan]' >.venv/pip.log 2>&1; then
        echo "PyDarshan has no wheel for $("$PYTHON" -V): batio import --darshan and its tests are left out."
    fi
    pip_install --no-deps 'pybatsim==3.2.1'
    touch .venv/.batio-installed
fi
