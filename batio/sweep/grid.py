"""A whole sweep of a grid: plan its runs, run them (resuming), tabulate them, report."""

from pathlib import Path
import signal

from batio.errors import Interrupted
from batio.report import comparison
from batio.sweep.folder import check as check_folder
from batio.sweep.folder import take as take_folder
from batio.sweep.plan import plan
from batio.sweep.results import RESULTS_FILE, gather
from batio.sweep.run import INTERRUPTED, run_all


def run_grid(grid, out, workers=None, scheduler_address=None, retry_failed=False, progress=True, title=None,
             force=False, command="batio sweep"):
    """Plan, run (resuming), gather and report ``grid`` into ``out``; ``workers``: 0 runs
    one after the other in this process, N on a LocalCluster of N processes (None: one
    per CPU), unless ``scheduler_address`` names a Dask scheduler. A folder holding another
    grid is refused unless ``force`` (batio.sweep.folder; ``command`` names the one to rerun).
    Returns (results table, counts, path of report.md)."""
    out = Path(out).resolve()
    replaced = check_folder(out, grid, force, command)
    out.mkdir(parents=True, exist_ok=True)
    runs = plan(grid, out)  # a grid refused here leaves the folder's earlier grid as it was
    take_folder(out, grid, replaced, command)
    stopped = None
    try:
        counts = run_all(runs, out, workers, scheduler_address, retry_failed, progress)
    except (KeyboardInterrupt, Interrupted) as stop:
        stopped = stop  # the runs that finished are tabulated all the same
    table = gather(runs, out, grid.bsld_tau)
    if stopped is not None:
        unfinished = int((table["status"] == INTERRUPTED).sum())
        raise Interrupted(getattr(stopped, "signum", signal.SIGINT),
                          f"{len(table) - unfinished} of {len(table)} runs finished; {out / RESULTS_FILE} marks the "
                          f"{unfinished} others {INTERRUPTED}: run the same command again to resume") from None
    report_path = comparison.write_reports(table, out, grid.baseline, title=title or Path(grid.source).stem,
                                       made_from=grid.made_from or grid.source)
    return table, counts, report_path
