"""A job's time-resolved I/O demand (seed 002, CATIOS): the per-second
profile D[0..n-1] in bytes/s, shared by the workload generator, the
scheduler and the job matcher.

Design notes (the model, its sources, the choices made): this folder's README.md, section iodemand.py.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
import hashlib
import json
import math

import numpy as np

from batio.errors import InputError, InvalidValue

DEMAND_FIELD = "io_demand"
COMMAND_FIELD = "command"
# Fidelity against simulation time, measured: see README.md.
DEFAULT_CHUNK_SECONDS = 5


def encode(demand: np.ndarray) -> list[list]:
    """[[seconds, bytes_per_second], ...]: runs of equal consecutive seconds."""
    values = np.asarray(demand, dtype=float)
    if values.size == 0:
        return []
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    lengths = np.diff(np.r_[starts, values.size])
    return [[int(length), _plain_number(values[start])] for start, length in zip(starts, lengths)]


def decode(runs: Sequence[Sequence]) -> np.ndarray:
    """D, one float64 value per second, from its run-length encoding."""
    return np.concatenate([np.zeros(0)] + [np.full(int(seconds), float(rate)) for seconds, rate in runs])


def _plain_number(value: float) -> int | float:
    """An integer when the value is one, so the JSON stays short."""
    return int(value) if float(value).is_integer() and abs(value) < 2 ** 53 else float(value)


def _fields_of(job) -> Mapping:
    """The workload fields of a pybatsim Job, or a plain job dict."""
    fields = getattr(job, "json_dict", job)
    return fields if isinstance(fields, Mapping) else {}


def _job_name(job, fields: Mapping) -> str:
    return str(getattr(job, "id", None) or fields.get("id", "?"))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def demand_of(job, source: str = "workload") -> np.ndarray:
    """D of a pybatsim ``Job`` (its ``json_dict``) or of a plain job dict.

    Raises ``InputError`` naming ``source``, the job and the field when the
    field is absent or malformed.
    """
    fields = _fields_of(job)
    name = _job_name(job, fields)

    def bad(problem):
        return InputError(source, problem, job=name, field=DEMAND_FIELD)

    if DEMAND_FIELD not in fields:
        raise bad("missing: the job's per-second I/O demand, [[seconds, bytes_per_second], ...]")
    runs = fields[DEMAND_FIELD]
    if not isinstance(runs, list) or not runs:
        raise bad(f"expected a non-empty list of [seconds, bytes_per_second] runs, got {runs!r}")
    for index, run in enumerate(runs):
        if not isinstance(run, (list, tuple)) or len(run) != 2:
            raise bad(f"run {index}: expected [seconds, bytes_per_second], got {run!r}")
        seconds, rate = run
        if not _is_number(seconds) or seconds < 1 or float(seconds) != int(seconds):
            raise bad(f"run {index}: seconds must be a positive integer, got {seconds!r}")
        if not _is_number(rate) or rate < 0:
            raise bad(f"run {index}: bytes_per_second must be a finite number >= 0, got {rate!r}")
    return decode(runs)


def command_of(job, source: str = "workload") -> str:
    """The job's command line; ``InputError`` when absent or not a non-empty string."""
    fields = _fields_of(job)
    command = fields.get(COMMAND_FIELD)
    if not isinstance(command, str) or not command.strip():
        raise InputError(source, f"expected the job's command line as a non-empty string, got {command!r}",
                         job=_job_name(job, fields), field=COMMAND_FIELD)
    return command


def alone_rate(nodes: int, node_bandwidth: float, storage_bandwidth: float) -> float:
    """Bytes/s a job on ``nodes`` hosts moves to or from storage when alone."""
    return min(nodes * node_bandwidth, storage_bandwidth)


def _named(profiles: dict, kind: str, profile: dict) -> str:
    """Add ``profile`` under a name derived from its content; return the name."""
    digest = hashlib.sha1(json.dumps(profile, sort_keys=True).encode()).hexdigest()[:10]
    name = f"{kind}_{digest}"
    profiles[name] = profile
    return name


def _chunk(profiles, seconds, rate, nodes, read, storage, transfer_seconds) -> str:
    """One chunk: a transfer of rate x seconds bytes, then the rest of the chunk as a delay."""
    total = rate * seconds
    key = "bytes_to_read" if read else "bytes_to_write"
    transfer = _named(profiles, "pfs", {"type": "parallel_homogeneous_pfs", key: total / nodes,
                                        "storage": storage})
    idle = seconds - transfer_seconds(total)
    if idle < -1e-9:
        raise InvalidValue(f"a demand of {rate:.4g} B/s on {nodes} node(s) takes {transfer_seconds(total):.4g} s "
                         f"per chunk of {seconds} s even alone: above what the platform gives the job")
    if idle <= 1e-9:
        return transfer
    wait = _named(profiles, "delay", {"type": "delay", "delay": idle})
    return _named(profiles, "chunk", {"type": "composed", "seq": [transfer, wait]})


def phase_profiles(name: str, demand: np.ndarray, nodes: int, *, node_bandwidth: float,
                   storage_bandwidth: float, latency: float = 0.0, reads: Sequence[bool] | np.ndarray | None = None,
                   chunk_seconds: int = DEFAULT_CHUNK_SECONDS, storage: str = "pfs") -> dict[str, dict]:
    """The Batsim profiles that make a job of ``nodes`` hosts move ``demand``
    (D, bytes/s per second) through the storage link over time; the top one
    is named ``name``.

    ``node_bandwidth`` (each host's link) and ``storage_bandwidth`` (the
    storage link, B) in bytes/s, and ``latency`` (s, the route's) give the
    transfers' time alone. ``reads[i]`` says second i reads (default: all
    writes). See README.md.
    """
    demand = np.asarray(demand, dtype=float)
    if demand.ndim != 1 or demand.size == 0 or np.any(demand < 0) or not np.all(np.isfinite(demand)):
        raise InvalidValue(f"{name}: the demand must be a non-empty sequence of finite values >= 0")
    if int(chunk_seconds) != chunk_seconds or chunk_seconds < 1:
        raise InvalidValue(f"{name}: chunk_seconds must be a positive integer, got {chunk_seconds!r}")
    rate_alone = alone_rate(nodes, node_bandwidth, storage_bandwidth)
    reads = np.zeros(demand.size, bool) if reads is None else np.asarray(reads, bool)
    if reads.shape != demand.shape:
        raise InvalidValue(f"{name}: reads must give one direction per second of the demand")

    def transfer_seconds(total_bytes):
        return total_bytes / rate_alone + latency

    profiles: dict[str, dict] = {}
    phases = []
    # A phase: consecutive seconds with the same demand and direction.
    cuts = np.flatnonzero(np.r_[True, (demand[1:] != demand[:-1]) | (reads[1:] != reads[:-1]), True])
    for start, end in zip(cuts[:-1], cuts[1:]):
        seconds, rate, read = int(end - start), float(demand[start]), bool(reads[start])
        if rate == 0:
            phases.append(_named(profiles, "delay", {"type": "delay", "delay": seconds}))
            continue
        whole, rest = divmod(seconds, chunk_seconds)
        if whole:
            chunk = _chunk(profiles, chunk_seconds, rate, nodes, read, storage, transfer_seconds)
            phases.append(chunk if whole == 1 else
                          _named(profiles, "repeat", {"type": "composed", "repeat": whole, "seq": [chunk]}))
        if rest:
            phases.append(_chunk(profiles, rest, rate, nodes, read, storage, transfer_seconds))
    profiles[name] = {"type": "composed", "seq": phases}
    return profiles
