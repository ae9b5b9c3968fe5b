"""Periodic jobs of the list-versus-pack study (seed 001: Jeannot, Pallez,
Vidal, "I/O-aware job-scheduling: exploiting the impacts of workload
characterizations to select the mapping strategy", IJHPCA 2023).

Design notes (the model, its sources, the choices made): this folder's README.md, section periodic.py.
"""
from __future__ import annotations

import argparse
import json
import math
from statistics import NormalDist
import sys

import numpy as np

from batio.schedulers.list_vs_pack.metrics import lower_bound

MIRA_NODES = 49152
MIRA_BLOCK = 512            # Mira's smallest partition (a midplane)
MIRA_LAMBDA = 1.35e-4       # discrete exponential of the processor counts
DEFAULT_HOSTS = 96          # platforms/periodic_rack.xml
DEFAULT_BANDWIDTH = 240e9   # bytes/s of its I/O node
IO_SIGMA = math.sqrt(0.1)   # "variance of 0.1"
BINORMAL_MEANS = {"light": 0.1, "heavy": 0.9}
ITERATIONS = (10, 100)
UNIFORM_MINUTES = (10.0, 100.0)
WALLTIME_FACTOR = 100.0
KAPPA_RANGE = (1 / 3, 3.0)
VOLUME_SCALINGS = ("hosts", "none")
MAX_ATTEMPTS = 200

FAMILIES = {
    "mira-binormal": ("mira", "binormal"),
    "mira-normal": ("mira", "normal"),
    "uniform-binormal": ("uniform", "binormal"),
    "uniform-normal": ("uniform", "normal"),
}
SHORT_NAMES = {"M-BN": "mira-binormal", "M-No": "mira-normal",
               "U-BN": "uniform-binormal", "U-No": "uniform-normal"}


class WorkloadParameterError(ValueError):
    """A generator parameter that cannot give a workload."""


# -- distributions -------------------------------------------------------------

_STD = NormalDist()


def truncated_normal(rng, mean, sigma, size, low=0.0, high=1.0):
    """``size`` draws of N(mean, sigma^2) conditioned on [low, high] (inverse CDF)."""
    a, b = _STD.cdf((low - mean) / sigma), _STD.cdf((high - mean) / sigma)
    uniforms = a + rng.random(size) * (b - a)
    uniforms = np.clip(uniforms, 1e-15, 1 - 1e-15)
    return np.clip([mean + sigma * _STD.inv_cdf(float(u)) for u in uniforms], low, high)


def truncated_normal_mean(mean, sigma, low=0.0, high=1.0):
    a, b = (low - mean) / sigma, (high - mean) / sigma
    mass = _STD.cdf(b) - _STD.cdf(a)
    return mean + sigma * (_STD.pdf(a) - _STD.pdf(b)) / mass


def mira_nodes(rng, size):
    """Node counts: discrete exponential (lambda = 1.35e-4) on the multiples of
    512 up to 49,152."""
    nodes = np.arange(MIRA_BLOCK, MIRA_NODES + 1, MIRA_BLOCK)
    weights = np.exp(-MIRA_LAMBDA * nodes)
    return rng.choice(nodes, size=size, p=weights / weights.sum())


def mira_compute_hours(rng, nodes):
    """Total compute time (hours) of a Mira job of ``nodes`` nodes."""
    median = 1.0 if nodes < 4096 else 2.0 if nodes <= 16384 else 0.5
    sigma = math.sqrt(0.1 * median)
    while True:  # truncated to positive values
        hours = rng.normal(median, sigma)
        if hours > 0:
            return hours


def power_of_two_law(q_mean, nb_hosts):
    """Probabilities over j (Q = 2^j, 2^j <= nb_hosts) with mean ``q_mean``, from
    uniform laws on {0..J}; and whether the mean had to be capped."""
    top = int(math.floor(math.log2(nb_hosts)))
    mean_upto = [(2 ** (J + 1) - 1) / (J + 1) for J in range(top + 1)]
    probabilities = np.zeros(top + 1)
    if q_mean >= mean_upto[-1]:
        probabilities[:] = 1 / (top + 1)
        return probabilities, q_mean > mean_upto[-1]
    if q_mean <= 1:
        probabilities[0] = 1.0
        return probabilities, False
    J = max(J for J in range(top + 1) if mean_upto[J] <= q_mean)
    mix = (q_mean - mean_upto[J]) / (mean_upto[J + 1] - mean_upto[J])
    probabilities[:J + 1] += (1 - mix) / (J + 1)
    probabilities[:J + 2] += mix / (J + 2)
    return probabilities, False


