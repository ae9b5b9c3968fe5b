"""`batio`: run pybatsim schedulers on SimGrid platforms and Batsim workloads.

    batio run --platform P --workload W --scheduler S [--options JSON] --out DIR
    batio list
"""

import argparse
import json
from pathlib import Path
import sys

from batio import catalog, metrics
from batio.engine.run import MODES, RunSpec, simulate
from batio.errors import BatioError, InputError

ENGINES = ("embedded", "batsim")


def _options(text):
    try:
        options = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError("--options", f"malformed JSON: {error}") from None
    if not isinstance(options, dict):
        raise InputError("--options", "must be a JSON object, e.g. '{\"backfill_max\": 2}'")
    return options


def _roles(pairs):
    roles = {}
    for pair in pairs:
        hosts, sep, role = pair.partition(":")
        if not sep or not hosts or not role:
            raise InputError("--role", f"expected HOST[,HOST...]:ROLE, got {pair!r}")
        for host in hosts.split(","):
            roles[host] = role
    return roles


def run_spec(args):
    scheduler, options = catalog.scheduler_file_and_options(args.scheduler, _options(args.options))
    out = Path(args.out)
    return RunSpec(
        platform=str(catalog.platform_path(args.platform)),
        workloads=[str(catalog.workload_path(w)) for w in args.workload],
        scheduler=str(scheduler), out_prefix=str(out / "out"), options=options, mode=args.mode,
        forward_profiles=args.forward_profiles, dynamic_jobs=args.enable_dynamic_jobs,
        acknowledge_dynamic_jobs=args.acknowledge_dynamic_jobs, compute_sharing=args.enable_compute_sharing,
        storage_sharing=not args.disable_storage_sharing, master_host=args.master_host,
        roles=_roles(args.role), port=args.port, timeout_s=args.timeout, io_sample_period=args.io_sample_period,
        io_exclusive=args.io_exclusive)


class _Progress:
    """A progress bar over jobs finished, showing simulated time."""

    def __init__(self, enabled):
        self.bar = None
        self.enabled = enabled

    def __call__(self, now, finished, total):
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit="job", desc="simulating", file=sys.stderr, leave=False)
        self.bar.total = total
        self.bar.set_postfix_str(f"t={now:,.0f} s", refresh=False)
        self.bar.update(finished - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def command_run(args):
    spec = run_spec(args)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.engine == "batsim":
        from batio.batsim_binary import run_with_batsim
        run_with_batsim(spec)
        nb_compute = None
    else:
        progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
        try:
            result = simulate(spec, progress)
        finally:
            progress.close()
        nb_compute = result["nb_compute"]
    if nb_compute is None:
        from batio.engine.platform import classify, read_properties
        properties, _ = read_properties(spec.platform)
        nb_compute = len(classify(spec.platform, list(properties), spec.roles, spec.master_host).compute)
    summary = metrics.summarize(spec.out_prefix, nb_compute)
    print(f"{Path(spec.scheduler).stem} {json.dumps(spec.options)} on {Path(spec.platform).name} "
          f"with {', '.join(Path(w).name for w in spec.workloads)} ({args.engine} engine)")
    print(metrics.format_summary(summary))
    print(f"outputs: {spec.out_prefix}_jobs.csv, _schedule.csv, _machine_states.csv"
          + (", _io.csv" if args.engine == "embedded" else ""))
    return 0


def command_list(_args):
    print("platforms:  " + ", ".join(sorted(catalog.bundled_platforms())))
    print("workloads:  " + ", ".join(sorted(catalog.bundled_workloads())))
    print("schedulers: " + ", ".join(catalog.SCHEDULERS) + " (batio); "
          + ", ".join(sorted(catalog.pybatsim_schedulers())) + " (pybatsim)")
    return 0


def parser():
    top = argparse.ArgumentParser(prog="batio", description=__doc__.split("\n")[0])
    commands = top.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="simulate one scheduler on one platform and workload(s)")
    run.add_argument("--platform", required=True, help="platform XML file or bundled name (see `batio list`)")
    run.add_argument("--workload", required=True, action="append",
                     help="workload JSON file or bundled name; repeat for several workloads (w0, w1...)")
    run.add_argument("--scheduler", required=True, help="pybatsim scheduler file, or a batio/pybatsim name")
    run.add_argument("--options", default="{}", help="scheduler options as JSON (pybatsim's -o)")
    run.add_argument("--engine", choices=ENGINES, default="embedded",
                     help="embedded: batio's SimGrid engine (default); batsim: a `batsim` binary on PATH")
    run.add_argument("--mode", choices=MODES, default="inprocess",
                     help="embedded engine: drive the scheduler in-process (default) or over ZeroMQ")
    run.add_argument("--out", required=True, help="output folder (files out_jobs.csv, ...)")
    run.add_argument("--port", type=int, help="local TCP port for socket mode / Batsim (default: a free one)")
    run.add_argument("--timeout", type=float, default=60.0,
                     help="socket mode: seconds to wait for one scheduler reply before giving up")
    run.add_argument("--forward-profiles", action="store_true", help="Batsim's --forward-profiles-on-submission")
    run.add_argument("--enable-dynamic-jobs", action="store_true")
    run.add_argument("--acknowledge-dynamic-jobs", action="store_true")
    run.add_argument("--enable-compute-sharing", action="store_true")
    run.add_argument("--disable-storage-sharing", action="store_true")
    run.add_argument("--master-host", default="master_host", help="Batsim's -m")
    run.add_argument("--role", action="append", default=[], metavar="HOSTS:ROLE", help="Batsim's -r")
    run.add_argument("--io-sample-period", type=float, default=1.0,
                     help="seconds between samples of the storage throughput written to out_io.csv")
    run.add_argument("--io-exclusive", action="store_true",
                     help="beyond Batsim: each storage host serves one transfer at a time, first come first "
                          "served (the model of seed paper 001); default: fair sharing, as in Batsim")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=command_run)

    listing = commands.add_parser("list", help="list bundled platforms, workloads and schedulers")
    listing.set_defaults(handler=command_list)
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.handler(args)
    except BatioError as error:
        print(f"batio: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("batio: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
