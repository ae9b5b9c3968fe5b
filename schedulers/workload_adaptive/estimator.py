"""The history-based estimator of job I/O throughput and runtime (paper 000,
Section III), shared by the I/O-aware policies.

The paper's "analytical services" predict a job's requirements "as weighted
averages of historical resource usage of similar jobs, using exponentially
decaying weights to increase the contribution of recent jobs". batio does
the same inside the scheduler, from what the scheduler itself sees.

Similar jobs
------------
Jobs are similar when they have the same ``app`` field in the workload (an
extra job field, forwarded by Batsim in ``JOB_SUBMITTED``): ``"write8"``,
``"sleep"``... A job without an ``app`` field is similar to the jobs that
run the same profile of the same workload: its key is ``"w0!profile"``
(Batsim profiles are the unit of identical work). An ``app`` that is not a
non-empty string or an integer is an error (``EstimatorError``).

What is learnt
--------------
When a job completes successfully, the estimator records

* its runtime D_j = finish - start, as the scheduler sees them (start: the
  time it decided to run the job; finish: the ``JOB_COMPLETED`` time), and
* its throughput: the bytes its profile moves to and from storage (read +
  written, ``batio.schedulers.jobio.bytes_moved``) divided by D_j.

The bytes are fixed by the profile, so a job slowed down by a congested file
system shows a lower throughput: congestion lowers r_j, which is what makes
the I/O-aware scheduler admit more writers as congestion grows (Section VI,
Fig. 3(b)). Jobs that fail, are killed or reach their walltime are not
recorded: their bytes moved are unknown.

Decaying average
----------------
For each key, with observations x_1 (oldest) ... x_n (newest) and decay
``lambda`` in [0, 1], the estimate is

    sum_k lambda^(n-k) x_k / sum_k lambda^(n-k),

kept as two running sums (S <- lambda S + x, W <- lambda W + 1): O(1) per
completion. Weights decay per *completion of a similar job*, not per second:
the estimate moves as fast as evidence about the current running conditions
arrives, whatever the jobs' time scale. ``lambda = 1`` is the plain mean,
``lambda = 0`` keeps only the last observation. The default 0.8 is the
authors' prototype's (py-sim-serv's ``DECAY`` alpha = 0.2, i.e. weights
1, 0.8, 0.64, ...): about the last five jobs count, enough to smooth one job's
luck, few enough to follow congestion within a wave of 30 jobs.

r_j (bytes/s) and d_j (s) are both such averages; d_j is capped by the job's
walltime L_j, which it cannot exceed.

Modes
-----
``untrained``: the history starts empty. A job with no history is estimated
at r_j = 0 (the paper: "having no estimates of the job resource requirements,
the scheduler assumed zero Lustre throughput for all jobs") and d_j = L_j,
its walltime (as Slurm's prototype falls back to the time limit; infinite
when the job has none).

``pretrained``: the history of each job type holds one observation made with
the job running alone (Section VI: "pre-trained by running jobs in
isolation"), weighted like one completed job. The alone values come from a
history file (or the same mapping inline), which
``python -m batio.schedulers.workload_adaptive.pretrain --platform P --workload W --out history.json``
writes by running, through the embedded engine, the first job of each type
of the workload alone on the platform (``batio.schedulers.workload_adaptive.pretrain``). A job type missing from
the history is estimated as in ``untrained``.

History file (JSON; rates in bytes/s, runtimes in s)::

    {"apps": {"write8": {"rate": 1.2e9, "runtime": 70.0}, "sleep": {"rate": 0, "runtime": 600}}}

The inline form may omit the ``"apps"`` level. ``batio.schedulers.workload_adaptive.pretrain`` adds, per app,
the job it ran, its bytes, and the platform, for the record.
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


class EstimatorError(InvalidValue):
    """Bad estimator input: a history, an ``app`` field, a mode."""


@dataclass(frozen=True)
class Estimate:
    """r_j (bytes/s) and d_j (s) of a job."""

    rate: float
    runtime: float


def similarity_key(json_dict: Mapping[str, Any], workload: str, profile: str) -> str:
    """The key of a job's similar jobs: its ``app`` field, or else
    ``"WORKLOAD!PROFILE"`` (see the module docstring)."""
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


class _History:
    __slots__ = ("rate_sum", "runtime_sum", "weight", "count")

    def __init__(self):
        self.rate_sum = self.runtime_sum = self.weight = 0.0
        self.count = 0


class Estimator:
    """Decaying averages of r_j and d_j per job type (module docstring)."""

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

    def estimate(self, key: str, walltime: float = math.inf) -> Estimate:
        """r_j and d_j for a job of type ``key`` with walltime L_j; a type
        without history gets r = 0 and d = L_j."""
        history = self._history.get(key)
        if history is None:
            return Estimate(0.0, walltime)
        return Estimate(history.rate_sum / history.weight,
                        min(history.runtime_sum / history.weight, walltime))


# -- history files --------------------------------------------------------

def load_history(source: Any) -> dict[str, Estimate]:
    """Alone values from a history file path or a mapping (module docstring)."""
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
