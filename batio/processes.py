"""Starting a pybatsim scheduler process on a local port, never orphaned."""

import json
import socket
import subprocess
import sys

from batio.errors import EngineError

# pybatsim's launcher, loading the file under its one module name.
_LAUNCHER = "from batio.launcher import main; import sys; sys.exit(main())"


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


def die_with_parent():
    """Run in the child before exec: end it if batio dies first."""
    import ctypes
    import signal
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(command, log):
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            preexec_fn=die_with_parent)


def start_pybatsim(scheduler, options, endpoint, log):
    """`pybatsim SCHEDULER -s ENDPOINT -o OPTIONS`, with no reply timeout of its own
    (batio watches the exchange and ends the process)."""
    command = [sys.executable, "-c", _LAUNCHER, str(scheduler), "-s", endpoint, "-o", json.dumps(options),
               "-t", "0", "-v", "warning"]
    return start(command, log)


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
