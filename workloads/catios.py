"""Blue-Waters-like workloads with per-second I/O demands (seed 002, CATIOS),
for ``platforms/catios_cluster.xml``.

Design notes (the model, its sources, the choices made): this folder's README.md, section catios.py.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
import json
import math
import sys

import numpy as np

from batio.schedulers.catios.iodemand import DEFAULT_CHUNK_SECONDS, alone_rate, encode, phase_profiles

# platforms/catios_cluster.xml
NB_NODES = 128
NODE_BW = 1e9             # bytes/s, each compute host's link
STORAGE_BW = 6e9          # bytes/s, B: the storage link every read and write shares
LATENCY = 1e-6 + 100e-6   # s, node link + storage link, paid once by every transfer
RANKS_PER_NODE = 32       # Blue Waters XE node: 32 integer cores

GB = 1e9
RATE_STEP = 50e6          # demands are multiples of it
MAX_SHARE_ALONE = 0.9     # of the rate a job's nodes move alone
WALLTIME_ROUND = 900.0


@dataclass(frozen=True)
class Family:
    name: str
    weight: float
    nodes: tuple[int, ...]
    runtime_minutes: tuple[float, float]
    command: Callable[[np.random.Generator, int], str]
    demand: Callable[[np.random.Generator, int, int, float], Timeline]   # (rng, nodes, seconds, io_scale)


class Timeline:
    """D and the direction of each second, filled phase by phase."""

    def __init__(self, rng, nodes, seconds, io_scale=1.0):
        self.rng, self.nodes, self.io_scale = rng, nodes, io_scale
        self.demand = np.zeros(seconds)
        self.reads = np.zeros(seconds, bool)
        self.ceiling = RATE_STEP * math.floor(MAX_SHARE_ALONE * alone_rate(nodes, NODE_BW, STORAGE_BW)
                                              / RATE_STEP)

    def rate(self, per_node_gb):
        """A per-node rate (GB/s) for this run: varied, scaled by the nodes, capped, on the grid."""
        varied = per_node_gb * GB * self.nodes * self.rng.lognormal(0, 0.2)
        return float(np.clip(RATE_STEP * round(varied / RATE_STEP), RATE_STEP, self.ceiling))

    def stream_rate(self, per_node_gb):
        """The rate of a phase given by its duration: scaled by the I/O intensity."""
        return self.rate(per_node_gb * self.io_scale)

    def hold(self, start, end, rate, read=False):
        self.demand[start:end] = rate
        self.reads[start:end] = read

    def burst(self, start, nbytes, rate, read=False):
        """Move ``nbytes`` (times the I/O intensity) at ``rate`` from second ``start`` (whole seconds)."""
        self.hold(start, start + max(1, math.ceil(nbytes * self.io_scale / rate)), rate, read)

    def at_end(self, nbytes, rate):
        """A write of ``nbytes`` (times the I/O intensity) that ends with the job."""
        self.hold(max(0, self.demand.size - max(1, math.ceil(nbytes * self.io_scale / rate))), self.demand.size, rate)


def _per_node(rng, nodes, gb_range):
    """Bytes: a size per node drawn in ``gb_range`` (GB), times the nodes."""
    return rng.uniform(*gb_range) * GB * nodes


def periodic_checkpoints(read_gb, dump_gb, period_minutes, rate_gb):
    """Input read at start, then a dump every period (jittered 5 %)."""
    def demand(rng, nodes, seconds, io_scale):
        line = Timeline(rng, nodes, seconds, io_scale)
        rate = line.rate(rng.uniform(*rate_gb))
        line.burst(0, _per_node(rng, nodes, read_gb), rate, read=True)
        period = 60 * rng.uniform(*period_minutes)
        dump = _per_node(rng, nodes, dump_gb)
        when = period
        while when < seconds:
            line.burst(int(when), dump * rng.lognormal(0, 0.05), rate)
            when += period * rng.uniform(0.95, 1.05)
        return line
    return demand


def frames(period_seconds, frame_gb, rate_gb, restart_gb):
    """Small frames at a steady period, a restart file at the end."""
    def demand(rng, nodes, seconds, io_scale):
        line = Timeline(rng, nodes, seconds, io_scale)
        rate = line.rate(rng.uniform(*rate_gb))
        period = int(rng.uniform(*period_seconds))
        frame = _per_node(rng, nodes, frame_gb)
        for start in range(period, seconds, period):
            line.burst(start, frame, rate)
        line.at_end(_per_node(rng, nodes, restart_gb), rate)
        return line
    return demand


def read_then_trickle(read_share, read_rate_gb, trickle_gb, output_gb, write_rate_gb):
    """A long read of the input, a trickle of output, the result written at the end."""
    def demand(rng, nodes, seconds, io_scale):
        line = Timeline(rng, nodes, seconds, io_scale)
        reading = int(seconds * rng.uniform(*read_share))
        line.hold(0, reading, line.stream_rate(rng.uniform(*read_rate_gb)), read=True)
        line.hold(reading, seconds, line.stream_rate(rng.uniform(*trickle_gb)))
        line.at_end(_per_node(rng, nodes, output_gb), line.rate(rng.uniform(*write_rate_gb)))
        return line
    return demand


def read_compute_write(read_gb, read_rate_gb, write_seconds, write_rate_gb):
    """Read the input at start, compute, write the results at the end."""
    def demand(rng, nodes, seconds, io_scale):
        line = Timeline(rng, nodes, seconds, io_scale)
        line.burst(0, _per_node(rng, nodes, read_gb), line.rate(rng.uniform(*read_rate_gb)), read=True)
        rate = line.rate(rng.uniform(*write_rate_gb))
        line.at_end(rate * rng.uniform(*write_seconds), rate)
        return line
    return demand


def steady_stream(rate_gb, level_seconds):
    """Steady reads whose level drifts every few minutes around the run's own."""
    def demand(rng, nodes, seconds, io_scale):
        line = Timeline(rng, nodes, seconds, io_scale)
        base = rng.uniform(*rate_gb)
        start = 0
        while start < seconds:
            end = start + int(rng.uniform(*level_seconds))
            line.hold(start, end, line.stream_rate(base), read=True)
            start = end
        return line
    return demand


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


