"""What one run is: its input files, its scheduler, its output prefix and its options (``RunSpec``),
each option checked here, once, with one wording per error."""

from dataclasses import dataclass, field
import hashlib
import math

from batio.errors import InputError

MODES = ("inprocess", "socket")
# Longest wall-clock wait for one scheduler decision, by mode, unless --timeout
# says otherwise: an in-process decision may include loading a model.
DEFAULT_TIMEOUT_S = {"socket": 60.0, "inprocess": 600.0}
# Simulated seconds a scheduler may let pass with jobs waiting and none running (server.Config.max_idle).
DEFAULT_MAX_IDLE_S = 86400.0
DEFAULT_IO_SAMPLE_PERIOD_S = 1.0  # seconds between samples of the storage throughput (_io.csv)
# The run options a sweep file's run_options may give, and what each must be.
RUN_OPTIONS = {"mode": "inprocess or socket", "io_sample_period": "a number of seconds > 0",
               "timeout": "a number of seconds > 0", "max_idle": "a number of simulated seconds > 0",
               "io_exclusive": "true or false"}
# The RunSpec field each run option sets.
RUN_OPTION_FIELDS = {"mode": "mode", "io_sample_period": "io_sample_period", "timeout": "timeout_s",
                     "max_idle": "max_idle_s", "io_exclusive": "io_exclusive"}
# The command-line option that sets each run option, which errors name.
OPTION_FLAGS = {"mode": "--mode", "io_sample_period": "--io-sample-period", "timeout": "--timeout",
                "max_idle": "--max-idle", "io_exclusive": "--io-exclusive"}


def valid_run_option(key, value):
    """Whether ``value`` is one that run option ``key`` (a RUN_OPTIONS key) can take."""
    if key == "mode":
        return value in MODES
    if key == "io_exclusive":
        return isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def check_option_flag(key, value):
    """Refuse, naming its command-line option, a run option's value no run can use."""
    if valid_run_option(key, value):
        return
    if key == "mode":
        raise InputError(OPTION_FLAGS[key], f"unknown mode {value!r} (known: {', '.join(MODES)})")
    raise InputError(OPTION_FLAGS[key], f"must be a finite number of seconds > 0, got {value}")


@dataclass
class RunSpec:
    platform: str
    workloads: list[str]
    scheduler: str                      # path of a pybatsim scheduler file
    out_prefix: str                     # outputs are PREFIX_jobs.csv, ...
    options: dict = field(default_factory=dict)
    mode: str = "inprocess"
    forward_profiles: bool = False
    dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    profile_reuse: bool = False         # Batsim's --enable-profile-reuse (needs dynamic jobs)
    compute_sharing: bool = False
    storage_sharing: bool = True
    master_host: str = "master_host"
    roles: dict = field(default_factory=dict)   # host name -> role, as Batsim's -r
    port: int | None = None             # socket mode; None picks a free one
    timeout_s: float | None = None      # longest wall-clock wait for one decision (None: DEFAULT_TIMEOUT_S)
    max_idle_s: float = DEFAULT_MAX_IDLE_S
    io_sample_period: float = DEFAULT_IO_SAMPLE_PERIOD_S
    io_exclusive: bool = False          # beyond Batsim: one transfer at a time per storage host (FIFO)
    sg_config: list = field(default_factory=list)  # SimGrid options OPT:VALUE, as Batsim's --sg-cfg

    def __post_init__(self):
        self.check()

    @property
    def decision_timeout_s(self):
        return DEFAULT_TIMEOUT_S.get(self.mode, 0.0) if self.timeout_s is None else self.timeout_s

    def check(self):
        """Refuse, naming its command-line option, an option no run can use."""
        for key, value in (("mode", self.mode), ("io_sample_period", self.io_sample_period),
                           ("timeout", self.decision_timeout_s), ("max_idle", self.max_idle_s)):
            check_option_flag(key, value)
        if self.port is not None and not 1 <= self.port <= 65535:
            raise InputError("--port", f"must be a TCP port from 1 to 65535, got {self.port}")
        if self.profile_reuse and not self.dynamic_jobs:
            raise InputError("--enable-profile-reuse", "needs --enable-dynamic-jobs (Batsim 4.2.1 refuses it alone)")
        if self.acknowledge_dynamic_jobs and not self.dynamic_jobs:
            # Batsim 4.2.1 takes it alone and ignores it: the flag then says nothing true about the run.
            raise InputError("--acknowledge-dynamic-jobs", "acknowledges the jobs the scheduler registers, which "
                                                           "needs --enable-dynamic-jobs (or a scheduler that "
                                                           "registers jobs)")


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
