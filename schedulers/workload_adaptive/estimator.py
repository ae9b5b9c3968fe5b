"""The history-based estimator of job I/O throughput and runtime (paper 000,
Section III), shared by the I/O-aware policies.

Design notes (the model, its sources, the choices made): this folder's README.md, section estimator.py.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import json
import math
from pathlib import Path
from typing import Any

from batio.errors import InvalidValue
from batio.schedulers.jobio import bytes_moved

MODES = ("pretrained", "untrained")
DEFAULT_DECAY = 0.8
BYTES_FIELDS = ("read_bytes", "written_bytes")
"""A job's own bytes read and written, all hosts (``batio import jobsio``)."""
IO_ALONE = "io_alone_s"
"""The seconds a job's read and write transfers take alone."""


class EstimatorError(InvalidValue):
    """Bad estimator input: a history, an ``app`` field, a mode."""


@dataclass(frozen=True)
class Estimate:
    """r_j (bytes/s) and d_j (s) of a job."""

    rate: float
    runtime: float


def similarity_key(json_dict: Mapping[str, Any], workload: str, profile: str) -> str:
    """The key of a job's similar jobs: its ``app`` field, or else
    ``"WORKLOAD!PROFILE"`` (see README.md)."""
    if "app" not in json_dict:
        return f"{workload}!{profile}"
    app = json_dict["app"]
    if isinstance(app, bool) or not isinstance(app, (str, int)) or app == "":
        job = json_dict.get("id", "?")
        raise EstimatorError(f"job {job}: field 'app' must be a non-empty string or an integer "
                             f"naming the job type, got {json.dumps(app)}")
    return str(app)


def job_key(job) -> str:
    """``similarity_key`` of a pybatsim Job."""
    return similarity_key(job.json_dict or {}, job.workload, job.profile)


def job_bytes(job, profiles: Mapping[str, Mapping]) -> float:
    """Bytes a pybatsim Job's profile moves to and from storage (read + written)."""
    read, written = bytes_moved(profiles[job.profile], profiles, job.requested_resources)
    return read + written


def stated_estimate(json_dict: Mapping[str, Any], delay_s: float, walltime: float = math.inf) -> Estimate | None:
    """r_j and d_j from the I/O a job's own fields state, for a job without
    history (README.md, "A job's own I/O"); None when it states none.
    ``delay_s``: its profile's delay seconds, the rest of its run alone."""
    job = json_dict.get("id", "?")
    if not any(name in json_dict for name in BYTES_FIELDS):
        if IO_ALONE in json_dict:
            raise EstimatorError(f"job {job}: field '{IO_ALONE}' needs the bytes it moves beside it "
                                 f"(fields {' and '.join(map(repr, BYTES_FIELDS))})")
        return None
    nb_bytes = 0.0
    for name in BYTES_FIELDS:
        value = json_dict.get(name, 0)
        if not (_number(value) and 0 <= value < math.inf):
            raise EstimatorError(f"job {job}: field '{name}' must be a number of bytes >= 0, "
                                 f"got {json.dumps(value)}")
        nb_bytes += value
    if IO_ALONE not in json_dict:
        # The average over a run as long as the walltime: a lower bound on r_j, and r_j d_j is the job's bytes.
        return Estimate(nb_bytes / walltime if walltime < math.inf else 0.0, walltime)
    io_alone = json_dict[IO_ALONE]
    if not (_number(io_alone) and 0 < io_alone < math.inf):
        raise EstimatorError(f"job {job}: field '{IO_ALONE}' must be a number of seconds > 0, "
                             f"got {json.dumps(io_alone)}")
    # What pretrain records for a job run alone: its bytes over its alone run time, and that time.
    alone = io_alone + delay_s
    return Estimate(nb_bytes / alone, min(alone, walltime))


class _History:
    __slots__ = ("rate_sum", "runtime_sum", "weight", "count")

    def __init__(self):
        self.rate_sum = self.runtime_sum = self.weight = 0.0
        self.count = 0