USERS = ["jchen", "mrodriguez", "akumar", "lwang", "sbaker", "tnguyen", "ekim", "dpatel"]


def wrf_command(rng, nodes):
    case = _pick(rng, ["conus_4km", "conus_12km", "hurricane_sandy", "hurricane_katrina", "great_plains_3km"])
    day = f"2012-{int(rng.integers(5, 11)):02d}-{int(rng.integers(1, 29)):02d}"
    return f"aprun -n {nodes * RANKS_PER_NODE} -N 32 ./wrf.exe namelist.input.{case}_{day}"


def enzo_command(rng, nodes):
    run = _pick(rng, ["cosmo_512", "cosmo_1024", "galaxy_zoom", "reion_box"])
    if rng.random() < 0.5:
        return f"aprun -n {nodes * RANKS_PER_NODE} -N 32 ./enzo.exe -d {run}.enzo"
    dump = int(rng.integers(1, 120))
    return f"aprun -n {nodes * RANKS_PER_NODE} -N 32 ./enzo.exe -d -r DD{dump:04d}/{run}_DD{dump:04d}"


def namd_command(rng, nodes):
    system = _pick(rng, ["apoa1", "stmv", "hiv_capsid", "ribosome_70s", "membrane_popc"])
    stage = _pick(rng, ["equil", "prod"]) + str(int(rng.integers(1, 20)))
    return f"aprun -n {nodes * RANKS_PER_NODE} -N 32 namd2 +setcpuaffinity {system}_{stage}.conf"


def bwa_command(rng, nodes):
    sample = f"{_pick(rng, ['NA12878', 'HG00096', 'TCGA-A2-A0T2', 'SRR062634', 'NA19240'])}" \
             f"_L{int(rng.integers(1, 9)):03d}"
    return (f"aprun -n {nodes} -N 1 -d 32 ./pbwa mem -t 32 ref/hs37d5.fa "
            f"{sample}_R1.fastq.gz {sample}_R2.fastq.gz -o {sample}.sam")


def yt_command(rng, nodes):
    first = int(rng.integers(0, 200))
    field = _pick(rng, ["density", "temperature", "metallicity", "velocity_magnitude"])
    return (f"aprun -n {nodes * 16} -N 16 python3 yt_project.py --snapshots DD{first:04d}-DD{first + 20:04d} "
            f"--field {field} --axis {_pick(rng, 'xyz')}")


def adios_command(rng, nodes):
    user = _pick(rng, USERS)
    run = f"{_pick(rng, ['xgc', 'gtc', 'pixie3d'])}_run{int(rng.integers(1, 60))}"
    window = int(_pick(rng, [16, 32, 64, 128]))
    return (f"aprun -n {nodes * RANKS_PER_NODE} -N 32 ./stream_analysis --input "
            f"/scratch/sciteam/{user}/{run}.bp --window {window}")


def milc_command(rng, nodes):
    lattice = _pick(rng, ["l4864f211b600m00184m0507m628", "l3264f211b600m00507m0507m628",
                          "l6496f211b630m0012m0363m432"])
    return f"aprun -n {nodes * RANKS_PER_NODE} -N 32 ./su3_rhmd_hisq < in.{lattice}.{int(rng.integers(1, 40))}"


