"""Starting a scheduler's (or Batsim's) process on a local port, never orphaned,
and ending every process a run started, its scheduler's children included."""

from contextlib import contextmanager
import ctypes
import json
import os
from pathlib import Path
import signal
import socket
import subprocess
import sys
import threading
import time

from batio.errors import EngineError, SchedulerError

# pybatsim's launcher, loading the file under its one module name.
_LAUNCHER = "from batio.launcher import main; import sys; sys.exit(main())"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
BIND_TIMEOUT_S = 20.0  # how long a scheduler may take to bind its socket
END_GRACE_S = 2.0  # how long a scheduler told of the simulation's end may take to exit by itself


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_port_free(port):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise EngineError(f"port {port} is already in use: choose another with --port") from None


def choose_port(requested):
    if requested:
        check_port_free(requested)
        return requested
    return free_port()


def _prctl(option, value):
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(option, value)


def die_with_parent():
    """Run in the child before exec: end it if batio dies first."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _own_session():
    """Run in the child before exec: its own session, so that it and what it starts end as one
    group (``stop``); every signal unblocked (the engine process blocks SIGTERM for its listener)."""
    die_with_parent()
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def start(command, log, env=None):
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_own_session, env=env)


def start_pybatsim(scheduler, options, endpoint, log):
    """`pybatsim SCHEDULER -s ENDPOINT -o OPTIONS`, with no reply timeout of its own
    (batio watches the exchange and ends the process)."""
    command = [sys.executable, "-c", _LAUNCHER, str(scheduler), "-s", endpoint, "-o", json.dumps(options),
               "-t", "0", "-v", "warning"]
    # Unbuffered: its stdout is the log file, which a SIGTERM would otherwise leave empty.
    return start(command, log, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def signal_group(group, signum):
    """``signum`` to the process group ``group``, if any of it is left."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop(process, grace_s=0.0):
    """End a process of ``start`` and what it started in its group (a scheduler's
    ``sleep`` children): SIGTERM once ``grace_s`` has passed without its own exit,
    then SIGKILL to whatever is left after 5 s."""
    if grace_s and process.poll() is None:
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    if process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            pass
    signal_group(process.pid, signal.SIGKILL)
    process.wait()


@contextmanager
def listening(process, port, log_path, timeout_s=BIND_TIMEOUT_S):
    """``process`` (a scheduler of ``start``) once it listens on ``port``, stopped at the block's end:
    Batsim gives up if nobody listens when it connects."""
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise SchedulerError(f"the scheduler exited with code {process.returncode} before Batsim "
                                     f"connected; see {log_path}")
            if _answers(port):
                break
            if time.monotonic() >= deadline:
                raise SchedulerError(f"the scheduler did not listen on port {port} within {timeout_s:.0f} s; "
                                     f"see {log_path}")
            time.sleep(0.05)
        yield process
    finally:
        stop(process, END_GRACE_S)


def _answers(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def run_to_end(command, log, timeout_s=None):
    """Run ``command`` (as ``start``) to its exit code; subprocess.TimeoutExpired after ``timeout_s``,
    the process then stopped as it is on any other way out."""
    process = start(command, log)
    try:
        return process.wait(timeout_s)
    finally:
        stop(process)


def adopt_orphans():
    """Make this process the one that the orphans of its descendants are given to
    (a scheduler's daemonised children, which leave their session): ``end_descendants`` finds them."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def descendants(pid):
    """Every living descendant of ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def end_descendants():
    """SIGKILL every process this one started, directly or not, and reap them."""
    for _ in range(3):  # a child may fork while its parent is killed
        found = descendants(os.getpid())
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break


class SignalListener:
    """A signal to the engine process (batio passing on the one that stopped it,
    or SIGTERM at batio's death), handled by a thread of its own: the main thread
    runs SimGrid's loop in C++, where Python's signal handlers never run. Until
    ``action`` is set, the process only ends; ``action(signum)`` writes the
    partial outputs, then ends it."""

    SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}

    def __init__(self):
        self.action = None
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)  # before any thread: all inherit it
        threading.Thread(target=self._wait, name="batio-signals", daemon=True).start()

    def _wait(self):
        signum = signal.sigwait(self.SIGNALS)
        try:
            if self.action:
                self.action(signum)
        finally:
            end_descendants()
            os._exit(128 + signum)
