"""Inputs shared by the benchmarks: a 1,098-host platform with a storage
host (Theta scaled down 4x, as in EquilibrIO) and synthetic workloads."""

import time

import numpy as np

NB_HOSTS = 1098


def platform_xml(nb_hosts=NB_HOSTS):
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


def delay_workload(count, delay=60.0, interval=0.05, nb_hosts=NB_HOSTS):
    jobs = [{"id": i, "subtime": i * interval, "walltime": 1000, "res": 1, "profile": "d"} for i in range(count)]
    return {"nb_res": nb_hosts, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": delay}}}


def pfs_workload(count):
    profiles = {"c": {"type": "parallel_homogeneous", "cpu": 3e10, "com": 0},
                "w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9},
                "cw": {"type": "composed", "seq": ["c", "w"], "repeat": 3}}
    jobs = [{"id": i, "subtime": i * 0.5, "walltime": 10000, "res": 1 + i % 8, "profile": "cw"}
            for i in range(count)]
    return {"nb_res": NB_HOSTS, "jobs": jobs, "profiles": profiles}


def backfill_workload(count, seed=1):
    """Jobs of 1-256 hosts (mostly small) arriving faster than they run, so a
    queue of hundreds builds up; runtimes below walltimes, as in real traces."""
    rng = np.random.default_rng(seed)
    jobs, profiles, subtime = [], {}, 0.0
    for i in range(count):
        subtime += float(rng.exponential(4.0))
        hosts = int(2 ** rng.integers(0, 9) if rng.random() < 0.3 else rng.integers(1, 9))
        walltime = float(rng.choice([600, 1800, 3600, 7200]))
        runtime = round(float(walltime * rng.uniform(0.1, 1.0)), 1)
        profiles[f"p{i}"] = {"type": "delay", "delay": runtime}
        jobs.append({"id": i, "subtime": round(subtime, 2), "walltime": walltime, "res": hosts,
                     "profile": f"p{i}"})
    return {"nb_res": NB_HOSTS, "jobs": jobs, "profiles": profiles}


# -- one scheduling round, without the engine ---------------------------------------------
NOW = 100_000.0


class FakeBatsim:
    """The part of pybatsim's Batsim object a scheduler touches in a round."""

    def __init__(self, now=NOW, nb_hosts=NB_HOSTS):
        self.now = now
        self.compute_resources = {host: {"id": host} for host in range(nb_hosts)}
        self.storage_resources = {nb_hosts: {"id": nb_hosts, "name": "pfs0"}}
        self.profiles = {"w0": {"p": {"type": "delay", "delay": 1}}}
        self.started = 0

    def time(self):
        return self.now

    def execute_jobs(self, jobs):
        self.started += len(jobs)

    def reject_jobs(self, jobs):
        pass


def timed_round(scheduler, batsim, running, waiting):
    """Wall time (ms) of one ``schedule()`` of a new ``scheduler`` given the running
    jobs (pairs job, start) and the queue, and how many jobs it started."""
    scheduler.bs = batsim
    scheduler.onSimulationBegins()
    for job, start in running:
        scheduler.mark_running(job, job.allocation, start)
    scheduler.waiting = list(waiting)
    begin = time.perf_counter()
    plan = scheduler.schedule()
    return (time.perf_counter() - begin) * 1e3, len(plan.started)


def random_size_and_walltime(rng):
    """1-256 hosts, mostly small; walltimes from 10 min to 24 h."""
    nb_hosts = int(min(NB_HOSTS, 2 ** rng.integers(0, 9) if rng.random() < 0.3 else rng.integers(1, 9)))
    return nb_hosts, float(rng.choice([600, 1800, 3600, 7200, 14400, 43200, 86400]))


def machine_state(rng, queued, random_job, now=NOW):
    """Running jobs packed on ~90 % of the hosts, and a queue of ``queued`` jobs;
    ``random_job(rng, name, submit_time)`` makes each pybatsim Job."""
    from procset import ProcSet

    from batio.schedulers.backfill import time_limit
    running, next_host, name = [], 0, 0
    while True:
        job = random_job(rng, name, now - 90_000)
        if next_host + job.requested_resources > 0.9 * NB_HOSTS:
            break
        job.allocation = ProcSet((next_host, next_host + job.requested_resources - 1))
        running.append((job, now - rng.uniform(0, 0.95) * time_limit(job)))
        next_host += job.requested_resources
        name += 1
    waiting = [random_job(rng, name + i, now - queued + i) for i in range(queued)]
    return running, waiting
