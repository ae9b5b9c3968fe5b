"""Aggregate storage throughput over time, measured in the simulation.

Batsim has no such output, but every I/O paper plots it. A monitor samples
the progress of every running transfer once per period (1 s by default, as
a monitoring system such as LDMS would), so each row is the exact average
read and write throughput of a storage host over its window. Between two
samples a transfer that ends is accounted without reading SimGrid at all
(what it had left is done), so the cost is one progress read per running
transfer and period; reading at every rate change instead would cost a
SimGrid call per running transfer at every start or end of any transfer.
"""

import csv
import math

import simgrid as sg


_PRECISION = 1e-6  # fraction of a transfer below which SimGrid's leftovers are noise


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

    def interrupted(self, activity):
        """Before a transfer is cancelled (walltime, kill): keep what it did."""
        if activity in self._active:
            self._account(activity, activity.remaining_ratio)
            del self._active[activity]

    def close_window(self, now):
        """Sample the running transfers and write the window ending at ``now``."""
        # Reading a ratio is a SimGrid call during which other actors may run
        # (and end transfers): read first, then account what is still there.
        ratios = [(activity, activity.remaining_ratio) for activity in list(self._active)]
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

    def monitor(self):
        """Actor body: close a window every period while the simulation runs."""
        while True:
            sg.this_actor.sleep_for(self.period)
            self.close_window(sg.Engine.clock)

    def finish(self, now):
        self.close_window(now)
        for name in self._storage_names:
            if self._last_rate[name] != (0.0, 0.0):
                self.rows.append((now, name, 0.0, 0.0))

    def write_csv(self, path):
        with open(path, "w", newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(["time", "storage", "read_bytes_per_s", "write_bytes_per_s"])
            for time, name, read, write in self.rows:
                writer.writerow([f"{time:.6f}", name, f"{read:.6g}", f"{write:.6g}"])
