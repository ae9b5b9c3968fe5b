"""Sweeps: a grid of runs (platforms x workloads x seeds x policies x engines, docs/sweeps.md),
each written atomically, run in parallel on Dask, gathered into one tidy table.

``config`` reads and checks the grid, ``plan`` makes its runs, ``run`` runs them, ``results``
tabulates them; ``grid.run_grid`` does all four. How runs are named, resumed and referenced:
docs/internals.md.
"""

from batio.sweep.config import (
    Grid,
    Policy,
    WorkloadSource,
    check_grid,
    check_tau,
    is_generator,
    load_config,
    load_generator,
    platform_entry,
    read_yaml,
    reject_unknown_keys,
    run_options_entry,
    workload_entry,
)
from batio.sweep.grid import run_grid
from batio.sweep.plan import alone_workload, plan
from batio.sweep.results import RESULTS_FILE, gather, read_results
from batio.sweep.run import INTERRUPTED, PlannedRun, dask_client, execute_run, run_all

__all__ = ["INTERRUPTED", "RESULTS_FILE", "Grid", "PlannedRun", "Policy", "WorkloadSource", "alone_workload",
           "check_grid", "check_tau", "dask_client", "execute_run", "gather", "is_generator", "load_config",
           "load_generator", "plan", "platform_entry", "read_results", "read_yaml", "reject_unknown_keys",
           "run_all", "run_grid", "run_options_entry", "workload_entry"]