FAMILIES = [
    Family("wrf", 0.20, (8, 16, 32), (30, 120), wrf_command,
           periodic_checkpoints(read_gb=(1, 3), dump_gb=(5, 15), period_minutes=(5, 12), rate_gb=(0.25, 0.5))),
    Family("enzo", 0.10, (16, 32, 64), (60, 180), enzo_command,
           periodic_checkpoints(read_gb=(2, 6), dump_gb=(8, 20), period_minutes=(8, 15), rate_gb=(0.15, 0.3))),
    Family("namd", 0.15, (2, 4, 8, 16), (20, 90), namd_command,
           frames(period_seconds=(60, 180), frame_gb=(0.5, 1.5), rate_gb=(0.2, 0.4), restart_gb=(2, 4))),
    Family("bwa", 0.15, (1, 2, 4, 8), (20, 60), bwa_command,
           read_then_trickle(read_share=(0.2, 0.5), read_rate_gb=(0.4, 0.8), trickle_gb=(0.02, 0.05),
                             output_gb=(20, 40), write_rate_gb=(0.6, 0.9))),
    Family("yt", 0.10, (1, 2, 4), (10, 40), yt_command,
           read_compute_write(read_gb=(100, 300), read_rate_gb=(0.6, 0.9), write_seconds=(120, 300),
                              write_rate_gb=(0.6, 0.9))),
    Family("adios", 0.10, (2, 4, 8), (30, 120), adios_command,
           steady_stream(rate_gb=(0.3, 0.7), level_seconds=(60, 300))),
    Family("milc", 0.20, (16, 32, 64), (60, 180), milc_command,
           read_compute_write(read_gb=(0.5, 1), read_rate_gb=(0.2, 0.4), write_seconds=(5, 15),
                              write_rate_gb=(0.2, 0.4))),
]


def draw_run(rng, family, io_scale=1.0):
    """One run of ``family``: (nodes, command, D, whether each second reads)."""
    nodes = int(_pick(rng, family.nodes))
    seconds = int(60 * math.exp(rng.uniform(*np.log(family.runtime_minutes))))
    line = family.demand(rng, nodes, seconds, io_scale)
    return nodes, family.command(rng, nodes), line.demand, line.reads


def catios_workload(seed=1, nb_jobs=200, load=1.05, name="catios_bw", chunk_seconds=DEFAULT_CHUNK_SECONDS,
                    io_scale=1.0):
    """The workload as a Batsim workload dict (see README.md)."""
    if not (isinstance(io_scale, (int, float)) and not isinstance(io_scale, bool) and math.isfinite(io_scale)
            and io_scale > 0):
        raise ValueError(f"io_scale must be a finite number > 0, got {io_scale!r}")
    rng = np.random.default_rng(seed)
    weights = np.array([family.weight for family in FAMILIES])
    runs = [(family, *draw_run(rng, family, io_scale))
            for family in (FAMILIES[i] for i in rng.choice(len(FAMILIES), nb_jobs, p=weights / weights.sum()))]
    work = sum(nodes * demand.size for _, nodes, _, demand, _ in runs)
    gaps = rng.exponential(work / (load * NB_NODES) / nb_jobs, nb_jobs)
    subtimes = np.cumsum(gaps) - gaps[0]
    jobs, profiles = [], {}
    for number, ((family, nodes, command, demand, reads), subtime) in enumerate(zip(runs, subtimes), start=1):
        profile = f"j{number}"
        profiles.update(phase_profiles(profile, demand, nodes, node_bandwidth=NODE_BW, storage_bandwidth=STORAGE_BW,
                                       latency=LATENCY, reads=reads, chunk_seconds=chunk_seconds))
        overestimate = math.exp(rng.uniform(math.log(2), math.log(5)))
        walltime = WALLTIME_ROUND * math.ceil(demand.size * overestimate / WALLTIME_ROUND)
        jobs.append({"id": number, "subtime": round(float(subtime), 1), "walltime": walltime, "res": nodes,
                     "profile": profile, "command": command, "io_demand": encode(demand),
                     "family": family.name})
    return {"workload": name, "nb_res": NB_NODES, "jobs": jobs, "profiles": profiles,
            "description": f"CATIOS Blue-Waters-like workload (batio workloads/catios.py), seed {seed}, "
                           f"{nb_jobs} jobs, load {load}, chunks of {chunk_seconds} s"
                           + (f", I/O intensity x{io_scale:g}" if io_scale != 1 else "")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--load", type=float, default=1.05,
                        help="offered node-seconds over the arrival span, per node-second of the cluster")
    parser.add_argument("--name", default="catios_bw", help="the workload's name (its 'workload' field)")
    parser.add_argument("--chunk-seconds", type=int, default=DEFAULT_CHUNK_SECONDS,
                        help="seconds per transfer chunk of a phase (batio.schedulers.catios.iodemand)")
    parser.add_argument("--io-scale", type=float, default=1.0,
                        help="I/O intensity: every job moves this many times the bytes (> 0)")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.io_scale) and args.io_scale > 0):
        parser.error(f"--io-scale must be a finite number > 0, got {args.io_scale}")
    work = catios_workload(args.seed, args.jobs, args.load, args.name, args.chunk_seconds, args.io_scale)
    sys.stdout.write(json.dumps(work, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
