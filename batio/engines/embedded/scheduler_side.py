"""The scheduler's side of a run: a pybatsim scheduler object loaded in this
process (``inprocess`` mode), or ``pybatsim FILE`` in a process of its own,
bound to a local port (``socket`` mode)."""

from pathlib import Path
import re

from batio.engines.processes import choose_port, start_pybatsim
from batio.engines.processes import stop as stop_process
from batio.errors import BatioError, SchedulerError


def load_scheduler(path, options, watchdog=None):
    """Instantiate a pybatsim scheduler from its file, as `pybatsim FILE` does,
    under the file's one module name (batio.launcher); ``watchdog`` bounds the
    time its import and constructor take, as the first reply does in socket mode."""
    from batio import launcher
    try:
        if watchdog is None:
            return launcher.instantiate(path, options)
        late = SchedulerError(f"scheduler {Path(path).name} did not finish loading (its import and constructor) "
                              f"within {watchdog.timeout_s:g} s; it may be looping (raise the bound with --timeout)")
        with watchdog.bounding(0.0, late):
            return launcher.instantiate(path, options)
    except SystemExit as exit:
        raise SchedulerError(f"scheduler {Path(path).name} called sys.exit({exit.code}) while starting") from None
    except BatioError:
        raise
    except Exception as error:
        raise SchedulerError(f"scheduler {Path(path).name} failed to start: "
                             f"{_with_hint(f'{type(error).__name__}: {error}')}") from error


def _with_hint(problem):
    """pybatsim calls an object that is not a BatsimScheduler, as if it were a factory."""
    match = re.search(r"TypeError: '(\w+)' object is not callable", problem)
    if match:
        return f"{problem} (class {match.group(1)} is not a subclass of pybatsim's BatsimScheduler)"
    return problem


class SchedulerProcess:
    """`pybatsim FILE` bound to a local port for socket mode."""

    def __init__(self, spec, log_path):
        self.endpoint = f"tcp://127.0.0.1:{choose_port(spec.port)}"
        self.log_path = log_path
        self.name = Path(spec.scheduler).name
        self._log = open(log_path, "w")
        self.process = start_pybatsim(spec.scheduler, spec.options, self.endpoint, self._log)
        self.exit_code = None  # set by stop if the process had ended by itself

    def alive(self):
        return self.process.poll() is None

    def explain(self, error):
        """``error`` with the scheduler's own error first: the last line of the
        traceback pybatsim printed in its log, if any, and its exit code."""
        with open(self.log_path, errors="replace") as stream:
            lines = [line.rstrip() for line in stream if line.strip()]
        raised = next((line for line in reversed(lines) if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|"
                                                                     r"Interrupt)\b.*", line)), None)
        ended = "" if self.exit_code is None else f", exit code {self.exit_code}"
        if raised:
            return SchedulerError(f"scheduler {self.name} failed: {_with_hint(raised)} (then: {error}{ended}; "
                                  f"its output: {self.log_path})")
        return SchedulerError(f"scheduler {self.name}: {error}{ended} (its output: {self.log_path})")

    def stop(self, grace_s=0.0):
        """End the scheduler; ``grace_s``: time it gets to exit by itself first (after the simulation's end)."""
        self.exit_code = self.process.poll()
        stop_process(self.process, grace_s)
        self._log.close()
