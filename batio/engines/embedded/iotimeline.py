"""Aggregate storage throughput over time, measured in the simulation
(``PREFIX_io.csv``: Batsim has no such output, but every I/O paper plots it).
Only the server samples, just before it waits for its next message, and a
transfer's progress is read through SimGrid's C function: docs/internals.md,
section batio/engines/embedded/iotimeline.py, says why.
"""

import csv
import ctypes
import functools
import math

from batio.outfiles import writing

_PRECISION = 1e-6  # fraction of a transfer below which SimGrid's leftovers are noise


@functools.cache
def _c_remaining_ratio(bindings):
    """SimGrid's ``sg_exec_get_remaining_ratio``, found through the bindings'
    module file (dlsym also searches the libsimgrid it links), or None."""
    try:
        function = ctypes.CDLL(bindings).sg_exec_get_remaining_ratio
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_double
    function.argtypes = [ctypes.c_void_p]
    return function


def progress_readable(simgrid):
    """Whether ``remaining_ratio`` can read without the GIL (run.check_simgrid asks where the bindings keep it)."""
    return _c_remaining_ratio(simgrid.__file__) is not None


def remaining_ratio(activity):
    """``activity.remaining_ratio``, read without holding the GIL (see above)."""
    import simgrid
    function = _c_remaining_ratio(simgrid.__file__)
    if function is None:
        return activity.remaining_ratio
    # A pybind11 object of a class with one C++ base holds the C++ pointer
    # right after its Python header (pybind11's instance::simple_value_holder).
    return function(ctypes.c_void_p.from_address(id(activity) + object.__basicsize__).value)


class IoTimeline:
    def __init__(self, storage_names, period=1.0):
        self.period = period
        self._storage_names = list(storage_names)
        # activity -> (storage traffic as [(name, read_bytes, write_bytes)], ratio left when last read)
        self._active = {}
        self._window_start = 0.0
        self._pending = {name: [0.0, 0.0] for name in self._storage_names}
        self.rows = []  # (time, storage, read B/s, write B/s), from `time` until the next row of `storage`
        self._last_rate = {name: (0.0, 0.0) for name in self._storage_names}
        self.bytes_read = 0.0
        self.bytes_written = 0.0

    def _account(self, activity, ratio):
        if ratio < _PRECISION:
            ratio = 0.0  # SimGrid's own rounding: the transfer is done
        traffic, ratio_before = self._active[activity]
        done = ratio_before - ratio
        if done > 0:
            for name, read_bytes, write_bytes in traffic:
                self._pending[name][0] += done * read_bytes
                self._pending[name][1] += done * write_bytes
            self._active[activity] = (traffic, ratio)

    def start(self, activity, traffic):
        """``traffic``: [(storage name, bytes read from it, bytes written to it)]."""
        if traffic:
            self._active[activity] = (traffic, 1.0)

    def completed(self, activity):
        if activity in self._active:
            self._account(activity, 0.0)
            del self._active[activity]

    def interrupted(self, activity, ratio):
        """A transfer cancelled (walltime, kill) with ``ratio`` of it left: keep what it did."""
        if activity in self._active:
            self._account(activity, ratio)
            del self._active[activity]

    def sample_if_due(self, now):
        if now - self._window_start >= self.period:
            self.close_window(now)

    def close_window(self, now):
        """Sample the running transfers and write the window ending at ``now``."""
        # Reading a ratio is a SimGrid call during which other actors may run
        # (and end transfers): read first, then account what is still there.
        ratios = [(activity, remaining_ratio(activity)) for activity in list(self._active)]
        for activity, ratio in ratios:
            if activity in self._active:
                self._account(activity, ratio)
        span = now - self._window_start
        if span <= 0:
            return
        for name in self._storage_names:
            read, write = self._pending[name]
            rate = (read / span, write / span)
            if not all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1.0) for a, b in zip(rate, self._last_rate[name])):
                self.rows.append((self._window_start, name, rate[0], rate[1]))
                self._last_rate[name] = rate
            self.bytes_read += read
            self.bytes_written += write
            self._pending[name] = [0.0, 0.0]
        self._window_start = now

    def finish(self, now):
        self.close_window(now)
        for name in self._storage_names:
            if self._last_rate[name] != (0.0, 0.0):
                self.rows.append((now, name, 0.0, 0.0))

    def write_csv(self, path):
        with writing(path, newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(["time", "storage", "read_bytes_per_s", "write_bytes_per_s"])
            for time, name, read, write in self.rows:
                writer.writerow([f"{time:.6f}", name, f"{read:.6g}", f"{write:.6g}"])
