"""How large and how fast the HTML report of a big run is.

Makes a run of ``--jobs`` jobs (default 100,000) on a 100-host cluster
with a 10 GB/s file system: 1 to 16 hosts per job, 70 % compute only and
30 % computing then writing 1-50 GB per host, arriving about every 40 s
(a loaded machine, so EASY backfills), scheduled by ``easy``. Then it
writes the run's page (``batio run`` does) and opens it in headless
Chromium (``batio.report.headless``), printing the page's size and the time to
first render. docs/report.md has the numbers.

    .venv/bin/python scripts/bench_report.py [--jobs 100000] [--out out/bench_report] [--skip-run]

Measured 2026-11-29 (commit 2cbdbf3; 2 cores, load average 9-13 from other
work): the run took 22 min at nice 10; makespan 46 days, 240,000 host
intervals (EASY fragments allocations). The page: 15.9 MB, written in
about 16 s, first render 3.8-4.7 s (plotly.js alone: 3.0-4.3 s).
"""

import argparse
import json
import logging
from pathlib import Path
import time

import numpy as np

from batio import cli
from batio.errors import exits_on_error
from batio.platform_builder import platform_xml
from batio.report import headless
from batio.report.html_report import write_run_page

log = logging.getLogger("bench_report")
HOST_SPEED = 1e9


def workload(count, nb_hosts=100, seed=1):
    """Jobs of the docstring; profiles are shared (30 compute lengths x 50 write sizes)."""
    rng = np.random.default_rng(seed)
    profiles: dict
    jobs, profiles, subtime = [], {}, 0.0
    for number in range(1, count + 1):
        subtime += float(rng.exponential(40.0))
        hosts = int(rng.choice([1, 2, 4, 8, 16], p=[0.35, 0.25, 0.2, 0.12, 0.08]))
        compute_s = 60 * int(rng.integers(1, 31))
        compute = f"c{compute_s}"
        profiles.setdefault(compute, {"type": "parallel_homogeneous", "cpu": compute_s * HOST_SPEED, "com": 0})
        alone: float = compute_s
        if rng.random() < 0.3:
            gigabytes = int(rng.integers(1, 51))
            write, name = f"w{gigabytes}", f"c{compute_s}w{gigabytes}"
            profiles.setdefault(write, {"type": "parallel_homogeneous_pfs", "bytes_to_write": gigabytes * 1e9,
                                        "storage": "pfs"})
            profiles.setdefault(name, {"type": "composed", "repeat": 1, "seq": [compute, write]})
            compute, alone = name, compute_s + hosts * gigabytes / 10
        jobs.append({"id": number, "subtime": round(subtime, 1), "walltime": float(np.ceil(2 * alone) + 60),
                     "res": hosts, "profile": compute})
    return {"nb_res": nb_hosts, "jobs": jobs, "profiles": profiles}


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--out", default="out/bench_report")
    parser.add_argument("--skip-run", action="store_true", help="measure the page of an earlier run in --out")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(args.out)
    run = out / "run"
    if not args.skip_run:
        out.mkdir(parents=True, exist_ok=True)
        (out / "platform.xml").write_text(platform_xml(100, 1, "1Gf", "1.25GBps", "10GBps"))
        (out / "workload.json").write_text(json.dumps(workload(args.jobs)))
        cli.main(["run", "--platform", str(out / "platform.xml"), "--workload", str(out / "workload.json"),
                  "--scheduler", "easy", "--out", str(run), "--quiet", "--io-sample-period", "60"])
    started = time.perf_counter()
    page = write_run_page(run)  # again, timed (batio run wrote one)
    built = time.perf_counter() - started
    measured = headless.render_time(page)
    log.info("%s: written in %.1f s, %.1f MB, first render %.2f s (headless Chromium, %s)", page, built,
             page.stat().st_size / 1e6, measured, headless.chromium())


if __name__ == "__main__":
    main()