class Estimator:
    """Decaying averages of r_j and d_j per job type (README.md)."""

    def __init__(self, decay: float = DEFAULT_DECAY, alone: Mapping[str, Estimate] | None = None):
        if not (isinstance(decay, (int, float)) and 0.0 <= decay <= 1.0):
            raise EstimatorError(f"decay must be a number in [0, 1], got {decay!r}")
        self.decay = float(decay)
        self._history: dict[str, _History] = {}
        for key, estimate in (alone or {}).items():
            self.record(key, estimate.rate, estimate.runtime)

    @classmethod
    def from_options(cls, mode: str, history: Any = None, decay: float = DEFAULT_DECAY) -> Estimator:
        """The estimator of mode ``"pretrained"`` (``history``: a history file
        path or mapping, required) or ``"untrained"`` (no history)."""
        if mode == "pretrained":
            if history is None:
                raise EstimatorError("estimator 'pretrained' needs a history: the option 'history' gives a "
                                     "history file (write one with python -m batio.schedulers.workload_adaptive."
                                     "pretrain) or {app: {\"rate\": bytes/s, \"runtime\": s}}")
            return cls(decay, load_history(history))
        if mode == "untrained":
            if history is not None:
                raise EstimatorError("option 'history' is only used by estimator 'pretrained'")
            return cls(decay)
        raise EstimatorError(f"estimator must be one of {', '.join(MODES)}, got {mode!r}")

    # -- learning ----------------------------------------------------------

    def record(self, key: str, rate: float, runtime: float) -> None:
        """Add one observation (rate in bytes/s, runtime in s) to ``key``'s history."""
        if not (rate >= 0 and math.isfinite(rate)) or not (runtime > 0 and math.isfinite(runtime)):
            raise EstimatorError(f"{key}: an observation needs a finite rate >= 0 and runtime > 0, "
                                 f"got rate {rate!r}, runtime {runtime!r}")
        history = self._history.setdefault(key, _History())
        history.rate_sum = self.decay * history.rate_sum + rate
        history.runtime_sum = self.decay * history.runtime_sum + runtime
        history.weight = self.decay * history.weight + 1.0
        history.count += 1

    def observe(self, key: str, nb_bytes: float, start: float, finish: float) -> None:
        """A job of type ``key`` that moved ``nb_bytes`` ran over [start, finish)."""
        runtime = finish - start
        if runtime <= 0:
            return  # nothing measurable (a zero-length job)
        self.record(key, nb_bytes / runtime, runtime)

    # -- predicting --------------------------------------------------------

    def knows(self, key: str) -> bool:
        return key in self._history

    def observations(self, key: str) -> int:
        """How many observations ``key``'s history holds (alone run included)."""
        history = self._history.get(key)
        return history.count if history else 0

    def estimate(self, key: str, walltime: float = math.inf, stated: Estimate | None = None) -> Estimate:
        """r_j and d_j for a job of type ``key`` with walltime L_j; a type
        without history gets ``stated`` (``stated_estimate``), or else r = 0
        and d = L_j."""
        history = self._history.get(key)
        if history is None:
            return stated if stated is not None else Estimate(0.0, walltime)
        return Estimate(history.rate_sum / history.weight,
                        min(history.runtime_sum / history.weight, walltime))


# -- history files --------------------------------------------------------

def load_history(source: Any) -> dict[str, Estimate]:
    """Alone values from a history file path or a mapping (README.md)."""
    origin = source
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            source = json.loads(path.read_text())
        except OSError as error:
            raise EstimatorError(f"history file {path}: cannot read it ({error.strerror})") from None
        except json.JSONDecodeError as error:
            raise EstimatorError(f"history file {path}: not JSON ({error})") from None
    where = f"history file {origin}" if isinstance(origin, (str, Path)) else "history"
    if not isinstance(source, Mapping):
        raise EstimatorError(f"{where}: expected a JSON object of apps, got {json.dumps(source)[:80]}")
    apps = source.get("apps", source)
    if not isinstance(apps, Mapping):
        raise EstimatorError(f"{where}: 'apps' must be an object")
    history = {}
    for app, values in apps.items():
        if not isinstance(values, Mapping) or not {"rate", "runtime"} <= set(values):
            raise EstimatorError(f"{where}: app {app!r} needs {{\"rate\": bytes/s, \"runtime\": s}}, "
                                 f"got {json.dumps(values)[:80]}")
        rate, runtime = values["rate"], values["runtime"]
        if (not _number(rate) or not _number(runtime) or not rate >= 0 or not runtime > 0
                or not math.isfinite(rate) or not math.isfinite(runtime)):
            raise EstimatorError(f"{where}: app {app!r} needs a rate >= 0 and a runtime > 0, "
                                 f"got rate {rate!r}, runtime {runtime!r}")
        history[str(app)] = Estimate(float(rate), float(runtime))
    return history


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