def expected_io_share(io_law, alpha):
    """E(X) of the I/O law at this alpha (the Uniform protocol's Q-bar formula)."""
    light, heavy = (truncated_normal_mean(m, IO_SIGMA) for m in BINORMAL_MEANS.values())
    if io_law == "normal":
        return truncated_normal_mean(alpha, IO_SIGMA)
    return min(max(alpha, light), heavy)


# -- eq. 2 ---------------------------------------------------------------------

def alpha_of(workload, nb_hosts=DEFAULT_HOSTS, bandwidth=DEFAULT_BANDWIDTH):
    """Eq. 2 computed from a workload's profiles: every job must be a composed
    profile of delays and parallel_homogeneous_pfs transfers."""
    profiles = workload["profiles"]
    if not workload.get("jobs"):
        raise WorkloadParameterError("the workload has no jobs: its I/O load is undefined")
    io_time = area = 0.0
    for job in workload["jobs"]:
        Q = job["res"]
        compute, moved = _walk_times(profiles, profiles[job["profile"]], Q)
        io_time += moved / bandwidth
        area += Q / nb_hosts * (compute + moved / bandwidth)
    return io_time / area


def _walk_times(profiles, profile, Q, times=1):
    if profile["type"] == "composed":
        compute = moved = 0.0
        for name in profile["seq"]:
            c, m = _walk_times(profiles, profiles[name], Q, times * profile.get("repeat", 1))
            compute, moved = compute + c, moved + m
        return compute, moved
    if profile["type"] == "delay":
        return times * profile["delay"], 0.0
    if profile["type"] == "parallel_homogeneous_pfs":
        per_host = profile.get("bytes_to_read", 0) + profile.get("bytes_to_write", 0)
        return 0.0, times * Q * per_host
    raise WorkloadParameterError(f"profile type {profile['type']!r} is not part of the periodic job model")


# -- the generator ---------------------------------------------------------------

def family_name(family):
    name = SHORT_NAMES.get(family, family)
    if name not in FAMILIES:
        raise WorkloadParameterError(f"unknown family {family!r}; known: "
                                     f"{', '.join(list(FAMILIES) + list(SHORT_NAMES))}")
    return name


def check_parameters(family, alpha, nb_jobs, nb_hosts, bandwidth):
    name = family_name(family)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha <= 1:
        raise WorkloadParameterError(f"alpha (the target I/O load) must be in (0, 1], got {alpha!r}")
    if isinstance(nb_jobs, bool) or not isinstance(nb_jobs, (int, np.integer)) or nb_jobs < 1:
        raise WorkloadParameterError(f"nb_jobs must be an integer >= 1 (an empty workload has no I/O "
                                     f"load), got {nb_jobs!r}")
    if isinstance(nb_hosts, bool) or not isinstance(nb_hosts, (int, np.integer)) or nb_hosts < 1:
        raise WorkloadParameterError(f"nb_hosts must be an integer >= 1, got {nb_hosts!r}")
    if not (isinstance(bandwidth, (int, float)) and bandwidth > 0 and math.isfinite(bandwidth)):
        raise WorkloadParameterError(f"bandwidth must be a positive number of bytes/s, got {bandwidth!r}")
    return name


