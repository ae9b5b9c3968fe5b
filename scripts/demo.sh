#!/usr/bin/env bash
# Set-up (scripts/install.sh), then the demo: EASY backfilling of the demo
# workload (48 periodic compute-then-write jobs) on a 16-node cluster with a
# shared parallel file system, on the embedded engine. Outputs in out/demo,
# replaced when run again (--force).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
exec .venv/bin/batio run --platform cluster16_pfs --workload demo --scheduler easy --out out/demo --force "$@"
