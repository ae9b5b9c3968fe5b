"""The demo workload: periodic jobs that compute, then write to the PFS.

48 jobs on ``cluster16_pfs`` (16 hosts of 1 Gflop/s, a 1 GB/s storage
link): arrivals every 25 s on average (exponential), 1 to 8 hosts, 2 to 5
iterations of 20-120 s of compute followed by a write of 0.2-1 GB per host.
Walltimes are twice the time the job would take alone. Written for people
trying batio for the first time: jobs contend for hosts and for the storage
link, so schedulers differ visibly.

    python -m batio.workloads.demo > workloads/demo.json
"""

import json
import sys

import numpy as np

STORAGE_BANDWIDTH = 1e9  # bytes/s of the pfs link in cluster16_pfs
HOST_SPEED = 1e9         # flop/s


def demo_workload(seed=1, nb_jobs=48, nb_hosts=16):
    rng = np.random.default_rng(seed)
    jobs, profiles = [], {}
    subtime = 0.0
    for number in range(1, nb_jobs + 1):
        subtime += rng.exponential(25.0)
        hosts = int(rng.choice([1, 2, 4, 8], p=[0.35, 0.3, 0.2, 0.15]))
        iterations = int(rng.integers(2, 6))
        compute_s = round(float(rng.uniform(20, 120)), 1)
        write_bytes = round(float(rng.uniform(0.2, 1.0)), 2) * 1e9
        compute, write, job = f"compute_{number}", f"write_{number}", f"job_{number}"
        profiles[compute] = {"type": "parallel_homogeneous", "cpu": compute_s * HOST_SPEED, "com": 0}
        profiles[write] = {"type": "parallel_homogeneous_pfs", "bytes_to_write": write_bytes, "storage": "pfs"}
        profiles[job] = {"type": "composed", "repeat": iterations, "seq": [compute, write]}
        alone = iterations * (compute_s + hosts * write_bytes / STORAGE_BANDWIDTH)
        jobs.append({"id": number, "subtime": round(subtime, 1), "walltime": float(np.ceil(2 * alone)),
                     "res": hosts, "profile": job})
    return {"nb_res": nb_hosts, "jobs": jobs, "profiles": profiles}


if __name__ == "__main__":
    json.dump(demo_workload(), sys.stdout, indent=1)
    sys.stdout.write("\n")
