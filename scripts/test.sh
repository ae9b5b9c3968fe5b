#!/usr/bin/env bash
# Set-up (scripts/install.sh, with chromium for the report page's browser
# test), then the checks CI runs, in this order: ruff
# over the whole project, mypy through scripts/typecheck.py (its files are
# listed in pyproject.toml; the script names them as imported), the
# whole test suite (arguments go to pytest). The first check that fails ends
# the script with a line naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh --with-browser

check() {
    local name=$1; shift
    echo "== $name"
    local status=0
    "$@" || status=$?
    if [ "$status" -ne 0 ]; then
        echo "scripts/test.sh: the $name check failed (exit status $status, its output is above)." >&2
        exit "$status"
    fi
}

check "lint (ruff check .)" .venv/bin/ruff check .
check "type (scripts/typecheck.py)" .venv/bin/python scripts/typecheck.py
check "test suite (pytest)" .venv/bin/python -m pytest "$@"
