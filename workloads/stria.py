"""Workloads 1 and 2 of paper 000 (Sections IV and VII-A), for the Stria platforms.

Design notes (the model, its sources, the choices made): this folder's README.md, section stria.py.
"""

import argparse
import json
import sys

import numpy as np

GiB = 2 ** 30
BYTES_PER_THREAD = 10 * GiB
NB_NODES = 15
NB_VOLUMES = 56          # ost0..ost55 in platforms/stria15_lustre*.xml
SLEEP_SECONDS = 600
SLEEP_WALLTIME = 20 * 60
WRITE_WALLTIME = 30 * 60

# One wave: (application, number of jobs), in submission order.
WAVES = {
    1: (8, [("write8", 30), ("sleep", 60)]),
    2: (5, [("write8", 30), ("write6", 30), ("write4", 30), ("write2", 70), ("write1", 120), ("sleep", 30)]),
}


def threads_of(app):
    """k of a "write{k}" application."""
    return int(app.removeprefix("write"))


def write_profile(threads, volume):
    return {"type": "parallel_homogeneous_pfs", "bytes_to_write": threads * BYTES_PER_THREAD,
            "storage": f"ost{volume}"}


def job_mix(apps, rng, first_id=1, subtime=0.0, wave=1):
    """Jobs running ``apps`` (a list of application names), and their profiles."""
    jobs, profiles = [], {}
    for number, app in enumerate(apps, start=first_id):
        job = {"id": number, "subtime": subtime, "res": 1, "app": app, "wave": wave}
        if app == "sleep":
            profiles["sleep"] = {"type": "delay", "delay": SLEEP_SECONDS}
            job.update(profile="sleep", walltime=SLEEP_WALLTIME)
        else:
            volume = int(rng.integers(NB_VOLUMES))
            name = f"{app}_ost{volume}"
            profiles[name] = write_profile(threads_of(app), volume)
            job.update(profile=name, walltime=WRITE_WALLTIME)
        jobs.append(job)
    return jobs, profiles


def stria_workload(number, seed=1, wave_interval=0.0):
    """Workload ``number`` (1 or 2) of paper 000 as a Batsim workload."""
    nb_waves, phases = WAVES[number]
    rng = np.random.default_rng(seed)
    jobs: list[dict]
    jobs, profiles = [], {}
    for wave in range(1, nb_waves + 1):
        apps = [app for app, count in phases for _ in range(count)]
        wave_jobs, wave_profiles = job_mix(apps, rng, len(jobs) + 1, (wave - 1) * wave_interval, wave)
        jobs += wave_jobs
        profiles.update(wave_profiles)
    return {"nb_res": NB_NODES, "jobs": jobs, "profiles": dict(sorted(profiles.items()))}


def concurrent_writers(k, seed=1):
    """``k`` write×8 jobs submitted together at t = 0, each to a random volume
    (Fig. 4 of paper 000: the file system's throughput against concurrent writers)."""
    jobs, profiles = job_mix(["write8"] * k, np.random.default_rng(seed))
    return {"nb_res": NB_NODES, "jobs": jobs, "profiles": profiles}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=int, choices=sorted(WAVES), required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--wave-interval", type=float, default=0.0,
                        help="seconds between the submissions of two waves (default 0: all at t = 0)")
    args = parser.parse_args(argv)
    json.dump(stria_workload(args.workload, args.seed, args.wave_interval), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
