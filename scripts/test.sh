#!/usr/bin/env bash
# Set-up (scripts/install.sh), then the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
exec .venv/bin/python -m pytest "$@"
