"""`batio calibrate`, `twin`, `import`, `validate`, `platform`, `list` and `describe`."""

import json
from pathlib import Path

from batio import catalog
from batio.errors import BatioError
from batio.outfiles import check_destination, file_set, make_folder, write_text


def command_calibrate(args):
    from batio.twin.calibrate import calibrate
    make_folder(args.out)
    platform = str(catalog.platform_path(args.platform)) if args.platform else None
    rows, line = calibrate(args.measurement, args.out, args.unit, args.direction, platform, args.element)
    print(f"{'clients':>8} {'measured GB/s':>14} {'simulated GB/s':>15} {'error %':>8}")
    for row in rows:
        print(f"{row['clients']:>8} {row['measured_GBps']:>14.4g} {row['simulated_GBps']:>15.4g} "
              f"{row['error_percent']:>8.2f}")
    print(f"property: {line}")
    print(f"written: {Path(args.out) / 'property.xml'}, calibration.csv, calibration.png"
          + (f", {Path(platform).stem}_calibrated.xml" if platform else ""))
    return 0


def command_twin(args):
    from batio.twin.fstwin import make_twin, read_platform, read_runs, system_name
    from batio.twin.fstwin_engine import engine_check
    system = system_name(args.system, args.summaries)
    # The platform, fit.json, validation.csv and engine_check.csv of one fit: written whole or not at all.
    with file_set(args.out, replaces=("engine_check.csv",)) as staging:
        table = make_twin(args.summaries, staging, system=system, fit_until=args.fit_until, days=args.days)
        fit = json.loads((staging / "fit.json").read_text())
        check = None
        if args.engine_check:
            check = engine_check(read_platform(staging / f"{system}.xml"), read_runs(args.summaries)[0],
                                 sample=args.engine_check)
            if not check.empty:  # an empty check has said why (a warning line)
                check.to_csv(staging / "engine_check.csv", index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"runs: {fit['runs_used']} used ({fit['runs_fitted']} fitted, before {fit['fit_until']}; "
          f"{fit['runs_held_out']} held out); skipped: "
          + ("; ".join(f"{count} {reason}" for reason, count in fit["skipped"].items()) or "none"))
    gap = fit["recalibrated_twin_minus_rolling_median"]
    if gap["pairs"]:
        print(f"held out, recalibrated twin minus rolling config median: {gap['difference_points']:+.2f} points of "
              f"median abs % error ({gap['median_ape'][0]:.1f} against {gap['median_ape'][1]:.1f}; 95 % paired "
              f"bootstrap interval {gap['ci95_points'][0]:+.2f} to {gap['ci95_points'][1]:+.2f}, {gap['pairs']} runs)")
    checked = check is not None and not check.empty
    if check is not None and checked:
        print(check.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    print(f"written: {Path(args.out)}: {system}.xml, fit.json, validation.csv"
          + (", engine_check.csv" if checked else ""))
    return 0


def command_import(args):
    from batio.importers import dumps, import_trace, summary_lines
    check_destination(args.out)
    workload = import_trace(args.format, args.trace, start=args.start, end=args.end, warmup=args.warmup,
                            cooldown=args.cooldown, max_jobs=args.max_jobs, sample=args.sample, seed=args.seed,
                            nodes=args.nodes, cores_per_node=args.cores_per_node,
                            keep_cancelled=args.keep_cancelled, darshan=args.darshan, week=args.week,
                            runs=args.runs)
    out = Path(args.out)
    write_text(out, dumps(workload))
    for line in summary_lines(workload):
        print(line)
    print(f"written: {out} (what was skipped and why, line by line: its \"trace\" block)")
    return 0


def command_validate(args):
    from batio.twin.validate import format_table, validate
    if args.benchmarks:
        return validate_benchmark_runs(args)
    if not (args.platform and args.workload):
        raise BatioError("validate: give --platform and --workload (jobs from `batio import jobsio`), "
                         "or --benchmarks (TOKIO-ABC runs)")
    make_folder(args.out)
    table, jobs = validate(catalog.platform_path(args.platform), args.workload, args.out, args.train, args.model)
    print(format_table(table))
    killed = [int((jobs[column] != "COMPLETED_SUCCESSFULLY").sum()) for column in ("final_state", "final_state_high")]
    print(f"replay: {len(jobs)} jobs that move bytes; killed at their walltime (kept, with their simulated time): "
          f"{killed[0]} at the low end, {killed[1]} at the high end; {int(jobs['unfit_high'].sum())} whose measured "
          "high end cannot be made to end within their recorded run time")
    print(f"written: {Path(args.out) / 'validation.csv'}, validation_jobs.csv")
    return 0


def validate_benchmark_runs(args):
    from batio.twin.fstwin import validate_benchmarks
    from batio.twin.validate import format_table
    if args.workload or args.train or args.model:
        raise BatioError("validate: --benchmarks takes no --workload, --train or --model (the runs before "
                         "--fit-until train)")
    platform = catalog.platform_path(args.platform) if args.platform else None
    with file_set(args.out) as staging:  # an interrupted validation leaves the earlier table whole
        table = validate_benchmarks(args.benchmarks, platform=platform, out=staging, fit_until=args.fit_until)
    print(format_table(table))
    print(f"written: {Path(args.out) / 'validation.csv'}")
    return 0


def command_platform(args):
    from batio.platform_builder import contention_value, platform_xml
    check_destination(args.out)
    contention = None if args.contention is None else contention_value(args.contention, args.contention_unit)
    text = platform_xml(args.nodes, args.cores, args.speed, args.node_link, args.pfs_bandwidth, args.latency,
                        contention, args.memory)
    out = Path(args.out)
    write_text(out, text)
    print(f"{args.nodes} compute hosts node0..node{args.nodes - 1} ({args.cores} cores each"
          + (f", {args.memory} of memory" if args.memory else "") + "), storage host pfs "
          "behind pfs_link, master_host" + (f"; contention curve {contention}" if contention else ""))
    print(f"written: {out}")
    return 0


def command_list(_args):
    from batio.describe import list_lines
    print("platforms:  " + ", ".join(sorted(catalog.bundled_platforms())))
    print("workloads:  " + ", ".join(sorted(catalog.bundled_workloads())))
    print("schedulers (batio describe NAME says more):")
    for line in list_lines():
        print(f"  {line}")
    return 0


def command_describe(args):
    from batio.describe import describe_lines
    for line in describe_lines(args.name):
        print(line)
    return 0