def generate(family, alpha, nb_jobs=100, seed=0, nb_hosts=DEFAULT_HOSTS, bandwidth=DEFAULT_BANDWIDTH,
             volume_scaling="hosts"):
    """A Batsim workload (dict) of ``nb_jobs`` periodic jobs of ``family``
    (``mira-binormal``, ``M-BN``, ...) whose I/O load (eq. 2) is ``alpha`` on
    ``nb_hosts`` hosts sharing ``bandwidth`` bytes/s; see README.md
    (``volume_scaling``: ``"hosts"``, the paper's v_i proportional to Q_i / P,
    or ``"none"``, v_i independent of Q_i)."""
    name = check_parameters(family, alpha, nb_jobs, nb_hosts, bandwidth)
    if volume_scaling not in VOLUME_SCALINGS:
        raise WorkloadParameterError(f"volume_scaling must be one of {', '.join(VOLUME_SCALINGS)}, "
                                     f"got {volume_scaling!r}")
    sizes, io_law = FAMILIES[name]
    rng = np.random.default_rng(seed)
    rejected = {"kappa": 0, "concentration": 0}
    for _ in range(MAX_ATTEMPTS):
        draw = _draw(rng, sizes, io_law, float(alpha), nb_jobs, nb_hosts, volume_scaling)
        reason = _pathology(draw, nb_jobs, volume_scaling)
        if reason is None:
            break
        rejected[reason] += 1
    else:
        raise WorkloadParameterError(
            f"{name} at alpha={alpha} with {nb_jobs} jobs: no acceptable draw in {MAX_ATTEMPTS} attempts "
            f"(rejected: {rejected}); try more jobs or another alpha")
    workload = _workload(draw, name, float(alpha), nb_jobs, seed, nb_hosts, bandwidth)
    # Each attempt but the accepted one was rejected for one reason.
    workload["generator"].update(attempts=sum(rejected.values()) + 1, rejected=rejected,
                                  volume_scaling=volume_scaling)
    return workload


def _draw(rng, sizes, io_law, alpha, nb_jobs, P, volume_scaling="hosts"):
    n = rng.integers(ITERATIONS[0], ITERATIONS[1] + 1, nb_jobs)
    info = {}
    if sizes == "mira":
        nodes = mira_nodes(rng, nb_jobs)
        Q = np.maximum(1, np.rint(nodes * P / MIRA_NODES)).astype(int)
        w = np.array([mira_compute_hours(rng, x) * 3600 for x in nodes]) / n
    else:
        q_mean = P * expected_io_share(io_law, alpha) / (alpha * (1 + expected_io_share(io_law, alpha)))
        law, capped = power_of_two_law(q_mean, P)
        Q = 2 ** rng.choice(len(law), size=nb_jobs, p=law)
        w = rng.uniform(*UNIFORM_MINUTES, nb_jobs) * 60
        info = {"q_mean_target": q_mean, "q_mean_capped": bool(capped),
                "q_mean_law": float((law * 2 ** np.arange(len(law))).sum())}
    if io_law == "normal":
        X = truncated_normal(rng, alpha, IO_SIGMA, nb_jobs)
        kinds = ["normal"] * nb_jobs
    else:  # fit the target exertion job after job (kappa = 1 loads)
        X, kinds = np.zeros(nb_jobs), []
        io_time = area = 0.0
        for i in range(nb_jobs):
            heavy = io_time < alpha * area if area > 0 else alpha >= 0.5
            kind = "heavy" if heavy else "light"
            X[i] = truncated_normal(rng, BINORMAL_MEANS[kind], IO_SIGMA, 1)[0]
            kinds.append(kind)
            t = X[i] * w[i] * Q[i] / P
            io_time += n[i] * t
            area += Q[i] / P * n[i] * (w[i] + t)
    # alpha(kappa) = kappa A / (B + kappa C), with t = kappa t0.
    t0 = X * w * Q / P if volume_scaling == "hosts" else X * w
    A = float((n * t0).sum())
    B = float((Q / P * n * w).sum())
    C = float((Q / P * n * t0).sum())
    if A == 0 or A <= alpha * C:
        kappa = math.inf  # no I/O drawn at all, or alpha out of reach
    else:
        kappa = alpha * B / (A - alpha * C)
    return {"n": n, "Q": Q, "w": w, "X": X, "kinds": kinds, "t": kappa * t0, "kappa": kappa,
            "alpha_uncalibrated": A / (B + C) if B + C > 0 else 0.0, "info": info}


def _pathology(draw, nb_jobs, volume_scaling="hosts"):
    if not math.isfinite(draw["kappa"]) or (
            volume_scaling == "hosts" and not KAPPA_RANGE[0] <= draw["kappa"] <= KAPPA_RANGE[1]):
        return "kappa"
    io = draw["n"] * draw["t"]
    if io.max() > max(0.2, 5 / nb_jobs) * io.sum():
        return "concentration"
    return None


