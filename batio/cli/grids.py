"""`batio compare`, `sweep`, `matrix`, `parity` and `report`: many runs, and their pages."""

from pathlib import Path
import sys
import time

from batio.outfiles import make_folder, shown_path


def command_report(args):
    from batio.report.comparison import write_page
    for folder in args.folders:
        print(f"page: {write_page(folder, args.baseline)}")
    return 0


def _print_tables(table, baseline):
    from batio.report import comparison
    summary = comparison.summary_table(table, baseline)
    for (platform, workload, engine), group in comparison.groups_of(summary):
        print(f"{workload} on {platform} ({engine} engine)"
              + (f", ratios to {baseline}" if baseline else "") + ":")
        print(comparison.format_text(group, baseline))


def _runs_outcome(table, counts, out, report_path, skipped_pairs=None):
    """Where the results are, and exit status 1 when a run failed. `skipped_pairs`: a matrix's, said on its page."""
    on_page = "" if skipped_pairs is None else f"; {skipped_pairs} pairs skipped (see the page)"
    references = counts["planned"] > len(table)  # the table has the policy runs only
    print(f"runs: {counts['planned']} planned{' (reference runs included)' if references else ''}, "
          f"{counts['ran']} run now, "
          f"{counts['skipped']} already finished{on_page}")
    print(f"results: {shown_path(Path(out) / 'results.csv')}")
    print(f"{'report:' if skipped_pairs is None else 'page:':<8} {shown_path(report_path)}")
    from batio.sweep import INTERRUPTED
    interrupted = int((table["status"] == INTERRUPTED).sum()) if len(table) else 0
    failed = int((table["status"] != "ok").sum()) - interrupted if len(table) else 0
    if interrupted:
        print(f"batio: {interrupted} of {len(table)} runs were interrupted (their engine or worker was killed): "
              "run the same command again to redo them", file=sys.stderr)
    if failed:
        print(f"batio: {failed} of {len(table)} runs failed: see the error column of results.csv", file=sys.stderr)
    return 1 if failed or interrupted else 0


def command_compare(args):
    from batio.compare import compare, comparison_grid
    make_folder(args.out)
    run_options = {"mode": args.mode, "io_sample_period": args.io_sample_period}
    run_options.update({key: value for key, value in (("timeout", args.timeout), ("max_idle", args.max_idle))
                        if value is not None})
    window_options = {"count": args.window_count, "warmup": args.window_warmup, "cooldown": args.window_cooldown}
    grid = comparison_grid(args.platform, args.workload, args.schedulers, args.options_of, args.seeds,
                           args.baseline, args.engine, io_slowdown=not args.no_io_slowdown, run_options=run_options,
                           windows=args.windows, window_options=window_options, bsld_tau=args.bsld_tau,
                           allow_unfit=args.allow_unfit)
    grid.made_from = args.command_line
    table, counts, report_path = compare(grid, args.out, workers=args.workers, progress=not args.quiet,
                                         force=args.force)
    _print_tables(table, grid.baseline)
    return _runs_outcome(table, counts, args.out, report_path)


def command_sweep(args):
    from batio.sweep import load_config, run_grid
    grid = load_config(args.config)
    grid.allow_unfit = grid.allow_unfit or args.allow_unfit
    grid.made_from = args.command_line
    out = Path(args.out) if args.out else Path("out") / "sweeps" / Path(args.config).stem
    make_folder(out)
    table, counts, report_path = run_grid(grid, out, workers=args.workers, scheduler_address=args.scheduler_address,
                                          retry_failed=args.retry_failed, progress=not args.quiet,
                                          title=f"sweep {Path(args.config).name}", force=args.force)
    if table["platform"].nunique() * table["workload"].nunique() * table["engine"].nunique() <= 4:
        _print_tables(table, grid.baseline)
    return _runs_outcome(table, counts, out, report_path)


def command_matrix(args):
    from batio import __version__
    from batio.matrix import load_matrix, run_matrix, write_page
    started = time.perf_counter()
    matrix = load_matrix(args.config, small=args.small)
    variant = "-small" if args.small else ""
    out = Path(args.out) if args.out else Path("out") / "matrix" / f"{Path(args.config).stem}{variant}"
    make_folder(out)
    table, skipped, summaries, counts = run_matrix(matrix, out, workers=args.workers,
                                                   retry_failed=args.retry_failed, progress=not args.quiet)
    elapsed = time.perf_counter() - started
    command = " ".join(["batio matrix", args.config] + (["--small"] if args.small else [])
                       + [f"--workers {args.workers}"] + ([f"--out {args.out}"] if args.out else [])
                       + ([f"--page {args.page}"] if args.page else []))
    simulated = float(table["wall_time_s"].fillna(0).sum()) if "wall_time_s" in table else 0.0
    made_by = (f"Made by `{command}` (batio {__version__}): {elapsed:.0f} s wall time, {counts['ran']} of "
               f"{counts['planned']} runs (reference runs included) simulated by it, "
               f"{counts['skipped']} reused from its output folder; the policy runs took {simulated:.0f} s "
               "of simulation wall time in all (sum of the policy runs' own wall times).")
    page = write_page(Path(args.page) if args.page else Path(out) / "matrix.md", table, skipped, summaries, made_by)
    return _runs_outcome(table, counts, out, page, skipped_pairs=len(skipped))


def command_parity(args):
    from batio.parity import parity
    make_folder(args.out)
    policies = [name.strip() for name in args.policies.split(",")] if args.policies else None
    table = parity(args.out, policies, args.max_jobs, args.sg_cfg)
    print((Path(args.out) / "parity.md").read_text())
    failed = int((table["error"].astype(str) != "").sum())
    if failed:
        print(f"batio: {failed} of {len(table)} policies failed on one engine: see {args.out}/parity.csv",
              file=sys.stderr)
        return 1
    return 0
