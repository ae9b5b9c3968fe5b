"""Benchmark of the embedded engine: jobs per second and peak memory.

Two cases, each in both protocol modes, on a 1,098-host platform with a
storage host: 10,000 one-host delay jobs, and 2,000 jobs that alternate
compute and PFS phases. The scheduler is the cheapest correct one
(tests/schedulers/greedy.py: FCFS on free hosts, no planning), so the
figures are the engine's; scripts/bench_sched.py measures batio's policies.
Goals (issue 2): in-process >= 1,000 delay jobs/s, socket >= 300 jobs/s.

    .venv/bin/python scripts/bench_engine.py [--delay-jobs 10000] [--pfs-jobs 2000]
"""

import argparse
import json
from pathlib import Path
import tempfile
import time

from batio.engine.run import RunSpec, simulate

NB_HOSTS = 1098
GREEDY = Path(__file__).resolve().parents[1] / "tests" / "schedulers" / "greedy.py"


def platform_xml(nb_hosts):
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <cluster id="c" prefix="n" suffix="" radical="0-{nb_hosts - 1}" speed="1Gf" bw="12.5GBps" lat="1us"
           bb_bw="400GBps" bb_lat="1us"/>
  <cluster id="m" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="12.5GBps" lat="1us"
           bb_bw="400GBps" bb_lat="1us"><prop id="role" value="master"/></cluster>
  <cluster id="s" prefix="pfs" suffix="" radical="0-0" speed="1Gf" bw="43GBps" lat="1us"
           bb_bw="400GBps" bb_lat="1us"><prop id="role" value="storage"/></cluster>
  <link id="bb" bandwidth="400GBps" latency="1us"/>
  <zoneRoute src="c" dst="m" gw_src="nc_router" gw_dst="master_hostm_router"><link_ctn id="bb"/></zoneRoute>
  <zoneRoute src="c" dst="s" gw_src="nc_router" gw_dst="pfss_router"><link_ctn id="bb"/></zoneRoute>
  <zoneRoute src="m" dst="s" gw_src="master_hostm_router" gw_dst="pfss_router"><link_ctn id="bb"/></zoneRoute>
</zone></platform>
"""


def delay_workload(count):
    jobs = [{"id": i, "subtime": i * 0.05, "walltime": 1000, "res": 1, "profile": "d"} for i in range(count)]
    return {"nb_res": NB_HOSTS, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 60}}}


def pfs_workload(count):
    profiles = {"c": {"type": "parallel_homogeneous", "cpu": 3e10, "com": 0},
                "w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9},
                "cw": {"type": "composed", "seq": ["c", "w"], "repeat": 3}}
    jobs = [{"id": i, "subtime": i * 0.5, "walltime": 10000, "res": 1 + i % 8, "profile": "cw"}
            for i in range(count)]
    return {"nb_res": NB_HOSTS, "jobs": jobs, "profiles": profiles}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-jobs", type=int, default=10000)
    parser.add_argument("--pfs-jobs", type=int, default=2000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "platform.xml").write_text(platform_xml(NB_HOSTS))
        cases = {f"{args.delay_jobs} delay jobs": delay_workload(args.delay_jobs),
                 f"{args.pfs_jobs} pfs jobs": pfs_workload(args.pfs_jobs)}
        for name, work in cases.items():
            path = folder / f"{len(rows)}.json"
            path.write_text(json.dumps(work))
            for mode in ("inprocess", "socket"):
                started = time.perf_counter()
                result = simulate(RunSpec(str(folder / "platform.xml"), [str(path)], str(GREEDY),
                                          str(folder / name.replace(" ", "_") / mode / "out"),
                                          mode=mode, timeout_s=600))
                wall = time.perf_counter() - started
                rows.append((name, mode, len(work["jobs"]) / wall, result["peak_rss_mb"], wall,
                             result["simulated_time"]))
    print(f"{'case':<20} {'mode':<10} {'jobs/s':>8} {'peak MB':>8} {'wall s':>7} {'simulated s':>12}")
    for name, mode, rate, memory, wall, simulated in rows:
        print(f"{name:<20} {mode:<10} {rate:>8.0f} {memory:>8.0f} {wall:>7.1f} {simulated:>12.0f}")


if __name__ == "__main__":
    main()