def _workload(draw, name, alpha, nb_jobs, seed, P, bandwidth):
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        number = i + 1
        n, Q = int(draw["n"][i]), int(draw["Q"][i])
        w = round(float(draw["w"][i]), 6)
        per_host = float(round(draw["t"][i] * bandwidth / Q))
        v = per_host * Q
        t = v / bandwidth
        alone = n * (w + t)
        compute, io, job = f"compute_{number}", f"io_{number}", f"job_{number}"
        profiles[compute] = {"type": "delay", "delay": w}
        profiles[io] = {"type": "parallel_homogeneous_pfs", "bytes_to_write": per_host, "storage": "pfs"}
        profiles[job] = {"type": "composed", "repeat": n, "seq": [compute, io]}
        jobs.append({"id": number, "subtime": 0.0, "walltime": float(math.ceil(WALLTIME_FACTOR * alone)),
                     "res": Q, "profile": job,
                     "iterations": n, "compute_time": w, "io_volume": v, "io_time": t, "period": w + t,
                     "alone_time": alone, "avg_bandwidth": n * v / alone,
                     "io_share": round(float(draw["X"][i]), 6), "io_kind": draw["kinds"][i]})
    workload = {"nb_res": P, "jobs": jobs, "profiles": profiles}
    realised = alpha_of(workload, P, bandwidth)
    workload.update({
        "alpha": realised,
        "alpha_target": alpha,
        "generator": {"module": "batio.workloads.periodic", "family": name, "seed": seed,
                      "nb_jobs": nb_jobs, "nb_hosts": P, "bandwidth": bandwidth,
                      "io_scale_kappa": draw["kappa"], "alpha_uncalibrated": draw["alpha_uncalibrated"],
                      **draw["info"]},
    })
    return workload


# -- the experiments' workloads ---------------------------------------------------

SAMPLES_PER_LOWER_BOUND = 2000  # storage samples per lower bound of a run


def workload_seed(family, alpha, index):
    """The generator seed of the experiments' workload number ``index`` of ``family`` (M-BN...) at ``alpha``."""
    if family not in SHORT_NAMES:
        raise WorkloadParameterError(f"the experiments' families are {', '.join(SHORT_NAMES)}, got {family!r}")
    return 1000 * list(SHORT_NAMES).index(family) + 10 * round(alpha * 10) + index + 1


def sweep_workload(seed, family, alpha, jobs, volume_scaling="hosts"):
    """The experiments' workload number ``seed`` (0, 1, ...) of ``family`` at ``alpha``, a
    ``batio sweep`` generator (``batio.workloads.periodic:sweep_workload``)."""
    workload = generate(family, alpha, jobs, workload_seed(family, alpha, seed), volume_scaling=volume_scaling)
    workload["experiment"] = {"family": family, "alpha": alpha, "index": seed}
    workload["io_sample_period"] = max(1.0, lower_bound(workload, workload["nb_res"]) / SAMPLES_PER_LOWER_BOUND)
    return workload


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", required=True, help=", ".join(list(SHORT_NAMES) + list(FAMILIES)))
    parser.add_argument("--alpha", type=float, required=True, help="target I/O load, in (0, 1]")
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hosts", type=int, default=DEFAULT_HOSTS)
    parser.add_argument("--bandwidth", type=float, default=DEFAULT_BANDWIDTH, help="bytes/s")
    parser.add_argument("--volume-scaling", default="hosts", choices=VOLUME_SCALINGS,
                        help="hosts: v_i proportional to Q_i / P (the paper's formula); none: independent of Q_i")
    parser.add_argument("--out", help="file to write (default: stdout)")
    args = parser.parse_args(argv)
    try:
        workload = generate(args.family, args.alpha, args.jobs, args.seed, args.hosts, args.bandwidth,
                            args.volume_scaling)
    except WorkloadParameterError as error:
        parser.error(str(error))
    text = json.dumps(workload, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as stream:
            stream.write(text)
    else:
        sys.stdout.write(text)
    generator = workload["generator"]
    print(f"{generator['family']}: {args.jobs} jobs, realised alpha = {workload['alpha']:.6f} "
          f"(target {args.alpha}, kappa = {generator['io_scale_kappa']:.3f}, "
          f"{generator['attempts'] - 1} draw(s) filtered out: {generator['rejected']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
